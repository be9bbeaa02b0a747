"""The copy-and-patch JIT against the oracle, in every JIT mode of shimlab.modes
(jit-shim, jit-direct, jit-direct-handler, and jit-table where it exists).

Every JIT run happens in a forked child (shimlab.isolate.call), so a fault in
JIT code fails one test instead of killing pytest, and so the cffi callback a
JIT allocates never lands in the pytest process.  One compiler is used: the
default one that builds the tail-call interpreter.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, ROOT, get_build, interpreter_configs
from shimlab import isa, isolate, modes, oracle, vm
from shimlab.modes import JIT as JIT_MODES
from shimlab.frontend import compile_text, load_program
from strategies import bf_programs, minipy_programs


def _jit_cc() -> str | None:
    tail = [cc for mode, cc in interpreter_configs() if mode == "tailcall"]
    if not tail:
        return None
    from shimlab import toolchain
    try:
        default = toolchain.get_compiler(None, need=set(modes.get("tailcall").features)).name
    except Exception:
        return tail[0]
    return default if default in tail else tail[0]


JIT_CC = _jit_cc()
pytestmark = pytest.mark.skipif(JIT_CC is None, reason="no compiler here builds the tail-call "
                                "interpreter (preserve_none + musttail), so no JIT mode")

CHILD_TIMEOUT = 30.0            # seconds a forked child may run JIT code
ORACLE_STEPS = 10_000_000      # examples longer than this are held to the tailcall count build
PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1

LOOP_BF = "++++++++[>++++++++<-]>+.>+++++[<+.>-]"          # "ABCDEF", two loops
LONG_BODY_BF = "++++++++[>+>++>+++>++++<<<<-]>>>>+.<<<+."   # loop body of 10 instructions


# ---- helpers ----------------------------------------------------------------------

def _same(got, want, what=""):
    assert got.status == want.status, (what, got.status, want.status)
    assert got.err_pc == want.err_pc, what
    assert got.err_value == want.err_value, what
    assert got.output == want.output, what
    assert got.head == want.head, what
    assert got.tape == want.tape, what
    assert got.counts == want.counts, what


def _alarm(seconds):
    """In a child: die by SIGALRM after `seconds`, so a JIT that loops forever
    fails its test (isolate.Crash) instead of hanging pytest."""
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _jit_runs(program, data, runs, tape_len=oracle.TAPE_LEN, timeout=CHILD_TIMEOUT):
    """runs: [(mode, jit options)]; each on a count build, all in one forked child.
    Returns [(Result, number of traces, report)]."""
    builds = [get_build(mode, JIT_CC, count=True) for mode, _ in runs]

    def child():
        _alarm(timeout)
        out = []
        for b, (_, opts) in zip(builds, runs):
            with vm.Loaded(b, program, data, tape_len=tape_len, jit=dict(opts)) as loaded:
                result = loaded.run()
                out.append((result, len(loaded.jit.stats.traces), loaded.jit.report()))
        return out
    return isolate.call(f"JIT runs of {program.name}", child)


def _input_for(path):
    inp = path.with_suffix(".in")
    return inp.read_bytes() if inp.exists() else b""


def _examples():
    files = sorted(EXAMPLES.glob("bf/*.bf")) + sorted(EXAMPLES.glob("minipy/*.py"))
    return [p for p in files if p.stem != "heavy"]


@functools.lru_cache(maxsize=None)
def _expected(path: str):
    """The oracle's result; for an example of more than ORACLE_STEPS instructions (which
    the tailcall count build tells cheaply) the tailcall count build's, which test_modes
    holds to the oracle.  Returns (result, who)."""
    program, data = load_program(path), _input_for(Path(path))
    native = vm.run(get_build("tailcall", JIT_CC, count=True), program, data)
    if sum(native.counts) > ORACLE_STEPS:
        return native, "tailcall"
    return oracle.run(program, data, max_steps=ORACLE_STEPS), "oracle"


def _maps() -> list[tuple[int, int, str, str]]:
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi, parts[1], parts[5].strip() if len(parts) > 5 else ""))
    return out


def _bf(src):
    return compile_text(src, "t.bf", "bf")


# ---- the example corpus --------------------------------------------------------------

@pytest.mark.parametrize("mode", JIT_MODES)
@pytest.mark.parametrize("path", _examples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_same_as_oracle(path, mode):
    want, who = _expected(str(path))
    assert want.status == 0
    program = load_program(path)
    runs = _jit_runs(program, _input_for(path), [(mode, {"threshold": 1}), (mode, {})])
    for (got, ntraces, report), label in zip(runs, ("threshold 1", "default threshold")):
        _same(got, want, f"{mode}, {label}, against the {who}")
    expected = path.with_suffix(".out")
    if expected.exists():
        assert runs[0][0].output == expected.read_bytes()
    # every example loops: at threshold 1 the JIT must have compiled something
    assert runs[0][1] >= 1, runs[0][2]


def test_examples_include_inputs_and_both_languages():
    names = {p.name for p in _examples()}
    assert {"cat.bf", "rot13.bf", "hello.bf"} <= names
    assert any(n.endswith(".py") for n in names)
    assert "heavy.bf" not in names and "heavy.py" not in names
    assert _input_for(EXAMPLES / "bf" / "cat.bf") and _input_for(EXAMPLES / "bf" / "rot13.bf")


# ---- random programs -------------------------------------------------------------------

PROPERTY = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ALL_RUNS = [(m, {"threshold": t}) for m in JIT_MODES for t in (1, 2)]
BF_TAPE = 64      # a small tape: loops that walk off it fail after a few iterations




def _loop_headers(program) -> set[int]:
    return {pc + arg for pc, (op, arg) in enumerate(program.code)
            if isa.INSTRUCTIONS[op].flow in (isa.Flow.BACKEDGE, isa.Flow.BACKEDGE_BRANCH)}


def _check(program, data=b"", tape_len=oracle.TAPE_LEN, max_steps=200_000, in_given=True):
    """Every JIT mode at thresholds 1 and 2 against the oracle (given: inside @given)."""
    note = event if in_given else (lambda _: None)
    try:
        want = oracle.run(program, data, tape_len=tape_len, max_steps=max_steps)
    except TimeoutError:
        if not in_given:
            raise
        assume(False)
    runs = ALL_RUNS
    note(f"oracle: {want.status.name}")
    if want.status == isa.Error.TAPE_BOUNDS and want.err_pc in _loop_headers(program):
        note("error at a loop header")     # a deopt at a trace's first instruction
    for (mode, opts), (got, _, _) in zip(runs, _jit_runs(program, data, runs,
                                                         tape_len=tape_len)):
        _same(got, want, f"{mode} threshold {opts['threshold']}")
    return want


@st.composite
def bf_error_loops(draw):
    """A loop that walks the head off the tape after some iterations, around random code."""
    start = ">" * draw(st.integers(0, 40))
    body = draw(bf_programs(3))                       # depth 3: no nested loops
    step = draw(st.sampled_from("<>")) * draw(st.integers(1, 4))
    mark = draw(st.sampled_from(["+", "-", "++"]))
    return start + draw(bf_programs(2)) + "+[" + body + step + mark + "]" + draw(bf_programs(3))


@PROPERTY
@given(src=st.one_of(bf_programs(), bf_error_loops()), data=st.binary(max_size=6))
def test_random_bf_same_as_oracle(src, data):
    assume(src.strip())
    _check(_bf(">>" + src), data, tape_len=BF_TAPE)


@st.composite
def minipy_error_loops(draw):
    """A while loop whose body divides or shifts by the counter: deopts (b == -1,
    b == 0, negative shifts) and errors raised inside a compiled trace."""
    op = draw(st.sampled_from(["//", "%", "<<", ">>"]))
    num = draw(st.integers(-1000, 1000))
    start, stop = draw(st.integers(-4, 12)), draw(st.integers(-12, 4))
    step = draw(st.integers(1, 3))
    big = draw(st.sampled_from(["1", "12345678901"]))          # a LOAD_CONST in the trace
    return textwrap.dedent(f"""\
        k = {start}
        s = 0
        while k > {stop}:
            s = s + ({num} {op} k) * {big}
            k -= {step}
        print(s)
        """)


@PROPERTY
@given(src=st.one_of(minipy_programs(), minipy_error_loops()))
def test_random_minipy_same_as_oracle(src):
    _check(compile_text(src, "random.py", "minipy"))


@pytest.mark.parametrize("src", ["+>+>+>+>+[+<]", "+[+>+]", "+[+>+>>+]"])
def test_bf_error_inside_a_trace(src):
    """The head walks off the tape in a MOVE inside the loop body: the MOVE deopts,
    the interpreter re-runs it and reports the error at its pc."""
    program = _bf(src)
    want = _check(program, tape_len=BF_TAPE, in_given=False)
    assert want.status == isa.Error.TAPE_BOUNDS
    assert want.err_pc not in _loop_headers(program)


# A BF loop that starts with the instruction that deopts.  The first program is
# correct and terminates, but writes more than the 64 KiB output buffer from
# "[.-]", whose first instruction (CELL_OUT) deopts when the buffer is full;
# ">>+[<+]" walks left off the tape (its MOVE deopts).
HEADER_DEOPT = [("+" * 20 + "[>" + "+" * 14 + "[>-[.-]<-]<-]", isa.Error.OK),
                (">>+[<+]", isa.Error.TAPE_BOUNDS)]


@functools.lru_cache(maxsize=None)
def _bf_oracle(src):
    return oracle.run(_bf(src), tape_len=BF_TAPE)


@pytest.mark.parametrize("mode", JIT_MODES)
def test_deopt_at_a_loop_header_runs_the_instruction(mode):
    """A deopt exit resumes AT its instruction; at a loop header that is where
    ENTER_JIT now is, and entering the trace again would deopt again forever."""
    programs = [(_bf(src), status) for src, status in HEADER_DEOPT]
    wants = [_bf_oracle(src) for src, _ in HEADER_DEOPT]
    assert [w.status for w in wants] == [status for _, status in HEADER_DEOPT]
    assert len(wants[0].output) > 1 << 16
    assert wants[1].err_pc in _loop_headers(programs[1][0])
    # a correct run takes milliseconds; the bug loops forever
    timeout = 1.5
    for (program, _), want in zip(programs, wants):
        for (got, _, _), th in zip(_jit_runs(program, b"", [(mode, {"threshold": 1}),
                                                           (mode, {})],
                                             tape_len=BF_TAPE, timeout=timeout), (1, 64)):
            _same(got, want, f"{mode} threshold {th}")


@pytest.mark.parametrize("src, error", [
    ("k = 6\ns = 0\nwhile k > -4:\n    s = s + 100 // k\n    k -= 1\nprint(s)\n",
     isa.Error.ZERO_DIVISION),
    ("k = 6\ns = 0\nwhile k > -4:\n    s = s + 100 % k\n    k -= 1\nprint(s)\n",
     isa.Error.ZERO_DIVISION),
    ("k = 6\ns = 0\nwhile k > -4:\n    s = s + (1 << k)\n    k -= 1\nprint(s)\n",
     isa.Error.NEGATIVE_SHIFT),
])
def test_minipy_error_inside_a_trace(src, error):
    program = compile_text(src, "err.py", "minipy")
    want = _check(program, in_given=False)
    assert want.status == error
    runs = _jit_runs(program, b"", [("jit-direct", {"threshold": 1, "stats": True})])
    assert runs[0][1] >= 1 and "taken" in runs[0][2]     # the error left through an exit


# ---- one trace body for three crossings -------------------------------------------------

def _recorded_traces(program, data=b""):
    """The Trace objects the JIT compiles for a program (recorded in a child)."""
    b = get_build("jit-direct", JIT_CC)

    def child():
        _alarm(CHILD_TIMEOUT)
        from shimlab.jit import trace     # (the JIT reads trace.from_recording when it records)
        traces, orig = [], trace.from_recording

        def spy(*args, **kwargs):
            t = orig(*args, **kwargs)
            traces.append(t)
            return t
        trace.from_recording = spy
        with vm.Loaded(b, program, data, jit={"threshold": 1}) as loaded:
            loaded.run()
        return traces
    return isolate.call("recording traces", child)


MINIPY_BODY = """\
s = 0
k = 40
while k > -5:
    if k % 3 == 0:
        s = s + 12345678901 // (k - 1) - ((k + 9) << 2)
    else:
        s = s - (k << 2)
    k -= 1
