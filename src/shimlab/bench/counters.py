"""Exact instruction counts: hardware counters where they work, callgrind otherwise.

perf_event_open counts user-space instructions around one sl_run call (the
cffi call and the VM reset add a few thousand); callgrind counts exactly the
instructions executed inside sl_interpret and what it calls, deterministic
whatever else the machine is doing.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from .. import childpy, perfcounter
from ..errors import RunError, ToolchainError

def hardware_counters() -> tuple[bool, str]:
    """(works, why): can this process count its own instructions?"""
    return perfcounter.probe()


def count_run_instructions(loaded) -> int:
    fd = perfcounter.open_instructions()
    try:
        fcntl.ioctl(fd, perfcounter.IOC_RESET, 0)
        fcntl.ioctl(fd, perfcounter.IOC_ENABLE, 0)
        loaded.lib.sl_run(loaded.vm)
        fcntl.ioctl(fd, perfcounter.IOC_DISABLE, 0)
        return perfcounter.read_count(fd)
    finally:
        os.close(fd)


def event_counters() -> tuple[bool, str]:
    """(works, why): cycles, instructions and branch-misses per run?"""
    return perfcounter.probe_events()


def count_events(loaded, runs: int) -> dict[str, float]:
    """cycles, instructions and branch-misses of one run, the mean of `runs`
    runs each counted around sl_run alone."""
    ev = perfcounter.Events()
    try:
        totals: dict[str, int] = {}
        for _ in range(runs):
            ev.start()
            loaded.lib.sl_run(loaded.vm)
            for name, n in ev.stop().items():
                totals[name] = totals.get(name, 0) + n
    finally:
        ev.close()
    return {name: n / runs for name, n in totals.items()}


def callgrind_available() -> bool:
    return shutil.which("valgrind") is not None


def callgrind_instructions(job: dict, timeout: float = 1800) -> int:
    """Instructions of one run of the job's interpreter, counted by callgrind."""
    if not callgrind_available():
        raise ToolchainError("valgrind not found (apt-get install valgrind)")
    job = {**job, "warmup": 0, "samples": 1, "cpu": None, "perf_instructions": False}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               "--toggle-collect=sl_interpret", sys.executable, "-m", "shimlab.bench.worker"]
        proc = subprocess.run(cmd, input=json.dumps(job), capture_output=True, text=True,
                              timeout=timeout, env=childpy.env())
        if proc.returncode != 0 or not os.path.exists(out):
            raise RunError(f"callgrind failed on {job['program']}: "
                           f"{proc.stderr.strip().splitlines()[-1:] or proc.stdout}")
        with open(out) as f:
            text = f.read()
    m = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
    if not m:
        raise RunError("callgrind wrote no instruction total")
    return int(m.group(1))


def callgrind_batch(jobs: list[dict], timeout: float = 1800) -> list[int]:
    """Instructions of one run of each synthetic job, in one valgrind process
    (one start-up instead of one per job): callgrind dumps whenever sl_interpret returns (once per run here)."""
    if not callgrind_available():
        raise ToolchainError("valgrind not found (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               "--toggle-collect=sl_interpret", "--dump-after=sl_interpret", sys.executable, "-m",
               "shimlab.bench.worker"]
        proc = subprocess.run(cmd, input=json.dumps({"batch": jobs}), capture_output=True,
                              text=True, timeout=timeout, env=childpy.env())
        if proc.returncode != 0:
            raise RunError(f"callgrind failed: {proc.stdout.strip()[-300:] or proc.stderr[-300:]}")
        counts = []
        for i in range(1, len(jobs) + 1):
            with open(f"{out}.{i}") as f:
                m = re.search(r"^(?:summary|totals):\s*(\d+)", f.read(), re.M)
            if not m:
                raise RunError(f"callgrind dump {i} has no instruction total")
            counts.append(int(m.group(1)))
    return counts
