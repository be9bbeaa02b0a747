"""The mechanics of the build directory's cache files, for every cache that
keeps one: marshal data sealed behind a format tag and a CRC-32 (a file of
another format, or damaged, reads as nothing), and stat stamps, which tell
that a file is unchanged without reading it."""
from __future__ import annotations

import marshal
import os
import time
import zlib

from .atomicfile import write_atomic


def write_sealed(path: str | os.PathLike, tag: bytes, value) -> None:
    """`value` as marshal data behind `tag` and its CRC, written atomically
    (OSError when it cannot be; ValueError for a value marshal cannot write)."""
    payload = marshal.dumps(value)
    write_atomic(path, tag + zlib.crc32(payload).to_bytes(4, "little") + payload)


def read_sealed(path: str | os.PathLike, tag: bytes):
    """What write_sealed wrote under `tag`, or None: no such file, another
    tag (another format, or another Python's marshal) or a damaged one."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return None
    head = len(tag) + 4
    payload = blob[head:]
    if blob[:len(tag)] != tag or \
            int.from_bytes(blob[len(tag):head], "little") != zlib.crc32(payload):
        return None
    try:
        return marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None


# A stamp is a file's inode, size, mtime and ctime: a write to it, or a file
# put in its place, changes one of them (a ctime cannot be set back).  But
# timestamps move in clock ticks, so a write in the same tick as the stamp
# leaves it as it was: keep a stamp only for files unchanged for SETTLED_NS.
SETTLED_NS = 1_000_000_000


def stamp(path) -> tuple | None:
    """The file's (inode, size, mtime, ctime), or None when it is missing."""
    try:
        s = os.stat(path)
    except OSError:
        return None
    return (s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns)


def settled(*stamps: tuple) -> bool:
    """Every stamped file unchanged for SETTLED_NS: its stamp can be kept."""
    newest = max((max(s[2], s[3]) for s in stamps), default=0)
    return time.time_ns() - newest > SETTLED_NS


def keep_sealed(path: str | os.PathLike, tag: bytes, value, keep: int) -> bool:
    """write_sealed, best effort (False: a build directory that cannot be
    written, or a value marshal cannot write, keeps nothing), then the
    folder pruned to its `keep` latest files."""
    try:
        write_sealed(path, tag, value)
    except (OSError, ValueError):
        return False
    prune(os.path.dirname(os.fspath(path)) or ".", keep)
    return True


def prune(where: str | os.PathLike, keep: int) -> None:
    """Keeps the `keep` most recently written .bin files of a cache folder."""
    try:
        with os.scandir(where) as entries:
            files = [e.path for e in entries if e.name.endswith(".bin")]
    except OSError:
        return
    if len(files) <= keep:
        return

    def age(p: str) -> float:
        try:
            return os.stat(p).st_mtime
        except OSError:
            return 0.0
    for p in sorted(files, key=age)[:len(files) - keep]:
        try:
            os.unlink(p)
        except OSError:
            pass
