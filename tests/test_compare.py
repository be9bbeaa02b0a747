"""shimlab compare (bench/file_compare.py) and the table helper, on synthetic result files."""
import io
import re

import numpy as np
import pytest

from shimlab.bench import stats
from shimlab.bench.file_compare import (_contain, compare, compare_files, compare_rows,
                                        format_ns)
from shimlab.bench.results import ResultFile, RunSamples
from shimlab.bench.table import table
from shimlab.cli import main as cli_main
from shimlab.errors import ShimlabError

ENV = {"hostname": "testhost"}


def runs(scale, seed, cycles=True, nproc=3, n=60):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(nproc):
        ns = (1_000_000 * scale * np.exp(rng.normal(0, 0.01, n))).astype(np.int64)
        out.append(RunSamples(cycles=[int(v) * 3 for v in ns] if cycles else [],
                              ns=[int(v) for v in ns]))
    return out


def write(path, scales, seed, cycles=True):
    rf = ResultFile(path, environment=ENV)
    for i, (k, s) in enumerate(scales.items()):
        rf.add(k, {"workload": k}, runs(s, seed + i, cycles=cycles and k != "nocyc"))
    rf.save()
    return path


@pytest.fixture
def files(tmp_path):
    a = write(tmp_path / "a.json", {"same": 1.0, "slow": 1.0, "fast": 1.0, "onlyA": 1.0}, 0)
    b = write(tmp_path / "b.json", {"same": 1.0, "slow": 1.10, "fast": 0.90, "onlyB": 1.0}, 100)
    return a, b


def test_compare_rows(files):
    rows, geo = compare_rows(*files)
    by = {r.config: r for r in rows}
    assert list(by) == ["same", "slow", "fast"]
    assert by["same"].verdict == "not significant"
    assert by["slow"].verdict == "slower" and by["slow"].lo <= 1.10 <= by["slow"].hi
    assert by["fast"].verdict == "faster" and by["fast"].lo <= 0.90 <= by["fast"].hi
    assert all(r.unit == "cycles" for r in rows)
    assert by["slow"].median_a == pytest.approx(3_000_000, rel=0.02)
    assert geo.ratio == pytest.approx((1.10 * 0.90) ** (1 / 3), rel=0.01)
    assert geo.lo <= geo.ratio <= geo.hi


def test_compare_prints_table(files):
    out = io.StringIO()
    assert compare(*files, out=out) == 0
    text = out.getvalue()
    lines = text.splitlines()
    assert any(line.startswith("slow ") and line.rstrip().endswith("slower") for line in lines)
    assert any(line.startswith("fast ") and line.rstrip().endswith("faster") for line in lines)
    assert any(line.startswith("geometric mean") for line in lines)
    assert "1 configs only in a.json, 1 only in b.json" in text
    assert "cyc" in text
    # Deterministic: same output twice.
    out2 = io.StringIO()
    compare(*files, out=out2)
    assert out2.getvalue() == text


def test_ns_when_either_side_lacks_cycles(tmp_path):
    a = write(tmp_path / "a.json", {"nocyc": 1.0}, 0)
    b = write(tmp_path / "b.json", {"nocyc": 1.0}, 5)
    rows, geo = compare_rows(a, b)
    assert rows[0].unit == "ns" and geo is None
    out = io.StringIO()
    assert compare(a, b, out=out) == 0
    assert " ms" in out.getvalue() and "geometric" not in out.getvalue()


def test_nothing_in_common_and_missing_file(tmp_path):
    a = write(tmp_path / "a.json", {"x": 1.0}, 0)
    b = write(tmp_path / "b.json", {"y": 1.0}, 0)
    out = io.StringIO()
    with pytest.raises(ShimlabError, match="have no configuration in common"):
        compare(a, b, out=out)
    assert out.getvalue() == ""          # no half report before the error
    with pytest.raises(ShimlabError):
        compare(a, tmp_path / "missing.json", out=out)


