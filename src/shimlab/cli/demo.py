"""`shimlab demo` (what `make demo` runs): the toolchain, then the headline
benchmark, the transition sweep, small."""
from __future__ import annotations

import argparse

from .. import doctor
from ..bench import transitions


def add_parser(sub, help_text: str) -> None:
    sub.add_parser("demo", help=help_text).set_defaults(fn=cmd_demo)


def cmd_demo(args) -> int:
    if doctor.run() != 0:
        return 1
    print("\n== shimlab bench transitions (quick sweep) ==\n", flush=True)
    ns = argparse.Namespace(size="quick", cc=None, mode=None, processes=None, samples=None,
                            cpu=None, no_count=False, output=None, plot=False)
    return transitions.main(ns)
