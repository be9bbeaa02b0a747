"""The `shimlab` command: one module per subcommand, imported only when used.

Every failure the user can cause is a ShimlabError printed as one line on
stderr with exit status 1; a crashing interpreter is exit status 2, one that
--timeout stopped exit status 3.  `shimlab run` imports what running needs
and nothing else (no numpy, no benchmark suites), so it starts fast.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..errors import ShimlabError
from ..isolate import Crash, Timeout

DESCRIPTION = "The `shimlab` command: run, dis, doctor, bench, compare."
# name -> one line of help; the module shimlab.cli.<name> (dashes as
# underscores) defines add_parser(sub) and the command itself.
COMMANDS = {
    "run": "run a BF (.b/.bf) or minipy (.py) program",
    "dis": "print a program's bytecode, or with --native an interpreter's machine code",
    "doctor": "what this machine's toolchain can do",
    "bench": "run a benchmark suite",
    "demo": "set-up check plus the headline benchmark (the transition sweep), small",
    "stencils": "list, disassemble and test the JIT's PeachPy stencils",
    "compare": "compare two results files",
    "reproduce": "run an experiment notebook (experiments/NAME.py)",
}


def _module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with `only`, the other commands get a stub parser
    (their modules are not imported: `shimlab run` stays fast)."""
    ap = argparse.ArgumentParser(prog="shimlab", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="command", required=True)
    for name, help_text in COMMANDS.items():
        if only is None or name == only:
            _module(name).add_parser(sub, help_text)
        else:
            sub.add_parser(name, help=help_text)
    return ap


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    only = argv[0] if argv and argv[0] in COMMANDS else None
    args = parser(only).parse_args(argv)
    try:
        return args.fn(args)
    except ShimlabError as e:
        print(f"shimlab: {e}", file=sys.stderr)
        return 3 if isinstance(e, Timeout) else 2 if isinstance(e, Crash) else 1
    except KeyboardInterrupt:
        print("shimlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
