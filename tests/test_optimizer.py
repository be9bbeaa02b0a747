"""The BF front end's idioms (--bf-opt 1) and the trace optimizer's levels
(--jit-opt 0|1|2|3, side exits linked): exact against the oracle on the corpus
and on cases chosen for their edges (tape bounds, 8-bit wrap-around), and
doing what they claim (instructions replaced, exits linked, crossings saved).
"""
from __future__ import annotations

import functools
import re
import subprocess
import sys

import pytest

import differential
from test_modes import _examples, _input_for
from conftest import get_build, interpreter_configs
from shimlab import isa, isolate, oracle, vm
from shimlab.bytecode import disassemble
from shimlab.frontend import bf, compile_text, load_program
from shimlab.jit import optimize
from shimlab.jit.defaults import DEFAULT_LEVEL
from shimlab.modes import JIT as JIT_MODES

OP = isa.OPCODE
HEAVY = {"heavy.bf", "heavy.py", "bigout.bf", "mandel.bf"}      # the JIT levels run them in jit-direct only


def _names(program):
    return [isa.INSTRUCTIONS[op].name for op, _ in program.code]


# -- the front end's idioms ---------------------------------------------------

def test_multiply_loop_becomes_a_move_at_offsets():
    # (the input makes the counter unknown: at the start every cell is known 0)
    p = bf.compile_source(",[->+>+++<<]", "t", 1)
    assert _names(p) == ["CELL_IN", "CELL_MULADD_AT", "CELL_MOVE_AT", "HALT"]
    assert [isa.unpack_move_at(_names(p)[i], p.code[i][1]) for i in (1, 2)] == \
        [(0, 1, None, 1), (0, 2, None, 3)]
    p = bf.compile_source(",>>>,<<<[->+>>+<<<]", "t", 1)     # two targets of one factor
    assert _names(p) == ["CELL_IN", "MOVE", "CELL_IN", "CELL_MOVE2_AT", "HALT"]
    assert isa.unpack_move_at("CELL_MOVE2_AT", p.code[3][1]) == (-3, -2, 0, 1)


def test_a_multiply_loop_with_a_known_counter_is_adds():
    # 4 * 3 into cell 1, cell 0 cleared: sets, since every cell starts at 0
    p = bf.compile_source("++++[->+++<]>.", "t", 1)
    assert ("CELL_SET_AT", 1, 12) in [(_names(p)[i], a >> 8, a & 0xFF)
                                      for i, (_, a) in enumerate(p.code)]
    assert "CELL_MULADD_AT" not in _names(p) and "LOOP_IF_CELL" not in _names(p)


def test_counting_up_multiplies_by_the_negated_factor():
    # [+>++<] runs 256 - c times: each time +2, so the target gets -2c
    p = bf.compile_source(",[+>++<]", "t", 1)
    assert isa.unpack_move_at("CELL_MOVE_AT", p.code[1][1]) == (0, 1, None, 254)


def test_scan_loops_and_offsets():
    assert _names(bf.compile_source(",[>]", "t", 1)) == ["CELL_IN", "SCAN", "HALT"]
    assert bf.compile_source(",[<<]", "t", 1).code[1] == (OP["SCAN"], -2)
    p = bf.compile_source(",>>+++<+<.", "t", 1)
    assert _names(p) == ["CELL_IN", "CELL_SET_AT", "CELL_SET_AT", "CELL_OUT", "HALT"]
    assert "cell +2, 3" in disassemble(p) and "cell +1, 1" in disassemble(p)


def test_known_cells_make_sets_dead_loops_and_ifs():
    # a comment loop at the start never runs; adds to known cells are sets
    assert _names(bf.compile_source("[a comment, with commands.]++.", "t", 1)) == \
        ["CELL_SET_AT", "CELL_OUT", "HALT"]
    # after [-] the cell is known 0: a body that ends with it runs at most once
    p = bf.compile_source(",[>+<[-]]", "t", 1)
    assert "LOOP_IF_CELL" not in _names(p) and _names(p)[1] == "JUMP_IF_CELL_ZERO"
    # a loop right after a loop on the same cell is dead
    assert _names(bf.compile_source(",[>+<-.][>.<]", "t", 1)).count("JUMP_IF_CELL_ZERO") == 1


