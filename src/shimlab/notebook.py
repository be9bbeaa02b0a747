"""What the experiment notebooks (experiments/*.py) share: quick mode, where
their outputs go, which compilers to use, measuring through the harness,
ratios with intervals, and writing tables, figures and JSON.  In Jupyter a
figure is shown inline as well as saved, and a table printed once.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import matplotlib


def in_jupyter() -> bool:
    """True inside a Jupyter kernel (ipykernel), where figures show inline."""
    ipython = sys.modules.get("IPython")      # never imported here just to ask
    shell = ipython.get_ipython() if ipython else None
    return getattr(shell, "kernel", None) is not None


if not in_jupyter():
    matplotlib.use("Agg")   # headless when a notebook runs as a plain script

from . import toolchain     # noqa: E402
from .errors import ToolchainError  # noqa: E402
from .bench import harness, stats  # noqa: E402
from .bench.results import ResultFile  # noqa: E402
from .bench.table import table  # noqa: E402
from .paths import EXAMPLES, notebook_out  # noqa: E402

# The compilers the setup installs (scripts/setup.sh), oldest clang first.
COMPILERS = ("clang-19", "clang-22", "gcc-12", "gcc-11")


def quick() -> bool:
    """Quick mode: SHIMLAB_QUICK=1 (what `shimlab reproduce NAME --quick` sets)."""
    return os.environ.get("SHIMLAB_QUICK", "") not in ("", "0")


def out_dir(name: str) -> Path:
    """experiments/out/NAME (or $SHIMLAB_NOTEBOOK_OUT/NAME), created."""
    d = notebook_out() / name
    d.mkdir(parents=True, exist_ok=True)
    return d


def compilers(wanted=COMPILERS, mode: str | None = None) -> list[toolchain.Compiler]:
    """The wanted compilers that are installed (and can build `mode`), in
    order; $SHIMLAB_CC (comma-separated) narrows the list.  Every wanted
    compiler that is missing is named on stderr, never skipped silently."""
    only = [c for c in os.environ.get("SHIMLAB_CC", "").split(",") if c]
    found = []
    for name in (only or wanted):
        try:
            cc = toolchain.get_compiler(name)
        except ToolchainError as e:
            print(f"note: {e}; left out", file=sys.stderr)
            continue
        if mode is None or cc.can_build(mode):
            found.append(cc)
    return found


def workload(name: str) -> tuple[str, str | None]:
    """(path, input path or None) of examples/NAME."""
    path = EXAMPLES / name
    inp = path.with_suffix(".in")
    return str(path), (str(inp) if inp.exists() else None)


def options() -> harness.Options:
    """Few processes and samples in quick mode: a notebook must never take
    the machine for long.  Never a pyperf Runner: the harness's own workers."""
    if quick():
        return harness.Options(processes=3, warmup=1, samples=30)
    return harness.Options(processes=5, warmup=2, samples=15, target_ci=0.02,
                           max_processes=15)


def measure(configs: list[harness.Config], path: Path,
            opts: harness.Options | None = None) -> ResultFile:
    """Runs the configurations through the harness into a fresh results file
    (with options(), unless a notebook needs its own, e.g. longer warm-up)."""
    path.unlink(missing_ok=True)
    results = ResultFile(path)
    outcome = harness.measure(configs, results, opts or options())
    for key, why in outcome.failures.items():
        print(f"note: {key} failed: {why}", file=sys.stderr)
    if outcome.interrupted:
        raise KeyboardInterrupt
    return results


def per_instruction(results: ResultFile, key: str) -> list:
    """Cycles per executed VM instruction, one array per worker process."""
    import numpy as np
    r = results.get(key)
    n = r.runs[0].vm_instructions
    return [np.asarray(g, dtype=float) / n for g in r.cycles_groups()]


def cycles(results: ResultFile, key: str) -> tuple[float, float, float]:
    """Median cycles per VM instruction with its 95% bootstrap interval."""
    s = stats.summarize(per_instruction(results, key))
    return s.median, s.lo, s.hi


def ratio(results: ResultFile, key: str, base: str) -> tuple[float, float, float]:
    """time(key) / time(base) with a 95% bootstrap interval (< 1: faster)."""
    return stats.ratio_ci(per_instruction(results, key), per_instruction(results, base))


def show_table(rows, headers, out: Path, name: str, align: str | None = None) -> None:
    """Prints the table and writes it to OUT/NAME.txt.  Returns nothing: in
    Jupyter a returned string, last in its cell, would print it a second time."""
    text = table(rows, headers, align=align)
    print(text)
    (out / f"{name}.txt").write_text(text + "\n")


def save_figure(fig, out: Path, name: str) -> None:
    """Writes the figure to OUT/NAME.png and, in Jupyter, shows that PNG
    inline: once, since the figure is then closed (the cell's end would show
    it again), and the same picture whatever matplotlib backend the kernel has."""
    import matplotlib.pyplot as plt
    path = out / f"{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    if in_jupyter():
        from IPython.display import Image, display
        display(Image(filename=str(path)))
    print(f"figure: {path}")


def save_json(data, out: Path, name: str = "results") -> None:
    path = out / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    print(f"results: {path}")


def fmt_ratio(r: tuple[float, float, float]) -> str:
    return f"{r[0]:.3f} [{r[1]:.3f}, {r[2]:.3f}]"
