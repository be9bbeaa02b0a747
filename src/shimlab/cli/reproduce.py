"""`shimlab reproduce NAME [--quick]` / `--list`: the experiment notebooks."""
from __future__ import annotations

from .. import reproduce
from ..errors import ShimlabError


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("reproduce", help=help_text)
    p.add_argument("name", nargs="?", help="the notebook, e.g. dispatch-by-compiler")
    p.add_argument("--quick", action="store_true",
                   help="small workloads and few samples (sets SHIMLAB_QUICK=1)")
    p.add_argument("--list", action="store_true", help="list the notebooks")
    p.add_argument("--cc", action="append",
                   help="only these compilers (default: every one the setup installs)")
    p.set_defaults(fn=cmd_reproduce)


def cmd_reproduce(args) -> int:
    if args.list:
        books = reproduce.notebooks()
        width = max((len(n) for n in books), default=0)
        for name, path in books.items():
            print(f"{name:<{width}}  {reproduce.describe(path)}")
        return 0
    if not args.name:
        raise ShimlabError("reproduce: name a notebook (shimlab reproduce --list shows them)")
    return reproduce.run(args.name, args.quick, args.cc)