print(s)
"""


@pytest.mark.parametrize("which", ["squares.bf", "minipy"])
def test_every_mode_emits_the_same_trace_body(which):
    from shimlab.jit.compile import Context, compile_trace
    program = load_program(EXAMPLES / "bf" / "squares.bf") if which == "squares.bf" else \
        compile_text(MINIPY_BODY, "body.py", "minipy")
    traces = _recorded_traces(program)
    assert traces
    code_addr, base, tallies = 0x5550_0000_0000, 0x5550_4000_0000, 0x5560_0000_0000
    handlers = [base - 0x100000 + 64 * i for i in range(isa.NUM_OPCODES)]
    names = {t.stencil for tr in traces for t in tr.ops}
    kinds_seen = set()
    for trace in traces:
        for count in (False, True):
            for stats in (False, True):
                got = {}
                for mode in JIT_MODES:
                    ctx = Context(mode, code_addr, program.consts, program.code, handlers,
                                  count=count, tallies=tallies if stats else None)
                    got[mode] = compile_trace(trace, ctx, base)
                shim = got["jit-shim"]
                # traces in another register order (jit-trampoline) have other bytes
                # and slots of their own, but the same exits
                for mode in [m for m in got if modes.get(m).trace_order]:
                    c = got.pop(mode)
                    assert c.exits == shim.exits and c.entry_stub > 0, mode
                    assert len(c.code) == c.body_size + c.slot_size * len(c.exits)
                for mode, c in got.items():
                    assert (c.body_size, c.slot_size, c.exits, len(c.code)) == \
                        (shim.body_size, shim.slot_size, shim.exits, len(shim.code)), mode
                    assert c.code[:c.body_size] == shim.code[:shim.body_size], \
                        (mode, trace.start, count, stats)
                    assert len(c.code) == c.body_size + c.slot_size * len(c.exits)
                if shim.exits:
                    kinds_seen.add("exits")
                    slots = {m: c.code[c.body_size:] for m, c in got.items()}
                    # each way back has its own exit stubs (jit-table leaves as jit-direct)
                    stubs = {modes.get(m).exit_stencil for m in got}
                    assert len(set(slots.values())) == len(stubs) >= 3, stubs
    assert "exits" in kinds_seen
    if which == "minipy":      # the program was chosen to need these stencils
        assert {"LOAD_CONST", "FLOORDIV", "MOD", "LSHIFT"} <= names, names


# ---- W^X and MDWE -------------------------------------------------------------------------

def _run_and_map(mode):
    program = _bf(LOOP_BF)
    b = get_build(mode, JIT_CC)

    def child():
        _alarm(CHILD_TIMEOUT)
        with vm.Loaded(b, program, jit={"threshold": 1}) as loaded:
            r = loaded.run()
            return r.output, list(loaded.jit.memory.mappings), _maps()
    return program, isolate.call(f"{mode} W^X", child)


@pytest.mark.parametrize("mode", JIT_MODES)
def test_jit_code_is_mapped_read_execute_never_writable(mode):
    program, (output, mappings, maps) = _run_and_map(mode)
    assert output == oracle.run(program).output
    assert mappings, "the JIT compiled nothing"
    for addr, size in mappings:
        over = [m for m in maps if m[0] < addr + size and addr < m[1]]
        assert over, f"JIT code at {addr:#x} is not mapped"
        assert sum(min(hi, addr + size) - max(lo, addr) for lo, hi, _, _ in over) == size
        for lo, hi, perms, _ in over:
            assert perms[:3] == "r-x", (hex(lo), hex(hi), perms)


WX_SCRIPT = """
import json, sys
from shimlab import vm
from shimlab.interp import build
from shimlab.frontend import compile_text
with vm.Loaded(build.build(sys.argv[2], sys.argv[3]), compile_text(sys.argv[1], "t.bf", "bf"),
               jit={"threshold": 1}) as loaded:
    out = loaded.run().output
    wx = [line.strip() for line in open("/proc/self/maps")
          if "w" in line.split()[1] and "x" in line.split()[1]]
