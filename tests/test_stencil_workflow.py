"""Prototyping a stencil as docs/howto-write-and-time-a-stencil.md tells it,
from a folder outside the checkout named by $SHIMLAB_STENCILS: the how-to's
own example and commands (read from the page, so the test fails when it
drifts; examples/stencils/ ships the same module), misuse of
--stencil refused in one line, broken modules failing only the runs that
select them, `run --check`, `stencils compare A B` and `bench programs
--stencil`."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest

pytest.importorskip("peachpy")

from conftest import ROOT, interpreter_configs  # noqa: E402

JIT_CC = sorted({cc for mode, cc in interpreter_configs() if mode == "tailcall"})
needs_jit = pytest.mark.skipif(not JIT_CC, reason="no compiler here builds the JIT modes")

WRONG = '''\
from peachpy.x86_64 import ADD, INC, MOV, qword, rax
from peachpy_stencils.asm import stencil


@stencil("LOAD_INT:off", "pushes its operand plus one: wrong on purpose")
def load_int_off(a, r):
    a(MOV(rax, a.hole("oparg")), INC(rax), MOV(qword[r.sp], rax), ADD(r.sp, 8))
'''
BROKEN_IMPORT = '''\
from peachpy_stencils.asm import stencil
not_defined_anywhere


@stencil("ADD:broken")
def add_broken(a, r):
    pass
'''
BROKEN_BODY = '''\
from peachpy.x86_64 import ADD, MOV, qword, rax
from peachpy_stencils.asm import stencil


@stencil("DUP:fine")
def dup_fine(a, r):
    a(MOV(rax, qword[r.sp - 8]), MOV(qword[r.sp], rax), ADD(r.sp, 8))


@stencil("DUP:bad")
def dup_bad(a, r):
    a(MOV(rbx, qword[r.sp - 8]))
'''
# a minipy loop whose LOAD_INTs run in a trace: LOAD_INT:off makes it step by 2
LOOP_PY = "i = 0\ns = 0\nwhile i < 100:\n    s = s + 3\n    i = i + 1\nprint(s)\n"


def _shimlab(*args, env=None, timeout=300, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})


def _one_line_error(p, *needles):
    assert p.returncode == 1, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shimlab: "), p.stderr
    assert "Traceback" not in p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# ---- the how-to's example, from a folder outside the checkout -------------------------

HOWTO = ROOT / "docs" / "howto-write-and-time-a-stencil.md"


def howto_example() -> tuple[str, str, list[list[str]]]:
    """(module file name, its source, the shimlab commands) of the how-to's
    'Prototyping a stencil' paragraph."""
    text = HOWTO.read_text()
    at = text.index("**Prototyping a stencil.**")
    py = re.search(r"```python\n(.*?)```", text[at:], re.S)
    sh = re.search(r"```sh\n(.*?)```", text[at:], re.S)
    assert py and sh, "the how-to's prototyping paragraph lost its example"
    source = py.group(1)
    name = re.match(r"#\s*(\w+\.py)", source)
    assert name, "the example's first line names its file: # NAME.py ..."
    commands = [shlex.split(line, comments=True) for line in sh.group(1).splitlines()
                if line.startswith("shimlab ")]
    return name.group(1), source, commands


def test_the_howto_example_is_what_the_test_runs():
    name, source, commands = howto_example()
    assert (ROOT / "examples" / "stencils" / name).read_text() == source, \
        "examples/stencils/ ships the how-to's example as it stands"
    assert "from peachpy_stencils.asm import stencil" in source and "@stencil(" in source
    assert [c[:3] for c in commands if c[1] == "stencils"] == [
        ["shimlab", "stencils", "test"], ["shimlab", "stencils", "show"],
        ["shimlab", "stencils", "compare"]]
    assert any(c[1] == "run" and "--check" in c and "--stencil" in c for c in commands)
    assert any(c[1:3] == ["bench", "programs"] and "--stencil" in c for c in commands)


@needs_jit
@pytest.mark.parametrize("imports", ["as written", "relative"])
def test_the_howto_example_works_unchanged_from_an_outside_folder(tmp_path, imports):
    name, source, commands = howto_example()
    if imports == "relative":       # what peachpy_stencils/'s own families write
        source = source.replace("from peachpy_stencils.asm import", "from .asm import")
    folder = tmp_path / "my stencils"
    folder.mkdir()
    (folder / name).write_text(source)
    stencil = re.search(r'@stencil\("([^"]+)"', source).group(1)
    env = {"SHIMLAB_STENCILS": str(folder)}
    ran = 0
    for cmd in commands:
        if cmd[1:3] == ["bench", "programs"]:
            continue        # minutes of measuring: test_bench_programs_stencil below times one
        p = _shimlab(*cmd[1:], env=env)
        assert p.returncode == 0, (cmd, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr
        if cmd[1:3] == ["stencils", "test"]:
            assert re.search(rf"ok\s+{re.escape(stencil)}", p.stdout), p.stdout
        if cmd[1:3] == ["stencils", "show"]:
            assert p.stdout.startswith(f"{stencil}: ") and str(folder / name) in p.stdout
        if cmd[1:3] == ["stencils", "compare"]:
            assert re.search(rf"{re.escape(stencil)} / \S+: [\d.]+ \[[\d.]+, [\d.]+\] "
                             r"\(95% CI\): (faster|slower|not significant)", p.stdout), p.stdout
        ran += 1
    assert ran == len(commands) - 1
    assert not list(folder.glob("__pycache__")), "loading a prototype wrote into its folder"


# ---- misuse of --stencil: one line, exit 1, on run and on the benches ------------------

def _proto_dir(tmp_path, **modules) -> dict:
    folder = tmp_path / "proto"
    folder.mkdir(exist_ok=True)
    for stem, text in modules.items():
        (folder / f"{stem}.py").write_text(text)
    return {"SHIMLAB_STENCILS": str(folder)}


MISUSE = [
    ("CELL_ADD=LOAD_INT", "LOAD_INT implements LOAD_INT, not CELL_ADD"),
    ("FOO=LOAD_INT", "'FOO' is not a VM instruction"),
    ("CELL_ADD=CELL_ADD:nonesuch", "no stencil named 'CELL_ADD:nonesuch'"),
    ("HALT=LOAD_INT", "the JIT has no stencil for HALT"),
    ("JUMP_IF_FALSE=JUMP_IF_TRUE:taken", "name the one to replace (JUMP_IF_FALSE:taken"),
    ("LOAD_INT=exit:direct", "exit:direct implements no instruction"),
    ("CELL_ADD", "expected OP=NAME"),
    ("DUP=DUP:bad", "proto/broken_body.py:12: stencil DUP:bad: NameError: name 'rbx'"),
    ("ADD=ADD:broken", "proto/broken_import.py:2: NameError: name 'not_defined_anywhere'"),
]


@needs_jit
@pytest.mark.parametrize("spec, needle", MISUSE, ids=[m[0] for m in MISUSE])
def test_run_refuses_a_misused_stencil_in_one_line(tmp_path, spec, needle):
    env = _proto_dir(tmp_path, broken_body=BROKEN_BODY, broken_import=BROKEN_IMPORT)
    prog = tmp_path / "loop.bf"
    prog.write_text("++++++++[>+++++.<-]")
    p = _shimlab("run", str(prog), "--mode", "jit-direct", "--jit-threshold", "1",
                 "--stencil", spec, env=env)
    line = _one_line_error(p, f"--stencil {spec}", needle)
    assert p.stdout == "", "nothing ran"
    assert "SIGSEGV" not in line


@needs_jit
@pytest.mark.parametrize("spec, needle", MISUSE[:3] + MISUSE[-2:],
                         ids=[m[0] for m in MISUSE[:3] + MISUSE[-2:]])
def test_bench_programs_refuses_a_misused_stencil_before_measuring(tmp_path, spec, needle):
    env = _proto_dir(tmp_path, broken_body=BROKEN_BODY, broken_import=BROKEN_IMPORT)
    out = tmp_path / "r.json"
    p = _shimlab("bench", "programs", "--quick", "--cc", JIT_CC[0], "--stencil", spec,
                 "-o", str(out), env=env)
    _one_line_error(p, f"--stencil {spec}", needle)
    assert not out.exists()


@needs_jit
@pytest.mark.parametrize("args, needle", [
    (["CELL_ADD", "LOAD_INT:nope"], "no stencil named 'LOAD_INT:nope'"),
    (["CELL_ADD", "DUP:fine"], "compare two stencils of one instruction"),
    (["CELL_ADD:rmw"], "CELL_ADD:rmw is a stencil, not an instruction"),
    (["LOOP:close", "LOOP:inner"], "it has no unit to time it in"),
    (["JUMP_IF_FALSE:fallthrough", "JUMP_IF_FALSE:taken"], "the unit of JUMP_IF_FALSE runs "
                                                           "JUMP_IF_FALSE:taken"),
    (["DUP", "DUP:bad"], "broken_body.py:12: stencil DUP:bad"),
])
def test_stencils_compare_refuses_what_it_cannot_compare(tmp_path, args, needle):
    env = _proto_dir(tmp_path, broken_body=BROKEN_BODY)
    _one_line_error(_shimlab("stencils", "compare", *args, "--quick", env=env), needle)


# ---- a broken module fails only the runs that select it ------------------------------

@needs_jit
def test_a_broken_module_breaks_only_the_runs_that_select_it(tmp_path):
    name, source, _ = howto_example()
    env = _proto_dir(tmp_path, broken_body=BROKEN_BODY, broken_import=BROKEN_IMPORT,
                     **{name[:-3]: source})
    prog = tmp_path / "gcd.py"
    prog.write_text(LOOP_PY)
    plain = _shimlab("run", str(prog), "--mode", "jit-direct", "--jit-threshold", "1", env=env)
    assert plain.returncode == 0 and plain.stdout == "300\n", plain.stderr
    # a good stencil from the module that also holds a broken one
    fine = _shimlab("run", str(prog), "--mode", "jit-direct", "--stencil", "DUP=DUP:fine",
                    env=env)
    assert fine.returncode == 0 and fine.stdout == "300\n", fine.stderr
    for cmd in (["stencils", "show", "DUP:bad"], ["stencils", "test", "DUP:bad"]):
        _one_line_error(_shimlab(*cmd, env=env), "broken_body.py:12: stencil DUP:bad: "
                        "NameError: name 'rbx' is not defined")
    _one_line_error(_shimlab("stencils", "test", "ADD:broken", env=env),
                    "broken_import.py:2: NameError", "the module declaring stencil ADD:broken")
    listing = _shimlab("stencils", "list", env=env)
    assert listing.returncode == 0
    assert "DUP:fine" in listing.stdout and "DUP:bad" not in listing.stdout
    left_out = listing.stderr.strip().splitlines()
    assert len(left_out) == 2 and all(ln.startswith("shimlab: left out: ") for ln in left_out)


# ---- run --check ------------------------------------------------------------------------

@needs_jit
def test_run_check_catches_a_wrong_stencil_that_exits_0_without_it(tmp_path):
    env = _proto_dir(tmp_path, wrong=WRONG)
    prog = tmp_path / "loop.py"
    prog.write_text(LOOP_PY)
    args = ["run", str(prog), "--mode", "jit-direct", "--jit-threshold", "1",
            "--stencil", "LOAD_INT=LOAD_INT:off"]
    silent = _shimlab(*args, env=env)
    assert silent.returncode == 0 and silent.stdout != "300\n", "the stencil is wrong"
    checked = _shimlab(*args, "--check", env=env)
    line = _one_line_error(checked, "--check: output byte 0 is", "from the oracle")
    assert re.search(r"output byte 0 is 0x\w\w '\d' in jit-direct, 0x33 '3' from the oracle",
                     line), line
    assert checked.stdout == silent.stdout, "the program's output is still written"
    good = _shimlab("run", str(prog), "--mode", "jit-direct", "--jit-threshold", "1", "--check")
    assert good.returncode == 0 and good.stdout == "300\n" and good.stderr == ""


@needs_jit
def test_run_check_agrees_on_a_run_time_error(tmp_path):
    prog = tmp_path / "oob.bf"
    prog.write_text("+[<+]")
    p = _shimlab("run", str(prog), "--mode", "jit-direct", "--jit-threshold", "1", "--check")
    line = _one_line_error(p, "tape head moved out of bounds")
    assert "--check" not in line


def test_run_check_refuses_the_reference_mode(tmp_path):
    prog = tmp_path / "h.bf"
    prog.write_text("+.")
    _one_line_error(_shimlab("run", str(prog), "--mode", "reference", "--check"),
                    "the reference mode is the oracle")


# ---- stencils compare A B ---------------------------------------------------------------

@needs_jit
def test_stencils_compare_a_stencil_with_itself_is_not_significant_or_close():
    p = _shimlab("stencils", "compare", "LOAD_INT", "LOAD_INT", "--quick", "--cc", JIT_CC[0])
    assert p.returncode == 0, p.stderr
    m = re.search(r"LOAD_INT / LOAD_INT: ([\d.]+) \[([\d.]+), ([\d.]+)\]", p.stdout)
    assert m, p.stdout
    assert 0.8 < float(m.group(1)) < 1.25, p.stdout


@needs_jit
def test_the_unit_runs_the_stencil_the_comparison_replaces():
    """unit_stencil says which standard stencil each instruction's unit runs
    in its trace; the trace compiled from the unit's loop must contain it."""
    from shimlab import isolate, vm
    from shimlab.bench import stencil_timing as timing
    from shimlab.interp import build
    from shimlab.jit import compile as jit_compile

    def traced_stencils(names):
        seen = {}
        original = jit_compile.compile_trace

        def spy(trace, ctx, base, **kwargs):
            seen.setdefault(current[0], set()).update(t.stencil for t in trace.ops)
            return original(trace, ctx, base, **kwargs)
        jit_compile.compile_trace = spy
        current = [None]
        b = build.build("jit-direct", JIT_CC[0])
        for nm in names:
            current[0] = nm
            with vm.Loaded(b, timing.program(nm, 2, 20), jit={"threshold": 1}) as loaded:
                loaded.run()
        return seen
    names = timing.instructions()
    seen = isolate.call("unit traces", traced_stencils, names)
    missing = {nm: sorted(seen.get(nm, ())) for nm in names
               if timing.unit_stencil(nm) not in seen.get(nm, ())}
    assert not missing, missing


