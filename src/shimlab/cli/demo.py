"""`shimlab demo` (what `make demo` runs): the toolchain, then the headline
benchmark, the transition sweep, small; its results file goes under the
current directory, as every bench command's does."""
from __future__ import annotations

from pathlib import Path

from .. import doctor
from ..bench import transitions
from ..paths import RESULTS


def add_parser(sub, help_text: str) -> None:
    sub.add_parser("demo", help=help_text).set_defaults(fn=cmd_demo)


def cmd_demo(args) -> int:
    # where the results go, first: the current directory, not the checkout
    print(f"shimlab demo: the toolchain, then the quick transition sweep "
          f"(results to {Path.cwd() / RESULTS}/)\n", flush=True)
    if doctor.run() != 0:
        return 1
    print("\n== shimlab bench transitions (quick sweep) ==\n", flush=True)
    # the sweep exactly as `shimlab bench transitions` would run it: its own defaults
    from . import parser
    return transitions.main(parser("bench").parse_args(["bench", "transitions",
                                                        "--size", "quick"]))
