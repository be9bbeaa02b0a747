"""`shimlab demo` (what `make demo` runs): the toolchain, then the headline
benchmark, the paired transition benchmark at its quick size (each crossing
against its null crossing; the answer first); its results file goes under
the current directory, as every bench command's does."""
from __future__ import annotations

import io
from pathlib import Path

from .. import doctor
from ..paths import RESULTS


def add_parser(sub, help_text: str) -> None:
    sub.add_parser("demo", help=help_text).set_defaults(fn=cmd_demo)


def cmd_demo(args) -> int:
    # where the results go, first: the current directory, not the checkout
    print(f"shimlab demo: the quick transition benchmark, each crossing against its null "
          f"crossing (results to {Path.cwd() / RESULTS}/)", flush=True)
    # the toolchain's report only when something is wrong with it: the answer comes first
    report = io.StringIO()
    if doctor.run(out=report) != 0:
        print(report.getvalue())
        return 1
    print("toolchain: ok (`shimlab doctor` shows it)\n", flush=True)
    # the benchmark exactly as `shimlab bench transitions` would run it: its own defaults
    from . import parser
    args = parser("bench").parse_args(["bench", "transitions", "--size", "quick"])
    return args.fn(args)
