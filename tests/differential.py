"""Differential testing: one program on every execution mode against the oracle.

check(case) runs a Case (BF source, minipy source or raw bytecode, plus
input) on the Python oracle and on every configuration asked for (Config:
every interpreter and JIT mode this machine builds, conftest.execution_configs,
at each optimizer level, K and JIT threshold; count builds) and compares output, status,
error pc and value, final tape and head, the entry function's final locals
and the count of every opcode executed.  The native runs happen in one
forked child per case, so an interpreter that faults or hangs is a failing
case like any other, not a dead test run.

A case that fails inside a hypothesis test is saved, once hypothesis has
shrunk it, to tests/regression/<hash>.json (SHIMLAB_REGRESSION_DIR moves
it); tests/test_regression.py replays every file there on every mode.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.control import current_build_context, currently_in_test_context
from hypothesis.errors import HypothesisException

import cpython
import strategies
from conftest import ROOT, execution_configs, get_build
from shimlab.interp import loader
from shimlab import isa, isolate, modes, oracle, vm
from shimlab.frontend import bf, compile_text, slbc
from shimlab.jit import optimize, trace_cache
from shimlab.jit.defaults import DEFAULT_THRESHOLD
from shimlab.frontend.verify import verify

ORACLE_STEPS = 300_000     # cases longer than this are skipped, not failed
NATIVE_TIMEOUT = 60.0      # seconds for all modes of one case; the oracle took far less


def regression_dir() -> Path:
    return Path(os.environ.get("SHIMLAB_REGRESSION_DIR", ROOT / "tests" / "regression"))


@dataclass(frozen=True)
class Case:
    kind: str                  # "bf", "minipy" or "bytecode"
    source: str | dict         # source text, or the .slbc dict for bytecode
    input: bytes = b""
    # minipy: what CPython prints for it (booleans as 1 and 0), which the
    # oracle's output must equal (tests/against_cpython.py); None: not compared
    cpython: str | None = None

    def program(self, bf_opt: int = 0):
        if self.kind == "bytecode":
            return verify(slbc.from_dict(self.source, "case.slbc"))
        return compile_text(self.source, f"case.{'bf' if self.kind == 'bf' else 'py'}",
                            self.kind, bf_opt)

    def programs(self):
        """The case's program at each level of its front end (BF: --bf-opt 0 and 1)."""
        levels = bf.LEVELS if self.kind == "bf" else (0,)
        return [self.program(level) for level in levels]

    def to_json(self) -> dict:
        # latin-1 keeps every byte and leaves text readable in the file
        out = {"kind": self.kind, "source": self.source, "input": self.input.decode("latin-1")}
        if self.cpython is not None:     # (cases without it keep their digest)
            out["cpython"] = self.cpython
        return out

    @classmethod
    def from_json(cls, d: dict) -> "Case":
        return cls(d["kind"], d["source"], d.get("input", "").encode("latin-1"),
                   d.get("cpython"))

    @property
    def digest(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def nonzero_cells(tape: bytes) -> dict:
    """{str(cell): value} for the tape's non-zero cells, in order.  Only the
    stretch between the first and last non-zero cell is walked in Python: a
    case is compared on hundreds of configurations, and walking all 30,000
    cells of each tape was most of a BF example's time."""
    body = bytes(tape).rstrip(b"\0")
    start = len(body) - len(body.lstrip(b"\0"))
    return {str(i): b for i, b in enumerate(body[start:], start) if b}


def result_to_json(r) -> dict:
    """Everything the modes must agree on, compact (the tape as its non-zero cells)."""
    return {"output": r.output.decode("latin-1"), "status": r.status.name,
            "err_pc": r.err_pc, "err_value": r.err_value, "head": r.head,
            "tape": nonzero_cells(r.tape),
            "locals": list(r.locals),
            "counts": {isa.INSTRUCTIONS[i].name: n for i, n in enumerate(r.counts) if n}}


# ---- running every mode ------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """One way to run a program: an interpreter (mode, compiler), and for the
    modes that take them the trace optimizer's level, K cached values
    (--cache K) and the JIT's threshold."""
    mode: str
    cc: str
    level: int | None = None     # JIT modes only
    k: int = 0                   # tailcall and the JIT modes on clang
    threshold: int = 1           # JIT modes only
    # JIT modes: run once with the trace cache on, then again, the second
    # run installing the first's traces when its JIT starts (trace_cache.py)
    replay: bool = False

    def label(self) -> str:
        out = f"{self.mode}/{self.cc}"
        if self.level is not None:
            out += f" --jit-opt {self.level}"
        if self.k:
            out += f" --cache {self.k}"
        if modes.is_jit(self.mode) and self.threshold != 1:
            out += f" --jit-threshold {self.threshold}"
        if self.replay:
            out += " (a second run, its traces replayed from the trace cache)"
        return out


KS = range(1, 6)                 # --cache K: 1..5
THRESHOLDS = range(2, 101)       # the drawn threshold: traces that start late, exits that heat slowly


# the JIT modes whose traces a replay config runs (all of them with replay_all)
REPLAY_MODES = ("jit-direct", "jit-shim")


def configs(ks=(), thresholds=(1,), replay_all: bool = False) -> list[Config]:
    """Every interpreter this machine builds (conftest.execution_configs);
    the JIT modes at every optimizer level and each threshold in
    `thresholds`; the modes that cache at K = 0 and at each K in `ks`.
    Replayed traces (Config.replay) at the top optimizer level and the last
    threshold, at each K: in REPLAY_MODES, or with replay_all in every
    JIT mode at levels 2 and up."""
    out = []
    for mode, cc in execution_configs():
        k_here = (0,) + tuple(k for k in ks if k) if modes.get(mode).cache else (0,)
        if modes.is_jit(mode):
            out += [Config(mode, cc, level, k, th) for level in optimize.LEVELS
                    for k in k_here for th in thresholds]
            if replay_all or mode in REPLAY_MODES:
                levels = [lv for lv in optimize.LEVELS if lv >= 2] if replay_all \
                    else [max(optimize.LEVELS)]
                out += [Config(mode, cc, level, k, thresholds[-1], replay=True)
                        for level in levels for k in k_here]
        else:
            out += [Config(mode, cc, None, k) for k in k_here]
    return out


def run_config(cfg: Config, program, data: bytes):
    """One configuration on one program.  The JIT modes record a side exit
    once it was taken `threshold` times, as a loop, and check after every
    compile that no mapping is writable and executable."""
    b = get_build(cfg.mode, cfg.cc, count=True, cache=cfg.k)
    if cfg.replay:
        return _replayed(b, cfg, program, data)
    if modes.is_jit(cfg.mode):
        with vm.Loaded(b, program, data, jit={"threshold": cfg.threshold, "verify_wx": True,
                                              "opt": cfg.level}) as loaded:
            return loaded.run()
    return vm.run(b, program, data)


def _replayed(b, cfg: Config, program, data: bytes):
    """The second of two runs with the trace cache on (in a folder of their
    own): the first records and lists its traces, the second installs them
    all at its first hot loop, long before most of them got hot the first
    time, and its side traces linked before their exits ever ran."""
    jit = {"threshold": cfg.threshold, "verify_wx": True, "opt": cfg.level,
           "trace_cache": "on"}
    kept = trace_cache.folder
    with tempfile.TemporaryDirectory() as folder:
        trace_cache.folder = lambda: folder
        try:
            with vm.Loaded(b, program, data, jit=jit) as loaded:
                loaded.run()
            with vm.Loaded(b, program, data, jit=jit) as loaded:
                result = loaded.run()
                tc = loaded.jit.trace_cache       # (None: no loop got hot, nothing listed)
                if tc is not None and tc.replay and not tc.replayed:
                    raise AssertionError("the second run installed none of the traces listed")
                return result
        finally:
            trace_cache.folder = kept


def _run_all(configs, program, data):
    out = {}
    for cfg in configs:
        try:
            out[cfg] = run_config(cfg, program, data)
        except Exception as e:      # a compile error, say: that config's problem, not the rest's
            out[cfg] = e
    return out


def run_modes(program, data: bytes, configs_: list[Config]) -> dict:
    """{config: Result, or the Crash/RunError that config ended with}."""
    for cfg in configs_:             # build and load before forking, once per session
        loader.library(str(get_build(cfg.mode, cfg.cc, count=True, cache=cfg.k).path))
    try:
        return isolate.call("the interpreters", _run_all, configs_, program, data,
                            timeout=NATIVE_TIMEOUT)
    except isolate.Crash:
        pass
    # one of them crashed or hung: find which, one child per mode
    out = {}
    for cfg in configs_:
        try:
            out[cfg] = isolate.call(f"the {cfg.label()} interpreter", run_config, cfg,
                                    program, data, timeout=NATIVE_TIMEOUT)
        except Exception as e:
            out[cfg] = e
    return out


def differences(expected: dict, got: dict) -> list[str]:
    out = []
    for key, want in expected.items():
        have = got.get(key)
        if want == have:
            continue
        if key == "tape":
            cells = sorted(set(want) | set(have), key=int)
            bad = [c for c in cells if want.get(c, 0) != have.get(c, 0)]
            out.append(f"tape differs at {len(bad)} cells, first {bad[0]}: "
                       f"{want.get(bad[0], 0)} != {have.get(bad[0], 0)}")
        elif key == "counts":
            bad = sorted(n for n in set(want) | set(have) if want.get(n) != have.get(n))
            out.append("counts differ: " + ", ".join(
                f"{n} {want.get(n, 0)} != {have.get(n, 0)}" for n in bad[:5]))
        else:
            out.append(f"{key}: {want!r:.200} != {have!r:.200}")
    return out


def compare_all(expected: dict, results: dict) -> list[str]:
    problems = []
    for cfg, got in results.items():
        if isinstance(got, Exception):
            problems.append(f"{cfg.label()}: {type(got).__name__}: {got}")
            continue
        problems += [f"{cfg.label()}: {d}" for d in differences(expected, result_to_json(got))]
    return problems


# ---- the check and the regression files ----------------------------------------

def check(case: Case, configs_: list[Config] | None = None, save_failure: bool = False) -> None:
    """Assert every configuration (default: configs()) agrees with the oracle
    on case, and the oracle with CPython where the case says what CPython prints.
    A failure is saved once hypothesis has shrunk it, or at once with
    save_failure outside hypothesis (a fixed sample's)."""
    configs_ = _narrowed(configs() if configs_ is None else configs_)
    expected = None
    try:
        for level, program in enumerate(case.programs()):
            try:
                ref = oracle.run(program, case.input, max_steps=ORACLE_STEPS)
            except TimeoutError:
                if currently_in_test_context():
                    reject()          # too long for a quick test; not a failure
                raise
            expected = result_to_json(ref)
            results = run_modes(program, case.input, configs_)
            problems = against_cpython(case, expected) + compare_all(expected, results)
            if problems:
                _failed(expected, results)
            where = f" (--bf-opt {level})" if case.kind == "bf" else ""
            assert not problems, (f"configurations disagree with the oracle{where}:\n  "
                                  + "\n  ".join(problems))
    except Exception as e:
        if save_failure and not currently_in_test_context():
            save(case, expected, e)
        elif not isinstance(e, HypothesisException):
            save_if_final(case, expected, e)
        raise


# Shrinking a failure runs hundreds of candidates; inside a property_test run
# each runs only in the kinds of configuration the first failure was seen in (a
# few instead of hundreds, none when only the oracle disagreed with CPython),
# and the final replay in all of them.  None: not in a property_test run.
_shrinking: dict | None = None


def _kind_of(cfg: Config) -> tuple:
    # K and the threshold are drawn anew by each candidate: any K >= 1, any threshold > 1
    return cfg.mode, cfg.cc, cfg.level, cfg.k > 0, cfg.threshold > 1, cfg.replay


def _failed(expected: dict, results: dict) -> None:
    if _shrinking is not None and _shrinking["kinds"] is None:
        _shrinking["kinds"] = {_kind_of(cfg) for cfg, got in results.items()
                               if isinstance(got, Exception)
                               or differences(expected, result_to_json(got))}


def _narrowed(configs_: list[Config]) -> list[Config]:
    if (_shrinking is None or _shrinking["kinds"] is None or not currently_in_test_context()
            or getattr(current_build_context(), "is_final", False)):
        return configs_
    return [cfg for cfg in configs_ if _kind_of(cfg) in _shrinking["kinds"]]


def against_cpython(case: Case, expected: dict) -> list[str]:
    """The oracle's output against what CPython printed (case.cpython)."""
    if case.cpython is None or (expected["output"] == case.cpython
                                and expected["status"] == "OK"):
        return []
    return [f"the oracle (status {expected['status']}) disagrees with CPython: output "
            f"{expected['output']!r:.300} != {case.cpython!r:.300}"]


def save_if_final(case: Case, expected: dict | None, error: BaseException) -> Path | None:
    """Write the case once hypothesis has shrunk it (its final replay)."""
    if not currently_in_test_context() or not getattr(current_build_context(), "is_final", True):
        return None
    return save(case, expected, error)


def save(case: Case, expected: dict | None, error: BaseException) -> Path:
    d = regression_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{case.kind}-{case.digest}.json"
    record = {**case.to_json(), "expected": expected,
              "note": ["found by the differential tests:"] + str(error).splitlines()[:6]}
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"differential: saved the failing case as {path}")
    return path