print(json.dumps({"output": out.hex(), "wx": wx}))
"""


def _fresh_python(script, *args):
    """The last line of a fresh interpreter's stdout, as JSON (nothing inherited from
    pytest: no cffi callback page made by another test)."""
    import json
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_no_mapping_is_writable_and_executable():
    get_build("jit-direct", JIT_CC)
    out = _fresh_python(WX_SCRIPT, LOOP_BF, "jit-direct", JIT_CC)
    assert bytes.fromhex(out["output"]) == oracle.run(_bf(LOOP_BF)).output
    assert not out["wx"], out["wx"]


def _set_mdwe():
    """PR_SET_MDWE(REFUSE_EXEC_GAIN) on this process: None, or why the kernel refused."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
        return f"prctl(PR_SET_MDWE) refused: {os.strerror(ctypes.get_errno())}"
    return None


MDWE_SCRIPT = """
import ctypes, json, os, sys
from shimlab import vm
from shimlab.interp import build
from shimlab.frontend import compile_text
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:
    print(json.dumps({"refused": os.strerror(ctypes.get_errno())})); sys.exit(0)
program = compile_text(sys.argv[1], "t.bf", "bf")
out = {}
try:
    with vm.Loaded(build.build("jit-direct", sys.argv[2]), program, jit={"threshold": 1}) as l:
        out["jit"] = [l.run().output.hex(), l.jit.memory.dual, len(l.jit.stats.traces)]
except Exception as e:
    out["jit_error"] = f"{type(e).__name__}: {e}"
out["tailcall"] = vm.run(build.build("tailcall", sys.argv[2]), program).output.hex()
print(json.dumps(out))
"""


