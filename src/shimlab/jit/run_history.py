"""How long the last `shimlab run` of a program spent in the VM, kept between
processes beside the trace cache and switched with it: the JIT's payback
wait (policy.remembered_wait) reads it as its best guess at how long this
run will be.  One small file a program and set of options (build/runs/),
read when the JIT is made, written when it closes if the length moved by
more than a quarter.  A damaged file, another format or another key reads
as no history."""
from __future__ import annotations

import sys
from pathlib import Path

from ..cachefile import keep_sealed, read_sealed
from ..digest import program_digest, sha1
from ..paths import build_root

FORMAT = b"SLRH1" + bytes(sys.version_info[:2])
MAX_FILES = 1024


def folder() -> Path:
    return build_root() / "runs"


class RunHistory:
    """options: plain values that change how long a run takes (the mode,
    the optimizer's level, K, a count build); code, consts: the program
    (program: its digest.program_digest, when already made)."""

    def __init__(self, options: tuple, code, consts, program: str | None = None):
        self.key = (options, program or program_digest(code, consts))
        self.path = folder() / (sha1(repr(self.key).encode()).hexdigest()[:24] + ".bin")
        self.last_ns = self._read()

    def _read(self) -> int | None:
        try:
            key, last_ns = read_sealed(self.path, FORMAT)
        except (TypeError, ValueError):     # nothing there, or not two values
            return None
        return last_ns if key == self.key and isinstance(last_ns, int) and last_ns > 0 else None

    def save(self, ran_ns: int) -> None:
        """Best effort: a build directory that cannot be written keeps nothing."""
        last = self.last_ns
        if ran_ns <= 0 or (last is not None and abs(ran_ns - last) * 4 <= last):
            return
        keep_sealed(self.path, FORMAT, (self.key, int(ran_ns)), MAX_FILES)
