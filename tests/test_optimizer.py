"""The BF front end's idioms (--bf-opt 1) and the trace optimizer's levels
(--jit-opt 0|1|2, side exits linked): exact against the oracle on the corpus
and on cases chosen for their edges (tape bounds, 8-bit wrap-around), and
doing what they claim (instructions replaced, exits linked, crossings saved).
"""
from __future__ import annotations

import functools
import subprocess
import sys

import pytest

import differential
from test_modes import _examples, _input_for
from conftest import get_build, interpreter_configs
from shimlab import isa, isolate, reference, vm
from shimlab.bytecode import disassemble
from shimlab.frontend import bf, compile_text, load_program
from shimlab.jit import optimize
from shimlab.modes import JIT as JIT_MODES

OP = isa.OPCODE
HEAVY = {"heavy.bf", "heavy.py", "bigout.bf", "mandel.bf"}      # the JIT levels run them in jit-direct only


def _names(program):
    return [isa.INSTRUCTIONS[op].name for op, _ in program.code]


# -- the front end's idioms ---------------------------------------------------

def test_multiply_loop_becomes_one_muladd_per_target_and_a_clear():
    p = bf.compile_source("[->+>+++<<]", "t", 1)
    assert _names(p) == ["CELL_MULADD", "CELL_MULADD", "CELL_ZERO", "HALT"]
    assert [(arg >> 8, arg & 0xFF) for _, arg in p.code[:2]] == [(1, 1), (2, 3)]


def test_counting_up_multiplies_by_the_negated_factor():
    # [+>++<] runs 256 - c times: each time +2, so the target gets -2c
    p = bf.compile_source("[+>++<]", "t", 1)
    assert [(arg >> 8, arg & 0xFF) for _, arg in p.code[:1]] == [(1, 254)]


def test_scan_loops_and_offsets():
    assert _names(bf.compile_source("[>]", "t", 1)) == ["SCAN", "HALT"]
    assert bf.compile_source("[<<]", "t", 1).code[0] == (OP["SCAN"], -2)
    p = bf.compile_source(">>+++<[-]+<.", "t", 1)
    assert _names(p) == ["CELL_ADD_AT", "CELL_SET_AT", "CELL_OUT", "HALT"]
    assert "cell +2, 3" in disassemble(p) and "cell +1, 1" in disassemble(p)


def test_level_0_is_the_plain_folded_stream():
    p = bf.compile_source("+++>>[-]<[->+<]", "t", 0)
    assert _names(p) == ["CELL_ADD", "MOVE", "CELL_ZERO", "MOVE", "JUMP_IF_CELL_ZERO",
                         "CELL_ADD", "MOVE", "CELL_ADD", "MOVE", "LOOP_IF_CELL", "HALT"]


def test_a_loop_with_output_or_a_nested_loop_stays_a_loop():
    assert "LOOP_IF_CELL" in _names(bf.compile_source("[->+<.]", "t", 1))
    assert "LOOP_IF_CELL" in _names(bf.compile_source("[->[-]<]", "t", 1))
    assert "LOOP_IF_CELL" in _names(bf.compile_source("[-->+<]", "t", 1))   # step -2: not one


def test_front_end_time_is_linear():
    """Twice the source costs about twice the time, not four times."""
    import time
    unit = ">+++[->++<]<-[.>]" * 2000 + "\n"

    def cost(n):
        t = time.perf_counter()
        bf.compile_source(unit * n, "t", 1)
        return time.perf_counter() - t
    small, big = min(cost(4) for _ in range(3)), min(cost(16) for _ in range(3))
    assert big < 8 * small, (small, big)


# -- exactness: edge cases on every mode and level -------------------------------

EDGES = [
    # the head runs off either end inside a traced loop (a stretch's bounds check deopts)
    ("+[>+]", b""), (">>>>+[<+]", b""), ("+[>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>+]", b""),
    # a scan off the end of the tape, and one that finds its cell
    ("+[>]", b""), ("+>+>+>>++<<<<[>]+.", b""),
    # multiply loops on 8-bit cells that wrap, counting down and up
    ("++++++++[->+++++++++++++++++++++++++++++++++>---<<]>.>.", b""),
    ("+++++[+>++<]>.", b""), ("-[->+>+<<]>.>.", b""),
    # offsets on the far side of a moving head, clears and sets in one block
    ("+++++[>+++>[-]++<<-]>.>.", b""), (",[>,]<[.<]", b"abcdef"),
]


@pytest.mark.parametrize("src,data", EDGES, ids=[e[0][:24] for e in EDGES])
def test_edge_cases_agree_with_the_oracle_everywhere(src, data):
    """Every interpreter and JIT mode at every optimizer level, both BF levels."""
    differential.check(differential.Case("bf", src, data))


MINIPY_EDGES = [
    # side exits that go hot: the branch not recorded, taken half of the time
    "t = 0\nfor i in range(300):\n    if i % 2 == 0:\n        t += i\n    else:\n        t -= 1\nprint(t)\n",
    # constants folded, a compare whose operands are both locals, a store that
    # a pending read of the same local must see before
    "a = 3\nb = 0\nwhile b < 50:\n    b = b + a * 2 - 1\n    a = b - a\nprint(a, b)\n",
    # division and shifts by constants, negative operands
    "s = 0\nfor i in range(-40, 40):\n    s += i // 7 + i % 5 + (i << 3) + (i >> 2)\nprint(s)\n",
]


@pytest.mark.parametrize("src", MINIPY_EDGES, ids=range(len(MINIPY_EDGES)))
def test_minipy_edge_cases_agree_with_the_oracle_everywhere(src):
    differential.check(differential.Case("minipy", src))


