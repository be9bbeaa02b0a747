"""The one place that computes benchmark statistics: medians, bootstrap intervals,
ratios, differences and least-squares slopes (numpy only, deterministic per seed).
Samples given one array per worker process are resampled by process, then within it;
point estimates weigh every process the same, as that resampling does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from .. import fits

__all__ = [
    "median", "process_median", "bootstrap_ci", "ratio_ci", "verdict",
    "geometric_mean_ratio", "geometric_mean", "Summary", "summarize", "replicates", "Estimate", "estimate",
    "median_estimate", "difference", "ratio_of", "sum_of", "unequal_pairs", "slope",
    "slope_estimate", "steps", "fit_band",
]

Stat = Callable[..., np.ndarray]

# Upper bound on the number of elements of one resampled block, so that a
# large n_boot times a large sample never allocates more than ~16 MB at once.
_CHUNK_ELEMENTS = 2_000_000


def median(x) -> float:
    """Median of the samples; given one array per process, process_median(x)."""
    return process_median(x)


def process_median(x) -> float:
    """The median with every worker process weighing the same, whatever its
    number of samples (flat samples: the plain median).

    This is the statistic the grouped bootstrap resamples (each drawn process
    contributes equally many samples), so it is the estimate its replicates
    scatter around.  The pooled median weighs processes by their sample
    counts: with unequal counts (a resumed run with other --samples) it is
    another statistic, which can fall outside its own interval.  With equal
    counts the two are the same number.
    """
    kind, data = _prepare(x)
    if kind == "flat":
        return float(np.median(data))
    values = np.concatenate(data)
    weights = np.concatenate([np.full(a.size, 1.0 / a.size) for a in data])
    order = np.argsort(values, kind="stable")
    values, cum = values[order], np.cumsum(weights[order])
    half = cum[-1] / 2.0
    i = int(np.searchsorted(cum, half * (1.0 - 1e-12)))
    # exactly half the weight at or below values[i]: the midpoint, as np.median
    # does for an even count (and as it does on every process repeated to a
    # common length, which is what the weights stand for)
    if abs(cum[i] - half) <= 1e-9 * cum[-1] and i + 1 < values.size:
        return float((values[i] + values[i + 1]) / 2.0)
    return float(values[i])


def _point(x, stat: Stat) -> float:
    """stat(x) with every process weighing the same: the estimate that the
    replicates of _boot_stats(x, stat) belong to."""
    kind, data = _prepare(x)
    if kind == "flat":
        return float(stat(data))
    sizes = {a.size for a in data}
    if len(sizes) == 1:
        return float(stat(np.concatenate(data)))
    if stat is np.median:
        return process_median(data)
    # any other statistic: every process repeated to a common length, i.e.
    # exactly the equal weights, as long as that length stays affordable
    common = math.lcm(*sizes)
    if common * len(data) > _CHUNK_ELEMENTS:
        raise ValueError("processes of too unequal sizes for this statistic "
                         "(np.median works for any sizes)")
    return float(stat(np.concatenate([np.repeat(a, common // a.size) for a in data])))


def _pooled(x) -> np.ndarray:
    kind, data = _prepare(x)
    if kind == "flat":
        return data
    return np.concatenate(data)


def _prepare(x):
    """("flat", 1-D array) or ("groups", [1-D arrays]) for the two bootstraps.

    A 2-D array or a sequence of sequences means one row per worker process.
    A single group is just flat samples.
    """
    if isinstance(x, np.ndarray):
        if x.ndim == 1:
            groups = None
            flat = x
        elif x.ndim == 2:
            groups = list(x)
        else:
            raise ValueError("samples must be 1-D, or 2-D with one row per process")
    else:
        seq = list(x)
        if seq and isinstance(seq[0], (Sequence, np.ndarray)) and not isinstance(seq[0], str):
            groups = seq
        else:
            groups = None
            flat = seq
    if groups is None:
        arr = np.asarray(flat, dtype=np.float64)
        if arr.size == 0:
            raise ValueError("no samples")
        return "flat", arr
    arrays = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    arrays = [a for a in arrays if a.size]
    if not arrays:
        raise ValueError("no samples")
    if len(arrays) == 1:
        return "flat", arrays[0]
    return "groups", arrays


def _apply(stat: Stat, block: np.ndarray) -> np.ndarray:
    try:
        out = stat(block, axis=1)
    except TypeError:
        # A statistic without an axis argument still works, only slower.
        out = np.array([stat(row) for row in block])
    return np.asarray(out, dtype=np.float64)


def _boot_stats(x, stat: Stat, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """n_boot bootstrap replicates of stat(x), drawn in vectorised chunks."""
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    kind, data = _prepare(x)
    out = np.empty(n_boot, dtype=np.float64)
    if kind == "flat":
        n = data.size
        chunk = max(1, _CHUNK_ELEMENTS // n)
        for start in range(0, n_boot, chunk):
            m = min(chunk, n_boot - start)
            idx = rng.integers(0, n, size=(m, n))
            out[start:start + m] = _apply(stat, data[idx])
        return out

    # Two-level bootstrap: processes differ (code layout, ASLR, frequency), so
    # pooling their samples as if i.i.d. would understate the uncertainty.
    # Each resampled process contributes the same number of samples (the
    # largest group's size), i.e. processes are weighted equally.
    g = len(data)
    size = max(a.size for a in data)
    lengths = np.array([a.size for a in data])
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    flat = np.concatenate(data)
    per_boot = g * size
    chunk = max(1, _CHUNK_ELEMENTS // per_boot)
    for start in range(0, n_boot, chunk):
        m = min(chunk, n_boot - start)
        which = rng.integers(0, g, size=(m, g))
        u = rng.random(size=(m, g, size))
        within = (u * lengths[which][..., None]).astype(np.int64)
        idx = (offsets[which][..., None] + within).reshape(m, per_boot)
        out[start:start + m] = _apply(stat, flat[idx])
    return out


def _bounds(reps: np.ndarray, alpha: float, axis=None):
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")
    # replicates of a ratio can be infinite (a zero denominator); the interval
    # is then infinite or NaN, which verdict() reads as not significant
    with np.errstate(invalid="ignore"):
        return np.quantile(reps, [alpha / 2.0, 1.0 - alpha / 2.0], axis=axis)


def _interval(reps: np.ndarray, alpha: float) -> tuple[float, float]:
    lo, hi = _bounds(reps, alpha)
    return float(lo), float(hi)


_ROUNDING = 1e-12


def _around(value: float, lo: float, hi: float) -> tuple[float, float]:
    """The interval (lo, hi) of replicates, stretched to hold the point value
    when it misses it by rounding alone: the value is summed exactly (fsum),
    a replicate with numpy's sums, so with identical replicates (every sample
    the same) the interval could end an ulp short of the value (CI saw
    0.8905617301997808 outside [.., 0.8905617301997807]).  A genuine miss,
    larger than rounding, is left for the report to show."""
    slack = _ROUNDING * abs(value)
    if value < lo and lo - value <= slack:
        lo = value
    if value > hi and value - hi <= slack:
        hi = value
    return lo, hi


def bootstrap_ci(x, stat: Stat = np.median, n_boot: int = 2000,
                 alpha: float = 0.05, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap (1 - alpha) interval of stat(x) (with groups: of
    stat with every process weighing the same, e.g. process_median)."""
    rng = np.random.default_rng(seed)
    return _interval(_boot_stats(x, stat, n_boot, rng), alpha)


