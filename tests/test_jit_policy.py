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
