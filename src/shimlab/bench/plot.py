"""Plots of benchmark results, written as PNG and SVG.

Distributions of the samples per configuration (one panel per workload) and
ratios against a baseline with their confidence intervals.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")  # never needs a display; must precede pyplot's import
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .results import ConfigResult, ResultFile  # noqa: E402
from .stats import verdict  # noqa: E402

__all__ = ["plot_distributions", "plot_ratios"]

_VERDICT_COLOURS = {"faster": "tab:green", "slower": "tab:red",
                    "not significant": "tab:gray"}


def _save(fig, out_prefix) -> list[Path]:
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    png = prefix.parent / (prefix.name + ".png")
    svg = prefix.parent / (prefix.name + ".svg")
    fig.savefig(png, dpi=110, bbox_inches="tight")
    # A fixed hash salt and no date keep SVGs byte-identical between runs.
    with matplotlib.rc_context({"svg.hashsalt": "shimlab"}):
        fig.savefig(svg, bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return [png, svg]


def _workload(c: ConfigResult) -> str:
    w = c.config.get("workload")
    if w:
        return str(w)
    parts = c.key.split("/")
    return parts[1] if len(parts) > 2 else "all"


def _label(c: ConfigResult, workload: str) -> str:
    parts = [p for p in c.key.split("/") if p != workload]
    # The suite prefix is the same for every config in a panel.
    if len(parts) > 1 and c.config.get("suite") == parts[0]:
        parts = parts[1:]
    return "/".join(parts) or c.key


def _violins(ax, data: list[np.ndarray]):
    try:
        return ax.violinplot(data, orientation="horizontal", showmedians=True,
                             showextrema=True)
    except TypeError:  # matplotlib < 3.10
        return ax.violinplot(data, vert=False, showmedians=True, showextrema=True)


def plot_distributions(result_file, out_prefix, title: str | None = None) -> list[Path]:
    """Violin plot of cycles (or ns) per run for each configuration.

    result_file is a ResultFile or a path.  One panel per workload; a panel
    uses cycles if every configuration in it has them, else nanoseconds.
    """
    rf = result_file if isinstance(result_file, ResultFile) else ResultFile.load(result_file)
    if rf is None or not len(rf):
        raise ValueError(f"no results to plot in {result_file}")
    panels: dict[str, list[ConfigResult]] = {}
    for c in rf:
        panels.setdefault(_workload(c), []).append(c)

    heights = [max(1.2, 0.45 * len(cs) + 0.8) for cs in panels.values()]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (workload, configs) in zip(axes[:, 0], panels.items()):
        use_cycles = all(c.has_cycles for c in configs)
        data = []
        for c in configs:
            groups = c.cycles_groups() if use_cycles else c.ns_groups()
            data.append(np.concatenate([np.asarray(g, dtype=float) for g in groups]))
        scale, unit = _cycle_scale(data) if use_cycles else _time_scale(data)
        data = [d / scale for d in data]
        _violins(ax, data)
        ax.set_yticks(range(1, len(configs) + 1))
        ax.set_yticklabels([_label(c, workload) for c in configs])
        ax.invert_yaxis()  # first configuration on top, as in the tables
        ax.set_title(workload, loc="left", fontsize="medium")
        ax.set_xlabel(unit)
        ax.grid(axis="x", alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, out_prefix)


def _cycle_scale(data: list[np.ndarray]) -> tuple[float, str]:
    top = max(float(np.median(d)) for d in data)
    for scale, unit in ((1e9, "billion cycles"), (1e6, "million cycles"), (1e3, "thousand cycles")):
        if top >= scale:
            return scale, f"{unit} per run"
    return 1.0, "cycles per run"


def _time_scale(data: list[np.ndarray]) -> tuple[float, str]:
    top = max(float(np.median(d)) for d in data)
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if top >= scale:
            return scale, f"{unit} per run"
    return 1.0, "ns per run"


def _row_fields(row):
    if isinstance(row, dict):
        return str(row["label"]), row["ratio"], row["lo"], row["hi"]
    if hasattr(row, "ratio"):
        label = getattr(row, "label", None) or getattr(row, "config")
        return str(label), row.ratio, row.lo, row.hi
    label, ratio, lo, hi = row
    return str(label), ratio, lo, hi


def plot_ratios(rows: Iterable, out_prefix, baseline_name: str,
                title: str | None = None) -> list[Path]:
    """Point-and-interval chart of ratios time(config)/time(baseline).

    rows: compare.RatioRow objects, dicts with label/ratio/lo/hi, or
    (label, ratio, lo, hi) tuples.  Green: interval below 1, red: above.
    """

    fields = [_row_fields(r) for r in rows]
    if not fields:
        raise ValueError("no ratios to plot")
    labels = [f[0] for f in fields]
    ratio = np.array([f[1] for f in fields], dtype=float)
    lo = np.array([f[2] for f in fields], dtype=float)
    hi = np.array([f[3] for f in fields], dtype=float)
    y = np.arange(len(fields))

    fig, ax = plt.subplots(figsize=(8, max(1.6, 0.4 * len(fields) + 1.0)))
    ax.axvline(1.0, color="black", linewidth=1)
    for i in range(len(fields)):
        colour = _VERDICT_COLOURS[verdict(ratio[i], lo[i], hi[i])]
        err = [[max(ratio[i] - lo[i], 0.0)], [max(hi[i] - ratio[i], 0.0)]]
        ax.errorbar(ratio[i], y[i], xerr=err, fmt="o", color=colour, capsize=3)
    ax.set_yticks(y)
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    finite = np.concatenate([lo, hi, ratio, [1.0]])
    finite = finite[np.isfinite(finite)]
    span = max(finite.max() - 1.0, 1.0 - finite.min(), 0.01)
    ax.set_xlim(1.0 - 1.15 * span, 1.0 + 1.15 * span)  # symmetric about 1
    ax.set_xlabel(f"time / time({baseline_name})   (< 1 is faster)")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return _save(fig, out_prefix)