def test_balanced_loops_test_at_an_offset_and_do_not_move_the_head():
    p = bf.compile_source(",[>>>+<<<-]>>>[<<+<[>+<-]>>>-]", "t", 1)
    assert "JUMP_IF_CELL_ZERO_AT" in _names(p) and "LOOP_IF_CELL_AT" in _names(p)
    assert "MOVE" not in _names(p) and "cell +3, " in disassemble(p)
    assert bf.balanced_loops(",[>]+[>+<-][[-]>]") == bytearray([0, 1, 0])
    # a loop two levels in that moves the head: neither loop around it returns
    # it, though the middle one's own moves add up to nothing (and I/O in the
    # middle one does not change that)
    assert bf.balanced_loops("[[[<]]]") == bytearray([0, 0, 0])
    assert bf.balanced_loops("[[.[<]]]") == bytearray([0, 0, 0])
    assert bf.balanced_loops("[>[.]<]") == bytearray([1, 0])


@pytest.mark.parametrize("src", [">+[[[<]]]", ">+[[.[<]]]"])
def test_a_scan_deep_inside_a_loop_moves_its_head(src):
    """--bf-opt 1 once tested the outer loop at an offset from a head the
    scan had moved (and ran off the tape where level 0 halts)."""
    results = [oracle.run(bf.compile_source(src, "t", level), tape_len=64) for level in bf.LEVELS]
    assert [(r.status, r.output, r.tape) for r in results] == \
        [(results[0].status, results[0].output, results[0].tape)] * len(results)
    assert results[0].status == isa.Error.OK


def test_level_0_is_the_plain_folded_stream():
    p = bf.compile_source("+++>>[-]<[->+<]", "t", 0)
    assert _names(p) == ["CELL_ADD", "MOVE", "CELL_ZERO", "MOVE", "JUMP_IF_CELL_ZERO",
                         "CELL_ADD", "MOVE", "CELL_ADD", "MOVE", "LOOP_IF_CELL", "HALT"]


def test_moves_fuse_into_loop_tests_and_adds_pair_up():
    p = bf.compile_source(">>,[->+>+<<.]<", "t", 1)
    assert _names(p) == ["MOVE", "CELL_IN", "JUMP_IF_CELL_ZERO", "CELL_ADD2_AT", "CELL_ADD_AT",
                         "CELL_OUT", "LOOP_IF_CELL", "HALT"]
    assert isa.unpack_add2(p.code[3][1]) == (0, 255, 1, 1)
    p = bf.compile_source(",[->.>]", "t", 1)
    assert _names(p) == ["CELL_IN", "JUMP_IF_CELL_ZERO", "CELL_ADD", "MOVE", "CELL_OUT",
                         "MOVE_LOOP_IF_CELL", "HALT"]
    assert p.code[5] == (OP["MOVE_LOOP_IF_CELL"], isa.pack_move_jump(1, -3))
    assert "move +1, -3 (to 2)" in disassemble(p)


def test_a_loop_too_long_for_a_one_byte_jump_keeps_its_move():
    p = bf.compile_source(">,[" + ".>" * 200 + "]", "t", 1)
    assert _names(p)[:3] == ["MOVE", "CELL_IN", "JUMP_IF_CELL_ZERO"]
    assert _names(p)[-2:] == ["LOOP_IF_CELL", "HALT"]


