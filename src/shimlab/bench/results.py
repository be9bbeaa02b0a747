"""Result files: pyperf JSON (``python -m pyperf stats/compare_to`` read them)
carrying shimlab's exact samples and configuration in pyperf metadata.

One pyperf benchmark per configuration, one pyperf run per worker process.

Encoding (all in pyperf metadata, so the data survives any pyperf tool that
rewrites the file, and pyperf's own loader is the only parser needed):

* run values: seconds per run, ``ns / 1e9`` (exactly invertible for any
  realistic ns count); warm-up runs: pyperf warmups ``(1, ns / 1e9)``.
* per run: ``shimlab_cycles`` = TSC cycles per run as comma-separated
  integers (pyperf metadata values are scalars, so a list must be a string);
  ``shimlab_instructions``, ``shimlab_vm_instructions``,
  ``shimlab_worker_pid``, ``shimlab_cpu`` = ints.  Absent means unknown.
* per configuration (the same on every run, so pyperf stores it once):
  ``shimlab_format``; ``shimlab_config.<key>`` for each configuration entry,
  an int/float/string as is, anything else (bool, None, list, a string
  pyperf would strip or reject) as ``"json:" + json.dumps(value)``;
  ``shimlab_tsc_hz``, ``shimlab_version``, ``shimlab_git_commit``,
  ``date``, ``hostname``, ``cpu_model_name``, ``cpu_count`` (pyperf's own
  names, which it displays and checks for consistency between runs);
  ``shimlab_suite`` and ``shimlab_plan`` (how many configurations the run
  that wrote the file had, and a hash of their keys), so --resume refuses a
  file of another suite or another set of configurations.

Files are read only when regular and at most MAX_BYTES (a FIFO or /dev/zero
is refused, not read forever), and every sample is checked as it is read: a
corrupted field is a one-line error naming the file and the configuration.
Without -o a new file gets a name nobody else has (exclusive create), and an
existing -o file is neither resumed nor replaced unless asked (open_for).
"""
from __future__ import annotations

import datetime
import gzip
import io
import json
import math
import os
import platform
import stat
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import pyperf

from ..atomicfile import write_atomic
from ..digest import sha256
from ..errors import ShimlabError
from ..paths import RESULTS

__all__ = ["RunSamples", "ConfigResult", "ResultFile", "load", "collect_environment", "machine_line",
           "FORMAT_VERSION"]

FORMAT_VERSION = 1

K_FORMAT = "shimlab_format"
K_CONFIG = "shimlab_config."
K_CYCLES = "shimlab_cycles"
K_CPU_NS = "shimlab_cpu_ns"
K_INSTRUCTIONS = "shimlab_instructions"
K_VM_INSTRUCTIONS = "shimlab_vm_instructions"
K_CROSSINGS = "shimlab_crossings"
K_PID = "shimlab_worker_pid"
K_CPU = "shimlab_cpu"
K_LAYOUT = "shimlab_layout_seed"
K_CODE_LAYOUT = "shimlab_code_layout"
K_CODE_AT = "shimlab_code_at"
K_EVENTS = "shimlab_events"      # hardware events per run: "cycles=...,branch-misses=..."
K_TSC_HZ = "shimlab_tsc_hz"
K_CPU_NS = "shimlab_cpu_ns"
K_JIT = "shimlab_jit."            # + traces, code_bytes, trace_ops, compile_ns
K_VERSION = "shimlab_version"
K_GIT = "shimlab_git_commit"
K_SUITE = "shimlab_suite"
K_PLAN = "shimlab_plan"

# the largest results file read (a full dispatch run is a few MB)
MAX_BYTES = 256 << 20

JIT_FIELDS = ("traces", "code_bytes", "trace_ops", "compile_ns")
_RUN_KEYS = (K_CYCLES, K_CPU_NS, K_INSTRUCTIONS, K_VM_INSTRUCTIONS, K_PID, K_CPU, K_LAYOUT,
             K_CODE_LAYOUT, K_CODE_AT, K_CROSSINGS, K_EVENTS) + tuple(K_JIT + f for f in JIT_FIELDS)
