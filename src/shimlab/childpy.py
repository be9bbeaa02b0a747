"""Starting a fresh Python that imports this checkout's shimlab.

Benchmark workers, profile training, hot-spot runs and notebooks each run in
a child interpreter; they all start it here, with the same environment, and
the child dies with this process (isolate.die_with_parent_hook).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from pathlib import Path

from . import isolate, paths


def env(checkout: str | None = None, **extra: str) -> dict[str, str]:
    """os.environ plus `extra`, with this checkout (or the one at `checkout`)
    first on PYTHONPATH (src/ for shimlab, the root for peachpy_stencils), so a child
    imports that code even where shimlab is not installed."""
    out = dict(os.environ, **extra)
    root = Path(checkout) if checkout else paths.ROOT
    ours = os.pathsep.join([str(root / "src"), str(root)])
    out["PYTHONPATH"] = ours + (os.pathsep + out["PYTHONPATH"] if out.get("PYTHONPATH") else "")
    return out


def run_module(module: str, job: dict, timeout: float | None = None,
               argv: list[str] | None = None, checkout: str | None = None,
               **extra_env: str) -> subprocess.CompletedProcess:
    """`python -m module` with `job` as JSON on stdin, output captured as text;
    checkout: another checkout's root, whose venv's Python and code run it,
    started there (`-m` puts the working directory first on the import path: this
    checkout's peachpy_stencils would shadow that one's).
    subprocess.TimeoutExpired reaches the caller (the child is killed)."""
    return subprocess.run([python_of(checkout), "-m", module, *(argv or [])],
                          input=json.dumps(job), capture_output=True, text=True,
                          timeout=timeout, env=env(checkout, **extra_env),
                          cwd=checkout or None, preexec_fn=isolate.die_with_parent_hook())


def python_of(checkout: str | None) -> str:
    """This Python, or the one of another checkout's .venv."""
    return str(Path(checkout) / ".venv" / "bin" / "python") if checkout else sys.executable


def last_json_line(stdout: str) -> dict:
    """The JSON object a child printed last ({} when there is none)."""
    lines = stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        return {}
    return out if isinstance(out, dict) else {}
