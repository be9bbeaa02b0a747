"""Least-squares lines and geometric means of plain numbers, without numpy.

The one place these formulas are written: bench/stats.py takes its point
estimates from here (its numpy code only repeats them over bootstrap
replicates), and the JIT's --stats, which sits below bench/ and must not make
`shimlab run` import numpy, uses them as they are.
"""
from __future__ import annotations

import math
from collections.abc import Sequence


def line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """(intercept, slope) of the least-squares line of ys against xs; None
    without two distinct x."""
    if len(xs) != len(ys):
        raise ValueError("a line needs one y per x")
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def geometric_mean(values: Sequence[float]) -> float:
    """exp of the mean log (summed exactly, so the order of values does not
    matter); values must be positive."""
    if not values:
        raise ValueError("a geometric mean needs at least one value")
    if any(v <= 0 for v in values):
        raise ValueError("values must be positive for a geometric mean")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))