_PYPERF_RUN_KEYS = ("name", "unit", "loops", "inner_loops", "duration")
_JSON_TAG = "json:"


@dataclass
class RunSamples:
    """The samples of one worker process for one configuration."""
    cycles: list[int]                 # TSC cycles per run; [] if not measured
    ns: list[int]                     # clock_gettime nanoseconds per run
    warmup_ns: list[int] = field(default_factory=list)
    vm_instructions: int | None = None   # VM instructions executed per run
    instructions: int | None = None      # exact machine instructions per run
    worker_pid: int | None = None
    cpu: int | None = None
    layout_seed: int | None = None       # the VM memory layout this process used
    code_layout: int | None = None       # the interpreter build's code layout (build.code_shift)
    code_at: int | None = None           # where its code landed: sl_interpret's page offset
    crossings: int | None = None         # JIT modes: interpreter <-> trace crossings per run
    events: dict | None = None           # hardware events per run (name -> mean count)
    # the process's CPU time per run (ns; [] if not measured): leaves out the
    # time another process had the CPU (shimlab lua and whole-process runs record it)
    cpu_ns: list[int] = field(default_factory=list)
    # JIT modes: what one run compiled (--stats): traces, code bytes, the VM
    # instructions in them, record + optimize + compile time (thread CPU ns)
    jit: dict | None = None


@dataclass
class ConfigResult:
    """One configuration as read back from a result file."""
    key: str
    config: dict
    runs: list[RunSamples]
    metadata: dict     # configuration-level metadata other than the config

    @property
    def has_cycles(self) -> bool:
        return all(r.cycles for r in self.runs)

    @property
    def tsc_hz(self) -> float | None:
        return self.metadata.get(K_TSC_HZ)

    def ns_groups(self) -> list[list[int]]:
        return [r.ns for r in self.runs]

    def cycles_groups(self) -> list[list[int]]:
        return [r.cycles for r in self.runs]

    def cpu_cycles_groups(self) -> list[list[float]]:
        """The CPU time of each run in TSC cycles (cpu_ns at the TSC's rate,
        which is that run's cycles over its wall nanoseconds): time comparable
        with cycles_groups, less the time the process waited for the CPU."""
        return [[cpu * cyc / ns for cpu, cyc, ns in zip(r.cpu_ns, r.cycles, r.ns)]
                for r in self.runs]


# -- metadata encoding -------------------------------------------------------

def _plain_str_ok(value: str) -> bool:
    # pyperf strips strings and rejects empty ones and newlines, so only
    # strings that survive that unchanged may be stored as they are.
    return (bool(value) and value == value.strip() and "\n" not in value
            and "\r" not in value and not value.startswith(_JSON_TAG))


