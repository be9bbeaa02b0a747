"""`shimlab --version`: the installed version and, in a git checkout, its commit.

An argparse action that computes the text only when the option is given, so
building the parser costs nothing (shimlab run starts fast).
"""
from __future__ import annotations

import argparse
import sys

from ..paths import ROOT_DIR


def text() -> str:
    import subprocess
    from importlib.metadata import PackageNotFoundError, version
    try:
        v = version("shimlab")
    except PackageNotFoundError:
        v = "(not installed)"
    line = f"shimlab {v}"
    try:
        # --no-optional-locks: never take index.lock; others may be using the repository
        p = subprocess.run(["git", "--no-optional-locks", "-C", ROOT_DIR, "rev-parse",
                            "--short", "HEAD"], capture_output=True, text=True, timeout=5)
        if p.returncode == 0 and p.stdout.strip():
            line += f" (git {p.stdout.strip()})"
    except (OSError, subprocess.SubprocessError):
        pass      # not a checkout, or no git: the version alone
    return line + f", Python {sys.version.split()[0]}"


class Action(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print shimlab's version (and git commit) and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(text())
        parser.exit()
