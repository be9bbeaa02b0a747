"""perf_event_open(2) for this process's hardware counters: the one place
shimlab asks the kernel for them (doctor reports whether they work;
benchmark workers count a run's instructions with them, and the transition
benchmark a round trip's cycles, instructions and branch mispredictions)."""
from __future__ import annotations

import ctypes
import errno
import os

_SYSCALL = {"x86_64": 298, "aarch64": 241}
_PERF_TYPE_HARDWARE = 0
_PERF_COUNT_HW_INSTRUCTIONS = 1
# the generalized hardware events the transition benchmark reads (perf's names)
EVENTS = {"cycles": 0, "instructions": 1, "branch-misses": 5}
# ioctls on the counter's fd
IOC_ENABLE, IOC_DISABLE, IOC_RESET = 0x2400, 0x2401, 0x2403
# perf_event_attr.flags bits
_DISABLED, _EXCLUDE_KERNEL, _EXCLUDE_HV = 1, 1 << 5, 1 << 6


class _Attr(ctypes.Structure):
    """struct perf_event_attr up to config2 (PERF_ATTR_SIZE_VER1, 72 bytes):
    the kernel takes any size it knows and zero-fills the rest."""
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
                ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64),
                ("config2", ctypes.c_uint64)]


def open_instructions(disabled: bool = True) -> int:
    """A counter of this process's user-space instructions; its fd (close it).
    OSError when the kernel or the machine refuses."""
    return open_event(_PERF_COUNT_HW_INSTRUCTIONS, disabled)


def open_event(config: int, disabled: bool = True) -> int:
    """A counter of one generalized hardware event (EVENTS) in this
    process's user space; its fd.  OSError when refused."""
    nr = _SYSCALL.get(os.uname().machine)
    if nr is None:
        raise OSError(errno.ENOSYS, f"perf_event_open not known on {os.uname().machine}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = _Attr(type=_PERF_TYPE_HARDWARE, size=ctypes.sizeof(_Attr),
                 config=config,
                 flags=(_DISABLED if disabled else 0) | _EXCLUDE_KERNEL | _EXCLUDE_HV)
    fd = libc.syscall(ctypes.c_long(nr), ctypes.byref(attr), ctypes.c_int(0),
                      ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(0))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


class Events:
    """cycles, instructions and branch-misses counted together around a
    piece of work: start(), the work, stop() -> {name: count}.  OSError
    from the constructor when any of them cannot be opened."""

    def __init__(self, names=tuple(EVENTS)):
        self.fds = {}
        try:
            for name in names:
                self.fds[name] = open_event(EVENTS[name])
        except OSError:
            self.close()
            raise

    def start(self) -> None:
        import fcntl
        for fd in self.fds.values():
            fcntl.ioctl(fd, IOC_RESET, 0)
        for fd in self.fds.values():
            fcntl.ioctl(fd, IOC_ENABLE, 0)

    def stop(self) -> dict[str, int]:
        import fcntl
        for fd in self.fds.values():
            fcntl.ioctl(fd, IOC_DISABLE, 0)
        return {name: read_count(fd) for name, fd in self.fds.items()}

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}


def probe_events() -> tuple[bool, str]:
    """(works, description): can this process count cycles, instructions and
    branch-misses (the transition benchmark's per-round-trip counters)?"""
    try:
        ev = Events()
    except OSError as e:
        return False, f"not supported ({errno.errorcode.get(e.errno, e.errno)}: {e.strerror})"
    try:
        ev.start()
        sum(range(10000))
        counts = ev.stop()
    finally:
        ev.close()
    if not all(counts[n] for n in ("cycles", "instructions")):
        return False, "not supported (the counters opened but counted nothing)"
    return True, "works (" + ", ".join(f"{n} {c}" for n, c in counts.items()) + ")"


def read_count(fd: int) -> int:
    buf = os.read(fd, 8)
    return int.from_bytes(buf, "little") if len(buf) == 8 else 0


def probe() -> tuple[bool, str]:
    """(works, description): can this process count its own instructions?"""
    try:
        fd = open_instructions(disabled=False)
    except OSError as e:
        name = errno.errorcode.get(e.errno, str(e.errno))
        if e.errno in (errno.EPERM, errno.EACCES):
            try:
                with open("/proc/sys/kernel/perf_event_paranoid") as f:
                    paranoid = f.read().strip()
            except OSError:
                paranoid = "?"
            return False, f"permission denied ({name}; kernel.perf_event_paranoid={paranoid})"
        return False, f"not supported ({name}: {e.strerror})"
    try:
        sum(range(10000))
        count = read_count(fd)
    finally:
        os.close(fd)
    if count == 0:
        return False, "not supported (the counter opened but counted nothing)"
    return True, f"works ({count} instructions counted)"
