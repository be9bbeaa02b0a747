"""Compiler-built stencils: extracted with their holes, held to the oracle,
and usable for whole programs; `stencils compare` measures both sources."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLES
from shimlab import oracle, toolchain, vm
from shimlab.interp import build
from shimlab.frontend import load_program

CLANGS = [cc.name for cc in toolchain.find_compilers()
          if cc.family == "clang" and cc.can_build("jit-direct")]
pytestmark = pytest.mark.skipif(not CLANGS, reason="no clang here builds the JIT modes")


@pytest.mark.parametrize("cc", CLANGS)
def test_every_clang_stencil_agrees_with_the_oracle(cc):
    from shimlab import stencil_check
    from shimlab.jit import clang_stencils
    names = list(clang_stencils.load(cc))
    assert len(names) >= 40
    failures = {n: f for n in names
                if (f := stencil_check.run_stencil(n, 8, 1, cc, "clang"))}
    assert not failures


def test_the_final_jump_to_the_continuation_is_dropped():
    from shimlab.jit import clang_stencils
    st = clang_stencils.load(CLANGS[0])
    assert [h.kind for h in st["LOAD_INT"].holes] == ["oparg"]
    assert st["JUMP"].code == b""
    for s in st.values():
        assert not (s.holes and s.holes[-1].kind == "continue"
                    and s.holes[-1].offset == len(s.code) - 4), s.name


@pytest.mark.parametrize("path", ["bf/squares.bf", "minipy/gcd_lcm.py"])
def test_programs_run_on_clang_stencils(path):
    program = load_program(EXAMPLES / path)
    want = oracle.run(program, b"")
    b = build.build("jit-direct", CLANGS[0], count=True)
    with vm.Loaded(b, program, jit={"threshold": 2, "source": "clang"}) as loaded:
        got = loaded.run()
        assert loaded.jit.stats.traces
    assert (got.output, got.status, got.counts) == (want.output, want.status, want.counts)


def test_compare_reports_each_instruction(capsys):
    from shimlab.bench import stencil_timing as compare
    assert "ADD" in compare.instructions() and "CELL_OUT" not in compare.instructions()
    data = compare.measure(["ADD", "MOVE"], CLANGS[0], units=2, n=20, rounds=2, samples=3)
    # one group of samples per round: each round loads the program anew
    assert set(data) == {(s, nm) for s in compare.SOURCES for nm in (None, "ADD", "MOVE")}
    assert all([len(g) for g in groups] == [3, 3] for groups in data.values())
    rows = compare.report(data, ["ADD", "MOVE"], CLANGS[0], 2, 20)
    assert [r["instruction"] for r in rows] == ["ADD", "MOVE"]
    assert "clang/PeachPy" in capsys.readouterr().out
    for r in rows:      # the medians of all runs, by hand
        per_unit = {s: (np.median(np.concatenate(data[(s, r["instruction"])]))
                        - np.median(np.concatenate(data[(s, None)]))) / (2 * 20)
                    for s in compare.SOURCES}
        assert r["cycles"] == pytest.approx(per_unit, rel=1e-9, abs=1e-9)
        if per_unit["peachpy"]:
            assert r["ratio"] == pytest.approx(per_unit["clang"] / per_unit["peachpy"], rel=1e-9)


def test_per_unit_resamples_rounds_not_pooled_runs():
    # three rounds, each steady at its own level: the spread between rounds is
    # the uncertainty (pooled as independent runs, the interval would be [110, 110])
    from shimlab.bench import stencil_timing as compare
    runs = [[100] * 50, [140] * 50, [120] * 50]
    bare = [[10] * 50] * 3
    e = compare.per_unit(runs, bare, 1, np.random.default_rng(0))
    assert (e.value, e.lo, e.hi) == (110.0, 90.0, 130.0)
    half = compare.per_unit([[2 * x for x in g] for g in runs], [[20] * 50] * 3, 2,
                            np.random.default_rng(0))
    assert (half.value, half.lo, half.hi) == (110.0, 90.0, 130.0)