def test_a_loop_with_output_or_a_nested_loop_stays_a_loop():
    assert "LOOP_IF_CELL" in _names(bf.compile_source(",[->+<.]", "t", 1))
    assert "LOOP_IF_CELL" in _names(bf.compile_source(",[->[-]<]", "t", 1))
    assert "LOOP_IF_CELL" in _names(bf.compile_source(",[-->+<]", "t", 1))   # step -2: not one


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
    # a fused move-and-test off the tape, and two adds in one whose second cell is
    ("<[.]", b""), ("++[.>]", b""), ("+[-<<+>>.]", b""), ("+>+>++[-<+>.<]<<.", b""),
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
    # // and % by constants through their reciprocals: powers of two, the
    # largest immediate, dividends near the int64 ends; constants folded
    "s = 0\nb = 9223372036854775807\nfor i in range(-30, 30):\n"
    "    a = b - i * 3\n    c = 0 - a\n"
    "    s += a // 3 + a % 3 + c // 3 + c % 3 + c // 64 + c % 64 + a // 2147483647\n"
    "    s += c % 2147483647 + (i * 1000003) // 1000 + (i * 7) % 2 + i // 1 + i % 1\n"
    "    s += (7 // 2) + (-7 % 3) + (1 << 3) + (3 < 4)\nprint(s)\n",
    # locals in registers (level 3) that the interpreter reads and writes at
    # side exits, the hot and the cold ones, and where a trace ends
    "t = 0\nu = 1\nfor i in range(300):\n    t = t + i\n    u = u + t % 7\n"
    "    if i % 7 == 3:\n        t = t * 2 - u\n    elif i % 11 == 5:\n        u = u - i\n"
    "print(t, u)\n",
    # ... around a deopt (a divisor of -1 and then 0: the interpreter runs
    # the division, and the error leaves the locals as they were)
    "s = 0\nd = 40\nwhile d > -5:\n    s = s + 1000 // d + s % 3\n    d = d - 1\n"
    "    if d == 0:\n        d = -1\nd = 3\nwhile True:\n    s = s + 100 // (d - 1)\n    d = d - 1\n",
    # ... and a call and a print inside the loop, which end its trace
    "def f(a, b):\n    return a * 3 + b\n\n"
    "def main():\n    x = 1\n    y = 2\n    i = 0\n    while i < 200:\n        x = x + i\n"
    "        y = f(x, y) % 1000003\n        if i % 50 == 0:\n            print(x, y)\n"
    "        i = i + 1\n    print(x, y, i)\n\n\nmain()\n",
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
    assert out[0] == oracle.run(program).output
    return out


def test_hot_side_exits_get_traces_linked_to_them():
    # (without regions: with them, these paths are blocks of the loop's trace)
    _, links0, crossings0, _, _ = _stats(BRANCHY, "minipy", opt=2, link=False, regions=False)
    _, links, crossings, report, _ = _stats(BRANCHY, "minipy", opt=2, regions=False)
    assert links0 == 0 and links >= 1, report
    assert crossings < crossings0 / 10, (crossings, crossings0, report)
    assert "at hot side exits" in report and "side trace from pc" in report


def test_regions_take_the_paths_not_recorded_into_the_loops_trace():
    _, _, crossings0, report0, _ = _stats(BRANCHY, "minipy", opt=2, regions=False)
    _, _, crossings, report, folded = _stats(BRANCHY, "minipy", opt=2)
    assert "side trace from pc" in report0 and "side trace from pc" not in report, report
    assert any(f.get("paths not recorded taken in as blocks") for f in folded), folded
    assert crossings <= crossings0, (crossings, crossings0)


def test_a_skipped_if_body_becomes_a_block_that_jumps_back():
    from shimlab.jit.trace import Trace, TraceOp, add_blocks
    code = [(OP["JUMP_IF_CELL_ZERO"], 3), (OP["CELL_ADD"], 1), (OP["CELL_ZERO"], 0),
            (OP["CELL_ADD_AT"], isa.pack_cell(1, 1)), (OP["LOOP"], -4), (OP["HALT"], 0)]
    # the recording skipped the if's body (pcs 1 and 2)
    trace = Trace(0, [TraceOp(0, code[0][0], 3, "JUMP_IF_CELL_ZERO:taken", 1),
                      TraceOp(3, code[3][0], code[3][1], "CELL_ADD_AT"),
                      TraceOp(4, code[4][0], -4, "LOOP:close")])
    assert add_blocks(trace, code) == 1
    assert [(t.pc, t.stencil) for t in trace.ops[3:]] == \
        [(1, "CELL_ADD"), (2, "CELL_ZERO"), (-1, "JUMP:to")]
    assert trace.ops[-1].loop_pc == 3 and trace.ops[-1].synthetic
    # a path with a loop in it, or that never comes back, is no block
    looping = code[:2] + [(OP["LOOP"], -1)] + code[3:]
    trace2 = Trace(0, trace.ops[:3])
    assert add_blocks(trace2, looping) == 0 and len(trace2.ops) == 3


