"""`shimlab compare A.json B.json`: B against A, per program, per transition
sweep (round-trip slopes) and per floor; bench/file_compare.py does the work."""
from __future__ import annotations

from ..bench import file_compare


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("compare", help=help_text)
    p.add_argument("a", help="the baseline results file (pyperf JSON from shimlab bench)")
    p.add_argument("b", help="the results file compared against it")
    p.set_defaults(fn=lambda args: file_compare.compare(args.a, args.b))