def load_regression(path: Path) -> tuple[Case, dict]:
    record = json.loads(path.read_text())
    return Case.from_json(record), record["expected"]


# ---- the property tests, built here so scripts/fuzz.py can run them longer --------

def drawn_configs(k: int, threshold: int) -> list[Config]:
    """What one random example runs in: every mode at every optimizer level,
    at K = 0 and at its drawn K, at threshold 1 and at its drawn threshold."""
    return configs(ks=(k,), thresholds=(1, threshold))


def full_configs(threshold: int) -> list[Config]:
    """The whole matrix: every K in 1..5, thresholds 1, the JIT's default and the drawn one."""
    return configs(ks=KS, thresholds=sorted({1, DEFAULT_THRESHOLD, threshold}), replay_all=True)


# what the properties run each example in: drawn_configs, or with FULL
# (scripts/fuzz.py --full) full_configs
FULL = False


def example_configs(k: int, threshold: int) -> list[Config]:
    return full_configs(threshold) if FULL else drawn_configs(k, threshold)


def _bf(src: str, data: bytes, k: int, threshold: int) -> None:
    if src.strip():
        # start right of cell 0 so that not every program dies on its first '<'
        check(Case("bf", ">>" + src, data), example_configs(k, threshold))


def _minipy(src: str, k: int, threshold: int) -> None:
    check(Case("minipy", src), example_configs(k, threshold))


