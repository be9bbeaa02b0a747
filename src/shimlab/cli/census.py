"""`shimlab census BINARY...`: the baseline check on interpreters others
built (shimlab.census): a table, how each dispatch loop was found and how
sure that is, or --json; --fetch NAME downloads a real interpreter first."""
from __future__ import annotations

import json

from ..errors import ShimlabError
from . import stdout


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("census", help=help_text)
    p.add_argument("binaries", nargs="*", metavar="BINARY",
                   help="an interpreter's executable or library (a python3 that links "
                        "libpython is followed to it)")
    p.add_argument("--function", metavar="NAME",
                   help="the function holding the dispatch loop, for a binary the census "
                        "does not know (default: CPython's, Lua's, Ruby's, Perl's, PHP's or "
                        "shimlab's own)")
    p.add_argument("--fetch", action="append", default=[], metavar="NAME",
                   help="download interpreter NAME from Debian's archive (unpacked under "
                        "the build directory, never installed) and take its census; repeatable "
                        "(python3.14, python3.13, lua5.4, ruby, perl, php)")
    p.add_argument("--json", action="store_true",
                   help="print the reports as JSON instead of the table")
    p.set_defaults(fn=cmd_census)


def cmd_census(args) -> int:
    from ..census import census
    from ..census.report import format_detail, format_table
    paths = list(args.binaries)
    if args.fetch:
        from ..census import fetch
        paths += [str(fetch.fetch(name)) for name in args.fetch]
    if not paths:
        raise ShimlabError("census: name a binary (or --fetch NAME)")
    reports = [census(p, args.function) for p in paths]
    if args.json:
        stdout.write(json.dumps([r.to_json() for r in reports], indent=1) + "\n")
        return 0
    stdout.write(format_table(reports) + "\n\n"
                 + "\n\n".join(format_detail(r) for r in reports) + "\n")
    return 0
