"""Runs native code in a forked child so a fault is reported, not fatal.

Generated interpreters and JIT code can fault or never stop; the parent
process survives, names the signal (or the timeout that stopped the child),
and keeps every result it already had.  A child never outlives its parent:
the kernel kills it when the parent dies (PR_SET_PDEATHSIG), and a parent
stopped by a timeout, Ctrl-C or SIGTERM first asks it to stop with SIGTERM,
so that it writes out the output it holds.
"""
from __future__ import annotations

import functools
import marshal
import os
import select
import signal
import sys
import time

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


# How long a child asked to stop (SIGTERM) has to write out its output and
# exit before it is killed.
STOP_GRACE = 2.0
PR_SET_PDEATHSIG = 1


@functools.lru_cache(maxsize=None)
def _prctl():
    """libc's prctl(option, arg2, arg3, arg4, arg5), or None.  Through cffi's
    backend, which every run has loaded already (its interpreter's), not
    ctypes: importing ctypes was ~3 ms of every isolated run's start."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import _cffi_backend as b
        c_int, c_ulong = b.new_primitive_type("int"), b.new_primitive_type("unsigned long")
        return b.load_library(None).load_function(
            b.new_function_type((c_int,) + (c_ulong,) * 4, c_int, 0), "prctl")
    except (ImportError, OSError, AttributeError):
        pass
    import ctypes
    try:
        return ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent_hook(preload: bool = True):
    """What a child forked from this process calls first (also a subprocess's
    preexec_fn: it survives exec): the kernel sends the child SIGKILL when
    this process dies, however it dies, SIGKILL included.  With `preload`,
    prctl is looked up here, so a preexec_fn imports nothing after the fork;
    isolate.call's child loads it itself (not `shimlab run`'s start-up)."""
    parent = os.getpid()
    if preload:
        _prctl()

    def hook():
        prctl = _prctl()
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:      # the parent died before the prctl took effect
            os._exit(1)
    return hook


class _Stopped(BaseException):
    """SIGTERM in a child (its parent stopping it): unwinds it, so that the
    run's `finally` writes out the output it holds."""


def _raise_stopped(signum, frame):
    raise _Stopped()


class _ParentTerminated(BaseException):
    """SIGTERM in the parent while a child runs."""


def _raise_parent_terminated(signum, frame):
    raise _ParentTerminated()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:   # already reaped
        pass


def _stop(pid: int, grace: float = STOP_GRACE) -> None:
    """SIGTERM, so the child writes out the output it holds (driver.c, or the
    oracle's `finally`), then SIGKILL if it has not exited within `grace`."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    end = time.monotonic() + grace
    while time.monotonic() < end:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        time.sleep(0.01)
    _kill(pid)


# A child's result crosses back as marshal data when it is made of Python's
# plain types only (a run sends its Result so: Result.plain), else pickled:
# pickle's import cost every isolated run ~2 ms on Zen 3 (docs/cli.md).
# Only these exact types: marshal would write a bytearray, an array or any
# other buffer as bytes, and raise on the rest.
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_CONTAINERS = (tuple, list, frozenset, set)


def _plain(value) -> bool:
    t = type(value)
    if t in _PLAIN:
        return True
    if t in _CONTAINERS:
        return all(map(_plain, value))
    if t is dict:
        return all(map(_plain, value)) and all(map(_plain, value.values()))
    return False


def _encode(payload) -> bytes:
    try:
        plain = _plain(payload)
    except RecursionError:          # nested too deep to walk: pickle says what it can
        plain = False
    if plain:
        return b"m" + marshal.dumps(payload)
    import pickle
    return b"p" + pickle.dumps(payload)


def _decode(data: bytes):
    if data[:1] == b"m":
        return marshal.loads(data[1:])
    import pickle
    return pickle.loads(data[1:])


def call(what: str, fn, *args, timeout: float | None = None, **kwargs):
    """fn(*args, **kwargs) in a forked child; returns its (picklable) result.

    Exceptions raised by fn are re-raised in the parent; a child killed by a
    signal becomes Crash naming `what` and the signal; a child still running
    after `timeout` seconds is killed and becomes Timeout.
    """
    if timeout is not None and not 0 < timeout < float("inf"):     # nan too
        raise RunError(f"timeout {timeout!r}: needs a positive, finite number of seconds")
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    die_with_parent = die_with_parent_hook(preload=False)
    pid = os.fork()
    if pid == 0:  # child: never returns into the caller's stack
        os.close(r)
        # the parent names the signal; no dump from here (a faulthandler that
        # is on was imported: not importing it saves a run ~1 ms)
        faulthandler = sys.modules.get("faulthandler")
        if faulthandler is not None:
            faulthandler.disable()
        code = 0
        try:
            die_with_parent()
            signal.signal(signal.SIGTERM, _raise_stopped)
            try:
                payload = ("ok", fn(*args, **kwargs))
            except BaseException as e:  # sent back whole, raised in the parent
                try:
                    import pickle
                    pickle.dumps(e)
                    payload = ("err", e)
                except Exception:
                    payload = ("err", RunError(f"{type(e).__name__}: {e}"))
                if not isinstance(e, Exception):
                    import traceback    # here: only a failing child needs it
                    payload = ("err", RunError(traceback.format_exc().splitlines()[-1]))
            data = _encode(payload)
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
    # SIGTERM to the parent stops the child first (the parent then dies of it)
    # (a process that never imported threading has one thread: start-up skips the import)
    threading = sys.modules.get("threading")
    main = threading is None or threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _raise_parent_terminated) if main else None
    if old_term is None:        # a handler not set from Python: put the default back
        old_term = signal.SIG_DFL
    try:
        data = _read_all(r, deadline)
        if data is None:
            _stop(pid)
            raise Timeout(what, timeout)
        _, status = os.waitpid(pid, 0)
    except (KeyboardInterrupt, _ParentTerminated) as e:
        _stop(pid)          # never leave a runaway child behind
        if isinstance(e, _ParentTerminated):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
        raise
    finally:
        os.close(r)
        if main:
            signal.signal(signal.SIGTERM, old_term)
    if not data:
        raise Crash(what, describe_wait_status(status))
    kind, value = _decode(data)
    if kind == "err":
        raise value
    return value
