"""A regular expression compiled when first used.

Compiling one costs 0.1-0.6 ms; a `shimlab run` whose program comes from the
program cache never tokenizes BF, decodes a source or probes a compiler, yet
compiled those modules' patterns at import (~1.5 ms of each run, Zen 3)."""
from __future__ import annotations

import re


class LazyPattern:
    """Stands for re.compile(pattern, flags): every attribute of the
    compiled pattern (match, finditer, ...) compiles it on first use."""
    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern, flags: int = 0):
        self._args, self._compiled = (pattern, flags), None

    def __getattr__(self, name: str):
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)
