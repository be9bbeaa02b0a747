"""Where the time goes, per VM instruction handler of the tail-call interpreter.

Each tail-call handler is its own function (sl_op_NAME), so a per-function
profile is a per-opcode profile: exact self instruction counts from
`valgrind --tool=callgrind`, and time samples from `perf record -e cpu-clock`
where the kernel allows it (a software event: no hardware counters needed).

JIT code has no symbols of its own: a JIT run writes /tmp/perf-PID.map
(`ADDR SIZE shimlab:traceN:STENCIL@pcX`), which names each stencil of each
trace to perf.  jit_perf_profile samples a JIT run in its steady state only
(after warm-up runs that compiled every trace), so time spent recording and
compiling traces in Python stays out; callgrind, the fallback, counts JIT
code as one unnamed object ('???').
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from .. import childpy, vm
from ..errors import RunError, ToolchainError
from ..frontend import load_program
from ..interp import build
from ..result import describe_error
from .worker import answer

HANDLER_PREFIX = "sl_op_"
_COST_LINE = re.compile(r"^[0-9+\-*]")
_RECURSION = re.compile(r"'\d+$")          # callgrind's sl_op_MOVE'2 (a cycle level)
_NAMED = re.compile(r"^\((\d+)\)(?:\s+(.*))?$")
_PERF_LINE = re.compile(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")
# perf script -F pid,time,ip,sym,dso
_PERF_TIMED = re.compile(r"^\s*(\d+)\s+(\d+\.\d+):\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")
JIT_PREFIX = "shimlab:"


def _run(cmd, job: dict, what: str, timeout: float) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, input=json.dumps(job), capture_output=True, text=True,
                              timeout=timeout, env=childpy.env())
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


# -- JIT runs: traces named through the perf map ------------------------------------

def read_perf_map(path) -> list[tuple[int, int, str]]:
    """(start, size, name without "shimlab:") of each shimlab line of a perf map."""
    out = []
    for line in Path(path).read_text().splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[2].startswith(JIT_PREFIX):
            out.append((int(parts[0], 16), int(parts[1], 16), parts[2][len(JIT_PREFIX):]))
    return out


def resolve(entries: list[tuple[int, int, str]], ip: int) -> str | None:
    """The innermost map entry holding ip: a stencil or an exit slot rather
    than the whole trace, whose line spans them all."""
    best = None
    for start, size, name in entries:
        if start <= ip < start + size and (best is None or size < best[1]):
            best = (start, size, name)
    return None if best is None else best[2]


def _settle(loaded, quiet_runs: int, max_runs: int) -> int:
    """Runs the program until `quiet_runs` runs in a row record nothing new
    (a rarely hot loop can reach its threshold many runs in); returns the
    number of warm-up runs."""
    quiet, runs = 0, 0
    while quiet < quiet_runs and runs < max_runs:
        before = loaded.jit.stats.recordings
        result = loaded.run()
        if result.status:
            raise SystemExit(describe_error(loaded.program, result))
        runs += 1
        quiet = quiet + 1 if loaded.jit.stats.recordings == before else 0
    return runs


def jit_child(job: dict) -> dict:
    """In the profiled process: warm up until the traces settle, then the
    measured runs, timed on CLOCK_MONOTONIC (perf record -k CLOCK_MONOTONIC
    stamps samples on the same clock)."""
    stale = Path(f"/tmp/perf-{os.getpid()}.map")      # a reused pid's old map would mislead
    stale.unlink(missing_ok=True)
    b = build.build(job["mode"], job["cc"])
    program = load_program(job["program"])
    data = Path(job["input"]).read_bytes() if job.get("input") else b""
    with vm.Loaded(b, program, data, jit={"perf_map": bool(job.get("perf_map", True))}) as loaded:
        warm = _settle(loaded, int(job.get("quiet_runs", 10)), int(job.get("max_warmup", 200)))
        before = loaded.jit.stats.recordings
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        loaded.bench(0, int(job["samples"]))
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        return {"pid": os.getpid(), "t0": t0, "t1": t1, "warmup_runs": warm,
                "traces": len(loaded.jit.stats.traces),
                "recordings_measured": loaded.jit.stats.recordings - before}


def jit_perf_profile(job: dict, frequency: int = 10000, timeout: float = 300) -> dict:
    """cpu-clock samples of a JIT run's steady state: {"interpreter": Counter
    by function of the interpreter's shared object, "jit": Counter by perf
    map name (traceN:STENCIL@pcX, traceN:exit->pcY), "other": samples
    elsewhere (Python, libc, kernel), "run": what the child reported}.
    job: mode, cc, program, input, samples (measured runs)."""
    so = os.path.realpath(str(build.build(job["mode"], job["cc"]).path))
    with tempfile.TemporaryDirectory(prefix="shimlab-perf-") as tmp:
        data = os.path.join(tmp, "perf.data")
        proc = _run(["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock",
                     "-F", str(frequency), "-o", data, "--", sys.executable, "-m",
                     "shimlab.bench.hotspots"], job, "perf record", timeout)
        run = json.loads(proc.stdout.strip().splitlines()[-1])
        perf_map = Path(f"/tmp/perf-{run['pid']}.map")
        try:
            script = subprocess.run(["perf", "script", "-i", data, "-F", "pid,time,ip,sym,dso"],
                                    capture_output=True, text=True, timeout=timeout)
            entries = read_perf_map(perf_map) if perf_map.exists() else []
        finally:
            perf_map.unlink(missing_ok=True)      # ours: the child wrote it
    t0, t1 = run["t0"] / 1e9, run["t1"] / 1e9
    interp, jit, other = Counter(), Counter(), 0
    for line in script.stdout.splitlines():
        m = _PERF_TIMED.match(line)
        if not m or int(m.group(1)) != run["pid"] or not t0 <= float(m.group(2)) <= t1:
            continue
        name = resolve(entries, int(m.group(3), 16))
        if name is not None:
            jit[name] += 1
        elif os.path.realpath(m.group(5)) == so:
            interp[m.group(4) or "[unknown]"] += 1
        else:
            other += 1
    return {"interpreter": interp, "jit": jit, "other": other, "run": run,
            "traces": trace_headers(entries)}


def split_jit_name(name: str) -> tuple[int, str, int]:
    """(trace index, stencil, pc) of a perf map name: traceN:STENCIL@pcX is a
    stencil, traceN:exit->pcY an exit slot (stencil "exit", resuming at Y),
    traceN:PROGRAM:pcS the trace outside its stencils (stencil "trace")."""
    trace, _, rest = name.partition(":")
    index = int(trace[len("trace"):])
    if rest.startswith("exit->pc"):
        return index, "exit", int(rest[len("exit->pc"):])
    if "@pc" in rest:
        stencil, _, pc = rest.rpartition("@pc")
        return index, stencil, int(pc)
    return index, "trace", int(rest.rpartition(":pc")[2])


def trace_headers(entries: list[tuple[int, int, str]]) -> dict[int, int]:
    """Trace index -> the pc of its loop header, from the whole-trace lines
    of a perf map (traceN:PROGRAM:pcS; stencils are traceN:NAME@pcX)."""
    out = {}
    for _, _, name in entries:
        m = re.match(r"^trace(\d+):(.*):pc(\d+)$", name)
        if m and "@pc" not in name and "exit->" not in name:
            out[int(m.group(1))] = int(m.group(3))
    return out


def jit_callgrind_profile(job: dict, timeout: float = 1800) -> dict:
    """The fallback without perf: machine instructions per function in the
    measured runs, {"interpreter": Counter by function, "jit": Counter({"???":
    n}), "run": ...}; callgrind has no names for JIT code, all of it is '???'.

    callgrind cannot be told to start counting after the warm-up here (it does
    not see sl_bench entered from cffi), so it runs the job twice, with
    job["samples"] measured runs and with none: the warm-up is deterministic
    (same program, same counters, same recordings), so the difference is the
    measured runs exactly."""
    if shutil.which("valgrind") is None:
        raise ToolchainError("valgrind not found (apt-get install valgrind)")
    counts = []
    for samples in (int(job["samples"]), 0):
        with tempfile.TemporaryDirectory(prefix="shimlab-cg-") as tmp:
            out = os.path.join(tmp, "callgrind.out")
            proc = _run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                         "--toggle-collect=sl_interpret", sys.executable, "-m",
                         "shimlab.bench.hotspots"], {**job, "samples": samples, "perf_map": False},
                        "callgrind", timeout)
            text = Path(out).read_text()
        counts.append((parse_callgrind(text), sum(parse_callgrind(text, "???").values()),
                       json.loads(proc.stdout.strip().splitlines()[-1])))
    (full, jit_full, run), (warm, jit_warm, run0) = counts
    if run["warmup_runs"] != run0["warmup_runs"] or run["traces"] < run0["traces"]:
        raise RunError(f"callgrind: the two runs of {Path(job['program']).name} warmed up "
                       f"differently ({run0['warmup_runs']} and {run['warmup_runs']} runs)")
    interp = Counter({f: n - warm.get(f, 0) for f, n in full.items() if n - warm.get(f, 0) > 0})
    return {"interpreter": interp, "jit": Counter({"???": jit_full - jit_warm}), "run": run}


def main() -> int:
    """`python -m shimlab.bench.hotspots < job.json`: the profiled JIT run."""
    return answer(jit_child, json.loads(sys.stdin.read()))


if __name__ == "__main__":
    sys.exit(main())
