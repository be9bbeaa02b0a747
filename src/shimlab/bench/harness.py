"""The measurement loop every shimlab benchmark uses.

Each configuration runs in several fresh worker processes pinned to one CPU;
rounds interleave the configurations (never one block after another); the
results file is saved atomically after every worker, so Ctrl-C loses at most
the worker in flight and --resume tops each configuration up.
"""
from __future__ import annotations

import io
import math
import os
import random
import subprocess
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from .. import childpy, isolate
from ..errors import RunError, ShimlabError
from ..interp import build as build_mod
from ..result import TAPE_LEN
from . import counters, expected, floors, stats, synthetic
from .progress import Progress
from . import results as results_mod
from .results import ResultFile, RunSamples


CPYTHON = "cpython"     # not a shimlab mode: the venv's Python running a minipy program


@dataclass(frozen=True)
class Config:
    suite: str
    workload: str                 # path of the program
    mode: str
    cc: str
    input: str | None = None
    flags: tuple[str, ...] = build_mod.DEFAULT_FLAGS
    # a PGO profile (pgo.train) to build with, and a tag that tells builds of
    # the same mode and compiler apart in the key ("pgo", "tail-dup-64", ...)
    profile: str | None = None
    tag: str = ""
    cache: int = 0                # operand-stack values in registers (--cache K)
    jit_opt: int = 0              # JIT modes: the trace optimizer's level (--jit-opt)
    bf_opt: int = 0               # BF workloads: the front end's level (--bf-opt)
    # a second workload that the same worker processes run, interleaved with
    # this one on the same build (bench/roundtrip.py's null crossing); its
    # samples are recorded under partner_config().key
    partner: str | None = None
    # whole process: each sample is one `shimlab run` (or, mode "cpython",
    # one `python FILE`) timed from the outside, start-up and compiles included
    whole: bool = False
    # another checkout's root (its .venv's Python runs its shimlab): the same
    # configuration before a change, measured in the same rounds
    checkout: str = ""
    # whole process, a JIT mode: its trace cache on (SHIMLAB_TRACE_CACHE=1), so
    # every process after the first places its traces from the plans kept;
    # off (=0, the default) every process compiles every trace
    trace_cache: bool = False

    @property
    def workload_name(self) -> str:
        return Path(self.workload).name

    @property
    def key(self) -> str:
        key = f"{self.suite}/{self.workload_name}/{self.mode}/{self.cc}"
        if self.cache:
            key += f"/k{self.cache}"
        if self.jit_opt:
            key += f"/o{self.jit_opt}"
        if self.bf_opt:
            key += f"/bf{self.bf_opt}"
        if self.whole:
            key += "/whole"
        if self.checkout:
            key += "/before"
        if self.trace_cache:
            key += "/tc"
        return f"{key}/{self.tag}" if self.tag else key

    def partner_config(self) -> "Config | None":
        """The partner workload as a configuration of its own (its key)."""
        return None if self.partner is None else replace(self, workload=self.partner,
                                                         partner=None)

    def keys(self) -> list[str]:
        """Every key this configuration records samples under."""
        return [self.key] + ([self.partner_config().key] if self.partner else [])

    def job(self, warmup: int, samples: int, cpu: int | None) -> dict:
        return {"mode": self.mode, "cc": self.cc, "flags": list(self.flags),
                "program": self.workload, "input": self.input, "warmup": warmup,
                "samples": samples, "cpu": cpu, "profile": self.profile, "cache": self.cache,
                "jit_opt": self.jit_opt, "bf_opt": self.bf_opt, "partner": self.partner,
                "whole": self.whole, "checkout": self.checkout, "trace_cache": self.trace_cache}

    def build(self, code_layout: int = 0):
        if self.mode == CPYTHON:
            return None
        return build_mod.build(self.mode, self.cc, self.flags, profile=self.profile,
                               code_layout=code_layout, cache=self.cache)

    def describe(self) -> dict:
        d = asdict(self)
        d["flags"] = " ".join(self.flags)
        d["workload"] = self.workload_name
        d.pop("input")
        d.pop("partner")        # (the partner is a configuration of its own in the file)
        for name in ("profile", "tag", "cache", "jit_opt", "bf_opt", "whole", "checkout",
                     "trace_cache"):   # only when set: older files stay resumable
            if not d[name]:
                d.pop(name)
        return d


