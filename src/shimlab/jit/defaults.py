"""The JIT's defaults that the command line shows, in a module of their own:
`shimlab run --help` and a run of an interpreter mode never load the JIT."""
from __future__ import annotations

import os

from ..errors import JitError

# back-edges of a loop before it is recorded and traced (1: at once)
DEFAULT_THRESHOLD = 64
# `shimlab run` without --jit-threshold: no recording is compiled until the
# run has spent this much CPU time in the interpreter, about what the JIT's
# start and its first traces cost (importing and loading the compiler and
# the stencils: 8.4-13.3 ms of thread CPU in --stats on mandel.bf and
# mandel_bits.bf, Zen 4, December 7, 2026, since the start also imports
# what makes and places traces, ~3 ms a run whose JIT never starts no
# longer pays; then ~0.3-0.6 ms a trace).  A run that ends before then pays
# nothing for the JIT; one that goes on has lost at most what it would have
# paid (runtime.Jit._wait_for_payback; issue 24).  With the trace cache on,
# the wait follows earlier runs with and without the JIT, measured on this
# host (policy.remembered_wait), and a program the JIT loses on sits it out
# (sit_out.py): Zen 3's start, 12.2-14.5 ms, is over the wait.
PAYBACK_MS = 10
# the trace optimizer's levels (jit/optimize.py says what each does)
LEVELS = (0, 1, 2, 3)
DEFAULT_LEVEL = 3

# the trace cache (jit/trace_cache.py) is read and written unless a run says
# otherwise: its setting is parsed here, so a run checks it without
# importing the cache, which only a JIT that starts needs
TRACE_CACHE_SETTINGS = ("on", "off", "verify")


class TraceCacheError(JitError):
    pass


def trace_cache_setting(value: str | bool | None = None) -> str:
    """"on", "off" or "verify": `value` (True/False for on/off), else
    $SHIMLAB_TRACE_CACHE (0 or off, 1 or on, verify; unset: on)."""
    if value is True or value is False:
        return "on" if value else "off"
    raw = os.environ.get("SHIMLAB_TRACE_CACHE", "on") if value is None else value
    v = {"0": "off", "1": "on", "": "on"}.get(raw.strip().lower(), raw.strip().lower())
    if v not in TRACE_CACHE_SETTINGS:
        raise TraceCacheError(f"SHIMLAB_TRACE_CACHE={raw}: choose on, off or verify "
                              "(or 1, 0)")
    return v
