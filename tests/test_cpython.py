"""minipy against CPython itself, on a fixed sample of generated programs.

Each program of tests/minipy_gen.py's sample (fixed seeds) runs in a fresh
CPython (tests/cpython.py: booleans written as 1 and 0), on the oracle, whose
output must be CPython's, and in every mode at one optimizer level (the
seed's, so the sample covers all four), at K = 0 and a drawn K, threshold 1 and
a drawn threshold, each agreeing with the oracle in everything.  A
disagreement is saved to tests/regression/ with what CPython printed, and
replays there.  `make fuzz` (scripts/fuzz.py --kind cpython) runs new
programs in every optimizer level for as long as asked.
"""
from __future__ import annotations

import random

import pytest

import cpython
import differential
import minipy_gen

# `make test` runs the first 16 programs of the sample (each optimizer level
# 4 times), `make test-all` the other 16 too
SAMPLE = 32
CI_SAMPLE = 16
SEEDS = [pytest.param(seed, marks=[pytest.mark.slow] if seed >= CI_SAMPLE else [])
         for seed in range(SAMPLE)]


def sample_configs(seed: int) -> list:
    r = random.Random(seed)
    k, threshold = r.choice(differential.KS), r.choice(differential.THRESHOLDS)
    level = seed % 4
    return [cfg for cfg in differential.drawn_configs(k, threshold)
            if cfg.level in (None, level)]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_generated_program_prints_what_cpython_prints(seed):
    src = minipy_gen.sample(seed)
    case = differential.Case("minipy", src, cpython=cpython.prints(src))
    differential.check(case, sample_configs(seed), save_failure=True)


def test_booleans_are_written_as_minipy_prints_them():
    assert cpython.prints("print(1 < 2, not 1, True & True, -3)\nprint()\n") == \
        "1 0 1 -3\n\n"
    with pytest.raises(ValueError, match="'None'"):
        cpython.as_minipy("1 None\n")
    with pytest.raises(cpython.CPythonFailed, match="ZeroDivisionError"):
        cpython.prints("print(1 // 0)\n")


def test_a_disagreement_with_cpython_is_caught_saved_and_replayed(tmp_path, monkeypatch):
    """minipy's documented differences are what the generator must avoid: a
    sum that wraps at 64 bits in minipy and not in CPython stands in for a
    front end that computes wrong."""
    monkeypatch.setenv("SHIMLAB_REGRESSION_DIR", str(tmp_path))
    src = "x = 1 << 62\nx = x + x\nprint(x)\n"    # wraps in minipy, not in CPython
    case = differential.Case("minipy", src, cpython=cpython.prints(src))
    with pytest.raises(AssertionError, match="disagrees with CPython"):
        differential.check(case, [], save_failure=True)
    saved, = tmp_path.glob("minipy-*.json")
    again, expected = differential.load_regression(saved)
    assert again == case and again.cpython == "9223372036854775808\n"
    assert differential.against_cpython(again, expected)      # the replay fails too