def _encode_value(value):
    if isinstance(value, bool) or value is None:
        return _JSON_TAG + json.dumps(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _plain_str_ok(value):
        return value
    try:
        return _JSON_TAG + json.dumps(value, sort_keys=True, separators=(",", ":"))
    except TypeError:
        raise ValueError(f"configuration value {value!r} is not JSON-serialisable") from None


def _decode_value(value):
    if isinstance(value, str) and value.startswith(_JSON_TAG):
        return json.loads(value[len(_JSON_TAG):])
    return value


def _encode_config(config: dict) -> dict:
    out = {}
    for key, value in config.items():
        if not isinstance(key, str) or not _plain_str_ok(key):
            raise ValueError(f"configuration key {key!r} must be a non-empty one-line string")
        out[K_CONFIG + key] = _encode_value(value)
    return out


def _decode_config(metadata: dict) -> dict:
    return {k[len(K_CONFIG):]: _decode_value(v)
            for k, v in metadata.items() if k.startswith(K_CONFIG)}


def _as_int(value, what: str, minimum: int) -> int:
    # numpy integers are welcome; floats and bools are a caller's bug.
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ValueError(f"{what} must be integers, got {value!r}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {v}")
    return v


def _encode_run(run: RunSamples, common: dict) -> pyperf.Run:
    ns = [_as_int(v, "ns samples", 1) for v in run.ns]
    if not ns:
        raise ValueError("a run needs at least one ns sample")
    cycles = [_as_int(v, "cycles samples", 0) for v in run.cycles]
    if cycles and len(cycles) != len(ns):
        raise ValueError(f"{len(cycles)} cycles samples but {len(ns)} ns samples")
    warmups = [(1, _as_int(v, "warmup ns", 0) / 1e9) for v in run.warmup_ns]
    metadata = dict(common)
    if cycles:
        metadata[K_CYCLES] = ",".join(map(str, cycles))
    cpu_ns = [_as_int(v, "cpu_ns samples", 0) for v in run.cpu_ns]
    if cpu_ns and len(cpu_ns) != len(ns):
        raise ValueError(f"{len(cpu_ns)} cpu_ns samples but {len(ns)} ns samples")
    if cpu_ns:
        metadata[K_CPU_NS] = ",".join(map(str, cpu_ns))
    for name in JIT_FIELDS if run.jit else ():
        metadata[K_JIT + name] = _as_int(run.jit[name], K_JIT + name, 0)
    for key, value in ((K_INSTRUCTIONS, run.instructions),
                       (K_VM_INSTRUCTIONS, run.vm_instructions),
                       (K_PID, run.worker_pid), (K_CPU, run.cpu),
                       (K_LAYOUT, run.layout_seed), (K_CODE_LAYOUT, run.code_layout),
                       (K_CODE_AT, run.code_at), (K_CROSSINGS, run.crossings)):
        if value is not None:
            metadata[key] = _as_int(value, key, 0)
    if run.events:
        if not all(isinstance(k, str) and k.replace("-", "").isalnum() and
                   isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
                   for k, v in run.events.items()):
            raise ValueError(f"events {run.events!r}: name -> count, each finite and >= 0")
        metadata[K_EVENTS] = ",".join(f"{k}={float(v)!r}" for k, v in run.events.items())
    return pyperf.Run([v / 1e9 for v in ns], warmups=warmups or None,
                      metadata=metadata, collect_metadata=False)


def _int_field(md: dict, key: str) -> int | None:
    value = md.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key} is {value!r}, not a count")
    return value


def _decode_run(run: pyperf.Run) -> RunSamples:
    """One run, every field checked: ValueError names the one that is corrupted."""
    md = run.get_metadata()
    ns = [int(round(v * 1e9)) for v in run.values]
    cycle_list = _count_list(md, K_CYCLES, len(ns))
    # pyperf values are per loop iteration; shimlab always writes loops=1,
    # and for files pyperf wrote itself the per-iteration time is what
    # compares.
    return RunSamples(
        cycles=cycle_list,
        ns=ns,
        warmup_ns=[int(round(v * 1e9)) for _loops, v in run.warmups],
        vm_instructions=_int_field(md, K_VM_INSTRUCTIONS),
        instructions=_int_field(md, K_INSTRUCTIONS),
        worker_pid=_int_field(md, K_PID),
        cpu=_int_field(md, K_CPU),
        layout_seed=_int_field(md, K_LAYOUT),
        code_layout=_int_field(md, K_CODE_LAYOUT),
        code_at=_int_field(md, K_CODE_AT),
        crossings=_int_field(md, K_CROSSINGS),
        events=_events_field(md),
        cpu_ns=_count_list(md, K_CPU_NS, len(ns)),
        jit=({f: _int_field(md, K_JIT + f) for f in JIT_FIELDS}
             if md.get(K_JIT + JIT_FIELDS[0]) is not None else None),
    )


def _events_field(md: dict) -> dict | None:
    value = md.get(K_EVENTS)
    if value is None:
        return None
    try:
        out = {k: float(v) for k, v in (p.split("=") for p in str(value).split(","))}
    except ValueError:
        raise ValueError(f"{K_EVENTS} is {str(value)[:40]!r}, not name=count pairs") from None
    if not all(math.isfinite(v) and v >= 0 for v in out.values()):
        raise ValueError(f"{K_EVENTS} is {str(value)[:40]!r}: counts must be finite and >= 0")
    return out


