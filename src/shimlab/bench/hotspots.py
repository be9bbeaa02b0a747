"""Where the time goes, per VM instruction handler of the tail-call interpreter.

Each tail-call handler is its own function (sl_op_NAME), so a per-function
profile is a per-opcode profile: exact self instruction counts from
`valgrind --tool=callgrind`, and time samples from `perf record -e cpu-clock`
where the kernel allows it (a software event: no hardware counters needed).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from ..errors import RunError, ToolchainError

HANDLER_PREFIX = "sl_op_"
_COST_LINE = re.compile(r"^[0-9+\-*]")
_RECURSION = re.compile(r"'\d+$")          # callgrind's sl_op_MOVE'2 (a cycle level)
_NAMED = re.compile(r"^\((\d+)\)(?:\s+(.*))?$")
_PERF_LINE = re.compile(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")


def _worker_env() -> dict:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run(cmd, job: dict, what: str, timeout: float) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, input=json.dumps(job), capture_output=True, text=True,
                              timeout=timeout, env=_worker_env())
    except subprocess.TimeoutExpired:
        raise RunError(f"{what} timed out after {timeout:.0f} s") from None
    if proc.returncode != 0:
        last = json.loads(proc.stdout.strip().splitlines()[-1]).get("error") \
            if proc.stdout.strip().startswith("{") else None
        tail = last or (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunError(f"{what} failed on {Path(job['program']).name}: {tail}")
    return proc


def parse_callgrind(text: str, object_part: str = "libshimlab") -> Counter:
    """Self cost (the first event, Ir) per function of the objects whose path
    contains `object_part`.  The cost line after a calls= line is the
    callee's inclusive cost, not the caller's own, so it is skipped."""
    names: dict[str, str] = {}
    objects: dict[str, str] = {}
    costs: Counter = Counter()
    current = obj = None
    skip = False

    def resolve(table, value):
        m = _NAMED.match(value)
        if not m:
            return value
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), value)

    for line in text.splitlines():
        if skip:
            skip = False
            continue
        if _COST_LINE.match(line):
            if current is not None and obj is not None and object_part in obj:
                parts = line.split()
                if len(parts) > 1:
                    costs[_RECURSION.sub("", current)] += int(parts[1])
            continue
        key, _, value = line.partition("=")
        if key == "ob":
            obj = resolve(objects, value)
        elif key == "cob":
            resolve(objects, value)
        elif key == "fn":
            current = resolve(names, value)
        elif key == "cfn":
            resolve(names, value)
        elif key == "calls":
            skip = True
    return costs


def callgrind_functions(job: dict, timeout: float = 900) -> Counter:
    """Instructions executed in each function of the interpreter for one run
    of the job (a bench worker job), counted by callgrind."""
    if shutil.which("valgrind") is None:
        raise ToolchainError("valgrind not found (apt-get install valgrind)")
    job = {**job, "warmup": 0, "samples": 1, "cpu": None, "perf_instructions": False}
    with tempfile.TemporaryDirectory(prefix="shimlab-cg-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        _run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
              "--toggle-collect=sl_interpret", sys.executable, "-m", "shimlab.bench.worker"],
             job, "callgrind", timeout)
        return parse_callgrind(Path(out).read_text())


def perf_available() -> tuple[bool, str]:
    """(works, why): can `perf record -e cpu-clock` sample a process here?"""
    if shutil.which("perf") is None:
        return False, "perf not found (apt-get install linux-perf)"
    with tempfile.TemporaryDirectory(prefix="shimlab-perf-") as tmp:
        data = os.path.join(tmp, "probe.data")
        proc = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", data, "--",
                               sys.executable, "-c", "sum(range(300000))"],
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0 or not os.path.exists(data):
            why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[0]
            return False, f"perf record -e cpu-clock: {why}"
    return True, "perf record -e cpu-clock works"


def perf_functions(job: dict, frequency: int = 10000, timeout: float = 300) -> Counter:
    """cpu-clock samples per function of the interpreter's shared object over
    the job's runs (the worker's own start-up falls outside it)."""
    from .. import build
    so = str(build.build(job["mode"], job["cc"], tuple(job.get("flags") or build.DEFAULT_FLAGS),
                         profile=job.get("profile")).path)
    with tempfile.TemporaryDirectory(prefix="shimlab-perf-") as tmp:
        data = os.path.join(tmp, "perf.data")
        _run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(frequency), "-o", data, "--",
              sys.executable, "-m", "shimlab.bench.worker"], job, "perf record", timeout)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym,dso"],
                                capture_output=True, text=True, timeout=timeout)
    samples: Counter = Counter()
    for line in script.stdout.splitlines():
        m = _PERF_LINE.match(line)
        if m and os.path.realpath(m.group(2)) == os.path.realpath(so):
            samples[m.group(1) or "[unknown]"] += 1
    return samples


def by_handler(functions: Counter) -> Counter:
    """Costs keyed by opcode name for handlers (sl_op_MOVE -> MOVE) and by
    "name()" for every other function of the interpreter (helpers such as
    sl_print_int, the entry sl_interpret)."""
    out: Counter = Counter()
    for name, n in functions.items():
        out[name[len(HANDLER_PREFIX):] if name.startswith(HANDLER_PREFIX) else f"{name}()"] += n
    return out
