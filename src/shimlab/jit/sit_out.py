"""Whether a `shimlab run` in a JIT mode sits its JIT out: the run history
(run_history.py) says the JIT's run of this program took no less than the
interpreter alone here, or that its run is too short for the JIT to pay
(policy.sits_out, which now and then tries the JIT again where the two are
close).  Such a run loads the tail-call
interpreter the JIT modes are built on, without their hot counters, and
keeps its length as the interpreter's: a run that input makes longer than
the JIT's brings the JIT back the next time."""
from __future__ import annotations

from .policy import EXPLORE, sits_out
from .run_history import RunHistory, run_options

# the interpreter a JIT mode is built on (modes._jit: tailcall with SL_JIT)
PLAIN_MODE = "tailcall"


def sitting_out(mode: str, opt: int, cache: int, count: bool, tape_len: int,
                program, wait_ns: int) -> RunHistory | None:
    """The history of a run that sits the JIT out, or None: the JIT runs
    (wait_ns: the payback wait asked)."""
    history = RunHistory(run_options(mode, opt, cache, count, tape_len), program.code,
                         program.consts)
    return history if sits_out(history.last, wait_ns) else None


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
