"""pyflakes finds nothing in the project's Python: no unused import, no
undefined name (the kind of rot a refactor leaves behind)."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

TREES = ("src", "peachpy_stencils", "tests", "scripts", "experiments")


def test_pyflakes_is_clean():
    run = subprocess.run([sys.executable, "-m", "pyflakes", *TREES], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0 and not run.stdout, run.stdout + run.stderr