def test_checks_of_stretches_that_fall_into_each_other_merge():
    """A stretch's bounds check covers the next stretches' cells (shifted by
    the head's constant moves) when they are reached only through it; a
    label, a scan or a loop's back-edge starts over."""
    P, L = optimize.Piece, optimize.Lowered

    def check(lo, hi, pc):
        return P("opt:check:len", {"cell": lo, "hi": hi, "oparg": 100 - (hi - lo)},
                 _check_op(pc), 0, counted=False)
    out = L(pieces=[check(0, 2, 0), P("opt:add", {"cell": 1, "byte": 1}),
                    P("opt:head", {"cell": 3}), P("JUMP_IF_CELL_ZERO:fallthrough", {}),
                    check(-1, 4, 5), P("opt:zero", {"cell": 4}),
                    P("opt:head", {"cell": -2}), check(0, 0, 7),           # merged too
                    check(-3, 1, 9), P("opt:zero", {"cell": 0}),           # at a label
                    P("SCAN", {}), check(0, 1, 11), P("opt:zero", {"cell": 1})],
                labels={0: 0, 5: 4, 9: 8, 11: 11}, starts=[0, 4, 8, 11])
    optimize._merge_checks(out, 100, label_pcs={0, 9})
    checks = [p for p in out.pieces if p.stencil == "opt:check:len"]
    assert [(c.values["cell"], c.values["hi"], c.values["oparg"]) for c in checks] == \
        [(0, 7, 93), (-3, 1, 96), (0, 1, 99)]
    # the indices after a removed piece move down: labels and starts still find their pieces
    assert out.labels == {0: 0, 5: 4, 9: 6, 11: 9} and out.starts == [0, 4, 6, 9]
    assert out.pieces[6] is checks[1] and out.pieces[9] is checks[2]
    assert out.folded == {"bounds checks merged across stretches": 2}


def _check_op(pc):
    from shimlab.jit.trace import TraceOp
    return TraceOp(pc, OP["CELL_ADD_AT"], isa.pack_cell(0, 1), "CELL_ADD_AT")


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


LOCALS_LOOP = ("def main():\n    t = 0\n    j = 0\n    while j < 5000:\n        t = t + j % 7\n"
               "        if t % 1000 == 999:\n            t = t - 1\n        j = j + 1\n"
               "    print(t, j)\n\n\nmain()\n")


def test_level_3_keeps_a_loops_locals_in_registers():
    """The loop's locals live in registers (and --stats says so); the output
    is the oracle's (_stats checks), the side exit's included."""
    *_, report, folded = _stats(LOCALS_LOOP, "minipy", opt=3)
    assert any(f.get("locals in registers", 0) == 2 for f in folded), folded
    assert "2 locals in registers" in report
    *_, folded2 = _stats(LOCALS_LOOP, "minipy", opt=2)
    assert not any("locals in registers" in f for f in folded2), folded2


def _lowered(src, level, source="peachpy"):
    """The optimizer's pieces for the first loop trace of a minipy program."""
    from shimlab.jit.trace import from_recording
    program = compile_text(src, "x.py", "minipy", 1)
    ops = [(op, arg) for op, arg in program.code]
    names = _names(program)
    head = names.index("LOOP")       # the while loop: from its header to its back-edge
    start = head + ops[head][1]
    rec = list(range(start, head + 1))
    # the recorded path: every branch falls through (the loop's body runs straight on)
    rec = [pc for pc in rec if not (start < pc < head and names[pc] == "JUMP")]
    trace = from_recording(ops, rec, start)
    return optimize.lower(trace, program.consts, level, count=False,
                          registers=source == "peachpy")