def test_mdwe_process_falls_back_to_dual_mapping():
    """A process that is under MDWE from the start (a fresh interpreter: no cffi
    callback page inherited from pytest)."""
    get_build("jit-direct", JIT_CC), get_build("tailcall", JIT_CC)
    out = _fresh_python(MDWE_SCRIPT, LOOP_BF, JIT_CC)
    if "refused" in out:
        pytest.skip(f"prctl(PR_SET_MDWE) refused: {out['refused']} (kernel before 6.3?)")
    want = oracle.run(_bf(LOOP_BF)).output
    assert bytes.fromhex(out["tailcall"]) == want
    assert "jit_error" not in out, out["jit_error"]
    output, dual, ntraces = out["jit"]
    assert bytes.fromhex(output) == want and dual and ntraces >= 1


def test_mdwe_after_loading_uses_dual_mapping():
    """MDWE switched on once the VM is loaded: placing a trace finds mprotect(PROT_EXEC)
    refused, and the code goes through two views of one memfd instead."""
    program = _bf(LOOP_BF)
    jd, tc = get_build("jit-direct", JIT_CC, count=True), get_build("tailcall", JIT_CC)

    def child():
        _alarm(CHILD_TIMEOUT)
        with vm.Loaded(jd, program, jit={"threshold": 1}) as loaded:
            why = _set_mdwe()
            if why:
                return why
            r = loaded.run()
            maps = _maps()
            mappings = list(loaded.jit.memory.mappings)
            jit = (r, loaded.jit.memory.dual, len(loaded.jit.stats.traces), mappings,
                   loaded.jit.report())
        return jit, maps, vm.run(tc, program).output
    got = isolate.call("MDWE child", child)
    if isinstance(got, str):
        pytest.skip(got)
    (r, dual, ntraces, mappings, report), maps, tail_out = got
    want = oracle.run(program)
    _same(r, want)
    assert dual and ntraces >= 1
    assert "dual-mapped" in report
    assert tail_out == want.output
    for addr, size in mappings:     # the executable view only; the writable one is gone
        over = [m for m in maps if m[0] < addr + size and addr < m[1]]
        assert over and all(perms[:3] == "r-x" and "memfd" in name
                            for _, _, perms, name in over), over
    assert not [m for m in maps if "shimlab-jit" in m[3] and "w" in m[2]]


