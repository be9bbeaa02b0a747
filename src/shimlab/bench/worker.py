"""One benchmark worker process: `python -m shimlab.bench.worker < job.json`.

A fresh process per (configuration, repetition), pinned to one CPU.  The
timed region is inside C (sl_run); this process only loads the program,
calibrates the TSC against clock_gettime, and prints one JSON line.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .. import modes, vm
from ..abi.vmh import ffi
from ..frontend import load_program
from ..interp import build, loader
from ..jit.memory import CodeMemory
from ..result import TAPE_LEN, describe_error
from . import counters, expected, floors, synthetic, whole
from .counters import count_run_instructions


def calibrate_tsc(lib, seconds: float = 0.05) -> float:
    """TSC ticks per second, measured against CLOCK_MONOTONIC."""
    c0, n0 = lib.sl_tsc_now(), lib.sl_clock_ns()
    time.sleep(seconds)
    c1, n1 = lib.sl_tsc_now(), lib.sl_clock_ns()
    return (c1 - c0) * 1e9 / (n1 - n0)


def code_placement(lib) -> int:
    """Where the interpreter's code landed: sl_interpret's offset in its page
    (the address bits that decide alignment and 4K aliasing; recorded so a
    verdict can be traced to the placement it was measured at)."""
    return int(ffi().cast("uintptr_t", lib.sl_interpret)) & 0xFFF


def run_job(job: dict) -> dict:
    if job.get("cpu") is not None:
        os.sched_setaffinity(0, {int(job["cpu"])})
    if job.get("whole"):
        return whole.run_job(job)
    if job["mode"] == whole.CPYTHON:
        return whole.cpython_in_process(job)
    b = build.build(job["mode"], job["cc"], tuple(job.get("flags") or build.DEFAULT_FLAGS),
                    profile=job.get("profile"), code_layout=int(job.get("code_layout") or 0),
                    cache=int(job.get("cache") or 0))
    if job["program"].startswith("floor:"):
        return _run_floor(job, b)
    if job.get("partner"):
        return _run_pair(job, b)
    program, jit = _program(job, job["program"])
    data = b""
    if job.get("input"):
        with open(job["input"], "rb") as f:
            data = f.read()
    seed = _seed(job)
    tape_len = int(job.get("tape_len") or TAPE_LEN)     # --tape-size
    with vm.Loaded(b, program, data, layout_seed=seed, jit=jit, tape_len=tape_len) as loaded:
        tsc_hz = calibrate_tsc(loaded.lib)
        warmup_ns = []
        # the first run, a warm-up (or one more, untimed), is held to what the
        # program must compute: a wrong answer is never timed
        for n in range(max(int(job.get("warmup", 1)), 1 if job.get("expected") else 0)):
            _check_first_run(loaded, program, job.get("expected") if n == 0 else None,
                             job["program"])
            warmup_ns.append(loaded.ns)
        if jit is not None and synthetic.is_synthetic(job["program"]) and \
                synthetic.relocated(job["program"]) and seed:
            # traces installed up front: move them and the VM for every run
            cycles, ns = loaded.bench_relocating(int(job.get("samples", 5)), seed)
        else:
            cycles, ns = loaded.bench(0, int(job.get("samples", 5)))
        out = {"cycles": cycles, "ns": ns, "warmup_ns": warmup_ns, "tsc_hz": tsc_hz,
               "pid": os.getpid(), "cpu": os.sched_getaffinity(0) and sorted(os.sched_getaffinity(0))[0],
               "compiler_version": b.compiler.version, "flags": " ".join(b.command_flags),
               "layout_seed": seed, "code_layout": b.code_layout,
               "code_at": code_placement(loaded.lib)}
        if job.get("perf_instructions"):
            out["instructions"] = count_run_instructions(loaded)
    if jit is not None and not jit.get("stretches"):
        out["crossings"], out["jit"] = count_crossings(b, program, data, jit, tape_len)
    return out


def _program(job: dict, workload: str):
    """A workload's program and, in a JIT mode, the JIT's options for it."""
    jit = None
    if synthetic.is_synthetic(workload):
        program, stretches = synthetic.build(workload)
        if modes.is_jit(job["mode"]):
            jit = synthetic.jit_options(workload, stretches)
    else:
        program = load_program(workload, bf_opt=int(job.get("bf_opt") or 0))
        if modes.is_jit(job["mode"]):
            jit = {"opt": int(job.get("jit_opt") or 0)}
    if job.get("stencils") and modes.is_jit(job["mode"]):     # bench programs --stencil
        jit = {**(jit or {}), "stencils": dict(job["stencils"])}
    return program, jit


def _seed(job: dict) -> int:
    """The seed of this process's sequence of layouts, one per run (driver.c);
    a job can fix the layout with seed 0."""
    seed = job.get("layout_seed")
    return (int.from_bytes(os.urandom(4), "little") or 1) if seed is None else seed


def _check_first_run(loaded, program, want: dict | None, name: str) -> None:
    """One run, held to `want` (the program's expected summary) if given."""
    result = loaded.run()
    if want:
        why = expected.difference(expected.summary(result), want, "this run")
        if why:
            raise SystemExit(f"{Path(name).name}: computes a wrong answer, not timed: {why}")
    if result.status:
        raise SystemExit(f"{name}: {describe_error(program, result)}")


def _run_pair(job: dict, b) -> dict:
    """The paired design (bench/roundtrip.py): the job's program and its
    partner in one process, on one build and code layout, their runs
    interleaved, each at a memory layout of its own (the VM, and its traces,
    moved before every run): what the two have in common, this process
    included, is common to both sides of the difference."""
    first = seed = _seed(job)
    sides = []
    for n, workload in enumerate((job["program"], job["partner"])):
        program, jit = _program(job, workload)
        loaded = vm.Loaded(b, program, b"", layout_seed=seed + n, jit=jit)
        sides.append((workload, program, loaded))
    try:
        tsc_hz = calibrate_tsc(sides[0][2].lib)
        wants = (job.get("expected"), job.get("partner_expected"))
        for (workload, program, loaded), want in zip(sides, wants):
            _check_first_run(loaded, program, want, workload)
        cycles, ns = ([], []), ([], [])
        for i in range(int(job.get("samples", 5))):
            # both sides of sample i at the same memory layout: a layout moves a
            # run by up to a fifth here (4K aliasing between the VM's pieces), the
            # same on both sides, so it cancels in a[i] - b[i] instead of making
            # each side's samples bimodal
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF or 1
            for n, (_, _, loaded) in enumerate(sides):
                c, t = loaded.bench_relocating(1, seed) if loaded.jit is not None \
                    else loaded.bench(1, 1)
                cycles[n].extend(c)
                ns[n].extend(t)
        counted = [counters.count_events(loaded, COUNTED_RUNS) if job.get("perf_events")
                   else None for _, _, loaded in sides]
    finally:
        for _, _, loaded in sides:
            loaded.close()
    out = {"cycles": cycles[0], "ns": ns[0], "warmup_ns": [], "tsc_hz": tsc_hz,
           "pid": os.getpid(), "cpu": sorted(os.sched_getaffinity(0))[0],
           "compiler_version": b.compiler.version, "flags": " ".join(b.command_flags),
           "layout_seed": first,
           "code_layout": b.code_layout, "code_at": code_placement(sides[0][2].lib),
           "partner": {"cycles": cycles[1], "ns": ns[1]}}
    if counted[0] is not None:
        out["events"], out["partner"]["events"] = counted
    return out


COUNTED_RUNS = 5      # runs per side counted with hardware events, after the timed ones


def count_crossings(b, program, data: bytes, jit: dict, tape_len: int) -> tuple[int, dict]:
    """Crossings between the interpreter and JIT code in one run, from a
    --stats run of its own (untimed): entries from the interpreter and exits
    to it (a linked exit jumps into a trace and crosses nothing); and what
    that run compiled (results.JIT_FIELDS), every trace compiled (the trace
    cache off, as it is in every in-process worker: Jit's default)."""
    with vm.Loaded(b, program, data, jit={**jit, "stats": True, "trace_cache": False},
                   tape_len=tape_len) as loaded:
        loaded.run()
        traces = loaded.jit.stats.traces
        # a tallied exit crossed: once linked, an exit jumps before its tally
        crossings = sum(t.entries() + sum(t.exit_counts()) for t in traces)
        return crossings, {"traces": len(traces), "code_bytes": sum(t.size for t in traces),
                           "trace_ops": sum(t.ops for t in traces),
                           "compile_ns": sum(t.record_ns + t.optimize_ns + t.compile_ns
                                             for t in traces)}


def _run_floor(job: dict, b) -> dict:
    """A floor of the transition benchmark (bench/floors.py), timed in C."""
    lib = loader.library(b.so)
    tsc_hz = calibrate_tsc(lib)
    memory = CodeMemory(lib, ffi(), min(loader.handler_addresses(b)))
    try:
        cycles = floors.measure(lib, ffi(), memory, job["program"].split(":", 1)[1],
                                int(job.get("samples", 5)), int(job.get("warmup", 1)))
    finally:
        memory.release()
    ns = [max(int(c * 1e9 / tsc_hz), 1) for c in cycles]
    return {"cycles": cycles, "ns": ns, "warmup_ns": [], "tsc_hz": tsc_hz, "pid": os.getpid(),
            "cpu": sorted(os.sched_getaffinity(0))[0], "compiler_version": b.compiler.version,
            "flags": " ".join(b.command_flags), "layout_seed": 0}


def run_batch(jobs: list[dict]) -> dict:
    """One sl_run of each job's program, in order (callgrind dumps after each)."""
    done = []
    for job in jobs:
        b = build.build(job["mode"], job["cc"], tuple(job.get("flags") or build.DEFAULT_FLAGS),
                        cache=int(job.get("cache") or 0))
        program, stretches = synthetic.build(job["program"])
        jit = synthetic.jit_options(job["program"], stretches) if modes.is_jit(job["mode"]) \
            else None
        with vm.Loaded(b, program, b"", jit=jit) as loaded:
            status = loaded.lib.sl_run(loaded.vm)
            if status:
                raise SystemExit(f"{job['program']}: status {status}")
        done.append(job["program"])
    return {"done": done, "ns": []}


def main() -> int:
    job = json.loads(sys.stdin.read())
    if "batch" in job:
        try:
            print(json.dumps(run_batch(job["batch"])))
            return 0
        except (SystemExit, Exception) as e:
            print(json.dumps({"error": str(e)}))
            return 1
    return answer(run_job, job)


def answer(fn, job: dict) -> int:
    """Prints fn(job) as one JSON line, or {"error": ...}; the exit status.
    (Also the protocol of the profiled JIT run in hotspots.py.)"""
    try:
        out = fn(job)
    except SystemExit as e:
        print(json.dumps({"error": str(e.code)}))
        return 1
    except Exception as e:   # reported by the harness as this configuration's failure
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
