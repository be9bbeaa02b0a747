"""shimlab.bench.stats on synthetic samples whose answers are known."""
import math

import numpy as np
import pytest

from shimlab.bench import stats


def lognormal(n, scale=1000.0, sigma=0.03, seed=0):
    rng = np.random.default_rng(seed)
    return scale * np.exp(rng.normal(0.0, sigma, n))


def test_median_and_pooling():
    assert stats.median([3, 1, 2]) == 2.0
    assert stats.median([[1, 2], [3, 4, 5]]) == 3.0
    assert stats.median(np.array([[1.0, 2.0], [3.0, 4.0]])) == 2.5
    with pytest.raises(ValueError):
        stats.median([])


def test_known_shift_is_found_with_interval_containing_it():
    base = lognormal(400, seed=1)
    new = 1.05 * lognormal(400, seed=2)
    ratio, lo, hi = stats.ratio_ci(new, base)
    assert lo <= 1.05 <= hi
    assert lo < ratio < hi
    assert stats.verdict(ratio, lo, hi) == "slower"

    ratio, lo, hi = stats.ratio_ci(base, new)
    assert lo <= 1 / 1.05 <= hi
    assert stats.verdict(ratio, lo, hi) == "faster"


def test_identical_distributions_are_not_significant():
    # One fixed pair (a 95% interval misses for about 1 pair in 20, so the
    # seeds matter; these give an ordinary, unremarkable pair) ...
    a, b = lognormal(300, seed=20), lognormal(300, seed=21)
    assert stats.verdict(*stats.ratio_ci(a, b)) == "not significant"
    # Over many seed pairs a 95% interval flags about 5% of them at most.
    flagged = sum(stats.verdict(*stats.ratio_ci(lognormal(100, seed=2 * i),
                                                lognormal(100, seed=2 * i + 1),
                                                n_boot=500, seed=i)) != "not significant"
                  for i in range(40))
    assert flagged <= 6


def test_median_interval_covers_true_median():
    # Lognormal with mu = 0: the true median is exactly scale.
    hits = 0
    for rep in range(200):
        x = lognormal(51, scale=100.0, sigma=0.2, seed=1000 + rep)
        lo, hi = stats.bootstrap_ci(x, n_boot=400, seed=rep)
        hits += lo <= 100.0 <= hi
    assert 180 <= hits <= 199, hits


def test_geometric_mean_of_known_ratios():
    ratios = [1.10, 0.90, 1.25, 1.02]
    pairs = []
    for i, r in enumerate(ratios):
        base = lognormal(200, sigma=0.001, seed=100 + i)
        pairs.append((r * lognormal(200, sigma=0.001, seed=200 + i), base))
    gm, lo, hi = stats.geometric_mean_ratio(pairs)
    expected = math.prod(ratios) ** (1 / len(ratios))
    assert gm == pytest.approx(expected, rel=2e-3)
    assert lo <= gm <= hi
    assert hi - lo < 0.01
    # Exact when the samples are constant.
    gm, lo, hi = stats.geometric_mean_ratio([([2.0] * 5, [1.0] * 5), ([1.0] * 5, [2.0] * 5)])
    assert (gm, lo, hi) == (pytest.approx(1.0), pytest.approx(1.0), pytest.approx(1.0))


def test_deterministic_with_seed():
    x, y = lognormal(150, seed=3), lognormal(150, seed=4)
    assert stats.bootstrap_ci(x, seed=7) == stats.bootstrap_ci(x, seed=7)
    assert stats.ratio_ci(x, y, seed=7) == stats.ratio_ci(x, y, seed=7)
    assert stats.bootstrap_ci(x, seed=7) != stats.bootstrap_ci(x, seed=8)
    groups = [lognormal(50, seed=s) for s in range(4)]
    assert stats.bootstrap_ci(groups, seed=1) == stats.bootstrap_ci(groups, seed=1)


def test_groups_widen_the_interval_when_processes_differ():
    # Four worker processes, each with its own offset: pooling the samples
    # as if independent would claim a precision the data does not have.
    groups = [lognormal(200, scale=1000.0 * f, sigma=0.01, seed=s)
              for s, f in enumerate([0.97, 1.0, 1.01, 1.03])]
    flat_lo, flat_hi = stats.bootstrap_ci(np.concatenate(groups))
    g_lo, g_hi = stats.bootstrap_ci(groups)
    assert g_hi - g_lo > 2 * (flat_hi - flat_lo)
    # A 2-D array means the same as a list of rows.
    assert stats.bootstrap_ci(np.array(groups)) == stats.bootstrap_ci(groups)
    # Ragged groups work too.
    lo, hi = stats.bootstrap_ci([groups[0][:50], groups[1], groups[2][:7]])
    assert lo < hi


def test_chunking_does_not_depend_on_memory_cap(monkeypatch):
    x = lognormal(100, seed=5)
    ref = stats.bootstrap_ci(x, n_boot=300)
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 100 * 300)
    assert stats.bootstrap_ci(x, n_boot=300) == ref


def test_stat_without_axis_argument():
    x = lognormal(30, seed=6)
    lo, hi = stats.bootstrap_ci(x, stat=lambda v: float(np.mean(v)), n_boot=200)
    assert lo < np.mean(x) < hi


def test_verdict():
    assert stats.verdict(0.9, 0.85, 0.95) == "faster"
    assert stats.verdict(1.1, 1.05, 1.15) == "slower"
    assert stats.verdict(1.0, 0.95, 1.05) == "not significant"
    assert stats.verdict(1.0, 1.0, 1.01) == "not significant"   # touches 1
    assert stats.verdict(1.006, 1.003, 1.009, threshold=0.01) == "not significant"
    assert stats.verdict(1.03, 1.02, 1.04, threshold=0.01) == "slower"
    assert stats.verdict(1.0, float("nan"), float("nan")) == "not significant"


def test_summarize():
    x = lognormal(101, seed=9)
    s = stats.summarize(x)
    assert s.n == 101
    assert s.median == pytest.approx(np.median(x))
    assert s.lo <= s.median <= s.hi
    assert s.min == x.min() and s.max == x.max()
    assert s.mean == pytest.approx(x.mean())
    assert s.stdev == pytest.approx(np.std(x, ddof=1))
    assert s.rel_ci_halfwidth == pytest.approx((s.hi - s.lo) / 2 / s.median)
    one = stats.summarize([5])
    assert (one.n, one.median, one.lo, one.hi, one.stdev) == (1, 5.0, 5.0, 5.0, 0.0)
