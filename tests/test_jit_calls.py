"""Traces that run through calls and returns (jit/trace.py, peachpy_stencils/frames.py):
what the traces hold, and every JIT mode at every optimizer level and K
against the oracle where a call or a return in a trace does something the
interpreter must see exactly: a stack overflow (by depth and by stack
size), a side exit inside a callee, a return to another caller than the
recorded one (RETURN:guard), recursion that would unroll without bound."""
from __future__ import annotations

import textwrap

import pytest

import differential
from conftest import get_build
from shimlab import isa, isolate, oracle, vm
from shimlab.frontend import compile_text
from shimlab.jit import trace as jtrace
from test_jit import CHILD_TIMEOUT, JIT_CC, _alarm, _same

pytestmark = pytest.mark.skipif(JIT_CC is None, reason="no compiler here builds the JIT modes")


def _minipy(src: str):
    return compile_text(textwrap.dedent(src), "calls.py", "minipy")


def _traces(program, mode="jit-direct", data=b"", limits=None, **opts):
    """One run in a forked child: the result and each trace's (start, side,
    its instructions' (name, stencil, frame))."""
    b = get_build(mode, JIT_CC, count=True)

    def child():
        _alarm(CHILD_TIMEOUT)
        with vm.Loaded(b, program, data, jit={"stats": True, "opt": 3, "threshold": 1, **opts},
                       **(limits or {})) as loaded:
            r = loaded.run()
            traces = [(t.trace.start, t.side, [(o.name, o.stencil, o.frame) for o in t.trace.ops],
                       t.why_end) for t in loaded.jit.stats.traces]
            return r, traces, loaded.jit.report(r.counts)
    return isolate.call(f"{mode} --stats", child)


# a loop whose body calls a function that calls another
NESTED = """\
    def sq(x):
        return x * x


    def f(a, b):
        t = sq(a) + b
        return t % 1000003


    s = 0
    i = 0
    while i < 3000:
        s = f(s + i, i)
        i += 1
    print(s)
"""


def test_traces_run_through_calls_and_returns():
    """With the loop's body in traces, every call and return in it runs in a
    trace: the program crosses from the interpreter a few times, not once or
    twice a call (as when a trace ended at each CALL and RETURN)."""
    program = _minipy(NESTED)
    r, traces, report = _traces(program, threshold=64)
    _same(r, oracle.run(program))
    calls = [ops for _, _, ops, _ in traces if any(n == "CALL" for n, _, _ in ops)]
    assert calls, report
    # a return whose CALL is in the same trace: no guard, back in the caller's frame
    assert any(s == "RETURN" for ops in calls for _, s, _ in ops), report
    assert any(fr for ops in calls for _, _, fr in ops), report
    assert "runs through" in report
    entries = [int(x.split()[1]) for x in report.split(", ") if x.startswith("entered ")]
    assert sum(entries) < 300, report      # (3,000 iterations, 6,000 calls)
    ran = report.split("VM instructions run in traces: ")[1].split()
    assert int(ran[0]) > 0.95 * int(ran[2]), report


def test_the_trace_records_its_frames():
    """from_recording numbers each frame and guards a return it did not call"""
    program = _minipy(NESTED)
    f = next(fn for fn in program.functions if fn.name == "f")
    sq = next(fn for fn in program.functions if fn.name == "sq")
    # f's path from its entry: the call of sq, its body, its return, f's return
    rec, pc = [], f.entry
    while True:
        rec.append(pc)
        op, arg = program.code[pc]
        name = isa.INSTRUCTIONS[op].name
        if name == "CALL":
            callee_ret = pc + 1
            q = sq.entry
            while isa.INSTRUCTIONS[program.code[q][0]].name != "RETURN":
                rec.append(q)
                q += 1
            rec.append(q)
            pc = callee_ret
            continue
        if name == "RETURN":
            break
        pc += 1
    back = next(pc for pc, (op, arg) in enumerate(program.code)
                if op == isa.OPCODE["CALL"] and program.functions[arg] is f) + 1
    t = jtrace.from_recording(program.code, rec, stop_pc=back)
    rets = [o for o in t.ops if o.name == "RETURN"]
    assert [o.stencil for o in rets] == ["RETURN", "RETURN:guard"]
    assert rets[0].ret_pc == next(o.pc for o in t.ops if o.name == "CALL") + 1
    assert rets[1].ret_pc == back and t.end_pc == back and not t.closed
    assert t.ops[0].frame == 0 and rets[0].frame == 1
    # with where each RETURN can go known: RETURN:out, and a RETURN:to (a side
    # exit, no instruction of the program) for each other return point of f
    returns = jtrace.return_points(program.code, [fn.entry for fn in program.functions])
    f_returns = sorted(pc + 1 for pc, (op, arg) in enumerate(program.code)
                       if op == isa.OPCODE["CALL"] and program.functions[arg] is f)
    assert returns[rets[1].pc] == tuple(f_returns) and back in f_returns
    t = jtrace.from_recording(program.code, rec, stop_pc=back, returns=returns)
    out = [o for o in t.ops if o.name == "RETURN"]
    assert [o.stencil for o in out] == ["RETURN", "RETURN:out"] + ["RETURN:to"] * (
        len(f_returns) - 1)
    assert [o.exit_pc for o in out[2:]] == [r for r in f_returns if r != back]
    assert all(o.synthetic and o.frame for o in out[2:])


