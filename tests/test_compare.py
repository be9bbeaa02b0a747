"""shimlab.bench.compare and the table helper, on synthetic result files."""
import io

import numpy as np
import pytest

from shimlab.bench.compare import compare, compare_rows, format_ns
from shimlab.bench.results import ResultFile, RunSamples
from shimlab.bench.table import table
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
    assert compare(a, b, out=out) == 1
    assert "no configuration is in both files" in out.getvalue()
    with pytest.raises(ShimlabError):
        compare(a, tmp_path / "missing.json", out=out)


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