def _count_list(md: dict, key: str, n: int) -> list[int]:
    """A per-sample list of counts stored as one comma-separated string
    ([] when absent); ValueError when it is not one count per sample."""
    value = md.get(key)
    if value is None:
        return []
    parts = value.split(",") if isinstance(value, str) else [None]
    if not all(isinstance(p, str) and p.isascii() and p.isdigit() for p in parts):
        raise ValueError(f"{key} is {str(value)[:40]!r}, not comma-separated counts")
    out = [int(c) for c in parts]
    if len(out) != n:
        raise ValueError(f"{key} has {len(out)} samples for {n} times")
    return out


def _decode_benchmark(bench: pyperf.Benchmark) -> ConfigResult:
    common = bench.get_metadata()
    fmt = common.get(K_FORMAT)
    if isinstance(fmt, int) and fmt > FORMAT_VERSION:
        raise ShimlabError(f"benchmark {bench.get_name()!r} was written by a newer "
                           f"shimlab (format {fmt}, this one reads {FORMAT_VERSION})")
    tsc = common.get(K_TSC_HZ)
    if tsc is not None and (isinstance(tsc, bool) or not isinstance(tsc, (int, float))
                            or not tsc > 0):
        raise ValueError(f"{K_TSC_HZ} is {str(tsc)[:40]!r}, not a frequency")
    metadata = {k: v for k, v in common.items()
                if not k.startswith(K_CONFIG) and k not in _RUN_KEYS
                and k not in _PYPERF_RUN_KEYS}
    return ConfigResult(key=bench.get_name(), config=_decode_config(common),
                        runs=[_decode_run(r) for r in bench.get_runs()],
                        metadata=metadata)


# -- environment ---------------------------------------------------------------

def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo."""
    out: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                out[key.strip()] = value.strip()
    except OSError:
        pass
    return out


def _cpu_model() -> str | None:
    return _cpuinfo().get("model name") or platform.processor() or None


def _cpu_identity() -> str | None:
    """family/model/stepping and microcode: two machines with one model name
    can differ in both, and a microcode update can move branch costs."""
    info = _cpuinfo()
    parts = [f"{k} {info[k]}" for k in ("cpu family", "model", "stepping", "microcode")
             if info.get(k)]
    return ", ".join(parts) or None


def _git(*args: str) -> str | None:
    here = Path(__file__).resolve().parent
    try:
        # --no-optional-locks: never take index.lock, other processes may be
        # using the repository while a benchmark runs.
        p = subprocess.run(["git", "--no-optional-locks", "-C", str(here), *args],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def _git_commit() -> str | None:
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit + "-dirty" if status else commit


def _shimlab_version() -> str:
    try:
        import shimlab
        v = getattr(shimlab, "__version__", None)
        if v:
            return str(v)
    except ImportError:
        pass
    try:
        from importlib.metadata import version
        return version("shimlab")
    except Exception:
        return "unknown"


def _python() -> str:
    """The Python that ran the measurement, resolved: a pyenv build and
    Debian's 3.11 differ by ~20% in the JIT's compile time and start-up."""
    exe = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return (f"{platform.python_implementation()} {platform.python_version()} {exe} "
            f"({platform.python_compiler()}, {platform.python_build()[1]})")


def machine_line(env: dict) -> str:
    """The CPU (and the Python, when recorded) a result file's figures belong to."""
    line = f"{env.get('cpu_model_name', '?')} ({env.get('cpu_identity', '?')})"
    return line + (f", {env['python']}" if env.get("python") else "")


def collect_environment() -> dict:
    """Metadata describing this machine and checkout, stamped on every config."""
    env = {
        "hostname": platform.node() or None,
        "cpu_model_name": _cpu_model(),
        "cpu_identity": _cpu_identity(),
        "kernel": f"{platform.system()} {platform.release()} {platform.version()}".strip(),
        "cpu_count": os.cpu_count(),
        "python": _python(),
        K_VERSION: _shimlab_version(),
        K_GIT: _git_commit(),
    }
    return {k: v for k, v in env.items() if v is not None}


# -- the file ------------------------------------------------------------------