# ---- --stats and --perf-map ----------------------------------------------------------------

def _stats_run(mode, src, threshold=1, perf_map=False, **opts):
    program = _bf(src)
    b = get_build(mode, JIT_CC, count=True)

    def child():
        _alarm(CHILD_TIMEOUT)
        if perf_map:
            try:
                os.unlink(f"/tmp/perf-{os.getpid()}.map")
            except FileNotFoundError:
                pass
        with vm.Loaded(b, program, jit={"threshold": threshold, "stats": True,
                                        "perf_map": perf_map, **opts}) as loaded:
            r = loaded.run()
            j = loaded.jit
            traces = [(t.index, t.start, t.ops, t.size, t.address, t.entries(), t.exit_counts(),
                       list(t.exits)) for t in j.stats.traces]
            return (r, j.report(), traces, list(j.stats.declined), list(j.memory.mappings),
                    os.getpid())
    return program, isolate.call(f"{mode} --stats", child)


@pytest.mark.parametrize("mode", JIT_MODES)
def test_stats_report_lists_traces_sizes_entries_and_exits(mode):
    program, (r, report, traces, declined, _, _) = _stats_run(mode, LOOP_BF)
    _same(r, oracle.run(program))
    assert len(traces) >= 1 and not declined, report
    lines = report.splitlines()
    head = re.match(r"jit \((\S+)\): (\d+) trace\(s\) compiled, (\d+) declined, (\d+) "
                    r"recording\(s\), (\d+) bytes of code", lines[0])
    assert head, lines[0]
    assert head.group(1) == mode and int(head.group(2)) == len(traces)
    assert int(head.group(5)) == sum(t[3] for t in traces)
    for index, start, nops, size, _, entries, exit_counts, exits in traces:
        line = next(ln for ln in lines if ln.strip().startswith(f"trace {index}:"))
        assert f"loop at pc {start}" in line and f"{nops} instructions" in line
        assert f"{size} bytes" in line and f"entered {entries} times" in line, line
        assert entries >= 1 and size > 0
        # every entry leaves through exactly one exit
        assert sum(exit_counts) == entries, (exit_counts, entries)
        for i, n in enumerate(exit_counts):
            if n:
                assert f"exit {i} -> pc {exits[i]}: taken {n} times" in report