def test_a_trace_made_long_by_its_calls_ends_rather_than_being_declined():
    program = _minipy(NESTED)
    with pytest.raises(jtrace.Decline):       # (no call: too long is declined, as before)
        jtrace.from_recording(program.code, [0, 1, 2, 3], stop_pc=4, max_ops=1)
    f = next(fn for fn in program.functions if fn.name == "f")
    call = next(pc for pc in range(f.entry, len(program.code))
                if program.code[pc][0] == isa.OPCODE["CALL"])
    sq = program.functions[program.code[call][1]]
    rec = list(range(f.entry, call + 1)) + [sq.entry, sq.entry + 1]
    t = jtrace.from_recording(program.code, rec, stop_pc=sq.entry + 2,
                              max_ops=call - f.entry + 1)
    assert not t.closed and t.end_pc == sq.entry + 1 and "with its calls" in t.why_end
    assert [o.name for o in t.ops][-2:] == ["CALL", "LOAD_LOCAL"]


RECURSE = """\
    def down(n):
        if n == 0:
            return 0
        return down(n - 1) + 1


    print(down(50))
    print(down(400))
    print(down(N))
"""


@pytest.mark.parametrize("n", [20_000, 9_999, 9_998])
def test_recursion_depth_overflow_in_a_trace_is_the_oracles(n):
    """The CALL stencil's overflow check deopts and the interpreter raises it
    exactly (status, pc, depth) in every JIT mode, level and K; at 9,998
    deep nothing overflows (the main frame is depth 0, max_depth 10,000)."""
    program = _minipy(RECURSE.replace("N", str(n)))
    want = oracle.run(program)
    if n == 20_000:
        assert want.status == isa.Error.STACK_OVERFLOW
    r, traces, report = _traces(program)
    _same(r, want)
    assert any(name == "CALL" for _, _, ops, _ in traces for name, _, _ in ops), report
    # (bounded: no trace nests more calls than trace.MAX_INLINE)
    for _, _, ops, _ in traces:
        depth = 0
        for name, stencil, _ in ops:
            depth += name == "CALL"
            depth -= stencil == "RETURN"
            assert depth <= jtrace.MAX_INLINE, report
    # (the full matrix of K and thresholds: test_recursion_depth_overflow_at_every_k)
    differential.check(differential.Case("minipy", textwrap.dedent(
        RECURSE.replace("N", str(n)))), differential.configs(ks=(3,), thresholds=(1,)))


@pytest.mark.slow
@pytest.mark.parametrize("n", [20_000, 9_999, 9_998])
def test_recursion_depth_overflow_at_every_k(n):
    differential.check(differential.Case("minipy", textwrap.dedent(
        RECURSE.replace("N", str(n)))), differential.configs(ks=(1, 3, 5), thresholds=(1, 7)))


def test_stack_size_overflow_in_a_trace_is_the_oracles():
    """The other half of the check: the frame would pass the stack's end
    (many locals, a small stack) before the depth runs out; at every K, whose
    pad slots the check takes into account as the interpreter does."""
    src = textwrap.dedent("""\
        def deep(n):
            a = n + 1
            b = a + 1
            c = b + 1
            if n == 0:
                return c
            return deep(n - 1) + a - b + c


        print(deep(30))
        print(deep(5000))
    """)
    program = _minipy(src)
    limits = {"stack_size": 6000, "max_depth": 2000}
    want = oracle.run(program, **limits)
    assert want.status == isa.Error.STACK_OVERFLOW
    for mode in ("jit-direct", "jit-shim"):
        for level in (0, 2, 3):
            r, _, report = _traces(program, mode, limits=limits, opt=level)
            _same(r, want, f"{mode} --jit-opt {level}")
    # every K: the overflow at the same depth (the loader adds K pads a frame)
    for k in (1, 2, 5):
        b = get_build("jit-direct", JIT_CC, count=True, cache=k)
        for level in (0, 2):
            def child(b=b, level=level):
                _alarm(CHILD_TIMEOUT)
                with vm.Loaded(b, program, b"", jit={"threshold": 1, "opt": level},
                               **limits) as loaded:
                    return loaded.run()
            _same(isolate.call("jit-direct --cache K", child), want, f"K={k} level {level}")


