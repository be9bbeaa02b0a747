"""The JIT's recording policy (jit/policy.py): where traces start and which
recordings are not made, held to the oracle and read from the JitStats
record.  Each test names the policy it holds: without it, it fails."""
from __future__ import annotations

import textwrap

import pytest

from conftest import get_build
from shimlab import isa, isolate, oracle, vm
from shimlab.frontend import compile_text
from test_jit import CHILD_TIMEOUT, JIT_CC, _alarm, _same

pytestmark = pytest.mark.skipif(JIT_CC is None, reason="no compiler here builds the JIT modes")

# recursion without a loop in its hot path: the loop at the end runs 3 times
TAK = textwrap.dedent("""\
    def tak(x, y, z):
        if y < x:
            return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))
        return z


    for n in range(3):
        print(tak(12 + n, 8, 4))
""")


# a loop whose trace ends at the call in its body: that exit resumes at the CALL
CALL_IN_LOOP = textwrap.dedent("""\
    def double(i):
        return i * 2


    s = 0
    i = 0
    while i < 5000:
        s = s + double(i)
        i += 1
    print(s)
""")


def _minipy(src: str, name: str = "policy.py"):
    return compile_text(src, name, "minipy")


def _stats(program, mode="jit-direct", **opts):
    """One run at the JIT's defaults (threshold 64) unless opts say otherwise,
    in a forked child: the result and what the JIT's record holds."""
    b = get_build(mode, JIT_CC, count=True)

    def child():
        _alarm(CHILD_TIMEOUT)
        with vm.Loaded(b, program, jit={"stats": True, "opt": 3, **opts}) as loaded:
            r = loaded.run()
            s = loaded.jit.stats
            ran = sum(t.executed() for t in s.traces)
            total = sum(int(c) for c in list(r.counts)[:isa.NUM_OPCODES])
            return (r, loaded.jit.report(r.counts), [(t.start, t.side, t.why_end) for t in s.traces],
                    list(s.declined), s.recordings, ran / total)
    return isolate.call(f"{mode} --stats", child)


def test_recursion_is_traced_from_function_entries_and_return_points():
    """Hot function entries and return points start traces as loop headers do
    (jit_interp.h JIT_ANCHOR): tak has no hot loop, so without them it ran
    wholly in the interpreter."""
    program = _minipy(TAK)
    r, report, traces, _, _, share = _stats(program)
    _same(r, oracle.run(program))
    tak = next(f for f in program.functions if f.name == "tak")
    starts = {start for start, side, _ in traces if not side}
    assert tak.entry in starts, report
    # a return point: the instruction after a CALL
    assert any(program.code[pc - 1][0] == isa.OPCODE["CALL"] for pc in starts), report
    assert share > 0.5, report


@pytest.mark.parametrize("mode", ["jit-shim", "jit-table"])
def test_traces_at_function_entries_in_other_crossings(mode):
    program = _minipy(TAK)
    r, report, traces, _, _, _ = _stats(program, mode=mode, threshold=1)
    _same(r, oracle.run(program))
    assert traces, report


def test_no_recording_starts_where_the_instruction_has_no_stencil():
    """A return point at a RETURN (`return f(x)`) or a CALL, an exit that
    resumes at one: nothing to record, so no recording is made there and
    nothing is declined for it (each used to cost a recording, three for a
    side exit, and a decline)."""
    for src in (TAK, CALL_IN_LOOP):
        program = _minipy(src)
        r, report, _, declined, _, _ = _stats(program)
        _same(r, oracle.run(program))
        assert not [why for _, why in declined if "has no stencil" in why], report


def test_payback_countdown_checks_early_never_late():
    from shimlab.jit.policy import payback_countdown
    # 64 arrivals in 1 ms, 9 ms left: about 576 more, never fewer than the threshold
    assert payback_countdown(64, 1_000_000, 9_000_000, 64) == 576
    assert payback_countdown(64, 10_000_000, 1_000, 64) == 64
    assert payback_countdown(64, 0, 9_000_000, 64) == 64
    assert payback_countdown(1 << 62, 1, 1 << 40, 64) == (1 << 63) - 1     # capped at NEVER


def test_nothing_is_compiled_before_the_run_pays_for_the_jit():
    """payback_ms (`shimlab run`'s default): a run shorter than the JIT's
    start compiles nothing and loads no stencils; a longer one starts the JIT
    once it has spent that long, and both give the oracle's answer.  Without
    the policy the short run compiles its loop at the 64th back-edge."""
    short = _minipy("s = 0\ni = 0\nwhile i < 2000:\n    s = s + i\n    i += 1\nprint(s)\n")
    r, report, traces, _, recordings, _ = _stats(short, payback_ms=10_000)
    _same(r, oracle.run(short))
    assert traces == [] and recordings == 0, report
    assert "the JIT never started" in report and "recording(s) dropped" in report
    r, report, traces, _, _, _ = _stats(short)
    assert traces, report                     # (the same run without the policy)
    long = _minipy("s = 0\ni = 0\nwhile i < 3000000:\n    s = s + i % 7\n    i += 1\nprint(s)\n")
    r, report, traces, _, _, share = _stats(long, payback_ms=1)
    # 24 million instructions took the oracle 14 s: the switch interpreter
    # (held to the oracle by the differential tests) gives its answer, counts
    # and all, and CPython the sum
    _same(r, vm.run(get_build("switch", JIT_CC, count=True), long))
    assert r.output == f"{sum(i % 7 for i in range(3000000))}\n".encode()
    assert traces and share > 0.5, report
    assert "payback: nothing compiled before the run had spent 1 ms" in report
    assert "never started" not in report