@dataclass
class Options:
    processes: int = 3           # fresh worker processes per configuration
    warmup: int = 1              # runs before measuring, in each worker
    samples: int = 5             # measured runs in each worker
    cpu: int | None = None       # CPU to pin workers to (default: the last one)
    count_instructions: bool = False
    count_events: bool = False   # paired workers: hardware events too, where they work
    # with a target, keep adding worker processes (up to max_processes) to
    # each configuration whose 95% interval of the median is wider than
    # +-target_ci (relative)
    target_ci: float | None = None
    max_processes: int = 0
    # "random": every measured run places code, stack and tape at new random
    # cache-line offsets (layout bias averages out); "fixed": one staggered
    # layout for all (reproducible, but one sample of layouts)
    layout: str = "random"
    # code placement, as a factor like the memory layout: with K > 0 each
    # configuration is built K times with its code shifted (build.code_shift)
    # and worker process i runs build (i mod K) + 1; 0: the compiler's placement
    code_layouts: int = 0
    timeout: float = 600.0
    quiet: bool = False
    tape_len: int = TAPE_LEN    # BF tape cells in every run (--tape-size)

    def __post_init__(self):
        # the CLI's argparse types refuse these first; this holds for callers in Python
        bad = [f"{name}={getattr(self, name)!r}" for name, ok in (
            ("processes", self.processes >= 1), ("warmup", self.warmup >= 0),
            ("samples", self.samples >= 1), ("tape_len", self.tape_len >= 1),
            ("timeout", math.isfinite(self.timeout) and self.timeout > 0),
            ("target_ci", self.target_ci is None or (math.isfinite(self.target_ci)
                                                     and self.target_ci > 0)),
            ("max_processes", self.max_processes >= 0), ("code_layouts", self.code_layouts >= 0),
            ("cpu", self.cpu is None or self.cpu >= 0)) if not ok]
        if bad:
            raise ShimlabError(f"benchmark options out of range: {', '.join(bad)}")


@dataclass
class Outcome:
    results: ResultFile
    failures: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    imprecise: dict[str, float] = field(default_factory=dict)   # key -> half-width


def code_layouts(opts: Options) -> list[int]:
    """The code layouts the workers cycle through ([0]: the compiler's only)."""
    return list(range(1, opts.code_layouts + 1)) if opts.code_layouts > 0 else [0]


def relative_halfwidth(result) -> float:
    """Half-width of the bootstrap 95% interval of the median, relative to it
    (the wider side)."""
    groups = result.cycles_groups() if result.has_cycles else result.ns_groups()
    return stats.summarize(groups, n_boot=1000).rel_ci_halfwidth


def _wants_more(c: Config, results: ResultFile, opts: Options) -> bool:
    n = results.runs_done(c.key)
    if n < opts.processes:
        return True
    if not opts.target_ci or n >= opts.max_processes:
        return False
    return relative_halfwidth(results.get(c.key)) > opts.target_ci


def default_cpu() -> int:
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1]


def run_worker(job: dict, timeout: float) -> dict:
    """One fresh worker process; a crash or an error becomes RunError."""
    what = f"the {job['mode']} interpreter ({job['cc']}) running {Path(job['program']).name}"
    # a whole-process job starts the other checkout's `shimlab run` itself
    checkout = job.get("checkout") if not job.get("whole") else None
    try:
        proc = childpy.run_module("shimlab.bench.worker", job, timeout, checkout=checkout)
    except subprocess.TimeoutExpired:   # subprocess.run has killed the worker
        raise RunError(f"{what} did not finish within the {timeout:g} s per-worker timeout; "
                       f"stopped it") from None
    if proc.returncode < 0:
        raise RunError(f"{what} crashed its worker: "
                       f"{isolate.describe_signal(-proc.returncode)}")
    out = childpy.last_json_line(proc.stdout)
    if "error" in out:
        raise RunError(out["error"])
    if proc.returncode != 0 or "ns" not in out:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunError(f"worker exited with status {proc.returncode}: {tail}")
    return out


