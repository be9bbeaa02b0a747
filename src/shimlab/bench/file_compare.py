"""`shimlab compare A.json B.json`: what changed from A to B, in the terms
each suite reports: programs as ratios of medians (with a geometric mean),
transition sweeps as ratios of round-trip slopes, floors on their own.
"""
from __future__ import annotations

import math
import sys
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

import numpy as np

from ..errors import ShimlabError
from . import floors, stats, synthetic
from .results import ConfigResult, ResultFile
from .table import table

__all__ = ["RatioRow", "SlopeRow", "Comparison", "compare_files", "compare_rows", "compare",
           "format_ns", "format_measure"]


@dataclass(frozen=True)
class RatioRow:
    config: str
    unit: str          # "cycles" or "ns": what median_a/median_b count
    median_a: float    # each worker process weighs the same, as in the bootstrap
    median_b: float
    ratio: float       # median B / median A: below 1 means B is faster
    lo: float
    hi: float
    verdict: str
    stretched: bool = False   # the percentile interval missed the estimate (see _contain)


@dataclass(frozen=True)
class SlopeRow:
    """One sweep in both files: the slope of cost per iteration against x
    (round trips M, or interpreted instructions k), B's over A's."""
    label: str
    unit: str                      # per iteration: "cycles" or "ns"
    xs: tuple[int, ...]            # the x both files measured, the fit's points
    a: stats.Estimate
    b: stats.Estimate
    ratio: stats.Estimate | None   # None when A's slope is not above 0
    difference: stats.Estimate     # B - A, defined even when the ratio is not
    verdict: str
    stretched: bool = False


@dataclass
class Comparison:
    programs: list[RatioRow] = field(default_factory=list)
    geometric_mean: RatioRow | None = None
    sweeps: list[SlopeRow] = field(default_factory=list)
    floors: list[RatioRow] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    # in both files but sweep points that fit no line: fewer than two x in
    # common, or a name that does not parse
    unfitted: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.programs or self.sweeps or self.floors)


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


# -- statistics --------------------------------------------------------------------

def _contain(e: stats.Estimate) -> tuple[stats.Estimate, bool]:
    """e with its interval stretched to reach its value, and whether it had to be.

    A percentile interval need not contain the estimate when the bootstrap
    distribution is lumpy (two or three processes, a few samples each, runs
    that fall into two layout clusters).  Stretching only ever widens, so a
    verdict can only get more cautious; the row is marked so it shows.
    """
    if not math.isfinite(e.value) or e.lo <= e.value <= e.hi:
        return e, False
    return stats.Estimate(e.value, min(e.lo, e.value), max(e.hi, e.value), e.reps), True


def _rng(seed: int, name: str) -> np.random.Generator:
    # Seeded per item rather than drawn in sequence, so a row's interval does
    # not depend on which other configurations the two files happen to share.
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _ratio_row(name: str, unit: str, a, b, scale: float, n_boot: int, alpha: float,
               seed: int, threshold: float) -> tuple[RatioRow, stats.Estimate]:
    rng = _rng(seed, name)
    ea = stats.median_estimate(a, n_boot, rng, alpha)
    eb = stats.median_estimate(b, n_boot, rng, alpha)   # drawn after A's: independent
    ratio, stretched = _contain(stats.ratio_of(eb, ea, alpha))
    row = RatioRow(name, unit, ea.value / scale, eb.value / scale, ratio.value, ratio.lo,
                   ratio.hi, stats.verdict(ratio.value, ratio.lo, ratio.hi, threshold), stretched)
    return row, ratio


def _geometric_mean(ratios: list[stats.Estimate], alpha: float,
                    threshold: float) -> RatioRow:
    # the same replicates as the rows, so the mean's interval is theirs combined
    g, stretched = _contain(stats.geometric_mean(ratios, alpha))
    return RatioRow("geometric mean", "", math.nan, math.nan, g.value, g.lo, g.hi,
                    stats.verdict(g.value, g.lo, g.hi, threshold), stretched)


def _slope_verdict(a: stats.Estimate, d: stats.Estimate, threshold: float) -> str:
    # From B - A, not from B / A: the ratio's replicates stop meaning anything
    # where A's slope comes near 0, the difference's never do.  Relative to
    # |A| so that threshold means what it means for ratios.
    scale = abs(a.value) or 1.0
    return stats.verdict(1.0 + d.value / scale, 1.0 + d.lo / scale, 1.0 + d.hi / scale,
                         threshold)


# -- what is in a file ---------------------------------------------------------------

@dataclass(frozen=True)
class _Sweep:
    """Everything that names a sweep except its x (M or k)."""
    shape: synthetic.Spec
    mode: str
    cc: str
    tag: str

    def label(self) -> str:
        name = "/".join(p for p in (self.mode, self.cc, self.tag) if p)
        if self.shape.kind == "interp":
            return f"one dispatch ({name})"
        return name + (f" sites={self.shape.sites}" if self.shape.sites else "")


