"""Where things are: the checkout's folders, the build directory, and where
results and notebook outputs go.

Every module that needs a path asks here, so moving a folder is one edit.
SHIMLAB_BUILD_DIR moves the build directory (interpreters, stencils, probes);
SHIMLAB_NOTEBOOK_OUT moves the notebooks' outputs.

Each folder is here twice: as a string (ROOT_DIR, build_dir()) for the
modules a `shimlab run` imports, and as a pathlib.Path (ROOT, build_root())
for the rest, made on first use.  pathlib, with the urllib.parse and
ipaddress it imports, cost every run's start ~8 ms on Zen 3 (docs/cli.md).
"""
from __future__ import annotations

import os

# name -> the folder under the checkout's root that the Path constant of that name is
_FOLDERS = {"ROOT": "", "SRC": "src", "CSRC": "csrc", "GENERATED": "csrc/generated",
            "PEACHPY_STENCILS": "peachpy_stencils", "EXAMPLES": "examples",
            "CORPUS": "corpus", "EXPERIMENTS": "experiments"}
ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
SRC_DIR = os.path.join(ROOT_DIR, _FOLDERS["SRC"])
CSRC_DIR = os.path.join(ROOT_DIR, _FOLDERS["CSRC"])
# Benchmark results go where the user runs the command, not into the
# checkout (which may be read-only, or shared): a relative path (RESULTS),
# resolved against the current directory when a results file is written.
_RESULTS = "results"


def build_dir() -> str:
    return os.environ.get("SHIMLAB_BUILD_DIR", os.path.join(ROOT_DIR, "build"))


def build_root():
    """build_dir() as a Path."""
    from pathlib import Path
    return Path(build_dir())


def notebook_out():
    """Where notebooks write their outputs, one folder each: experiments/out,
    or $SHIMLAB_NOTEBOOK_OUT."""
    from pathlib import Path
    return Path(os.environ.get("SHIMLAB_NOTEBOOK_OUT")
                or os.path.join(ROOT_DIR, _FOLDERS["EXPERIMENTS"], "out"))


def __getattr__(name: str):
    """ROOT, SRC, CSRC, GENERATED, PEACHPY_STENCILS, EXAMPLES, CORPUS,
    EXPERIMENTS and RESULTS as Paths, made when first asked for."""
    if name not in _FOLDERS and name != "RESULTS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from pathlib import Path
    value = Path(_RESULTS) if name == "RESULTS" else Path(ROOT_DIR, _FOLDERS[name])
    globals()[name] = value
    return value