def measure_and_tell(configs: list[Config], results: ResultFile, opts: Options,
                     resume_hint: bool = False) -> Outcome:
    """measure(), then one line on stderr per failed configuration and, when
    interrupted, where the finished runs are (what every suite's CLI prints).
    A new results file nothing was saved into is removed (ResultFile.release)."""
    try:
        outcome = measure(configs, results, opts)
    finally:
        results.release()
    for key, why in outcome.failures.items():
        print(f"shimlab: {key}: {why}", file=sys.stderr)
    if outcome.interrupted and not results.saved and not len(results):
        print("shimlab: interrupted before any run finished; no results file written",
              file=sys.stderr)
    elif outcome.interrupted:
        hint = f"; continue with --resume {results.path}" if resume_hint else ""
        print(f"shimlab: interrupted; finished runs are in {results.path}{hint}",
              file=sys.stderr)
    return outcome


def check_workloads(paths) -> None:
    """--workload files that are not there, refused before anything is probed or built."""
    for w in paths or ():
        if not Path(w).exists():
            raise ShimlabError(f"{w}: no such workload")


def check_file_options(args) -> None:
    """A suite's -o, --resume and --force, refused before anything is probed or built."""
    results_mod.check_file_options(getattr(args, "output", None), getattr(args, "resume", None),
                                   bool(getattr(args, "force", False)))


def open_results(args, suite: str, configs: list[Config]) -> ResultFile:
    """The results file of a suite's command line: -o, --resume and --force
    (results.open_for), for this run's configurations."""
    results = results_mod.open_for(suite, [k for c in configs for k in c.keys()],
                                   output=getattr(args, "output", None),
                                   resume=getattr(args, "resume", None),
                                   force=bool(getattr(args, "force", False)))
    # first, since without -o it lands under the current directory
    print(f"results file: {results.path.resolve()}", file=sys.stderr, flush=True)
    return results


def round_order(batch: list[Config], rng: random.Random) -> list[Config]:
    """One round's order: the configurations of one workload one after
    another, so a ratio's two sides run seconds apart rather than minutes
    (a shared host's speed drifts: up to 1.5x within an hour on Zen 3,
    December 2026); the workloads, and the configurations within each, in
    a new order every round."""
    groups: dict[str, list[Config]] = {}
    for c in batch:
        groups.setdefault(c.workload, []).append(c)
    order = list(groups.values())
    rng.shuffle(order)
    for group in order:
        rng.shuffle(group)
    return [c for group in order for c in group]


