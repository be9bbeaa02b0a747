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


def wait_for_child(pid: int, timeout: float = 30) -> int:
    """The pid of `pid`'s first child (the isolated run), once it exists."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = children(pid)
        if kids:
            return kids[0]
        time.sleep(0.02)
    raise AssertionError(f"process {pid} started no child")


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
