"""What CPython itself prints for a minipy program, written as minipy prints it.

The truth for tests/differential.py's comparison with CPython: the program
runs in a fresh `python3` (this venv's CPython 3.11, isolated from the
environment), and its output is rewritten token by token with True and False
as 1 and 0 (minipy's booleans are ints).  Anything else that is not an
integer is an error here, so the comparison stays exact.
"""
from __future__ import annotations

import re
import subprocess
import sys

TIMEOUT = 60.0
_INT = re.compile(r"-?[0-9]+\Z")
_BOOLEANS = {"True": "1", "False": "0"}


class CPythonFailed(Exception):
    """CPython did not run the program to its end."""


def prints(src: str) -> str:
    """CPython's output for src, booleans as 1 and 0."""
    try:
        run = subprocess.run([sys.executable, "-I", "-"], input=src, capture_output=True,
                             text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CPythonFailed(f"CPython ran past {TIMEOUT:g} s") from None
    if run.returncode != 0:
        last = run.stderr.strip().splitlines()[-1:] or [f"exit status {run.returncode}"]
        raise CPythonFailed(f"CPython failed: {last[0]}")
    return as_minipy(run.stdout)


def as_minipy(text: str) -> str:
    """Python's printed ints and booleans as minipy prints them."""
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if not line:
            continue
        words = line.split(" ")
        for i, w in enumerate(words):
            if w in _BOOLEANS:
                words[i] = _BOOLEANS[w]
            elif not _INT.match(w):
                raise ValueError(f"CPython printed {w!r}, which is neither an int nor a bool")
        lines[n] = " ".join(words)
    return "\n".join(lines)
