"""Whether a `shimlab run` in a JIT mode sits its JIT out: the run history
(run_history.py) says the JIT's run of this program took no less than the
interpreter alone here, or that its run is too short for the JIT to pay
(policy.sits_out, which now and then tries the JIT again where the two are
close; cli/run.py asks it).  Such a run loads the tail-call interpreter the
JIT modes are built on, without their hot counters, and keeps its length as
the interpreter's: a run that input makes longer than the JIT's brings the
JIT back the next time.  What is here: that interpreter, and --stats' line."""
from __future__ import annotations

from .policy import EXPLORE
from .run_history import RunHistory

# the interpreter a JIT mode is built on (modes._jit: tailcall with SL_JIT)
PLAIN_MODE = "tailcall"


def report(mode: str, history: RunHistory) -> str:
    """--stats for such a run."""
    last = history.last
    if last.jit_ns is None:
        return (f"jit ({mode}): sat this run out on the {PLAIN_MODE} interpreter: its last "
                f"run took {last.interp_ns / 1e6:.1f} ms from loading the program to closing "
                f"it, too short for the JIT to pay (--no-trace-cache or --jit-threshold N "
                f"run the JIT)")
    why = "" if last.jit_ns >= last.interp_ns else \
        f" (to measure it again: one run in {EXPLORE} where the two are within 2x)"
    return (f"jit ({mode}): sat this run out on the {PLAIN_MODE} interpreter{why}: earlier "
            f"runs took {last.jit_ns / 1e6:.1f} ms with the JIT "
            f"({last.jit_own_ns / 1e6:.1f} of it the JIT's own) and "
            f"{last.interp_ns / 1e6:.1f} ms without, from loading the program to closing it "
            f"(--no-trace-cache or --jit-threshold N run the JIT)")
