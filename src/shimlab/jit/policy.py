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


def remembered_wait(last_ns: int | None, wait_ns: int) -> int:
    """The payback wait for a run whose last run of the same program spent
    last_ns in the VM (None: unknown).  The wait is ski rental, and the last
    run is the best guess at this one: one that ended before three waits
    (the wait, the JIT's start, about the same again, and the traces to
    win it back) was too short for the JIT to pay, so this one waits past
    half as long again as it ran (the same run ends first, at the
    interpreter's cost); one over four waits long starts the JIT at its
    first hot loop, since the wait would only delay the traces.  A run whose
    input makes it longer or shorter than the last loses at most the wait
    or the JIT's start."""
    if last_ns is None or wait_ns <= 0:
        return wait_ns
    if last_ns < 3 * wait_ns:
        return max(wait_ns, last_ns * 3 // 2)
    if last_ns > 4 * wait_ns:
        return 0
    return wait_ns