class ResultFile:
    """A result file being written (and resumed) by the benchmark harness."""

    def __init__(self, path, environment: dict | None = None):
        self.path = Path(path)
        self._environment = environment
        self._benchmarks: dict[str, pyperf.Benchmark] = {}
        self._configs: dict[str, dict] = {}
        self._plan: dict = {}         # K_SUITE, K_PLAN stamped on what add() records
        self._claimed = False         # an empty placeholder made by claim(): ours to remove
        self.saved = False

    # reading

    @classmethod
    def load(cls, path, environment: dict | None = None) -> "ResultFile | None":
        """The file at path, or None if there is none; a file that is not a
        regular one, too big, or corrupted anywhere is a ShimlabError."""
        path = Path(path)
        data = _read_bounded(path)
        if data is None:
            return None
        if data[:2] == b"\x1f\x8b":
            data = _gunzip_bounded(path, data)
        try:
            text = data.decode("utf-8")
            del data
            suite = pyperf.BenchmarkSuite.load(io.StringIO(text))
        except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError,
                IndexError, RecursionError) as e:
            why = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
            raise ShimlabError(f"{path}: not a readable pyperf results file ({why})") from None
        rf = cls(path, environment=environment)
        for bench in suite.get_benchmarks():
            name = bench.get_name()
            try:
                _decode_benchmark(bench)       # every sample checked once, here
            except (ValueError, TypeError, OverflowError) as e:
                raise ShimlabError(f"{path}: configuration {name}: corrupted results "
                                   f"({e})") from None
            rf._benchmarks[name] = bench
            rf._configs[name] = _decode_config(bench.get_metadata())
        return rf

    @classmethod
    def open(cls, path, environment: dict | None = None) -> "ResultFile":
        """The file at path to resume, or a new empty one."""
        return cls.load(path, environment) or cls(path, environment)

    def configs(self) -> list[str]:
        return list(self._benchmarks)

    # what the file is for: one suite, one set of configurations

    def set_plan(self, suite: str, keys: Iterable[str]) -> None:
        """Stamp every configuration added from now on with the suite and the
        set of configuration keys of this run (see check_plan)."""
        keys = sorted(set(keys))
        digest = sha256("\n".join(keys).encode()).hexdigest()[:16]
        self._plan = {K_SUITE: suite, K_PLAN: f"{len(keys)}:{digest}"}

    def check_plan(self, suite: str, keys: Iterable[str]) -> None:
        """Refuse to resume a file of another suite or configuration set."""
        keys = set(keys)
        for name, bench in self._benchmarks.items():
            md = bench.get_metadata()
            theirs = md.get(K_SUITE) or name.split("/", 1)[0]
            if theirs != suite:
                raise ShimlabError(f"{self.path}: holds results of bench {theirs} "
                                   f"(configuration {name}), not {suite}: resume it with "
                                   f"`shimlab bench {theirs} --resume {self.path}`")
        mine = ResultFile(self.path)
        mine.set_plan(suite, keys)
        for name, bench in self._benchmarks.items():
            plan = bench.get_metadata().get(K_PLAN)
            # files written before plans were recorded: every key must be planned
            if (plan is not None and plan != mine._plan[K_PLAN]) or name not in keys:
                n = str(plan).split(":")[0] if plan is not None else "other"
                raise ShimlabError(f"{self.path}: written for another set of configurations "
                                   f"({n} of them, this run has {len(keys)}; e.g. {name}): "
                                   f"resume with the options that wrote it, or write a new "
                                   f"file")

    # the placeholder of a new file

    def claim(self) -> None:
        """Create the file, empty, failing if it exists (O_EXCL): two runs can
        never be given the same file."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        self._claimed = True

    def release(self) -> None:
        """Remove the placeholder if nothing was ever saved into it."""
        if self._claimed and not self.saved:
            try:
                if self.path.stat().st_size == 0:
                    self.path.unlink()
            except FileNotFoundError:
                pass
            self._claimed = False

    def configs_done(self) -> set[str]:
        return set(self._benchmarks)

    def runs_done(self, config_key: str) -> int:
        bench = self._benchmarks.get(config_key)
        return bench.get_nrun() if bench is not None else 0

    def get(self, config_key: str) -> ConfigResult:
        return _decode_benchmark(self._benchmarks[config_key])

    def __contains__(self, config_key: str) -> bool:
        return config_key in self._benchmarks

    def __len__(self) -> int:
        return len(self._benchmarks)

    def __iter__(self) -> Iterator[ConfigResult]:
        return (self.get(k) for k in self._benchmarks)

    # writing

    @property
    def environment(self) -> dict:
        if self._environment is None:
            self._environment = collect_environment()
        return self._environment

    def add(self, config_key: str, config: dict, runs: list[RunSamples], *,
            tsc_hz: float | None = None, metadata: dict | None = None) -> None:
        """Record runs of one configuration (appending if it already has some).

        Everything is validated before anything changes, so a bad sample
        raises ValueError here rather than corrupting a later save().
        """
        if not isinstance(config_key, str) or not _plain_str_ok(config_key):
            raise ValueError(f"config key {config_key!r} must be a non-empty one-line string")
        if not runs:
            raise ValueError("no runs to add")
        encoded_config = _encode_config(config)
        normal_config = _decode_config(encoded_config)
        if config_key in self._configs and self._configs[config_key] != normal_config:
            raise ValueError(f"config {config_key!r} is already recorded with a different "
                             f"configuration: {self._configs[config_key]} != {normal_config}")
        common = {"name": config_key, "unit": "second", K_FORMAT: FORMAT_VERSION,
                  "date": datetime.datetime.now().isoformat(sep=" ", timespec="seconds")}
        common.update(self.environment)
        common.update(self._plan)
        common.update(encoded_config)
        if tsc_hz is not None:
            common[K_TSC_HZ] = float(tsc_hz)
        if metadata:
            clash = set(metadata) & (set(_RUN_KEYS) | {"name", "unit", K_FORMAT, K_SUITE,
                                                       K_PLAN})
            clash |= {k for k in metadata if k.startswith(K_CONFIG)}
            if clash:
                raise ValueError(f"metadata keys reserved by shimlab: {sorted(clash)}")
            common.update(metadata)
        new_runs = [_encode_run(r, common) for r in runs]

        bench = self._benchmarks.get(config_key)
        if bench is None:
            bench = pyperf.Benchmark(new_runs)
        else:
            # Validate on a copy: pyperf's add_run may fail half way through.
            bench = pyperf.Benchmark(bench.get_runs())
            for run in new_runs:
                bench.add_run(run)
        self._benchmarks[config_key] = bench
        self._configs[config_key] = normal_config

    def dumps(self) -> str:
        if not self._benchmarks:
            raise ValueError("no configurations to save")
        buf = io.StringIO()
        pyperf.BenchmarkSuite(list(self._benchmarks.values())).dump(buf)
        return buf.getvalue()

    def save(self) -> None:
        """Write the file atomically: readers see the old or the new file, whole."""
        data = self.dumps().encode("utf-8")
        if self.path.suffix == ".gz":
            data = gzip.compress(data, mtime=0)
        _atomic_write(self.path, data)
        self.saved = True


def load(path, environment: dict | None = None) -> ResultFile | None:
    """The result file at path, or None if there is none."""
    return ResultFile.load(path, environment)


def _atomic_write(path: Path, data: bytes) -> None:
    write_atomic(path, data, durable=True)


def _read_bounded(path: Path) -> bytes | None:
    """The bytes of a regular file of at most MAX_BYTES; None if there is no
    file.  O_NONBLOCK: opening a FIFO must not wait for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ShimlabError(f"{path}: cannot read the results file: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ShimlabError(f"{path}: is a directory, not a results file")
        if not stat.S_ISREG(st.st_mode):
            raise ShimlabError(f"{path}: not a regular file (a device, pipe or socket); a "
                               f"results file must be a regular file")
        if st.st_size > MAX_BYTES:
            raise ShimlabError(f"{path}: {st.st_size:,} bytes, more than a results file "
                               f"holds (at most {MAX_BYTES:,})")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, MAX_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_BYTES:     # grew while being read
                raise ShimlabError(f"{path}: more than {MAX_BYTES:,} bytes, more than a "
                                   f"results file holds")
        return b"".join(chunks)
    except OSError as e:
        raise ShimlabError(f"{path}: cannot read the results file: {e.strerror}") from None
    finally:
        os.close(fd)


def _gunzip_bounded(path: Path, data: bytes) -> bytes:
    d = zlib.decompressobj(wbits=31)   # gzip framing
    try:
        out = d.decompress(data, MAX_BYTES + 1)
    except zlib.error as e:
        raise ShimlabError(f"{path}: corrupted gzip data ({e})") from None
    if len(out) > MAX_BYTES or d.unconsumed_tail:
        raise ShimlabError(f"{path}: decompresses to more than {MAX_BYTES:,} bytes, more "
                           f"than a results file holds")
    return out


def _stamp() -> str:
    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def open_for(suite: str, keys: Iterable[str], output: str | None = None,
             resume: str | None = None, force: bool = False,
             directory: Path | None = None) -> ResultFile:
    """The results file a benchmark run writes, checked before any measuring.

    --resume FILE continues FILE, which must be a results file of this suite
    and this set of configurations; -o FILE starts FILE, refusing an existing
    one unless `force` (then replaced at the first save); neither: a new
    DIRECTORY/SUITE-DATE.json (results/ by default), made with an exclusive
    create, with -2, -3, ... when another run took that name.  A new file
    exists, empty, until the first save; release() removes it if unused."""
    keys = sorted(set(keys))
    resumed = check_file_options(output, resume, force)
    if resume:
        rf = resumed
        rf.check_plan(suite, keys)
    elif output:
        path = Path(output)
        existed = os.path.lexists(path)
        rf = ResultFile(path)
        if not existed:
            try:
                rf.claim()
            except FileExistsError:
                raise ShimlabError(f"{path}: created by someone else just now; "
                                   f"choose another -o") from None
    else:
        base = (directory or RESULTS) / f"{suite}-{_stamp()}"
        check_writable(base.with_suffix(".json"))
        for n in range(1, 1000):
            rf = ResultFile(base.with_name(base.name + (f"-{n}" if n > 1 else "") + ".json"))
            try:
                rf.claim()
                break
            except FileExistsError:
                continue
        else:
            raise ShimlabError(f"{base}-*.json: no free name among 999")
    rf.set_plan(suite, keys)
    return rf


def check_file_options(output: str | None = None, resume: str | None = None,
                       force: bool = False) -> ResultFile | None:
    """-o, --resume and --force refused in one line each, as a suite's first
    step (before any compiler is probed or anything built), and again by
    open_for; returns the file --resume names, loaded."""
    if resume:
        path = Path(resume)
        if output and Path(output) != path:
            raise ShimlabError(f"-o {output} and --resume {resume}: --resume continues the "
                               f"file it names; give one of them")
        rf = ResultFile.load(path)
        if rf is None:
            raise ShimlabError(f"{path}: nothing to resume (no such file)")
        if not len(rf):
            raise ShimlabError(f"{path}: nothing to resume (an empty results file)")
        check_writable(path)
        return rf
    if output:
        path = Path(output)
        if os.path.lexists(path):
            if not force:
                raise ShimlabError(f"{path}: already exists; --resume {path} continues it, "
                                   f"--force replaces it")
            try:
                regular = stat.S_ISREG(os.stat(path).st_mode)
            except OSError:
                regular = False       # a dangling symlink, say
            if not regular:
                raise ShimlabError(f"{path}: not a regular file; a results file must be one")
        check_writable(path)
    return None


def check_writable(path: Path) -> None:
    """Fail before any measuring if the results file cannot be written there;
    the probe file is removed, so nothing is left behind."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ShimlabError(f"{path}: cannot write the results file there: {parent} "
                                   f"is not a directory")
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.probe"):
            pass
    except OSError as e:
        raise ShimlabError(f"{path}: cannot write the results file there: "
                           f"{e.strerror or e}") from None
    if path.is_dir():
        raise ShimlabError(f"{path}: is a directory, not a results file")