def _field(c: ConfigResult, name: str, index: int) -> str:
    """A configuration entry, or its part of the key suite/workload/mode/cc[/tag]
    for files that lack the entry."""
    value = c.config.get(name)
    if value is None:
        parts = c.key.split("/")
        value = parts[index] if len(parts) > index else ""
    return str(value)


def _spec(workload: str) -> synthetic.Spec | None:
    # Not synthetic.parse: its checks are for building a program, and a file
    # measured before a check was tightened must still read back.
    kind, _, rest = workload.partition(":")
    try:
        return synthetic.Spec(kind, **{k: int(v) for k, v in
                                       (p.split("=") for p in rest.split(",") if p)})
    except (ValueError, TypeError):
        return None


def _classify(c: ConfigResult):
    """("floor", None, None), ("sweep", _Sweep, x), ("unknown", None, None) for
    a sweep point whose name does not parse, or ("program", None, None)."""
    workload = _field(c, "workload", 1)
    if workload.startswith("floor:"):
        return "floor", None, None
    if not synthetic.is_synthetic(workload):
        return "program", None, None
    spec = _spec(workload)
    if spec is None:
        return "unknown", None, None
    x = spec.m if spec.kind == "transitions" else spec.k
    sweep = _Sweep(replace(spec, m=0, k=0), _field(c, "mode", 2), _field(c, "cc", 3),
                   _field(c, "tag", 4))
    return "sweep", sweep, x


def _samples(a: ConfigResult, b: ConfigResult):
    # Cycles are only comparable if both sides have them; ns always exist.
    if a.has_cycles and b.has_cycles:
        return "cycles", a.cycles_groups(), b.cycles_groups()
    return "ns", a.ns_groups(), b.ns_groups()


# -- the comparison -----------------------------------------------------------------

def compare_files(a, b, *, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0,
                  threshold: float = 0.0) -> Comparison:
    """B against A (paths or ResultFiles), section by section, in A's order."""
    fa, fb = _open(a), _open(b)
    out = Comparison()
    out.only_a = [k for k in fa.configs() if k not in fb]
    out.only_b = [k for k in fb.configs() if k not in fa]
    sweeps: dict[_Sweep, dict[int, tuple[ConfigResult, ConfigResult]]] = {}
    ratios = []
    for key in (k for k in fa.configs() if k in fb):
        ca, cb = fa.get(key), fb.get(key)
        kind, sweep, x = _classify(ca)
        if kind == "unknown":
            out.unfitted.append(key)     # a sweep point is never a program
            continue
        if kind == "sweep":
            sweeps.setdefault(sweep, {})[x] = (ca, cb)
            continue
        unit, sa, sb = _samples(ca, cb)
        if kind == "floor":
            # per copy of the primitive, as `bench transitions` reports floors
            row, _ = _ratio_row(key, unit, sa, sb, floors.elements_per_sample(), n_boot,
                                alpha, seed, threshold)
            out.floors.append(row)
        else:
            row, ratio = _ratio_row(key, unit, sa, sb, 1.0, n_boot, alpha, seed, threshold)
            out.programs.append(row)
            ratios.append(ratio)
    if len(ratios) >= 2:
        out.geometric_mean = _geometric_mean(ratios, alpha, threshold)
    # the round trips first, one dispatch (their yardstick) after them
    for sweep, points in sorted(sweeps.items(), key=lambda kv: kv[0].shape.kind == "interp"):
        if len(points) < 2:
            out.unfitted += [ca.key for ca, _ in points.values()]
            continue
        out.sweeps.append(_slope_row(sweep, points, n_boot, alpha, seed, threshold))
    return out


def _slope_row(sweep: _Sweep, points: dict, n_boot: int, alpha: float, seed: int,
               threshold: float) -> SlopeRow:
    xs = sorted(points)
    pairs = [_samples(*points[x]) for x in xs]
    if any(u != "cycles" for u, _, _ in pairs):
        # one unit for the whole line: a slope through cycles and ns is nothing
        pairs = [("ns", ca.ns_groups(), cb.ns_groups()) for ca, cb in map(points.get, xs)]
    unit = pairs[0][0]
    n = sweep.shape.n
    rng = _rng(seed, sweep.label() + repr(sweep.shape))
    slopes = []
    for side in (1, 2):
        per_iteration = [[np.asarray(g, dtype=np.float64) / n for g in p[side]] for p in pairs]
        est = [stats.median_estimate(g, n_boot, rng, alpha) for g in per_iteration]
        slopes.append(stats.slope_estimate(xs, est, alpha))
    sa, sb = slopes
    diff, s_diff = _contain(stats.difference(sb, sa, alpha))
    ratio, s_ratio = None, False
    # A ratio's interval needs a denominator that stays away from 0; short of
    # that the replicates run off to both infinities.
    if sa.value > 0 and sa.lo > 0:
        ratio, s_ratio = _contain(stats.ratio_of(sb, sa, alpha))
    (sa, s_a), (sb, s_b) = _contain(sa), _contain(sb)
    return SlopeRow(sweep.label(), unit, tuple(xs), sa, sb, ratio, diff,
                    _slope_verdict(sa, diff, threshold), s_diff or s_ratio or s_a or s_b)


