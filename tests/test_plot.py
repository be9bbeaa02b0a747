"""shimlab.bench.plot writes PNG and SVG from synthetic results."""
import numpy as np

from shimlab.bench.file_compare import compare_rows
from shimlab.bench.plot import plot_distributions, plot_ratios
from shimlab.bench.results import ResultFile, RunSamples


def result_file(path, scale=1.0, cycles=True):
    rng = np.random.default_rng(int(scale * 100))
    rf = ResultFile(path, environment={"hostname": "testhost"})
    for wl in ("mandelbrot.bf", "hanoi.bf"):
        for mode in ("switch", "goto", "tailcall"):
            ns = [int(v) for v in 1e6 * scale * np.exp(rng.normal(0, 0.02, 40))]
            rf.add(f"dispatch/{wl}/{mode}/clang-19",
                   {"suite": "dispatch", "workload": wl, "mode": mode},
                   [RunSamples(cycles=[3 * v for v in ns] if cycles else [], ns=ns)])
    rf.save()
    return rf


def check(paths):
    png, svg = paths
    assert png.suffix == ".png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert svg.suffix == ".svg" and b"<svg" in svg.read_bytes()[:1000]


def test_plot_distributions(tmp_path):
    rf = result_file(tmp_path / "a.json")
    check(plot_distributions(rf, tmp_path / "plots" / "dist"))
    result_file(tmp_path / "n.json", cycles=False)
    check(plot_distributions(tmp_path / "n.json", tmp_path / "ns"))   # by path, in ns


def test_plot_ratios(tmp_path):
    result_file(tmp_path / "a.json")
    result_file(tmp_path / "b.json", scale=1.05)
    rows, geo = compare_rows(tmp_path / "a.json", tmp_path / "b.json", n_boot=200)
    check(plot_ratios(rows + [geo], tmp_path / "ratios", "a"))
    check(plot_ratios([("x", 0.9, 0.85, 0.95), {"label": "y", "ratio": 1.0, "lo": 0.98,
                                                "hi": 1.03}], tmp_path / "r2", "base"))


def test_svg_is_reproducible(tmp_path):
    rows = [("x", 0.9, 0.85, 0.95), ("y", 1.1, 1.0, 1.2)]
    a = plot_ratios(rows, tmp_path / "one", "base")[1].read_bytes()
    b = plot_ratios(rows, tmp_path / "two", "base")[1].read_bytes()
    assert a == b
