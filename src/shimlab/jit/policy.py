"""The JIT's recording policy: where a recording may start, and (runtime.py
asks) whether what a side exit recorded is worth asking again.

Every pc counts down towards a recording where the interpreter arrives
there by a jump the JIT watches (jit_interp.h): a loop header at each of
its back-edges, a function's entry at each call, a call's return point at
each return.  So recursive and call-heavy code, whose hot paths have no
loop, gets traces too: one from a function's entry up to its first call
or return, one from each return point up to the next.  A pc whose
instruction has no stencil never starts one: the recording would stop
before its first instruction."""
from __future__ import annotations

import os

from .. import isa

NEVER = (1 << 63) - 1       # a countdown that never runs out


def initial_counters(code, countdown: int) -> list[int]:
    """Each pc's countdown to a recording: `countdown`, or NEVER where the
    instruction has no stencil a trace runs (PRINT, HALT)."""
    never = [ins.name not in isa.TRACEABLE for ins in isa.INSTRUCTIONS]
    return [NEVER if never[op] else countdown for op, _ in code]


def records_nothing(code, pc: int) -> bool:
    """A recording from pc would be empty: its instruction has no stencil (a
    side exit that resumes at a PRINT, whose heat is then NEVER at once
    rather than after a few empty recordings)."""
    return not 0 <= pc < len(code) or \
        isa.INSTRUCTIONS[code[pc][0]].name not in isa.TRACEABLE


def payback_countdown(counted: int, in_ns: int, left_ns: int, threshold: int) -> int:
    """How many more arrivals before a pc is worth recording again, when it
    arrived `counted` times in `in_ns` and the JIT's start pays for itself
    in `left_ns`: the arrivals expected in that time, at the rate seen.  The
    rate is at most underestimated (a loop first seen at the run's start may
    have begun later), so the next check comes early, never late, and
    measures the rate again over a span of this pc's own."""
    if in_ns <= 0:
        return threshold
    return max(threshold, min(NEVER, counted * left_ns // in_ns))


# One run in EXPLORE, drawn once a process (a forked run inherits the draw,
# so `run` and its child agree), tries the option the history turned down
# when the two lengths are within 2x: a length measured high once would
# otherwise decide every later run, as the other option is never measured
# again (fib.py's interpreter run kept 33.4 ms, 17.7-21 ms in other runs,
# while other work ran on the second vCPU, so the JIT ran every time).
# Where the two differ more, no noise flips the choice.
EXPLORE = 8
_EXPLORING = int.from_bytes(os.urandom(2), "little") % EXPLORE == 0


def _explores(last, explore: bool | None) -> bool:
    """This run takes the option the history turned down (explore None:
    this process's draw), where the two lengths are within 2x."""
    return (_EXPLORING if explore is None else explore) and \
        max(last.jit_ns, last.interp_ns) < 2 * min(last.jit_ns, last.interp_ns)


def _too_short(last, wait_ns: int) -> bool:
    """No run has started the JIT, and the interpreter's ended before three
    waits (the wait, the JIT's start, about the same again, and the traces
    to win it back): too short for the JIT to pay."""
    return last.jit_ns is None and last.interp_ns < 3 * wait_ns


def sits_out(last, wait_ns: int, explore: bool | None = None) -> bool:
    """Whether a run sits the JIT out (sit_out.py), by the earlier runs
    (run_history.Lengths): the JIT's run took no less than the interpreter
    alone, run to the end; or no run has started the JIT, and the
    interpreter's run was too short for it to pay (remembered_wait would
    wait past its end: the hot counters and the JIT's runtime would be all
    the JIT brought).  explore (None: this process's draw): try the other
    option where the two are close, which re-measures it."""
    if last is None or not last.interp_exact or last.interp_ns is None:
        return False
    if last.jit_ns is None:
        return wait_ns > 0 and _too_short(last, wait_ns)
    loses = last.jit_ns >= last.interp_ns
    return not loses if _explores(last, explore) else loses


def remembered_wait(last, wait_ns: int, explore: bool | None = None) -> int:
    """The payback wait for a run of a program whose earlier runs went as
    `last` says (run_history.Lengths; None: unknown), and that does not sit
    the JIT out.  The wait is ski rental, and the earlier runs are the best
    guess at this one:
    - a run with the JIT that took at least as long as the interpreter alone
      did: the JIT does not pay here.  `run` sits such a run out; one that
      explores the JIT (sits_out) waits as asked; any other (a run under
      --check, or through vm.Loaded) waits past half as long again as the
      interpreter took, and ends first at its cost;
    - a run with the JIT whose length, its JIT's own work aside, was under
      four waits (nqueens.py: 30.7 ms, loading and closing included, ~6 ms
      here), beside an interpreter's length known only as where that run's
      JIT started: whether it pays is unknown, so this run waits past
      half as long again as that run took.  Either it ends first (the
      interpreter's length, now known) or its JIT starts late, once, and
      the interpreter's length is known to exceed the JIT's run;
    - no run with the JIT yet: an interpreter's run under three waits was
      too short for the JIT to pay (_too_short; `run` sits it out), so this
      run waits past half as long again;
    - otherwise the JIT pays: a run over four waits long starts it at its
      first hot loop, since the wait would only delay the traces.
    The JIT's start differs by host (Zen 4 5.6-13.3 ms, Zen 3 12.2-14.5 ms),
    which the runs with it measure.  A run whose input makes it longer or
    shorter than the last loses at most the wait or the JIT's start."""
    if last is None or wait_ns <= 0 or last.interp_ns is None:
        return wait_ns
    interp, jit = last.interp_ns, last.jit_ns

    def past(ns: int) -> int:
        return max(wait_ns, ns * 3 // 2)
    if jit is None:
        if _too_short(last, wait_ns):
            return past(interp)
    elif last.interp_exact and jit >= interp:
        return wait_ns if _explores(last, explore) else past(interp)
    elif jit >= interp:
        if jit - last.jit_own_ns < 4 * wait_ns:
            return past(jit)
    return 0 if max(interp, jit or 0) > 4 * wait_ns else wait_ns