def test_perf_map_names_traces_inside_jit_memory():
    program, (r, _, traces, _, mappings, pid) = _stats_run("jit-direct", LOOP_BF, perf_map=True)
    path = f"/tmp/perf-{pid}.map"
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    finally:
        if os.path.exists(path):
            os.unlink(path)
    assert r.output == oracle.run(program).output
    assert lines
    heads = 0
    for line in lines:
        m = re.fullmatch(r"([0-9a-f]+) ([0-9a-f]+) (shimlab:trace(\d+)\S*)", line)
        assert m, line
        addr, size = int(m.group(1), 16), int(m.group(2), 16)
        assert size > 0
        assert any(a <= addr and addr + size <= a + s for a, s in mappings), line
        if m.group(3).endswith(f":pc{traces[int(m.group(4))][1]}") and "@" not in m.group(3):
            t = traces[int(m.group(4))]
            assert (addr, size) == (t[4], t[3]), line
            heads += 1
    assert heads == len(traces)


# ---- bounds ---------------------------------------------------------------------------------

@pytest.mark.parametrize("opts, reason", [
    ({"max_trace": 5}, r"longer than 5 instructions"),
    ({"max_code_bytes": 16}, r"the JIT's code limit \(16 bytes\) is reached"),
    ({"max_trace_bytes": 16}, r"\d+ bytes of code, more than the 16 allowed"),
])
@pytest.mark.parametrize("mode", ["jit-shim", "jit-direct-handler"])
def test_trace_bounds_decline_and_say_why(mode, opts, reason):
    program, (r, report, traces, declined, _, _) = _stats_run(mode, LONG_BODY_BF, **opts)
    _same(r, oracle.run(program))
    assert not traces and declined, report
    assert re.search(r"declined: loop at pc \d+: " + reason, report), report
    assert all(re.fullmatch(reason, why) or re.match(reason, why) for _, why in declined)


def test_bounds_do_not_decline_what_fits():
    program, (r, report, traces, declined, _, _) = _stats_run(
        "jit-direct", LONG_BODY_BF, max_trace=64, max_trace_bytes=1 << 16)
    _same(r, oracle.run(program))
    assert traces and not declined, report


# ---- the crossings in the binaries ------------------------------------------------------------

def _disassemble(path, symbol):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(path)],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(rf"<{re.escape(symbol)}>:\n(.*?)(?:\n\n|\Z)", out, re.S)
    assert m, f"{symbol} not found in {path}"
    return [ln.split("\t", 1)[1].strip() for ln in m.group(1).splitlines() if "\t" in ln]


