"""Runs native code in a forked child so a fault is reported, not fatal.

Generated interpreters and JIT code can fault or never stop; the parent
process survives, names the signal (or the timeout that stopped the child),
and keeps every result it already had.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
import traceback

from .errors import RunError

# What each fatal signal usually means in generated code.
_SIGNAL_MEANING = {
    signal.SIGSEGV: "a memory fault",
    signal.SIGBUS: "a memory fault",
    signal.SIGILL: "an illegal instruction",
    signal.SIGFPE: "an arithmetic fault",
    signal.SIGABRT: "aborted: an assertion or a sanitizer report",
}


class Crash(RunError):
    """The child died from a signal or exited without a result."""

    def __init__(self, what: str, how: str):
        super().__init__(f"{what} crashed: {how}")
        self.what, self.how = what, how

    def __reduce__(self):     # picklable, so it can cross back from a nested child
        return type(self), (self.what, self.how)


class Timeout(Crash):
    """The child ran longer than its time limit and was killed."""

    def __init__(self, what: str, seconds: float):
        RunError.__init__(self, f"{what} did not finish within the {seconds:g} s timeout; "
                                f"stopped it")
        self.what, self.how, self.seconds = what, "timeout", seconds

    def __reduce__(self):
        return type(self), (self.what, self.seconds)


def describe_signal(sig: int) -> str:
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    meaning = _SIGNAL_MEANING.get(sig)
    return f"killed by {name}" + (f" ({meaning})" if meaning else "")


def describe_wait_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return describe_signal(os.WTERMSIG(status))
    return f"exited with status {os.WEXITSTATUS(status)} without a result"


def _read_all(fd: int, deadline: float | None) -> bytes | None:
    """Everything the child writes to fd, or None when the deadline passes first.

    Reading while waiting matters: a result bigger than the pipe buffer
    blocks the child until the parent reads it.
    """
    chunks = []
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:   # already reaped
        pass


def call(what: str, fn, *args, timeout: float | None = None, **kwargs):
    """fn(*args, **kwargs) in a forked child; returns its (picklable) result.

    Exceptions raised by fn are re-raised in the parent; a child killed by a
    signal becomes Crash naming `what` and the signal; a child still running
    after `timeout` seconds is killed and becomes Timeout.
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
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        data = _read_all(r, deadline)
        if data is None:
            _kill(pid)
            raise Timeout(what, timeout)
        _, status = os.waitpid(pid, 0)
    except KeyboardInterrupt:
        _kill(pid)          # never leave a runaway child behind
        raise
    finally:
        os.close(r)
    if not data:
        raise Crash(what, describe_wait_status(status))
    kind, value = pickle.loads(data)
    if kind == "err":
        raise value
    return value
