"""The JIT's defaults that the command line shows, in a module of their own:
`shimlab run --help` and a run of an interpreter mode never load the JIT."""
from __future__ import annotations

# back-edges of a loop before it is recorded and traced (1: at once)
DEFAULT_THRESHOLD = 64
# `shimlab run` without --jit-threshold: no recording is compiled until the
# run has spent this much CPU time in the interpreter, about what the JIT's
# start costs (loading the stencils and the compiler: 8-11 ms of thread CPU
# in --stats on mandel.bf and mandel_bits.bf, Zen 4).  A run that ends before
# then pays nothing for the JIT; one that goes on has lost at most what it
# would have paid (runtime.Jit._wait_for_payback; issue 24).
PAYBACK_MS = 10
# the trace optimizer's levels (jit/optimize.py says what each does)
LEVELS = (0, 1, 2, 3)
DEFAULT_LEVEL = 3
