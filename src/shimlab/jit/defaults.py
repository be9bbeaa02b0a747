"""The JIT's defaults that the command line shows, in a module of their own:
`shimlab run --help` and a run of an interpreter mode never load the JIT."""
from __future__ import annotations

# back-edges of a loop before it is recorded and traced (1: at once)
DEFAULT_THRESHOLD = 64
# the trace optimizer's levels (jit/optimize.py says what each does)
LEVELS = (0, 1, 2, 3)
DEFAULT_LEVEL = 3
