"""Where things are: the checkout's folders and the build cache.

Every module that needs a path asks here, so moving a folder is one edit.
SHIMLAB_BUILD_DIR moves the build cache (interpreters, stencils, probes).
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
CSRC = ROOT / "csrc"
GENERATED = CSRC / "generated"
JITSTUBS = ROOT / "jitstubs"
EXAMPLES = ROOT / "examples"
EXPERIMENTS = ROOT / "experiments"
RESULTS = ROOT / "results"


def cache_root() -> Path:
    return Path(os.environ.get("SHIMLAB_BUILD_DIR", ROOT / "build"))
