"""Writing a command's result to stdout so that a failed write (a full disk,
`> /dev/full`) is one line and exit status 1, not a traceback at exit.
"""
from __future__ import annotations

import os
import sys

from ..errors import ShimlabError


def fd() -> int | None:
    """stdout's file descriptor, or None when stdout is not a real file (a
    test's capture, a closed stdout): then output goes through sys.stdout."""
    try:
        return sys.stdout.fileno() if sys.stdout is not None else None
    except (OSError, ValueError, AttributeError):
        return None


def failed(e: OSError) -> ShimlabError:
    """The one-line error for a failed write to stdout; stdout then points at
    /dev/null, so the interpreter's own flush at exit cannot fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass
    return ShimlabError(f"cannot write to stdout: {e.strerror or e}")


def write(data: str | bytes) -> None:
    """data to stdout, flushed; a closed pipe stays BrokenPipeError (the CLI
    ends quietly on it), any other failure is one line."""
    if sys.stdout is None:
        return
    try:
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise failed(e) from None
