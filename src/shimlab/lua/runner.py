"""One Lua worker and the interleaved rounds of them: the harness's
conventions (bench/harness.py) for interpreters that are programs of their
own.  A worker is a fresh interpreter process pinned with taskset running
csrc/lua/driver.lua, which times each run of the program in TSC cycles (and
the process's CPU time, which leaves out the time another process had the
CPU: the machine is shared) and holds its output to the expected output before the time is kept; rounds run
every configuration once in a new order; the results file (pyperf JSON,
bench/results.py) is saved after every worker.
"""
from __future__ import annotations

import io
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import isolate, toolchain
from ..errors import RunError, ShimlabError, ToolchainError
from ..bench.progress import Progress
from ..bench.results import ResultFile, RunSamples
from ..paths import EXAMPLES
from ..atomicfile import write_atomic
from . import build as lua_build
from . import oracles, source

PROGRAM_DIR = EXAMPLES / "lua"


def program_path(name: str) -> Path:
    return PROGRAM_DIR / f"{name}.lua"


def expected_path(name: str, args: tuple[str, ...]) -> Path:
    """examples/lua/expected/NAME[.ARGS].out: the program's output for those
    arguments; for a program with an oracle (oracles.py), its output written
    into the build directory."""
    stem = name + ("." + "-".join(args) if args else "") + ".out"
    if name not in oracles.ORACLES:
        return PROGRAM_DIR / "expected" / stem
    path = source.cache_dir() / "expected" / stem
    text = oracles.ORACLES[name](*args)
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    return path


# what a time is read as: TSC cycles (wall time, the lab's unit) or the
# process's CPU time at the TSC's rate (less the time it waited for the CPU)
CLOCKS = ("tsc", "cpu")


def samples(results: ResultFile, key: str, clock: str = "tsc") -> list:
    """One array per worker process of the configuration's times in TSC cycles."""
    import numpy as np
    r = results.get(key)
    if clock == "cpu" and not all(run.cpu_ns for run in r.runs):
        raise ShimlabError(f"{results.path}: {key}: no CPU times recorded (a file written "
                           f"before they were): read it with --clock tsc")
    groups = r.cpu_cycles_groups() if clock == "cpu" else r.cycles_groups()
    return [np.asarray(g, float) for g in groups]


def waiting(results: ResultFile, keys) -> float:
    """The median share of a run's wall time its process did not run (the
    machine's other load, as these runs saw it)."""
    import numpy as np
    shares = [1.0 - cpu / ns for k in keys for run in results.get(k).runs
              for cpu, ns in zip(run.cpu_ns, run.ns)]
    return float(np.median(shares)) if shares else float("nan")


CLOCK_TEXT = {"tsc": "TSC cycles of each run's wall time (the lab's unit)",
              "cpu": "the process's CPU time of each run, in TSC cycles (less the time it "
                     "waited for the CPU)"}
# a share of wall time off the CPU past which wall-clock figures measure the load
WAITING_WARNING = 0.10


def clock_line(a: dict) -> str:
    """What the times are, and how much the runs waited for the CPU (a["clock"],
    a["waiting"]), with a warning where wall time measures the machine's load."""
    text = (f"time: {CLOCK_TEXT[a['clock']]}; the runs' processes were off the CPU for a "
            f"median {100 * a['waiting']:.1f}% of their wall time (the machine's other load)")
    if a["clock"] == "tsc" and a["waiting"] > WAITING_WARNING:
        text += ("\nWARNING: wall time here is largely waiting for the CPU: read these "
                 "figures with --clock cpu")
    return text


@dataclass(frozen=True)
class LuaConfig:
    build: lua_build.LuaBuild
    program: str                    # a name in examples/lua/
    args: tuple[str, ...] = ()      # the program's arguments (its size)
    flags: tuple[str, ...] = ()     # the interpreter's options (-joff, -O...)
    label: str = ""                 # what the flags mean, in the key
    suite: str = "lua"

    @property
    def workload(self) -> str:
        return self.program + ("." + "-".join(self.args) if self.args else "")

    @property
    def key(self) -> str:
        return (f"{self.suite}/{self.workload}/{self.build.name}"
                + (f"/{self.label}" if self.label else ""))

    def describe(self) -> dict:
        b = self.build
        return {"workload": self.workload, "build": b.name, "flavour": b.flavour,
                "dispatch": b.dispatch, "compiler": b.compiler,
                "compiler_version": b.compiler_version, "build_command": b.command,
                "build_key": b.key, "interpreter_flags": " ".join(self.flags) or "none",
                "label": self.label or "none"}


