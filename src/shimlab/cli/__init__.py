"""The `shimlab` command: one module per subcommand, imported only when used.

Every failure the user can cause is a ShimlabError printed as one line on
stderr with exit status 1; a crashing interpreter is exit status 2, one that
--timeout stopped exit status 3.  A command line that does not parse (unknown
command, option or value, missing argument) is such an error too: one line,
exit status 1, never argparse's usage block and status 2.  `shimlab run` imports what running needs
and nothing else (no numpy, no benchmark suites), so it starts fast.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..errors import ShimlabError
from ..isolate import Crash, Timeout
from . import version

# exit statuses (docs/cli.md, "Exit status"); 2 and 3 are isolate.Crash and Timeout
EXIT_ERROR, EXIT_CRASH, EXIT_TIMEOUT = 1, 2, 3

DESCRIPTION = ("A laboratory for bytecode-interpreter dispatch and interpreter/JIT calling "
               "conventions. Every command has --help.")
# name -> one line of help; the module shimlab.cli.<name> (dashes as
# underscores) defines add_parser(sub) and the command itself.
COMMANDS = {
    "run": "run a BF (.b/.bf), minipy (.py) or bytecode (.slbc) program under one mode",
    "dis": "print a program's bytecode, or with --native an interpreter's machine code",
    "census": "the baseline check on anyone's interpreter binary: its dispatch code, "
              "indirect jumps, MERGED",
    "doctor": "what this machine's toolchain can do",
    "bench": "run a benchmark suite: dispatch, transitions or programs",
    "demo": "set-up check plus the headline benchmark (the paired transition benchmark), quick",
    "stencils": "list, show, test and compare the JIT's stencils",
    "compare": "compare two results files, with intervals and verdicts",
    "reproduce": "run an experiment notebook (experiments/NAME.py, or a path to your own)",
    "lua": "fetch, build and time Lua 5.4/5.5 and LuaJIT 2.1 from their sources",
}


def _module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def _columns() -> int:
    """The terminal's width as argparse would find it, without shutil (whose
    import, with its archive modules, was a tenth of `shimlab run`'s start-up)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and EXIT_ERROR: argparse's own
    exit status 2 is the one shimlab gives a crashed interpreter."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(EXIT_ERROR, f"{self.prog}: {message} (see {self.prog} --help)\n")


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: every command's (only=None); with only="NAME",
    that command's alone (the line parses nothing else, and `shimlab run`
    stays fast); with only="", every command as a stub with its help line
    (top-level help, --version), no command module imported."""
    ap = _Parser(prog="shimlab", description=DESCRIPTION)
    ap.add_argument("--version", action=version.Action)
    sub = ap.add_subparsers(dest="command", required=True)
    for name, help_text in COMMANDS.items():
        if only is None or name == only:
            _module(name).add_parser(sub, help_text)
        elif not only:
            sub.add_parser(name, help=help_text)
    return ap


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # no command named (--help, --version, a typo): no command module is needed
    only = argv[0] if argv and argv[0] in COMMANDS else ""
    args = parser(only).parse_args(argv)
    if _closed(1):
        # `>&-`: nothing to write results to, and fd 1 would go to the next
        # file opened, where a run's child would write the program's output
        print("shimlab: stdout is closed; redirect it to a file or /dev/null",
              file=sys.stderr)
        return EXIT_ERROR
    try:
        return args.fn(args)
    except ShimlabError as e:
        print(f"shimlab: {e}", file=sys.stderr)
        return (EXIT_TIMEOUT if isinstance(e, Timeout) else EXIT_CRASH if isinstance(e, Crash)
                else EXIT_ERROR)
    except KeyboardInterrupt:
        print("shimlab: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        # the front ends and the VM report their own limits; this is the last
        # net (a memory limit hit anywhere else), still one line, not a traceback
        print(f"shimlab: out of memory running `shimlab {' '.join(argv[:1])}` (a memory "
              f"limit or the machine's memory was reached)", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
