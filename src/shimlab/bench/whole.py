"""Whole-process samples for `bench programs`: one `shimlab run` (or, for
minipy, one `python FILE`) timed from the outside, pinned like every worker:
start-up, the JIT's compiles and the run, as a user waits for them.  And
CPython's steady state: the program's code object run again and again in
this process.  Each worker holds its first run to the program's expected
output, as the in-process workers do, and times nothing if it differs."""
from __future__ import annotations

import contextlib
import io
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from .. import childpy
from ..digest import sha256

CPYTHON = "cpython"
# what `run` does, as a user's command line starts it (the console script's
# body; a checkout from before shimlab.console has the CLI's own main as it)
_RUN = ("import sys\ntry:\n from shimlab.console import main\n"
        "except ModuleNotFoundError:\n from shimlab.cli import main\nsys.exit(main())")


def command(job: dict) -> list[str]:
    """The command line one whole-process sample runs."""
    python = childpy.python_of(job.get("checkout") or None)
    # (another checkout's runs start in its root: absolute paths)
    program, inp = job["program"], job.get("input")
    if job.get("checkout"):
        program, inp = os.path.abspath(program), inp and os.path.abspath(inp)
    if job["mode"] == CPYTHON:
        return [python, program]
    cmd = [python, "-c", _RUN, "run", program, "--mode", job["mode"],
           "--cc", job["cc"]]
    if inp:
        cmd += ["--input", inp]
    if job.get("cache"):
        cmd += ["--cache", str(job["cache"])]
    if job["program"].lower().endswith((".b", ".bf")):
        cmd += ["--bf-opt", str(int(job.get("bf_opt") or 0))]
    if job["mode"] != "tailcall" and job["mode"] != CPYTHON:
        cmd += ["--jit-opt", str(int(job.get("jit_opt") or 0))]
    if job.get("code_layout"):      # (a checkout from before run had it refuses the option)
        cmd += ["--code-layout", str(int(job["code_layout"]))]
    return cmd


def environment(checkout: str | None = None) -> dict:
    """A user's environment: Python caches its bytecode (a session that sets
    PYTHONDONTWRITEBYTECODE would otherwise recompile shimlab every start);
    the checkout's code first on the path."""
    env = childpy.env(checkout)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _one(cmd: list[str], stdin: bytes | None, env: dict,
         cwd: str | None = None) -> tuple[int, int, bytes]:
    """Wall ns, CPU ns (user + system of the child and its children), stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter_ns()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env, cwd=cwd)
    wall = time.perf_counter_ns() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        tail = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{' '.join(cmd[3:6]) if len(cmd) > 5 else cmd[-1]}: exit status "
                         f"{proc.returncode}: {tail}")
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e9
    return wall, int(cpu), proc.stdout


def run_job(job: dict) -> dict:
    cmd, env = command(job), environment(job.get("checkout") or None)
    # the JIT's trace cache as the configuration says (a checkout that has
    # none ignores the variable): off, every process compiles every trace
    env["SHIMLAB_TRACE_CACHE"] = "1" if job.get("trace_cache") else "0"
    stdin = Path(job["input"]).read_bytes() if job.get("input") and job["mode"] == CPYTHON \
        else None
    warm, walls, cpus = [], [], []
    # another checkout's `python -c` starts in its root: the first entry of its import path is the
    # working directory, and this one's peachpy_stencils there would be
    # imported ahead of that checkout's own (PYTHONPATH comes after it)
    cwd = job.get("checkout") or None
    for n in range(max(int(job.get("warmup", 1)), 1) + int(job.get("samples", 5))):
        wall, cpu, out = _one(cmd, stdin, env, cwd)
        if n == 0 and job.get("expected"):
            _hold(out, job)
        if n < max(int(job.get("warmup", 1)), 1):
            warm.append(wall)
        else:
            walls.append(wall)
            cpus.append(cpu)
    return {"cycles": [], "ns": walls, "cpu_ns": cpus, "warmup_ns": warm, "tsc_hz": None,
            "pid": os.getpid(), "cpu": sorted(os.sched_getaffinity(0))[0],
            "compiler_version": _python() if job["mode"] == CPYTHON else job["cc"],
            "flags": " ".join(cmd[1:3]), "layout_seed": 0,
            "code_layout": None if job["mode"] == CPYTHON else int(job.get("code_layout") or 0)}


def _hold(out: bytes, job: dict) -> None:
    want = job["expected"]
    if sha256(out).hexdigest() != want["output_sha256"]:
        raise SystemExit(f"{Path(job['program']).name}: prints another output than "
                         f"{want['by']} ({len(out)} bytes, expected {want['output_len']}); "
                         "not timed")


def _python() -> str:
    return "CPython " + sys.version.split()[0]


def cpython_in_process(job: dict) -> dict:
    """CPython's steady state: the program compiled once and run `samples`
    times in this process, its output to a buffer; each run timed."""
    path = Path(job["program"])
    code = compile(path.read_text(), str(path), "exec")
    warm, walls = [], []
    for n in range(max(int(job.get("warmup", 1)), 1) + int(job.get("samples", 5))):
        buf = io.StringIO()
        t0 = time.perf_counter_ns()
        with contextlib.redirect_stdout(buf):
            exec(code, {"__name__": "__main__"})
        wall = time.perf_counter_ns() - t0
        if n == 0 and job.get("expected"):
            _hold(buf.getvalue().encode(), job)
        (warm if n < max(int(job.get("warmup", 1)), 1) else walls).append(wall)
    return {"cycles": [], "ns": walls, "warmup_ns": warm, "tsc_hz": None, "pid": os.getpid(),
            "cpu": sorted(os.sched_getaffinity(0))[0], "compiler_version": _python(),
            "flags": "", "layout_seed": 0}
