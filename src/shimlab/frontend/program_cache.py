"""Compiled programs kept between processes, as Python keeps its .pyc files:
a program file read again, unchanged, at the same front-end level is loaded
instead of compiled and verified again (a 31 KB BF program took 8 ms at
--bf-opt 0 and 13 ms at --bf-opt 1, in every run of every mode; issue 24).

One file a program path, language and level (build/programs/).  A program is
used only under the exact key it was kept under: its source's bytes (hashed
with BLAKE2b, the whole key compared, never the file name's hash alone), its
name, language and level, Python's version, and the front end's own code:
the stat stamps of the modules that decide a program, kept only when every
one is settled (cachefile.settled), so an edit to any of them makes every
entry stale.  A damaged file, another format or another key is compiled
again and written over; a build directory that cannot be written keeps
nothing.  SHIMLAB_PROGRAM_CACHE=0 turns the cache off."""
from __future__ import annotations

import os
import sys

from ..bytecode import Function, Program, SourcePositions
from ..cachefile import keep_sealed, read_sealed, settled, stamp
from ..digest import blake2b, sha1
from ..paths import SRC_DIR, build_dir

FORMAT = b"SLPC1" + bytes(sys.version_info[:2])
MAX_FILES = 256           # the folder keeps the most recently written this many
# a bigger program is not kept: ~20 bytes an instruction on disk (the large
# sources' tests make millions), and it compiles at ~2 us an instruction anyway
MAX_INSTRUCTIONS = 200_000
# the modules whose code decides a program's bytecode
_SOURCES = ("frontend/__init__.py", "frontend/bf.py", "frontend/minipy.py",
            "frontend/slbc.py", "frontend/verify.py", "frontend/encoding.py",
            "frontend/program_cache.py", "isa.py", "bytecode.py", "record.py")


def enabled() -> bool:
    return os.environ.get("SHIMLAB_PROGRAM_CACHE", "1") != "0"


def folder() -> str:
    return os.path.join(build_dir(), "programs")


def _code_stamps() -> tuple | None:
    """The front end's modules' stamps, or None when one is missing or was
    changed too recently to be told apart from a change to come."""
    stamps = tuple(stamp(os.path.join(SRC_DIR, "shimlab", rel)) for rel in _SOURCES)
    return stamps if None not in stamps and settled(*stamps) else None


class Entry:
    """Where one program file's compiled form is kept, and under what key."""

    def __init__(self, name: str, language: str, level: int, source: bytes):
        code = _code_stamps()
        self.key = None if code is None else (
            name, language, level, blake2b(source, digest_size=32).digest(), code)
        self.path = os.path.join(folder(), sha1(repr((name, language, level)).encode())
                                 .hexdigest()[:24] + ".bin")

    def get(self) -> Program | None:
        if self.key is None:
            return None
        try:
            key, data = read_sealed(self.path, FORMAT)
        except (TypeError, ValueError):     # nothing there, or not two values
            return None
        if key != self.key:
            return None
        try:
            return _program(data)
        except (TypeError, ValueError, IndexError):
            return None

    def put(self, program: Program) -> None:
        """Best effort: an unwritable build directory keeps nothing."""
        if self.key is None or len(program.code) > MAX_INSTRUCTIONS:
            return
        keep_sealed(self.path, FORMAT, (self.key, _data(program)), MAX_FILES)


def _data(p: Program) -> tuple:
    """A verified program as plain values marshal writes."""
    pos = p.positions
    positions = (("offsets",) + pos.to_bytes() if isinstance(pos, SourcePositions)
                 else ("list", [tuple(x) for x in pos]))
    return (p.name, [tuple(c) for c in p.code], list(p.consts),
            [(f.name, f.entry, f.nargs, f.nlocals, list(f.local_names), f.max_stack)
             for f in p.functions], positions, p.language, p.verified)


def _program(data) -> Program:
    name, code, consts, functions, positions, language, verified = data
    # (marshal gives back lists of tuples as they were written)
    pos = SourcePositions.from_bytes(*positions[1:]) if positions[0] == "offsets" \
        else positions[1]
    return Program(name=name, code=code, consts=consts,
                   functions=[Function(*f) for f in functions], positions=pos,
                   language=language, verified=bool(verified))
