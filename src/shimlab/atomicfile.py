"""Writing a file so that a reader sees the old one or the new one, never
half of one: every cache and results file of shimlab is written through here.

The data goes to a temporary name of this writer's own in the same folder,
then os.replace renames it into place (atomic on one filesystem): concurrent
writers each replace the file whole.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path


def write_atomic(path: Path, data: str | bytes, *, durable: bool = False) -> None:
    """durable: the data and the rename reach the disk before this returns
    (results files; a crash must not leave a new name on an empty file).
    The file keeps the mode of the one it replaces (0644 for a new one)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    raw = data.encode() if isinstance(data, str) else data
    import tempfile     # here: `shimlab run` writes no file and skips the import
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
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