SIDE_EXIT_IN_CALLEE = """\
    def step(x):
        if x % 97 == 13:
            return x * 3 + 1
        y = x + 7
        return y


    s = 0
    for i in range(4000):
        s = (s + step(i)) % 1000003
    print(s)
"""

OTHER_CALLER = """\
    def h(x):
        return x + 1


    def g(x):
        return h(x) * 2


    s = 0
    for i in range(3000):
        s = (h(s) + g(i)) % 100003
    print(s)
"""

RECURSIVE = """\
    def fib(n):
        if n < 2:
            return n
        return fib(n - 1) + fib(n - 2)


    def tak(x, y, z):
        if y < x:
            return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))
        return z


    print(fib(11))
    print(tak(7, 4, 2))
"""


CALL_PROGRAMS = [NESTED, SIDE_EXIT_IN_CALLEE, OTHER_CALLER, RECURSIVE]
CALL_IDS = ["nested", "side-exit-in-callee", "other-caller", "recursive"]


@pytest.mark.parametrize("src", CALL_PROGRAMS, ids=CALL_IDS)
def test_calls_in_traces_in_every_mode_level_and_k(src):
    """Every mode at every optimizer level, K 0 and 3, thresholds 1 and 7,
    traces replayed: a side exit inside a callee leaves the interpreter the
    callee's frame (ip, sp, fp, depth, frames, the K cached values).  One K
    above 0 is enough to hold the flush at calls and returns to the oracle;
    the slow twin adds K 1 and 5."""
    differential.check(differential.Case("minipy", textwrap.dedent(src)),
                       differential.configs(ks=(3,), thresholds=(1, 7)))


@pytest.mark.slow
@pytest.mark.parametrize("src", CALL_PROGRAMS, ids=CALL_IDS)
def test_calls_in_traces_at_every_k(src):
    differential.check(differential.Case("minipy", textwrap.dedent(src)),
                       differential.configs(ks=(1, 3, 5), thresholds=(1, 7)))


def test_a_side_exit_inside_a_callee_is_taken():
    program = _minipy(SIDE_EXIT_IN_CALLEE)
    r, traces, report = _traces(program, opt=2, link=False)
    _same(r, oracle.run(program))
    step = next(fn for fn in program.functions if fn.name == "step")
    inlined = [ops for _, side, ops, _ in traces if not side
               and any(name == "CALL" for name, _, _ in ops)]
    assert inlined, report
    # the guard on x % 97 in step's frame, which leaves every 97th call
    guard = [s for ops in inlined for name, s, fr in ops if fr and name.startswith("JUMP_IF")]
    assert guard, report
    assert step.entry is not None


def test_a_return_to_another_caller_leaves_for_its_return_point():
    """A trace from h's entry returns to the return point it was recorded
    returning to; called from g, RETURN:to leaves for g's (a side exit, which
    links to a trace there): the program crosses from the interpreter a few
    times, not at every return to the other caller."""
    program = _minipy(OTHER_CALLER)
    r, traces, report = _traces(program, opt=2, threshold=64)
    _same(r, oracle.run(program))
    assert any(s == "RETURN:to" for _, _, ops, _ in traces for _, s, _ in ops), report
    entries = [int(x.split()[1]) for x in report.split(", ") if x.startswith("entered ")]
    assert sum(entries) < 300, report      # (3,000 iterations, 9,000 returns)


def test_a_return_with_more_return_points_than_it_compares_is_guarded():
    """Past trace.MAX_RETURNS other return points, a RETURN from a frame the
    trace did not make is guarded on the recorded one and deopts otherwise."""
    calls = "\n".join(f"    s = (s + h(i + {k})) % 100003" for k in range(jtrace.MAX_RETURNS + 2))
    src = f"""\
def h(x):
    return x + 1


s = 0
for i in range(300):
{calls}
print(s)
"""
    program = _minipy(src)
    h = program.functions[1]
    ret = next(pc for pc in range(h.entry, len(program.code))
               if program.code[pc][0] == isa.OPCODE["RETURN"])
    returns = jtrace.return_points(program.code, [fn.entry for fn in program.functions])
    assert len(returns[ret]) == jtrace.MAX_RETURNS + 2
    t = jtrace.from_recording(program.code, list(range(h.entry, ret + 1)),
                              stop_pc=returns[ret][0], returns=returns)
    assert [o.stencil for o in t.ops if o.name == "RETURN"] == ["RETURN:guard"]
    differential.check(differential.Case("minipy", src),
                       differential.configs(ks=(2,), thresholds=(1,)))