def _cpython(src: str, k: int, threshold: int) -> None:
    check(Case("minipy", src, cpython=cpython.prints(src)), example_configs(k, threshold))


def _bytecode(program: dict, data: bytes, k: int, threshold: int) -> None:
    # a dict with instruction names, so hypothesis prints a readable program
    check(Case("bytecode", program, data), example_configs(k, threshold))


_DRAWN = {"k": st.sampled_from(KS), "threshold": st.sampled_from(THRESHOLDS)}
PROPERTIES = {
    "bf": (_bf, {"src": strategies.bf_programs(), "data": st.binary(max_size=8), **_DRAWN}),
    "minipy": (_minipy, {"src": strategies.minipy_programs(), **_DRAWN}),
    # the same programs, the oracle also held to what CPython prints
    "cpython": (_cpython, {"src": strategies.minipy_programs(), **_DRAWN}),
    "bytecode": (_bytecode, {"program": strategies.bytecode_programs().map(slbc.to_dict),
                             "data": st.binary(max_size=8), **_DRAWN}),
}


def property_test(kind: str, max_examples: int, seed: int | None = None, **more):
    """The property for one kind of program as a test; seed: hypothesis's
    random choices (None: its own)."""
    fn, strats = PROPERTIES[kind]
    test = settings(max_examples=max_examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large],
                    **more)(given(**strats)(fn))
    if seed is not None:
        test = hypothesis_seed(seed)(test)

    @functools.wraps(test)
    def run():
        global _shrinking
        _shrinking = {"kinds": None}
        try:
            return test()
        finally:
            _shrinking = None
    return run
