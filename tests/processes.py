"""Watching a shimlab process and its isolated child from a test, through
/proc: its children, when one exists, and when it is really running."""
from __future__ import annotations

import os
import time


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def wait_for_child(pid: int, timeout: float = 30) -> int:
    """The pid of `pid`'s isolated run (a forked child, so the same
    executable as `pid`), once it exists: not a compiler building the
    interpreter first, which a run whose build is not cached starts."""
    end = time.monotonic() + timeout
    exe = _exe(pid)
    while time.monotonic() < end:
        kids = [k for k in children(pid) if _exe(k) == exe]
        time.sleep(0.02)
        # (still so: a compiler's process is the parent's between its fork and its exec)
        kids = [k for k in kids if _exe(k) == exe]
        if kids:
            return kids[0]
    raise AssertionError(f"process {pid} started no child running {exe}")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_busy(pid: int, seconds: float = 0.3, timeout: float = 30) -> None:
    """Until `pid` has used `seconds` of CPU: its program's endless loop is
    running (what comes before it in the child takes far less), however
    loaded the machine is."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and cpu_seconds(pid) < seconds:
        time.sleep(0.02)
