"""Compare two result files configuration by configuration.

For each configuration in both files: the medians, the ratio B/A with a
bootstrap interval (worker processes resampled, then their samples), a
verdict, and the geometric mean of the ratios over all of them.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..errors import ShimlabError
from . import stats
from .results import ConfigResult, ResultFile
from .table import table

__all__ = ["RatioRow", "compare_rows", "compare", "format_ns", "format_measure"]


@dataclass(frozen=True)
class RatioRow:
    config: str
    unit: str          # "cycles" or "ns": what median_a/median_b count
    median_a: float
    median_b: float
    ratio: float       # median B / median A: below 1 means B is faster
    lo: float
    hi: float
    verdict: str


def format_ns(ns: float) -> str:
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if abs(ns) >= scale:
            return f"{ns / scale:.4g} {unit}"
    return f"{ns:.4g} ns"


def format_measure(value: float, unit: str) -> str:
    return f"{value:,.0f} cyc" if unit == "cycles" else format_ns(value)


def _open(f) -> ResultFile:
    if isinstance(f, ResultFile):
        return f
    rf = ResultFile.load(f)
    if rf is None:
        raise ShimlabError(f"{f}: no such result file")
    return rf


def _samples(a: ConfigResult, b: ConfigResult):
    # Cycles are only comparable if both sides have them; ns always exist.
    if a.has_cycles and b.has_cycles:
        return "cycles", a.cycles_groups(), b.cycles_groups()
    return "ns", a.ns_groups(), b.ns_groups()


def compare_rows(a, b, *, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0,
                 threshold: float = 0.0) -> tuple[list[RatioRow], RatioRow | None]:
    """Rows for the configurations common to a and b (paths or ResultFiles),
    in a's order, and a geometric-mean row (None unless two or more rows)."""
    fa, fb = _open(a), _open(b)
    common = [k for k in fa.configs() if k in fb]
    rows, pairs = [], []
    for key in common:
        unit, sa, sb = _samples(fa.get(key), fb.get(key))
        ratio, lo, hi = stats.ratio_ci(sb, sa, n_boot=n_boot, alpha=alpha, seed=seed)
        rows.append(RatioRow(key, unit, stats.median(sa), stats.median(sb), ratio, lo, hi,
                             stats.verdict(ratio, lo, hi, threshold)))
        pairs.append((sb, sa))
    geo = None
    if len(pairs) >= 2:
        g, lo, hi = stats.geometric_mean_ratio(pairs, n_boot=n_boot, alpha=alpha, seed=seed)
        geo = RatioRow("geometric mean", "", float("nan"), float("nan"), g, lo, hi,
                       stats.verdict(g, lo, hi, threshold))
    return rows, geo


def compare(a_path, b_path, out: TextIO = sys.stdout, *, n_boot: int = 2000,
            alpha: float = 0.05, seed: int = 0, threshold: float = 0.0) -> int:
    """Print the comparison of B against A; 0 if anything was compared, else 1."""
    fa, fb = _open(a_path), _open(b_path)
    rows, geo = compare_rows(fa, fb, n_boot=n_boot, alpha=alpha, seed=seed,
                             threshold=threshold)
    name_a, name_b = Path(fa.path).name, Path(fb.path).name
    print(f"A = {fa.path}\nB = {fb.path}", file=out)
    only_a = len(set(fa.configs()) - set(fb.configs()))
    only_b = len(set(fb.configs()) - set(fa.configs()))
    if only_a or only_b:
        print(f"not compared: {only_a} configs only in {name_a}, "
              f"{only_b} only in {name_b}", file=out)
    if not rows:
        print("no configuration is in both files", file=out)
        return 1
    level = f"{100 * (1 - alpha):g}%"
    body = [(r.config, format_measure(r.median_a, r.unit), format_measure(r.median_b, r.unit),
             f"{r.ratio:.4f}", f"[{r.lo:.4f}, {r.hi:.4f}]", r.verdict) for r in rows]
    if geo is not None:
        body.append(None)
        body.append((geo.config, "", "", f"{geo.ratio:.4f}", f"[{geo.lo:.4f}, {geo.hi:.4f}]",
                     geo.verdict))
    print(table(body, ["config", "median A", "median B", "B/A", f"{level} interval", "verdict"],
                align="lrrrll"), file=out)
    print(f"B/A < 1: B is faster.  Cycles where both files have them, else ns; "
          f"intervals: bootstrap over worker processes and samples (n={n_boot}).", file=out)
    return 0