def test_cli_nothing_in_common_is_one_line_and_exit_1(tmp_path, capsys):
    a = write(tmp_path / "A.json", {"x": 1.0}, 0)
    b = write(tmp_path / "B.json", {"y": 1.0}, 0)
    assert cli_main(["compare", str(a), str(b)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"shimlab: {a} and {b} have no configuration in common"]


def test_table():
    text = table([("a", 1, "x"), ("longer", 22.5, "yy"), None, ("total", 123, "")],
                 ["name", "n", "note"])
    lines = text.splitlines()
    assert lines[0] == "name       n  note"     # a header follows its column
    assert lines[1] == "------  ----  ----"
    assert lines[2] == "a          1  x"
    assert lines[3] == "longer  22.5  yy"
    assert lines[4] == lines[1]
    assert lines[5] == "total    123"
    assert table([("a", "b")], ["x", "y"], align="rr").splitlines()[2] == "a  b"
    with pytest.raises(ValueError):
        table([(1, 2, 3)], ["x", "y"])


def test_format_ns():
    assert format_ns(512) == "512 ns"
    assert format_ns(1_500) == "1.5 us"
    assert format_ns(2_345_678) == "2.346 ms"
    assert format_ns(3e9) == "3 s"


# -- transition sweeps, floors, intervals ---------------------------------------------

CC = "clang-19"
SWEEP = "j=64,i=64,n=500"


def add(rf, suite, workload, mode, per_sample, rng, nproc=3, n=20, noise=0.002):
    """One configuration whose samples are per_sample cycles times lognormal noise."""
    groups = []
    for _ in range(nproc):
        cyc = (per_sample * np.exp(rng.normal(0, noise, n))).astype(np.int64)
        groups.append(RunSamples(cycles=[int(v) for v in cyc],
                                 ns=[max(1, int(v) // 3) for v in cyc]))
    rf.add(f"{suite}/{workload}/{mode}/{CC}",
           {"suite": suite, "workload": workload, "mode": mode, "cc": CC}, groups)


def sweep_file(path, seed, round_trip, dispatch=1.4, floor_scale=1.0, program=1.0,
               ms=(4, 8, 16)):
    """A transitions file: cycles per iteration = base + round_trip[mode] * M,
    n = 500 iterations per run, plus one-dispatch configs, floors and a program."""
    rng = np.random.default_rng(seed)
    rf = ResultFile(path, environment=ENV)
    for mode, slope in round_trip.items():
        for m in ms:
            add(rf, "transitions", f"transitions:m={m},{SWEEP}", mode, 500 * (100 + slope * m), rng)
    for k in (4, 16):
        add(rf, "transitions", f"interp:k={k},n=500", "jit-direct", 500 * (20 + dispatch * k), rng)
    for f, cyc in (("jump", 1.3), ("call-save6", 7.0)):
        add(rf, "transitions", f"floor:{f}", "jit-direct", 1_600_000 * cyc * floor_scale, rng)
    add(rf, "dispatch", "nested.bf", "tailcall", 3_000_000 * program, rng)
    add(rf, "dispatch", "sieve.py", "tailcall", 5_000_000 * program, rng)
    rf.save()
    return path


@pytest.fixture
def sweeps(tmp_path):
    a = sweep_file(tmp_path / "a.json", 1, {"jit-shim": 7.0, "jit-direct": 3.0})
    b = sweep_file(tmp_path / "b.json", 2, {"jit-shim": 7.7, "jit-direct": 3.0},
                   floor_scale=3.0, program=1.05)
    return a, b


def test_transition_sweep_compares_round_trip_slopes(sweeps):
    c = compare_files(*sweeps, n_boot=1000)
    by = {r.label: r for r in c.sweeps}
    assert list(by) == ["jit-shim/clang-19", "jit-direct/clang-19",
                        "one dispatch (jit-direct/clang-19)"]
    shim, direct, disp = by["jit-shim/clang-19"], by["jit-direct/clang-19"], \
        by["one dispatch (jit-direct/clang-19)"]
    assert shim.xs == (4, 8, 16) and disp.xs == (4, 16)
    assert shim.a.value == pytest.approx(7.0, rel=0.05)
    assert shim.b.value == pytest.approx(7.7, rel=0.05)
    assert shim.ratio.value == pytest.approx(1.1, rel=0.03)
    assert shim.ratio.lo <= 1.1 <= shim.ratio.hi
    assert shim.ratio.lo <= shim.ratio.value <= shim.ratio.hi
    assert shim.difference.value == pytest.approx(0.7, abs=0.2)
    assert shim.verdict == "slower"
    assert direct.ratio.lo <= 1.0 <= direct.ratio.hi and direct.verdict == "not significant"
    assert disp.a.value == pytest.approx(1.4, rel=0.05)
    # no sweep point and no floor is a program
    assert {r.config for r in c.programs} == {"dispatch/nested.bf/tailcall/clang-19",
                                              "dispatch/sieve.py/tailcall/clang-19"}


def test_sweep_replicates_of_a_and_b_are_independent(tmp_path):
    # The same data in both files: were A and B resampled with the same draws,
    # every replicate ratio would be exactly 1 and the interval [1, 1].
    a = sweep_file(tmp_path / "a.json", 1, {"jit-shim": 7.0})
    b = sweep_file(tmp_path / "b.json", 1, {"jit-shim": 7.0})
    shim = compare_files(a, b, n_boot=500).sweeps[0]
    assert shim.ratio.value == pytest.approx(1.0)
    assert shim.ratio.lo < 0.999 and shim.ratio.hi > 1.001


def test_floors_kept_apart_from_the_programs_geometric_mean(sweeps):
    c = compare_files(*sweeps, n_boot=1000)
    assert [r.config for r in c.floors] == ["transitions/floor:jump/jit-direct/clang-19",
                                            "transitions/floor:call-save6/jit-direct/clang-19"]
    assert all(r.ratio == pytest.approx(3.0, rel=0.02) and r.verdict == "slower"
               for r in c.floors)
    assert c.floors[1].median_a == pytest.approx(7.0, rel=0.02)    # cycles per copy
    # the floors (3x) would pull the mean far above the programs' 1.05
    assert c.geometric_mean.ratio == pytest.approx(1.05, rel=0.01)
    out = io.StringIO()
    assert compare(*sweeps, out=out, n_boot=500) == 0
    text = out.getvalue()
    programs, rest = text.split("\nround trips:")
    sweep_part, floor_part = rest.split("\nfloors")
    assert "geometric mean" in programs and "floor:" not in programs
    assert "transitions:" not in programs and "interp:" not in programs
    assert "jit-shim/clang-19" in sweep_part
    assert not any(line.startswith("geometric mean") for line in floor_part.splitlines())
    assert "floor:call-save6" in floor_part


def test_sweep_with_one_common_point_is_not_fitted(tmp_path):
    a = sweep_file(tmp_path / "a.json", 1, {"jit-shim": 7.0}, ms=(1, 2, 4))
    b = sweep_file(tmp_path / "b.json", 2, {"jit-shim": 7.0}, ms=(4, 8, 16))
    c = compare_files(a, b, n_boot=200)
    assert [r.label for r in c.sweeps] == ["one dispatch (jit-direct/clang-19)"]
    assert c.unfitted == [f"transitions/transitions:m=4,{SWEEP}/jit-shim/{CC}"]


def test_no_ratio_interval_when_a_slope_reaches_zero(tmp_path):
    a = sweep_file(tmp_path / "a.json", 1, {"jit-direct": 0.0})
    b = sweep_file(tmp_path / "b.json", 2, {"jit-direct": 3.0})
    row = compare_files(a, b, n_boot=500).sweeps[0]
    assert row.a.lo <= 0 and row.ratio is None
    assert row.verdict == "slower"            # from B - A, which stays meaningful
    out = io.StringIO()
    compare(a, b, out=out, n_boot=500)
    assert "A's slope not above 0" in out.getvalue()


def unequal_processes(seed):
    """A: one process of 40 samples at 1.0 and six of 2 samples at 1.1; B: 1.0.

    Weighted by samples (the pooled median) A is 1.0; the bootstrap resamples
    processes with equal weight, where A is 1.1.  A resumed run with another
    --samples leaves a file like this.
    """
    rng = np.random.default_rng(seed)
    a = [1_000_000 * np.exp(rng.normal(0, 0.002, 40))]
    a += [1_100_000 * np.exp(rng.normal(0, 0.002, 2)) for _ in range(6)]
    b = [1_000_000 * np.exp(rng.normal(0, 0.002, 5)) for _ in range(3)]
    return a, b


def groups_file(path, groups):
    rf = ResultFile(path, environment=ENV)
    rf.add("dispatch/x.bf/goto/clang-19", {"workload": "x.bf"},
           [RunSamples(cycles=[int(v) for v in g], ns=[int(v) // 3 for v in g])
            for g in groups])
    rf.add("dispatch/y.bf/goto/clang-19", {"workload": "y.bf"},
           [RunSamples(cycles=[int(v) for v in g], ns=[int(v) // 3 for v in g])
            for g in groups])
    rf.save()
    return path


def test_interval_contains_its_estimate_with_unequal_processes(tmp_path):
    # The old compare printed the ratio of pooled medians (1.00 here) beside
    # the interval of process-weighted replicates ([0.91, 0.91]).
    for seed in range(3):
        ga, gb = unequal_processes(seed)
        a = groups_file(tmp_path / f"a{seed}.json", ga)
        b = groups_file(tmp_path / f"b{seed}.json", gb)
        rows, geo = compare_rows(a, b, n_boot=1000)
        for r in [*rows, geo]:
            assert r.lo <= r.ratio <= r.hi, r
            assert not r.stretched                # right by the statistic, not the guard
            assert r.ratio == pytest.approx(1 / 1.1, rel=0.01)
        out = io.StringIO()
        compare(a, b, out=out, n_boot=1000)
        for line in out.getvalue().splitlines():
            if line.startswith(("dispatch/", "geometric mean")):
                ratio, lo, hi = map(float, re.search(r"([\d.]+)  \[([\d.]+), ([\d.]+)\]",
                                                     line).groups())
                assert lo <= ratio <= hi, line


def test_contain_only_ever_widens():
    reps = np.linspace(0.9, 0.95, 101)
    inside, stretched = _contain(stats.estimate(0.92, reps))
    assert not stretched and (inside.lo, inside.hi) == pytest.approx((0.90125, 0.94875))
    outside, stretched = _contain(stats.estimate(1.0, reps))
    assert stretched and outside.lo == pytest.approx(0.90125) and outside.hi == 1.0