def test_level_3_reads_registers_and_writes_through_to_the_frame():
    low = _lowered(LOCALS_LOOP, 3)
    names = [p.stencil for p in low.pieces]
    assert names[:2] == ["opt:load:x", "opt:load:y"], names     # loaded before the label
    assert min(low.labels.values()) == 2
    keeps = [p for p in low.pieces if p.stencil.startswith("opt:keep:")]
    assert keeps and all("local" in p.values for p in keeps)    # each store also to [fp + local]
    # no piece reads a kept local from the frame any more
    kept = {p.values["local"] for p in low.pieces[:2]}
    for p in low.pieces[2:]:
        kind = p.stencil.split(":")
        if len(kind) == 3 and kind[0] == "opt" and kind[1] not in ("keep", "store", "load"):
            assert not (kind[2][:1] == "l" and p.values.get("local") in kept), p
            assert not (kind[2][1:] == "l" and p.values.get("local2") in kept), p
    # clang-built instruction stencils may use any register: level 3 is level 2 there
    assert [p.stencil for p in _lowered(LOCALS_LOOP, 3, "clang").pieces] == \
        [p.stencil for p in _lowered(LOCALS_LOOP, 2).pieces]


def test_division_by_a_constant_uses_its_reciprocal():
    from shimlab.jit.fuse import magic
    import random
    rng = random.Random(13)
    divisors = [2, 3, 5, 7, 50, 64, 1000, 12345, 2 ** 30, 2 ** 31 - 1] + \
        [rng.randrange(2, 2 ** 31) for _ in range(100)]
    for d in divisors:
        m, s = magic(d)
        assert m < 1 << 64
        for u in [0, 1, d - 1, d, d + 1, 2 ** 63 - 1, 2 ** 63 - d] + \
                [rng.randrange(2 ** 63) for _ in range(200)]:
            assert (u * m >> 64) >> s == u // d, (u, d)
    low = _lowered("def main():\n    s = 0\n    i = 0\n    while i < 99:\n        s = s + i % 3"
                   " + i // 7\n        i = i + 1\n    print(s)\n\n\nmain()\n", 2)
    names = [p.stencil for p in low.pieces]
    assert any(n.startswith("opt:MOD:") and n.endswith("m") for n in names), names
    assert any(n.startswith("opt:FLOORDIV:") and n.endswith("m") for n in names), names


@pytest.mark.parametrize("option", ["--jit-opt 4", "--bf-opt 3", "--jit-opt x"])
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


# -- the time a trace takes to make -------------------------------------------------------

def test_stats_give_the_mean_time_to_record_optimize_and_compile_a_trace():
    *_, report, _ = _stats(BRANCHY, "minipy", opt=3)
    line = [x for x in report.splitlines() if "trace time (CPU), mean of" in x]
    assert line and all(f"{phase} " in line[0] for phase in ("record", "optimize", "compile"))
    per100 = report.splitlines()[report.splitlines().index(line[0]) + 1]
    assert "per 100 instructions: record" in per100 and "in all" in per100, report


