"""Replays every saved case in tests/regression/ on every mode, K and threshold.

Each file is a case the differential tests once failed on (or a hand-picked
seed): its program, its input, the oracle's result when it was saved, and
for a case found against CPython (tests/cpython.py) what CPython printed.
The oracle must still give that result and every mode must agree with it.
If the fix was to the oracle itself, re-record the expectation with
SHIMLAB_REGRESSION_UPDATE=1.
"""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import differential
from shimlab import oracle
from shimlab.jit.defaults import DEFAULT_THRESHOLD

FILES = sorted(differential.regression_dir().glob("*.json"))
# every mode at every optimizer level, at K = 0, 1, 3 and 5, tracing at
# once and at the JIT's default threshold (issue 29's second reproducer
# needed the default)
REPLAY = differential.configs(ks=(1, 3, 5), thresholds=(1, DEFAULT_THRESHOLD))


def test_there_are_cases_to_replay():
    assert FILES, f"no regression cases in {differential.regression_dir()}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_saved_case_still_agrees(path):
    case, expected = differential.load_regression(path)
    got = differential.result_to_json(
        oracle.run(case.program(), case.input, max_steps=differential.ORACLE_STEPS))
    # a case found against CPython holds the oracle to what CPython printed
    problems = differential.against_cpython(case, got)
    assert not problems, problems[0]
    if os.environ.get("SHIMLAB_REGRESSION_UPDATE") and got != expected:
        record = json.loads(path.read_text())
        record["expected"] = got
        path.write_text(json.dumps(record, indent=1) + "\n")
        expected = got
    assert not differential.differences(expected, got), \
        "the oracle's result changed (SHIMLAB_REGRESSION_UPDATE=1 re-records it)"
    differential.check(case, REPLAY)


def test_a_failing_example_is_shrunk_and_saved(tmp_path, monkeypatch):
    """The mechanism itself: a mode that loses the last output byte of any
    program that prints is caught, shrunk to a minimal program, saved once,
    and the saved file replays as a failure.  The examples and the shrinking
    run on the switch and jit-direct configurations only (on all of them each
    shrinking candidate cost a second); the replay at the end runs in every
    mode (check's own configurations), and the slow test below shrinks in a
    property test's full set."""
    monkeypatch.setenv("SHIMLAB_REGRESSION_DIR", str(tmp_path))
    real, drawn = differential.run_config, differential.example_configs

    def broken(cfg, program, data):
        r = real(cfg, program, data)
        if cfg.mode == "switch" and r.output:
            r.output = r.output[:-1]
        return r
    monkeypatch.setattr(differential, "run_config", broken)
    monkeypatch.setattr(differential, "example_configs", lambda k, threshold: [
        cfg for cfg in drawn(k, threshold) if cfg.mode in ("switch", "jit-direct")])

    @settings(max_examples=200, deadline=None, database=None)
    @given(src=st.text("+-.>", max_size=30))
    def prop(src):
        differential._bf(src, b"", 1, 1)

    with pytest.raises(AssertionError, match="switch/.*output"):
        prop()
    saved = list(tmp_path.glob("*.json"))
    assert len(saved) == 1, saved
    case, expected = differential.load_regression(saved[0])
    assert case.kind == "bf" and case.source == ">>."    # shrunk: one '.' after the prefix
    assert expected["output"] == "\0" and expected["status"] == "OK"
    with pytest.raises(AssertionError):
        differential.check(case)       # the replay fails while the bug is there


@pytest.mark.slow     # 8 s: a real minipy failure shrunk
def test_shrinking_runs_only_the_kinds_of_configuration_that_failed(tmp_path, monkeypatch):
    """A property_test failure is shrunk on the configurations like the ones
    that failed (a handful, not hundreds), and its final replay runs them all."""
    monkeypatch.setenv("SHIMLAB_REGRESSION_DIR", str(tmp_path))
    real, real_run_modes = differential.run_config, differential.run_modes
    sizes = []

    def broken(cfg, program, data):
        r = real(cfg, program, data)
        if cfg.mode == "switch" and r.output:
            r.output = r.output[:-1]
        return r

    def counted(program, data, configs_):
        sizes.append(len(configs_))
        return real_run_modes(program, data, configs_)
    monkeypatch.setattr(differential, "run_config", broken)
    monkeypatch.setattr(differential, "run_modes", counted)
    test = differential.property_test("minipy", max_examples=5, seed=1, database=None)
    with pytest.raises(AssertionError, match="switch/.*output"):
        test()
    switches = sum(1 for cfg in differential.drawn_configs(1, 2) if cfg.mode == "switch")
    full = len(differential.drawn_configs(1, 2))
    assert sizes[0] == full and sizes[-1] == full            # the first run and the final replay
    assert len(sizes) > 3 and all(n == switches for n in sizes[1:-1]), sizes
    assert differential._shrinking is None                    # left for the next run
    saved, = tmp_path.glob("minipy-*.json")
    case, _ = differential.load_regression(saved)
    assert len(case.source) < 400, case.source               # shrunk