def ratio_ci(a, b, stat: Stat = np.median, n_boot: int = 2000,
             alpha: float = 0.05, seed: int = 0) -> tuple[float, float, float]:
    """(stat(a)/stat(b), lo, hi), resampling a and b independently; each
    stat with every process weighing the same, as in the resampling.

    With a = times of the new variant and b = times of the baseline, a ratio
    below 1 means the new variant is faster.
    """
    ratio, reps = _ratio_reps(a, b, stat, n_boot, np.random.default_rng(seed))
    lo, hi = _interval(reps, alpha)
    return ratio, lo, hi


def _ratio_reps(a, b, stat, n_boot, rng):
    sa, sb = _point(a, stat), _point(b, stat)
    if sb == 0.0:
        raise ValueError("statistic of the baseline samples is zero")
    ra = _boot_stats(a, stat, n_boot, rng)
    rb = _boot_stats(b, stat, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = ra / rb
    return sa / sb, reps


def verdict(ratio: float, lo: float, hi: float, threshold: float = 0.0) -> str:
    """"faster", "slower" or "not significant" for ratio = time(new)/time(base).

    The interval must lie wholly beyond 1 -/+ threshold, so a threshold of
    0.01 ignores differences smaller than 1% however certain they are.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "not significant"
    if hi < 1.0 - threshold:
        return "faster"
    if lo > 1.0 + threshold:
        return "slower"
    return "not significant"


def geometric_mean_ratio(ratios_with_samples: Iterable, stat: Stat = np.median,
                         n_boot: int = 2000, alpha: float = 0.05,
                         seed: int = 0) -> tuple[float, float, float]:
    """Geometric mean over programs of stat(new)/stat(base), with an interval.

    ratios_with_samples holds one (new_samples, base_samples) pair per
    program, each stat weighing processes equally (as in ratio_ci).  Each
    bootstrap replicate resamples every program's samples and takes the
    geometric mean of the resampled ratios.
    """
    pairs = list(ratios_with_samples)
    if not pairs:
        raise ValueError("no programs")
    rng = np.random.default_rng(seed)
    ratios = []
    log_reps = np.zeros(n_boot, dtype=np.float64)
    for a, b in pairs:
        ratio, reps = _ratio_reps(a, b, stat, n_boot, rng)
        if ratio <= 0:
            raise ValueError("ratios must be positive for a geometric mean")
        ratios.append(ratio)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_reps += np.log(reps)
    value = fits.geometric_mean(ratios)
    lo, hi = _around(value, *_interval(np.exp(log_reps / len(pairs)), alpha))
    return value, lo, hi


def geometric_mean(ratios: Sequence[Estimate], alpha: float = 0.05) -> Estimate:
    """The geometric mean of estimates (ratios over programs, say), replicate
    k the geometric mean of their k-th replicates, so each one's uncertainty
    carries into the mean's interval."""
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = np.exp(np.mean([np.log(r.reps) for r in ratios], axis=0))
    return estimate(fits.geometric_mean([r.value for r in ratios]), reps, alpha)


@dataclass(frozen=True)
class Summary:
    n: int
    median: float             # every process weighing the same, as in its interval
    lo: float                 # bootstrap interval of the median
    hi: float
    # mean, stdev, min and max describe all samples pooled (they have no interval)
    mean: float
    stdev: float              # sample standard deviation (0 for one sample)
    min: float
    max: float
    # the precision reached: the wider side of the interval, relative to the
    # median, so that a target of +-2% holds on both sides of a skewed interval
    rel_ci_halfwidth: float


def summarize(x, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> Summary:
    """Summary of the samples: the median and its interval weigh processes
    equally, the rest describes all samples pooled."""
    pooled = _pooled(x)
    med = process_median(x)
    lo, hi = bootstrap_ci(x, np.median, n_boot=n_boot, alpha=alpha, seed=seed)
    n = int(pooled.size)
    return Summary(
        n=n,
        median=med,
        lo=lo,
        hi=hi,
        mean=float(np.mean(pooled)),
        stdev=float(np.std(pooled, ddof=1)) if n > 1 else 0.0,
        min=float(np.min(pooled)),
        max=float(np.max(pooled)),
        rel_ci_halfwidth=max(med - lo, hi - med) / med if med else math.inf,
    )


# -- estimates carried through arithmetic -------------------------------------------
#
# A derived quantity (a slope of medians, a ratio of two slopes) gets its
# interval by applying the same arithmetic to the replicates of its parts.
# That is only right when the parts were bootstrapped independently: draw
# them from one Generator, never from the same seed twice.

def replicates(x, stat: Stat = np.median, n_boot: int = 2000, rng=0) -> np.ndarray:
    """n_boot bootstrap replicates of stat(x), resampling processes first if x has groups.

    rng is a seed or a np.random.Generator to draw from (and advance).
    """
    return _boot_stats(x, stat, n_boot, np.random.default_rng(rng))


@dataclass
class Estimate:
    """A value, its bootstrap replicates and their percentile interval."""
    value: float
    lo: float
    hi: float
    reps: np.ndarray

    def fmt(self, digits: int = 2) -> str:
        return f"{self.value:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


def estimate(value: float, reps, alpha: float = 0.05) -> Estimate:
    """value with the (1 - alpha) percentile interval of its replicates."""
    reps = np.asarray(reps, dtype=np.float64)
    lo, hi = _around(float(value), *_interval(reps, alpha))
    return Estimate(float(value), lo, hi, reps)


def median_estimate(x, n_boot: int = 2000, rng=0, alpha: float = 0.05) -> Estimate:
    """The median of x (process_median) with its bootstrap replicates (grouped
    as in bootstrap_ci)."""
    return estimate(process_median(x), replicates(x, np.median, n_boot, rng), alpha)


def paired_difference(a, b, n_boot: int = 2000, rng=0, alpha: float = 0.05) -> Estimate:
    """The median over worker processes of each process's median of
    a[i][j] - b[i][j]: a[i] and b[i] are the samples of one worker process
    that ran both programs (interleaved, one build, one code layout), and
    sample j of both sides ran at the same memory layout.  So what a pair has
    in common (the process, the code layout, the memory layout) cancels in
    each difference rather than widening the interval.  The bootstrap draws
    processes, and within each drawn process its pairs."""
    a = [np.asarray(x, dtype=np.float64).ravel() for x in a]
    b = [np.asarray(x, dtype=np.float64).ravel() for x in b]
    if len(a) != len(b) or not a or any(x.size == 0 for x in a + b):
        raise ValueError("paired samples: one non-empty group per process on each side")
    if any(x.size != y.size for x, y in zip(a, b)):
        raise ValueError("paired samples: as many samples on each side of a process")
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    rng = np.random.default_rng(rng)
    diffs = [x - y for x, y in zip(a, b)]
    # each process's replicates of its median difference, then processes drawn
    d = np.vstack([_boot_stats(x, np.median, n_boot, rng) for x in diffs])
    which = rng.integers(0, len(diffs), size=(n_boot, len(diffs)))
    reps = np.median(d[which, np.arange(n_boot)[:, None]], axis=1)
    return estimate(float(np.median([np.median(x) for x in diffs])), reps, alpha)


def difference(a: Estimate, b: Estimate, alpha: float = 0.05) -> Estimate:
    """a - b, replicate by replicate."""
    return estimate(a.value - b.value, a.reps - b.reps, alpha)


def ratio_of(a: Estimate, b: Estimate, alpha: float = 0.05) -> Estimate:
    """a / b, replicate by replicate; the value is NaN when b's is zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = a.reps / b.reps
    return estimate(a.value / b.value if b.value else math.nan, reps, alpha)


def sum_of(parts: Sequence[Estimate], alpha: float = 0.05) -> Estimate:
    """The sum of the parts, replicate by replicate.  A part given twice
    counts twice with its replicates, fully correlated, as one measurement
    used twice is."""
    if not parts:
        raise ValueError("nothing to sum")
    return estimate(math.fsum(p.value for p in parts), np.sum([p.reps for p in parts], axis=0),
                    alpha)


def unequal_pairs(points: Sequence[Estimate], alpha: float = 0.05) -> list[tuple[int, int]]:
    """The pairs (i, j), i < j, of points whose difference is significant:
    its interval, replicate by replicate, excludes 0.

    Each pair's interval is at the level 1 - alpha / (number of pairs)
    (Bonferroni), so that points that are all one value come out with some
    pair unequal in at most a fraction alpha of runs, however many points
    there are (three points, three pairs at 95% each: up to 15%).  Taking the
    replicates' differences, not comparing two intervals, keeps the
    correlation of points that share data (two steps through one middle
    point).  A difference at the level of rounding counts as none: the
    replicates of exact samples have intervals of width 0.
    """
    points = list(points)
    pairs = [(i, j) for i in range(len(points)) for j in range(i + 1, len(points))]
    out = []
    for i, j in pairs:
        d = difference(points[i], points[j], alpha / len(pairs))
        tiny = 1e-9 * max(abs(points[i].value), abs(points[j].value), 1.0)
        if d.lo > tiny or d.hi < -tiny:
            out.append((i, j))
    return out


def _slopes(xs, ys: np.ndarray) -> np.ndarray:
    """Least-squares slope of every column of ys (one row per x) against xs."""
    x = np.asarray(xs, dtype=np.float64)
    if x.ndim != 1 or x.size != ys.shape[0] or x.size < 2 or np.ptp(x) == 0:
        raise ValueError("a slope needs one y per x and at least two distinct x")
    xc = x - x.mean()
    return (xc[:, None] * (ys - ys.mean(axis=0))).sum(axis=0) / (xc ** 2).sum()


def slope(xs, ys) -> float:
    """Least-squares slope of ys against xs (fits.line; _slopes repeats it
    over every replicate at once)."""
    fit = fits.line([float(x) for x in xs], [float(y) for y in ys])
    if fit is None:
        raise ValueError("a slope needs one y per x and at least two distinct x")
    return fit[1]


def _rep_matrix(points: Sequence[Estimate]) -> np.ndarray:
    return np.vstack([p.reps for p in points])          # (x, replicate)


def slope_estimate(xs, points: Sequence[Estimate], alpha: float = 0.05) -> Estimate:
    """Least-squares slope of the points' values against xs.

    Replicate k is the slope through every point's k-th replicate, so each
    point's own uncertainty (e.g. a grouped bootstrap of its median) carries
    into the slope's interval.
    """
    return estimate(slope(xs, [p.value for p in points]),
                    _slopes(xs, _rep_matrix(points)), alpha)


def steps(xs, points: Sequence[Estimate], alpha: float = 0.05) -> list[Estimate]:
    """The slope between each pair of consecutive points: the marginal cost."""
    xs, points = list(xs), list(points)
    return [slope_estimate(xs[k:k + 2], points[k:k + 2], alpha) for k in range(len(xs) - 1)]


def fit_band(xs, points: Sequence[Estimate], grid,
             alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(line, lo, hi) at each x of grid: the least-squares line through the
    points' values and the pointwise (1 - alpha) band of the replicates' lines."""
    x = np.asarray(xs, dtype=np.float64)
    at = np.asarray(grid, dtype=np.float64) - x.mean()
    values = np.array([p.value for p in points])
    line = values.mean() + slope(x, values) * at
    reps = _rep_matrix(points)
    lines = reps.mean(axis=0)[None, :] + _slopes(x, reps)[None, :] * at[:, None]
    lo, hi = _bounds(lines, alpha, axis=1)
    return line, lo, hi