def test_the_time_of_a_trace_of_100_instructions_is_read_off_a_line():
    """phase_times fits time = fixed + per instruction * n over the traces
    and reads it at 100: exact on traces that lie on a line, absent when
    every trace has the same length."""
    from types import SimpleNamespace
    from shimlab.jit import report

    def trace(n):      # 0.3 ms a trace + 15 us an instruction, in three phases
        ns = 300_000 + 15_000 * n
        return SimpleNamespace(ops=n, record_ns=ns // 5, optimize_ns=ns // 5,
                               compile_ns=ns - 2 * (ns // 5))
    p = report.phase_times([trace(n) for n in (1, 5, 20, 44)])
    assert p["at 100"] == pytest.approx(1.8) and p["fixed"] == pytest.approx(0.3)
    assert p["per instruction"] == pytest.approx(0.015)
    assert "1.800 ms (0.300 ms a trace + 15.0 us an instruction)" in \
        "\n".join(report.trace_times([trace(n) for n in (1, 5, 20, 44)]))
    assert "at 100" not in report.phase_times([trace(7), trace(7)])


def _recordings(path):
    """What the JIT was handed running `path` (jit-direct, the default level):
    each recording's from_recording arguments and the trace (or the
    decline) made of it."""
    from shimlab.jit import trace as jit_trace   # (read by the JIT when it records)
    from shimlab.jit.trace import Decline
    cc = next(cc for m, cc in interpreter_configs() if m == "tailcall")
    b = get_build("jit-direct", cc)

    def child():
        got, real = [], jit_trace.from_recording

        def spy(code, rec, stop_pc, **kw):
            entry = [bytes(rec), stop_pc, kw]
            got.append(entry)
            try:
                trace = real(code, rec, stop_pc, **kw)
            except Decline as d:
                entry.append(("declined", d.reason, d.retry))
                raise
            # (a copy: the JIT then adds the blocks of its regions to trace.ops in place)
            entry.append((list(trace.ops), trace.closed, trace.end_pc, trace.why_end,
                          trace.retry))
            return trace
        jit_trace.from_recording = spy
        with vm.Loaded(b, load_program(path, bf_opt=1), _input_for(path),
                       jit={"opt": DEFAULT_LEVEL}) as loaded:
            loaded.run()
        return got
    return isolate.call(f"recording {path.name}", child, timeout=300)


# an outer loop whose recording runs through 20,000 iterations of its inner loop
LONG_INNER = "t = 0\nfor i in range(100):\n    j = 0\n    while j < 20000:\n        j += 1\n" \
    "    t += j\nprint(t)\n"


@pytest.mark.parametrize("name", ["heavy.bf", "nested_loops.py", "long-inner.py",
                                  pytest.param("mandel.bf", marks=pytest.mark.slow)])
def test_a_recordings_inner_loops_are_skipped_to_the_same_trace_as_a_walk(name, monkeypatch,
                                                                           tmp_path):
    """from_recording finds where a recording leaves an inner loop with a
    bytes search; walking the iterations (as it did) gives the same traces."""
    from array import array
    from shimlab.jit import trace as trace_mod
    if name == "long-inner.py":
        path = tmp_path / name
        path.write_text(LONG_INNER)
    else:
        path = next(p for p in _examples() if p.name == name)
    program = load_program(path, bf_opt=1)
    recordings = _recordings(path)
    longest = max(len(r[0]) // 4 for r in recordings)
    assert longest > (100_000 if name == "long-inner.py" else 300), longest
    monkeypatch.setattr(trace_mod, "_past_loop",
                        lambda code, rec, i, first, last, memo=None: trace_mod._walk(rec, i, first,
                                                                                     last))
    for rec_bytes, stop_pc, kw, got in recordings:
        rec = array("i")
        rec.frombytes(rec_bytes)
        try:
            t = trace_mod.from_recording(program.code, rec, stop_pc, **kw)
            want = (t.ops, t.closed, t.end_pc, t.why_end, t.retry)
        except trace_mod.Decline as d:
            want = ("declined", d.reason, d.retry)
        assert got == want, (stop_pc, len(rec))


def test_first_of_finds_what_a_walk_finds():
    import random
    from array import array
    from shimlab.jit.trace import first_of
    rng = random.Random(5)
    for _ in range(500):
        rec = array("i", [rng.randrange(-3, 40) for _ in range(rng.randrange(1, 200))])
        pcs = set(rng.sample(range(-3, 45), rng.randrange(0, 5)))
        i = rng.randrange(len(rec))
        assert first_of(rec, pcs, i) == next((k for k in range(i, len(rec)) if rec[k] in pcs),
                                             None)
        assert first_of(list(rec), pcs, i) == first_of(rec, pcs, i)


def test_the_timing_program_makes_one_trace_of_about_100_instructions():
    """examples/timing/long_body.py is what docs/findings.md times as a trace of
    100 instructions: it stays one."""
    from conftest import EXAMPLES
    *_, report, _ = _stats((EXAMPLES / "timing" / "long_body.py").read_text(), "minipy", opt=3)
    m = re.search(r"mean of 1 recorded trace\(s\) of (\d+) instructions", report)
    assert m and 95 <= int(m.group(1)) <= 105, report