# ---- bench programs --stencil ----------------------------------------------------------

@needs_jit
def test_bench_programs_does_not_time_a_wrong_stencil(tmp_path, monkeypatch):
    from shimlab.bench import harness, programs
    from shimlab.bench.results import ResultFile
    from shimlab.jit import stencil_store
    monkeypatch.setenv("SHIMLAB_STENCILS", _proto_dir(tmp_path, wrong=WRONG)["SHIMLAB_STENCILS"])
    stencil_store.load.cache_clear()
    try:
        prog = tmp_path / "loop.py"
        prog.write_text(LOOP_PY)
        bf = tmp_path / "no_load_int.bf"
        bf.write_text("++++++++[>+++++.<-]")
        overrides = stencil_store.parse_overrides(["LOAD_INT=LOAD_INT:off"])
        standard = programs.configs_for([str(prog), str(bf)], JIT_CC[0],
                                        modes=("tailcall", "jit-direct"))
        configs, notes = programs.stencil_configs(standard, overrides)
        assert [c.key for c in configs] == [
            f"programs/loop.py/jit-direct/{JIT_CC[0]}/LOAD_INT=LOAD_INT:off"]
        assert configs[0].base == f"programs/loop.py/jit-direct/{JIT_CC[0]}"
        assert configs[0].describe()["stencils"] == "LOAD_INT=LOAD_INT:off"
        assert "base" not in configs[0].describe()
        assert notes == ["no_load_int.bf runs no LOAD_INT: measured with the standard "
                         "stencils only"]
        assert configs[0].job(1, 1, None)["stencils"] == {"LOAD_INT": "LOAD_INT:off"}
        rf = ResultFile.open(tmp_path / "r.json")
        out = harness.measure(standard + configs, rf, harness.Options(
            processes=1, samples=1, quiet=True, timeout=60))
        assert list(out.failures) == [configs[0].key]
        why = out.failures[configs[0].key]
        assert "computes a wrong answer, not timed: output byte 0 is " in why
        assert "from the oracle" in why
        assert configs[0].key not in rf and all(rf.runs_done(c.key) == 1 for c in standard)
    finally:
        stencil_store.load.cache_clear()


@needs_jit
def test_bench_programs_stencil_times_a_prototype_against_the_standard(tmp_path):
    name, source, _ = howto_example()
    env = _proto_dir(tmp_path, **{name[:-3]: source})
    prog = tmp_path / "loops.bf"
    prog.write_text("++++++++[>++++++++[>+>++<<-]<-]>>.")
    out = tmp_path / "r.json"
    p = _shimlab("bench", "programs", "--workload", str(prog), "--cc", JIT_CC[0],
                 "--processes", "1", "--samples", "2", "--stencil", "CELL_ADD=CELL_ADD:rmw",
                 "--jit-opt", "0", "--bf-opt", "1",     # one level each: a short run
                 "-o", str(out), env=env, timeout=600)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "with --stencil CELL_ADD=CELL_ADD:rmw, against the standard stencils" in p.stdout
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith("loops.bf  ")]
    assert rows and all(re.search(r"\[[\d.]+, [\d.]+\]\s+(faster|slower|not significant)", r)
                        for r in rows[-5:]), p.stdout
    keys = {b["metadata"]["name"] for b in json.loads(out.read_text())["benchmarks"]}
    assert any(k.endswith("/CELL_ADD=CELL_ADD:rmw") for k in keys), keys