def taskset() -> str:
    found = toolchain.find_program("taskset")
    if found is None:
        raise ToolchainError("taskset not found (apt-get install util-linux): Lua workers are "
                             "pinned with it")
    return found


def command(c: LuaConfig, cpu: int, warmup: int, samples: int) -> list[str]:
    return [taskset(), "-c", str(cpu), str(c.build.path), *c.flags, str(lua_build.DRIVER),
            str(lua_build.clock_module(c.build.flavour)), str(program_path(c.program)),
            str(expected_path(c.program, c.args)), str(warmup), str(samples), *c.args]


def parse(c: LuaConfig, stdout: str) -> dict:
    """The driver's lines as {"hz", "cycles", "ns", "warmup_ns"}; RunError on
    a wrong output or an incomplete report."""
    out = {"cycles": [], "ns": [], "cpu_ns": [], "warmup_ns": [], "hz": None}
    done = False
    for line in stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "mismatch":
            raise RunError(f"{c.key}: wrong output, {line}")
        if kind == "hz":
            out["hz"] = float(rest)
        elif kind in ("sample", "warmup"):
            cycles, ns, cpu_ns = (int(v) for v in rest.split())
            if kind == "sample":
                out["cycles"].append(cycles)
                out["ns"].append(max(ns, 1))
                out["cpu_ns"].append(cpu_ns)
            else:
                out["warmup_ns"].append(ns)
        elif kind == "ok":
            done = True
    if not done or not out["cycles"] or not out["hz"]:
        raise RunError(f"{c.key}: the driver did not finish its report")
    return out


def run_worker(c: LuaConfig, cpu: int, warmup: int, samples: int, timeout: float) -> dict:
    cmd = command(c, cpu, warmup, samples)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=isolate.die_with_parent_hook())
    except subprocess.TimeoutExpired:
        raise RunError(f"{c.key}: did not finish within {timeout:g} s; stopped it") from None
    if proc.returncode < 0:
        raise RunError(f"{c.key}: crashed ({isolate.describe_signal(-proc.returncode)})")
    out = parse(c, proc.stdout) if proc.returncode in (0, 3) else None
    if out is None:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[0]
        raise RunError(f"{c.key}: exit status {proc.returncode}: {tail}")
    return out


def measure(configs: list[LuaConfig], results: ResultFile, processes: int, warmup: int,
            samples: int, cpu: int, timeout: float = 600.0, quiet: bool = False,
            each_round: Callable[[int], None] | None = None) -> tuple[dict[str, str], bool]:
    """Rounds of one worker per configuration, each round in a new order,
    until every configuration has `processes` workers; `each_round(r)` runs
    other work inside round r (before the Lua workers in even rounds, after
    them in odd ones), so load on the machine falls on both alike.
    Returns (failures by key, interrupted)."""
    failures: dict[str, str] = {}
    rng = random.Random(len(configs))
    progress = Progress(len(configs) * processes, "lua", stream=io.StringIO() if quiet else None)
    try:
        for r in range(processes):
            if each_round and r % 2 == 0:
                each_round(r)
            batch = [c for c in configs if c.key not in failures
                     and results.runs_done(c.key) < r + 1]
            rng.shuffle(batch)
            for c in batch:
                try:
                    out = run_worker(c, cpu, warmup, samples, timeout)
                except RunError as e:
                    failures[c.key] = str(e)
                    progress.step(note=f"{c.key} FAILED")
                    continue
                run = RunSamples(cycles=out["cycles"], ns=out["ns"], warmup_ns=out["warmup_ns"],
                                 cpu=cpu, cpu_ns=out["cpu_ns"])
                results.add(c.key, c.describe(), [run], tsc_hz=out["hz"])
                results.save()
                progress.step(note=c.key)
            if each_round and r % 2 == 1:
                each_round(r)
    except KeyboardInterrupt:
        return failures, True
    finally:
        progress.close()
        results.release()
    for key, why in failures.items():
        print(f"shimlab: {why}", file=sys.stderr)
    return failures, False