def compare_rows(a, b, *, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0,
                 threshold: float = 0.0) -> tuple[list[RatioRow], RatioRow | None]:
    """The program rows of compare_files and their geometric mean (None
    unless two or more)."""
    c = compare_files(a, b, n_boot=n_boot, alpha=alpha, seed=seed, threshold=threshold)
    return c.programs, c.geometric_mean


# -- the report ---------------------------------------------------------------------

def _mark(row) -> str:
    return "*" if row.stretched else ""


def _ratio_table(rows: list[RatioRow], geo: RatioRow | None, level: str, first: str,
                 measure) -> str:
    body = [(r.config, measure(r.median_a, r.unit), measure(r.median_b, r.unit),
             f"{r.ratio:.4f}", f"[{r.lo:.4f}, {r.hi:.4f}]{_mark(r)}", r.verdict) for r in rows]
    if geo is not None:
        body += [None, (geo.config, "", "", f"{geo.ratio:.4f}",
                        f"[{geo.lo:.4f}, {geo.hi:.4f}]{_mark(geo)}", geo.verdict)]
    return table(body, [first, "median A", "median B", "B/A", f"{level} interval", "verdict"],
                 align="lrrrll")


def _slope_table(rows: list[SlopeRow], level: str) -> str:
    body = []
    for r in rows:
        x = "M" if not r.label.startswith("one dispatch") else "k"
        if r.ratio is None:
            ratio, interval = "-", "A's slope not above 0"
        else:
            ratio = f"{r.ratio.value:.3f}"
            interval = f"[{r.ratio.lo:.3f}, {r.ratio.hi:.3f}]"
        body.append((r.label, f"{x} {','.join(map(str, r.xs))}", r.a.fmt(2), r.b.fmt(2),
                     r.difference.fmt(2), ratio, interval + _mark(r), r.verdict))
    return table(body, ["sweep", "fitted at", f"A [{level}]", f"B [{level}]", "B - A", "B/A",
                        f"{level} interval", "verdict"], align="llllllll")


def compare(a_path, b_path, out: TextIO = sys.stdout, *, n_boot: int = 2000,
            alpha: float = 0.05, seed: int = 0, threshold: float = 0.0) -> int:
    """Print the comparison of B against A; 0 when done.  Files with nothing
    to compare are the user's error (ShimlabError), not an empty report."""
    fa, fb = _open(a_path), _open(b_path)
    c = compare_files(fa, fb, n_boot=n_boot, alpha=alpha, seed=seed, threshold=threshold)
    if not c:
        if c.unfitted:
            raise ShimlabError(f"{fa.path} and {fb.path} have nothing to compare: their common "
                               f"configurations are sweep points with fewer than two M in common")
        raise ShimlabError(f"{fa.path} and {fb.path} have no configuration in common")
    name_a, name_b = Path(fa.path).name, Path(fb.path).name
    level = f"{100 * (1 - alpha):g}%"
    print(f"A = {fa.path}\nB = {fb.path}", file=out)
    if c.only_a or c.only_b:
        print(f"not compared: {len(c.only_a)} configs only in {name_a}, "
              f"{len(c.only_b)} only in {name_b}", file=out)
    if c.unfitted:
        print(f"not compared: {len(c.unfitted)} sweep points in both files that fit no line "
              f"(fewer than two M or k in common, or an unreadable name)", file=out)
    if c.programs:
        print("\nprograms (time per run):", file=out)
        print(_ratio_table(c.programs, c.geometric_mean, level, "config", format_measure),
              file=out)
    if c.sweeps:
        unit = "cycles" if all(r.unit == "cycles" for r in c.sweeps) else "ns"
        print(f"\nround trips: {unit} per round trip, the slope of {unit} per iteration "
              f"against round trips per iteration M (one dispatch: against interpreted "
              f"instructions per iteration k):", file=out)
        print(_slope_table(c.sweeps, level), file=out)
    if c.floors:
        print("\nfloors (per copy of the primitive; in no geometric mean):", file=out)
        print(_ratio_table(c.floors, None, level, "floor",
                           lambda v, u: f"{v:.3f} cyc" if u == "cycles" else format_ns(v)),
              file=out)
    print(f"\nB/A < 1: B is faster.  Cycles where both files have them, else ns.  "
          f"Medians weigh every worker process the same; intervals: bootstrap over worker "
          f"processes, then samples within them (n={n_boot}).", file=out)
    if c.sweeps:
        print("Round trips: verdict from B - A (its interval excludes 0 or not); no ratio "
              "interval where A's slope interval reaches 0.", file=out)
    if any(r.stretched for r in (*c.programs, *c.floors, *c.sweeps,
                                 *([c.geometric_mean] if c.geometric_mean else []))):
        print("*: the bootstrap's percentile interval missed the estimate (too few worker "
              "processes for a smooth bootstrap) and was stretched to reach it: "
              "measure more processes.", file=out)
    return 0
