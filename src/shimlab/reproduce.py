"""Runs one experiment notebook (`shimlab reproduce NAME [--quick]`).

A notebook is experiments/NAME.py, a jupytext percent script; it runs here as
a plain script with this Python (matplotlib headless) and writes its figures,
tables and JSON to experiments/out/NAME/.  `--list` names each with the title
of its first markdown cell.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from . import childpy, toolchain
from .errors import ShimlabError
from .paths import EXPERIMENTS
_TITLE = re.compile(r"^#\s+#\s+(.+?)\s*$")


def notebooks() -> dict[str, Path]:
    """Name -> path of every notebook, sorted by name."""
    if not EXPERIMENTS.is_dir():
        return {}
    return {p.stem: p for p in sorted(EXPERIMENTS.glob("*.py")) if not p.name.startswith("_")}


def describe(path: Path) -> str:
    """The title of the notebook's first markdown cell (its one-line description)."""
    for line in path.read_text().splitlines():
        m = _TITLE.match(line)
        if m:
            return m.group(1)
    return "(no title)"


def find(name: str) -> Path:
    books = notebooks()
    stem = name[:-3] if name.endswith(".py") else name
    stem = Path(stem).name
    if stem not in books:
        known = ", ".join(books) or "none"
        raise ShimlabError(f"unknown notebook {name!r} (known: {known}; "
                           f"see shimlab reproduce --list)")
    return books[stem]


def run(name: str, quick: bool = False, compilers: list[str] | None = None) -> int:
    """Runs notebook `name` as a script, its output going to ours."""
    path = find(name)
    extra = {"MPLBACKEND": "Agg"}
    if quick:
        extra["SHIMLAB_QUICK"] = "1"
    if compilers:
        for cc in compilers:
            toolchain.get_compiler(cc)     # a missing compiler: one clear line, now
        extra["SHIMLAB_CC"] = ",".join(compilers)
    print(f"== {path.stem}{' (quick)' if quick else ''}: {describe(path)} ==", flush=True)
    proc = subprocess.run([sys.executable, str(path)], env=childpy.env(**extra), cwd=path.parent)
    if proc.returncode != 0:
        raise ShimlabError(f"notebook {path.stem} failed (exit status {proc.returncode}; "
                           f"its output is above)")
    return 0
