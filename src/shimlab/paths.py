"""Where things are: the checkout's folders, the build directory, and where
results and notebook outputs go.

Every module that needs a path asks here, so moving a folder is one edit.
SHIMLAB_BUILD_DIR moves the build directory (interpreters, stencils, probes);
SHIMLAB_NOTEBOOK_OUT moves the notebooks' outputs.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
CSRC = ROOT / "csrc"
GENERATED = CSRC / "generated"
PEACHPY_STENCILS = ROOT / "peachpy_stencils"
EXAMPLES = ROOT / "examples"
CORPUS = ROOT / "corpus"
EXPERIMENTS = ROOT / "experiments"
# Benchmark results go where the user runs the command, not into the
# checkout (which may be read-only, or shared): a relative path, resolved
# against the current directory when a results file is written.
RESULTS = Path("results")


def build_root() -> Path:
    return Path(os.environ.get("SHIMLAB_BUILD_DIR", ROOT / "build"))


def notebook_out() -> Path:
    """Where notebooks write their outputs, one folder each: experiments/out,
    or $SHIMLAB_NOTEBOOK_OUT."""
    return Path(os.environ.get("SHIMLAB_NOTEBOOK_OUT") or EXPERIMENTS / "out")
