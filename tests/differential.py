"""Differential testing: one program on every execution mode against the oracle.

check(case) runs a Case (BF source, minipy source or raw bytecode, plus
input) on the Python oracle and on every interpreter this machine builds
(conftest.execution_configs: every interpreter and every JIT mode, the JIT
tracing at the first back-edge, count builds) and compares output, status,
error pc and value, final tape and head, the entry function's final locals
and the count of every opcode executed.  The native runs happen in one
forked child per case, so an interpreter that faults or hangs is a failing
case like any other, not a dead test run.

A case that fails inside a hypothesis test is saved, once hypothesis has
shrunk it, to tests/regression/<hash>.json (SHIMLAB_REGRESSION_DIR moves
it); tests/test_regression.py replays every file there on every mode.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context, currently_in_test_context
from hypothesis.errors import HypothesisException

import strategies
from conftest import ROOT, execution_configs, get_build
from shimlab.interp import loader
from shimlab import isa, isolate, modes, reference, vm
from shimlab.frontend import bf, compile_text, slbc
from shimlab.jit import optimize
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
        return {"kind": self.kind, "source": self.source, "input": self.input.decode("latin-1")}

    @classmethod
    def from_json(cls, d: dict) -> "Case":
        return cls(d["kind"], d["source"], d.get("input", "").encode("latin-1"))

    @property
    def digest(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def result_to_json(r) -> dict:
    """Everything the modes must agree on, compact (the tape as its non-zero cells)."""
    return {"output": r.output.decode("latin-1"), "status": r.status.name,
            "err_pc": r.err_pc, "err_value": r.err_value, "head": r.head,
            "tape": {str(i): b for i, b in enumerate(r.tape) if b},
            "locals": list(r.locals),
            "counts": {isa.INSTRUCTIONS[i].name: n for i, n in enumerate(r.counts) if n}}


# ---- running every mode ------------------------------------------------------

def configs() -> list[tuple]:
    """execution_configs(), the JIT modes once per optimizer level: (mode, cc[, level])."""
    out = []
    for mode, cc in execution_configs():
        out += [(mode, cc, level) for level in optimize.LEVELS] if modes.is_jit(mode) \
            else [(mode, cc)]
    return out


def run_config(cfg: tuple, program, data: bytes):
    """One mode on one program.  The JIT modes trace at the first back-edge,
    link side exits the first time they are taken, and check after every
    compile that no mapping is writable and executable."""
    b = get_build(*cfg[:2], count=True)
    if modes.is_jit(cfg[0]):
        with vm.Loaded(b, program, data, jit={"threshold": 1, "verify_wx": True,
                                              "opt": cfg[2]}) as loaded:
            return loaded.run()
    return vm.run(b, program, data)


def _run_all(configs, program, data):
    return {cfg: run_config(cfg, program, data) for cfg in configs}


def run_modes(program, data: bytes) -> dict:
    """{config: Result, or the Crash/RunError that config ended with}."""
    configs_ = configs()
    for cfg in configs_:             # build and load before forking, once per session
        loader.library(str(get_build(*cfg[:2], count=True).path))
    try:
        return isolate.call("the interpreters", _run_all, configs_, program, data,
                            timeout=NATIVE_TIMEOUT)
    except isolate.Crash:
        pass
    # one of them crashed or hung: find which, one child per mode
    out = {}
    for cfg in configs_:
        try:
            out[cfg] = isolate.call(f"the {label(cfg)} interpreter", run_config, cfg,
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
            problems.append(f"{label(cfg)}: {type(got).__name__}: {got}")
            continue
        problems += [f"{label(cfg)}: {d}" for d in differences(expected, result_to_json(got))]
    return problems


def label(cfg: tuple) -> str:
    return f"{cfg[0]}/{cfg[1]}" + (f"/jit-opt {cfg[2]}" if len(cfg) > 2 else "")


# ---- the check and the regression files ----------------------------------------

def check(case: Case) -> None:
    """Assert every mode agrees with the oracle on case."""
    expected = None
    try:
        for level, program in enumerate(case.programs()):
            try:
                ref = reference.run(program, case.input, max_steps=ORACLE_STEPS)
            except TimeoutError:
                if currently_in_test_context():
                    reject()          # too long for a quick test; not a failure
                raise
            expected = result_to_json(ref)
            problems = compare_all(expected, run_modes(program, case.input))
            where = f" (--bf-opt {level})" if case.kind == "bf" else ""
            assert not problems, (f"modes disagree with the oracle{where}:\n  "
                                  + "\n  ".join(problems))
    except Exception as e:
        if not isinstance(e, HypothesisException):
            save_if_final(case, expected, e)
        raise


def save_if_final(case: Case, expected: dict | None, error: BaseException) -> Path | None:
    """Write the case once hypothesis has shrunk it (its final replay)."""
    if not currently_in_test_context() or not getattr(current_build_context(), "is_final", True):
        return None
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

def _bf(src: str, data: bytes) -> None:
    if src.strip():
        # start right of cell 0 so that not every program dies on its first '<'
        check(Case("bf", ">>" + src, data))


def _minipy(src: str) -> None:
    check(Case("minipy", src))


def _bytecode(program: dict, data: bytes) -> None:
    # a dict with instruction names, so hypothesis prints a readable program
    check(Case("bytecode", program, data))


PROPERTIES = {
    "bf": (_bf, {"src": strategies.bf_programs(), "data": st.binary(max_size=8)}),
    "minipy": (_minipy, {"src": strategies.minipy_programs()}),
    "bytecode": (_bytecode, {"program": strategies.bytecode_programs().map(slbc.to_dict),
                             "data": st.binary(max_size=8)}),
}


def property_test(kind: str, max_examples: int, **more):
    fn, strats = PROPERTIES[kind]
    return settings(max_examples=max_examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large],
                    **more)(given(**strats)(fn))