def measure(configs: list[Config], results: ResultFile, opts: Options) -> Outcome:
    outcome = Outcome(results)
    cpu = opts.cpu if opts.cpu is not None else default_cpu()
    # Build everything first: workers must never compile inside a round.
    for c in configs:
        for layout in code_layouts(opts):
            c.build(layout)
    # What each program must compute (every worker checks its first run
    # against it and times nothing if it differs) and how many VM
    # instructions it runs.  A workload that crashes or never ends fails its
    # configurations here, with the same per-worker timeout; the other
    # workloads still run.  Per program as compiled: a BF workload's front
    # end level changes its instructions.
    vm_counts: dict[tuple, int | str] = {}
    wants: dict[tuple, dict] = {}
    for c in configs:
        for side in filter(None, (c, c.partner_config())):
            at = (side.workload, side.bf_opt, side.input)
            if at not in vm_counts:
                try:
                    if side.workload.startswith("floor:"):
                        vm_counts[at] = floors.elements_per_sample()
                    else:
                        wants[at], n = expected.expected(side.workload, side.bf_opt, side.input,
                                                         opts.tape_len, opts.timeout)
                        vm_counts[at] = synthetic.instructions_per_run(side.workload) \
                            if synthetic.is_synthetic(side.workload) else n
                except RunError as e:
                    vm_counts[at] = str(e)
            if isinstance(vm_counts[at], str):
                outcome.failures[c.key] = vm_counts[at]
    exact: dict[str, int] = {}
    use_perf = opts.count_instructions and counters.hardware_counters()[0]
    # cycles, instructions and branch-misses per run, where the machine counts them
    use_events = opts.count_events and counters.event_counters()[0]
    if opts.count_instructions and not use_perf:
        batch = [side for c in configs if synthetic.is_synthetic(c.workload)
                 and results.runs_done(c.key) < opts.processes
                 for side in filter(None, (c, c.partner_config()))]
        if batch:    # synthetic programs: one valgrind process for all of them
            jobs = [{**c.job(0, 1, None), "tape_len": opts.tape_len} for c in batch]
            for c, n in zip(batch, counters.callgrind_batch(jobs)):
                exact[c.key] = n
        for c in configs:
            if c.workload.startswith("floor:") or synthetic.is_synthetic(c.workload):
                continue        # floors: straight-line code, counted in floors.INSTRUCTIONS
            if results.runs_done(c.key) < opts.processes and c.key not in outcome.failures:
                exact[c.key] = counters.callgrind_instructions(
                    {**c.job(0, 1, None), "tape_len": opts.tape_len})

    progress = Progress(None, "bench", stream=io.StringIO() if opts.quiet else None)
    rng = random.Random(len(configs))
    try:
        while True:
            # one round: every configuration that still wants a worker, once,
            # in a new order; rounds repeat until the minimum number of
            # processes is reached and (with a target) the intervals are narrow
            batch = [c for c in configs
                     if c.key not in outcome.failures and _wants_more(c, results, opts)]
            if not batch:
                break
            batch = round_order(batch, rng)
            # known work: what the minimum number of processes still needs;
            # past that, rounds for the intervals, one at a time
            owed = sum(max(0, opts.processes - results.runs_done(c.key)) for c in configs
                       if c.key not in outcome.failures)
            progress.total = progress.done + max(owed, len(batch))
            for c in batch:
                job = c.job(opts.warmup, opts.samples, cpu)
                job["perf_instructions"] = use_perf
                job["tape_len"] = opts.tape_len
                job["expected"] = wants.get((c.workload, c.bf_opt, c.input))
                job["perf_events"] = use_events
                if c.partner:
                    job["partner_expected"] = wants.get((c.partner, c.bf_opt, c.input))
                layouts = code_layouts(opts)
                job["code_layout"] = layouts[results.runs_done(c.key) % len(layouts)]
                if opts.layout == "fixed":
                    job["layout_seed"] = 0
                try:
                    out = run_worker(job, opts.timeout)
                except RunError as e:
                    outcome.failures[c.key] = str(e)
                    progress.step(note=f"{c.key} FAILED")
                    continue
                for side, got in ((c, out), (c.partner_config(), out.get("partner"))):
                    if side is None:
                        continue
                    run = RunSamples(cycles=got["cycles"], ns=got["ns"],
                                     warmup_ns=got.get("warmup_ns", []),
                                     cpu_ns=got.get("cpu_ns", []),
                                     jit=out.get("jit") if side is c else None,
                                     vm_instructions=vm_counts[side.workload, side.bf_opt,
                                                               side.input],
                                     crossings=out.get("crossings") if side is c else None,
                                     instructions=got.get("instructions", exact.get(side.key)),
                                     worker_pid=out["pid"], cpu=out["cpu"],
                                     layout_seed=out["layout_seed"],
                                     code_layout=out.get("code_layout"),
                                     code_at=out.get("code_at"), events=got.get("events"))
                    config = {**side.describe(), "compiler_version": out["compiler_version"],
                              "build_flags": out["flags"]}
                    results.add(side.key, config, [run], tsc_hz=out["tsc_hz"])
                results.save()
                progress.step(note=c.key)
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        progress.close()
    outcome.imprecise = {c.key: relative_halfwidth(results.get(c.key)) for c in configs
                         if opts.target_ci and c.key in results
                         and relative_halfwidth(results.get(c.key)) > opts.target_ci}
    return outcome