# -- the corpus at every level ---------------------------------------------------------

@pytest.mark.parametrize("path", [p for p in _examples() if p.suffix == ".bf"],
                         ids=lambda p: p.name)
def test_bf_corpus_at_bf_opt_1_in_every_interpreter(path, interp):
    program = load_program(path, bf_opt=1)
    result = vm.run(get_build(*interp), program, _input_for(path))
    assert result.status == 0
    assert result.output == path.with_suffix(".out").read_bytes()


# CI runs each level in two modes on the light programs (the crossing differs
# by mode, the optimizer's code does not); `make test-all` runs the rest
_CI_MODES = ("jit-direct", "jit-shim")


def _jit_cases():
    for path in _examples():
        for mode in JIT_MODES:
            for level in optimize.LEVELS:
                if path.name in HEAVY and (mode != "jit-direct" or level == 0):
                    continue
                slow = path.name in HEAVY or mode not in _CI_MODES
                yield pytest.param(path, mode, level, id=f"{path.name}-{mode}-o{level}",
                                   marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("path,mode,level", list(_jit_cases()))
def test_corpus_in_every_jit_mode_at_every_level(path, mode, level):
    cc = next(cc for m, cc in interpreter_configs() if m == "tailcall")
    b = get_build(mode, cc)
    program = load_program(path, bf_opt=1)

    def child():
        with vm.Loaded(b, program, _input_for(path), jit={"opt": level, "threshold": 8}) as loaded:
            r = loaded.run()
            return r.output, r.status
    output, status = isolate.call(f"{mode} at --jit-opt {level}", child, timeout=300)
    assert status == 0
    assert output == _want(path)


@functools.lru_cache(maxsize=None)
def _want(path):
    """The expected output: the .out file, or the tail-call interpreter's."""
    out = path.with_suffix(".out")
    if out.exists():
        return out.read_bytes()
    cc = next(cc for m, cc in interpreter_configs() if m == "tailcall")
    return vm.run(get_build("tailcall", cc), load_program(path, bf_opt=1), _input_for(path)).output


# -- what the levels do ------------------------------------------------------------------

BRANCHY = "t = 0\nfor i in range(3000):\n    if i % 3 == 0:\n        t += i\n    elif i % 3 == 1:\n        t -= 2\nprint(t)\n"


def _stats(src, language, **jit):
    program = compile_text(src, f"x.{'bf' if language == 'bf' else 'py'}", language, 1)
    cc = next(cc for m, cc in interpreter_configs() if m == "tailcall")
    b = get_build("jit-direct", cc, count=True)

    def child():
        with vm.Loaded(b, program, jit={"stats": True, **jit}) as loaded:
            r = loaded.run()
            j = loaded.jit
            # a tallied exit crossed (once linked, an exit jumps before its tally)
            crossings = sum(t.entries() + sum(t.exit_counts()) for t in j.stats.traces)
            return (r.output, j.stats.links, crossings, j.report(r.counts),
                    [t.folded for t in j.stats.traces])
    out = isolate.call("jit-direct --stats", child, timeout=120)
    assert out[0] == reference.run(program).output
    return out


def test_hot_side_exits_get_traces_linked_to_them():
    _, links0, crossings0, _, _ = _stats(BRANCHY, "minipy", opt=2, link=False)
    _, links, crossings, report, _ = _stats(BRANCHY, "minipy", opt=2)
    assert links0 == 0 and links >= 1, report
    assert crossings < crossings0 / 10, (crossings, crossings0, report)
    assert "at hot side exits" in report and "side trace from pc" in report


def test_stats_say_what_ran_in_traces_and_what_the_optimizer_did():
    *_, report, folded = _stats(">+++++[<++++++++>-]<[>>+++[->+<]<-]>>>.", "bf", opt=1,
                                threshold=1)
    share = [line for line in report.splitlines() if "VM instructions run in traces" in line]
    assert share, report
    ran, total = (int(x) for x in share[0].split(":")[1].split("(")[0].split(" of "))
    assert 0 < ran <= total
    assert any("moves folded" in f for f in folded), folded


def test_level_2_fuses_minipy_stack_traffic():
    *_, folded = _stats(BRANCHY, "minipy", opt=2)
    assert any(f.get("stack operations fused", 0) and f.get("compare-and-branch fused", 0)
               for f in folded), folded


@pytest.mark.parametrize("option", ["--jit-opt 3", "--bf-opt 2", "--jit-opt x"])
def test_run_refuses_a_level_that_does_not_exist(option, tmp_path):
    prog = tmp_path / "p.bf"
    prog.write_text("+.")
    r = subprocess.run([sys.executable, "-m", "shimlab.cli", "run", str(prog), *option.split()],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert option.split()[0] in r.stderr


def test_the_jit_api_refuses_a_stencil_of_another_instruction():
    """jit={"stencils": ...} is checked like --stencil: a LOAD_INT in place of
    CELL_ADD would grow the stack until it faults."""
    from shimlab.frontend.verify import verify
    from shimlab.stencil import StencilError
    cc = next(cc for m, cc in interpreter_configs() if m == "tailcall")
    program = verify(bf.compile_source("+[>+<-]", "x.bf", 0))
    with pytest.raises(StencilError, match="only a stencil of CELL_ADD"):
        with vm.Loaded(get_build("jit-direct", cc), program,
                       jit={"stencils": {"CELL_ADD": "LOAD_INT"}}) as loaded:
            loaded.run()
