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

from . import isolate, paths


def env(**extra: str) -> dict[str, str]:
    """os.environ plus `extra`, with this checkout first on PYTHONPATH (src/
    for shimlab, the root for jitstubs), so a child imports this code even
    where shimlab is not installed."""
    out = dict(os.environ, **extra)
    ours = os.pathsep.join([str(paths.SRC), str(paths.ROOT)])
    out["PYTHONPATH"] = ours + (os.pathsep + out["PYTHONPATH"] if out.get("PYTHONPATH") else "")
    return out


def run_module(module: str, job: dict, timeout: float | None = None,
               argv: list[str] | None = None, **extra_env: str) -> subprocess.CompletedProcess:
    """`python -m module` with `job` as JSON on stdin, output captured as text.
    subprocess.TimeoutExpired reaches the caller (the child is killed)."""
    return subprocess.run([sys.executable, "-m", module, *(argv or [])], input=json.dumps(job),
                          capture_output=True, text=True, timeout=timeout, env=env(**extra_env),
                          preexec_fn=isolate.die_with_parent_hook())


def last_json_line(stdout: str) -> dict:
    """The JSON object a child printed last ({} when there is none)."""
    lines = stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        return {}
    return out if isinstance(out, dict) else {}
