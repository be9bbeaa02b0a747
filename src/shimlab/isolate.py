"""Runs native code in a forked child so a fault is reported, not fatal.

Generated interpreters and JIT code can fault; the parent process survives,
names the signal, and keeps every result it already had.
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback

from .errors import RunError


class Crash(RunError):
    """The child died from a signal or exited without a result."""

    def __init__(self, what: str, how: str):
        super().__init__(f"{what} crashed: {how}")
        self.how = how


def describe_wait_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}" + (" (a memory fault)" if sig in (signal.SIGSEGV, signal.SIGBUS) else "")
    return f"exited with status {os.WEXITSTATUS(status)} without a result"


def call(what: str, fn, *args, **kwargs):
    """fn(*args, **kwargs) in a forked child; returns its (picklable) result.

    Exceptions raised by fn are re-raised in the parent; a child killed by a
    signal becomes Crash naming `what` and the signal.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into the caller's stack
        os.close(r)
        import faulthandler
        faulthandler.disable()   # the parent names the signal; no dump from here
        code = 0
        try:
            try:
                payload = ("ok", fn(*args, **kwargs))
            except BaseException as e:  # sent back whole, raised in the parent
                try:
                    pickle.dumps(e)
                    payload = ("err", e)
                except Exception:
                    payload = ("err", RunError(f"{type(e).__name__}: {e}"))
                if not isinstance(e, Exception):
                    payload = ("err", RunError(traceback.format_exc().splitlines()[-1]))
            data = pickle.dumps(payload)
            with os.fdopen(w, "wb") as f:
                f.write(data)
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise Crash(what, describe_wait_status(status))
    kind, value = pickle.loads(data)
    if kind == "err":
        raise value
    return value
