"""The BF corpus in examples/bf: the oracle reproduces every expected output.

Each examples/bf/X.bf runs on the Python oracle with X.in as input (empty
input when there is no X.in) and must halt normally with exactly X.out as
its output.  heavy.bf (about 440 M instructions), mandel.bf (about 190 M;
its generator checks a small grid on the oracle) and bigout.bf (about 4.6 M
instructions, 256 KiB of output) are left out: on the oracle they take
minutes and over a second respectively; the rest together run in about a
second.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from shimlab import oracle
from shimlab.frontend import load_program
from shimlab.isa import Error

BF_DIR = Path(__file__).resolve().parents[1] / "examples" / "bf"
SLOW = {"heavy.bf", "bigout.bf", "mandel.bf"}
# Every program checked here runs well under this many instructions (the
# largest, rot13.bf and squares.bf, about 1.1 M); the bound turns a broken
# program into a quick failure instead of a hang.
MAX_STEPS = 5_000_000

PROGRAMS = sorted(p.name for p in BF_DIR.glob("*.bf") if p.name not in SLOW)


def test_corpus_is_present():
    expected = {"hello.bf", "cat.bf", "rot13.bf", "squares.bf", "nested.bf", "fib.bf"}
    assert expected <= set(PROGRAMS)
    for name in SLOW:
        assert (BF_DIR / name).is_file() and (BF_DIR / name).with_suffix(".out").is_file()


@pytest.mark.parametrize("name", PROGRAMS)
def test_oracle_output_matches_expected(name):
    path = BF_DIR / name
    in_path, out_path = path.with_suffix(".in"), path.with_suffix(".out")
    data = in_path.read_bytes() if in_path.exists() else b""
    result = oracle.run(load_program(path), input=data, max_steps=MAX_STEPS)
    assert result.status == Error.OK, (result.status, result.err_pc)
    assert result.output == out_path.read_bytes()


def test_mandel_generator_agrees_with_the_oracle_on_a_small_grid(tmp_path):
    """mandel.bf is too long for the oracle; its generator's small picture
    (the same program text on a smaller grid) is checked there instead, so
    the generator's Python model and its BF agree."""
    import subprocess
    import sys
    gen = BF_DIR / "gen" / "make_mandel.py"
    subprocess.run([sys.executable, str(gen), "--small", str(tmp_path)], check=True,
                   cwd=gen.parent)
    result = oracle.run(load_program(tmp_path / "mandel_small.bf"), max_steps=50_000_000)
    assert result.status == Error.OK
    assert result.output == (tmp_path / "mandel_small.out").read_bytes()
