"""Writing a file so that a reader sees the old one or the new one, never
half of one: every cache and results file of shimlab is written through here.

The data goes to a temporary name of this writer's own in the same folder,
then os.replace renames it into place (atomic on one filesystem): concurrent
writers each replace the file whole.
"""
from __future__ import annotations

import errno
import os


def _temporary(directory: str, name: str) -> tuple[int, str]:
    """A new file of this writer's own beside the target, as tempfile.mkstemp
    makes one (O_EXCL, mode 0600, a random name), without importing tempfile
    (~3 ms, which a JIT run that keeps its traces would pay: jit/trace_cache.py)."""
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                           0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(directory))


def write_atomic(path: str | os.PathLike, data: str | bytes, *, durable: bool = False) -> None:
    """durable: the data and the rename reach the disk before this returns
    (results files; a crash must not leave a new name on an empty file).
    The file keeps the mode of the one it replaces (0644 for a new one)."""
    path = os.fspath(path)
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = _temporary(directory, os.path.basename(path))
    try:
        try:
            view = memoryview(raw)
            while view:
                n = os.write(fd, view)
                if n <= 0:
                    raise OSError(errno.EIO, "short write")
                view = view[n:]
            os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        try:
            dfd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dfd)        # the rename itself
        except OSError:
            pass
        finally:
            os.close(dfd)