def test_shim_saves_callee_saved_registers_and_calls_through_a_register():
    insns = _disassemble(get_build("jit-shim", JIT_CC).path, "sl_jit_shim")
    pushed = {m.group(1) for i in insns if (m := re.fullmatch(r"push\s+%(\w+)", i))}
    assert {"rbx", "r12", "r13", "r14", "r15"} <= pushed, insns
    assert any(re.fullmatch(r"call\s+\*%\w+", i) for i in insns), insns
    assert insns[-1].startswith("ret") or any(i.startswith("ret") for i in insns)
    enter = _disassemble(get_build("jit-shim", JIT_CC).path, "sl_op_ENTER_JIT")
    calls = [i for i in enter if i.startswith("call")]
    assert calls and all("<sl_jit_shim>" in c for c in calls), calls   # direct, not the PLT


def test_shim_with_arguments_is_a_c_call_that_takes_the_cached_values():
    """jit-shim-args at K = 3: ENTER_JIT calls the shim directly (not inlined),
    the three values past the sixth C argument go through the C stack, and
    the shim saves rbx and r12-r15 around its call into the trace."""
    from shimlab.interp import build
    path = build.build("jit-shim-args", JIT_CC, cache=3).path
    insns = _disassemble(path, "sl_jit_shim_args")
    pushed = {m.group(1) for i in insns if (m := re.fullmatch(r"push\s+%(\w+)", i))}
    assert {"rbx", "r12", "r13", "r14", "r15"} <= pushed, insns
    assert any(re.fullmatch(r"call\s+\*%\w+", i) for i in insns), insns
    enter = _disassemble(path, "sl_op_ENTER_JIT")
    calls = [i for i in enter if i.startswith("call")]
    assert len(calls) == 1 and "<sl_jit_shim_args>" in calls[0], calls
    before = enter[:enter.index(calls[0])]
    assert sum(i.startswith("push") for i in before) >= 4, before   # table and c0..c2


@pytest.mark.parametrize("count", [False, True])
def test_direct_enter_jit_is_a_tail_call(count):
    insns = _disassemble(get_build("jit-direct", JIT_CC, count=count).path, "sl_op_ENTER_JIT")
    real = [i for i in insns if not re.match(r"(nop|data16|xchg\s+%ax,%ax|int3|cs nop)", i)]
    assert re.fullmatch(r"jmp\s+\*%?\S+", real[-1]), real
    assert not [i for i in real if i.startswith("call")], real
    assert not [i for i in real if i.startswith("push")], real


# ---- the command line ---------------------------------------------------------------------------

def _shimlab(*args, input=None):
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *args], capture_output=True,
                          cwd=ROOT, timeout=120, input=input)


def test_cli_jit_mode_output_equals_tailcall():
    get_build("jit-direct-handler", JIT_CC), get_build("tailcall", JIT_CC)
    hello = str(EXAMPLES / "bf" / "hello.bf")
    jit = _shimlab("run", hello, "--mode", "jit-direct-handler", "--jit-threshold", "1",
                   "--cc", JIT_CC)
    tail = _shimlab("run", hello, "--mode", "tailcall", "--cc", JIT_CC)
    assert jit.returncode == 0 and tail.returncode == 0, jit.stderr
    assert jit.stdout == tail.stdout == (EXAMPLES / "bf" / "hello.out").read_bytes()


def test_cli_stats_prints_the_report():
    path = str(EXAMPLES / "bf" / "squares.bf")
    p = _shimlab("run", path, "--mode", "jit-shim", "--jit-threshold", "1", "--stats",
                 "--cc", JIT_CC)
    assert p.returncode == 0, p.stderr
    assert p.stdout == (EXAMPLES / "bf" / "squares.out").read_bytes()
    err = p.stderr.decode()
    assert re.search(r"jit \(jit-shim\): [1-9]\d* trace\(s\) compiled", err), err
    assert re.search(r"trace 0: loop at pc \d+ .*\d+ bytes.*entered \d+ times", err), err


@pytest.mark.parametrize("flag", ["--stats", "--perf-map"])
def test_cli_jit_flags_need_a_jit_mode(flag):
    p = _shimlab("run", str(EXAMPLES / "bf" / "hello.bf"), "--mode", "tailcall", flag)
    err = p.stderr.decode()
    assert p.returncode == 1 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("shimlab: ") and "JIT mode" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "-3"])
def test_cli_jit_threshold_must_be_positive(value):
    p = _shimlab("run", str(EXAMPLES / "bf" / "hello.bf"), "--mode", "jit-direct",
                 f"--jit-threshold={value}", "--cc", JIT_CC)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("shimlab: ") and "--jit-threshold" in err
    assert p.stdout == b""
