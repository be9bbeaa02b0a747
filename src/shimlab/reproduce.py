"""`shimlab reproduce NAME [--quick]`: runs one experiment notebook.

A notebook is experiments/NAME.py, a jupytext percent script; it runs here as
a plain script with this Python (matplotlib headless) and writes its figures,
tables and JSON to experiments/out/NAME/.  `--list` names each with the title
of its first markdown cell.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .errors import ShimlabError

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
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


def add_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="run an experiment notebook (experiments/NAME.py)")
    p.add_argument("name", nargs="?", help="the notebook, e.g. dispatch-by-compiler")
    p.add_argument("--quick", action="store_true",
                   help="small workloads and few samples (sets SHIMLAB_QUICK=1)")
    p.add_argument("--list", action="store_true", help="list the notebooks")
    p.add_argument("--cc", action="append",
                   help="only these compilers (default: every one the setup installs)")
    p.set_defaults(fn=main)


def main(args) -> int:
    if args.list:
        books = notebooks()
        width = max((len(n) for n in books), default=0)
        for name, path in books.items():
            print(f"{name:<{width}}  {describe(path)}")
        return 0
    if not args.name:
        raise ShimlabError("reproduce: name a notebook (shimlab reproduce --list shows them)")
    path = find(args.name)
    env = dict(os.environ, MPLBACKEND="Agg")
    if args.quick:
        env["SHIMLAB_QUICK"] = "1"
    if args.cc:
        from . import toolchain
        for name in args.cc:
            toolchain.get_compiler(name)     # a missing compiler: one clear line, now
        env["SHIMLAB_CC"] = ",".join(args.cc)
    src = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    print(f"== {path.stem}{' (quick)' if args.quick else ''}: {describe(path)} ==", flush=True)
    proc = subprocess.run([sys.executable, str(path)], env=env, cwd=path.parent)
    if proc.returncode != 0:
        raise ShimlabError(f"notebook {path.stem} failed (exit status {proc.returncode}; "
                           f"its output is above)")
    return 0