def test_a_waiting_jit_records_nothing():
    """While the JIT waits for its payback, a loop that gets hot stops the run
    before its first instruction is logged (the recorder's buffer has no
    room): a recording made only to be dropped cost modpow.py more VM time
    than its JIT would.  Once the wait is over the loop records again and
    gets its trace.  Without the empty buffer every dropped recording logs
    a whole iteration."""
    from shimlab.jit import runtime
    program = _minipy("s = 0\ni = 0\nwhile i < 300000:\n    s = s + i % 7\n    i += 1\n"
                      "print(s)\n")
    b = get_build("jit-direct", JIT_CC)

    def child():
        _alarm(CHILD_TIMEOUT)
        logged, orig = [], runtime.Jit._wait_for_payback

        def wait(self, vm):
            logged.append(int(vm.rec_len))
            return orig(self, vm)
        runtime.Jit._wait_for_payback = wait
        out = []
        for ms in (10_000, 0.5):
            logged.clear()
            with vm.Loaded(b, program, jit={"opt": 3, "payback_ms": ms}) as loaded:
                r = loaded.run()
                out.append((r.output, list(logged), len(loaded.jit.stats.traces)))
        return out
    (out, waits, traces), (out2, _, traces2) = isolate.call("a waiting JIT", child)
    want = f"{sum(i % 7 for i in range(300000))}\n".encode()
    assert out == out2 == want
    assert waits and set(waits) == {0} and traces == 0, waits
    assert traces2 >= 1


def test_the_wait_follows_the_earlier_runs_of_the_program():
    """policy.remembered_wait: a JIT run no shorter than the interpreter
    alone makes this run wait past half as long again as the interpreter
    took; one short without its JIT's own work (under four waits), beside
    an interpreter's length known only as a lower bound, waits past half
    as long again as the JIT's run (to
    learn the interpreter's); with no JIT run, an interpreter's run under
    three waits waits past it; a long one (over four waits) starts the JIT
    at once; unknown, between, or no wait asked: the wait as asked."""
    from shimlab.jit.policy import remembered_wait
    from shimlab.jit.run_history import Lengths
    ms = 1_000_000
    w = 10 * ms

    def wait(*last):
        return remembered_wait(Lengths(*last), w, explore=False)
    assert remembered_wait(None, w) == w
    assert wait() == w
    # no run with the JIT yet
    assert wait(2 * ms, True) == w                                   # never less than asked
    assert wait(22 * ms, True) == 33 * ms
    assert wait(35 * ms, True) == w
    assert wait(41 * ms, True) == 0
    # the JIT lost to the interpreter alone (fib.py on Zen 3: 35.6 against 17.7 ms)
    assert wait(17 * ms, True, 36 * ms, 14 * ms) == 25_500_000
    assert wait(60 * ms, True, 60 * ms, 14 * ms) == 90 * ms
    # the JIT won: at once when long, else as asked
    assert wait(60 * ms, True, 45 * ms, 14 * ms) == 0
    assert wait(35 * ms, True, 30 * ms, 14 * ms) == w
    assert wait(60 * ms, False, 45 * ms, 14 * ms) == 0             # at least 60: won too
    # unknown: the interpreter's length only a lower bound, the JIT's run
    # short in VM time: wait past it; long in VM time: the JIT pays
    assert wait(10 * ms, False, 36 * ms, 14 * ms) == 54 * ms
    assert wait(10 * ms, False, 400 * ms, 100 * ms) == 0
    assert wait(10 * ms, False, 49 * ms, 18 * ms) == 73_500_000     # 31 without the JIT's own
    assert wait(10 * ms, False, 44 * ms, 2 * ms) == 0              # 42: long
    assert remembered_wait(Lengths(5000 * ms, True), 0) == 0        # --jit-threshold: no wait
    # a run exploring the JIT where it lost by little waits as asked
    assert remembered_wait(Lengths(17 * ms, True, 30 * ms, 14 * ms), w, explore=True) == w
    assert remembered_wait(Lengths(17 * ms, True, 36 * ms, 14 * ms), w, explore=True) == \
        25_500_000                                                  # 36 >= 2 x 17: not close


def test_a_run_sits_the_jit_out_where_it_lost_and_now_and_then_explores():
    """policy.sits_out: the JIT's run no shorter than the interpreter's, both
    measured to the end, or no JIT run and an interpreter's run under three
    waits: sit out; an exploring process (one in EXPLORE) takes the other
    option where the two are within 2x, and only there."""
    from shimlab.jit.policy import sits_out
    from shimlab.jit.run_history import Lengths
    ms = 1_000_000
    for last, plain, exploring in (
            (None, False, False), (Lengths(), False, False),
            (Lengths(20 * ms, True), True, True),       # no JIT run yet, too short to pay
            (Lengths(35 * ms, True), False, False),     # no JIT run yet, long enough
            (Lengths(10 * ms, False, 36 * ms, 14 * ms), False, False),  # a lower bound only
            (Lengths(20 * ms, True, 32 * ms, 14 * ms), True, False),   # lost, close
            (Lengths(20 * ms, True, 45 * ms, 14 * ms), True, True),    # lost by over 2x
            (Lengths(33 * ms, True, 23 * ms, 11 * ms), False, True),   # won, close
            (Lengths(900 * ms, True, 300 * ms, 60 * ms), False, False)):  # won by over 2x
        assert sits_out(last, 10 * ms, explore=False) == plain, last
        assert sits_out(last, 10 * ms, explore=True) == exploring, last
    assert not sits_out(Lengths(20 * ms, True), 0)                    # no wait: no history
