"""`shimlab reproduce NAME|PATH [--quick] [--kernel]` / `--list`: the experiment
notebooks, as scripts or through a Jupyter kernel."""
from __future__ import annotations

from .. import reproduce
from ..errors import ShimlabError


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("reproduce", help=help_text)
    p.add_argument("name", nargs="?",
                   help="a notebook of experiments/ by name (e.g. dispatch-by-compiler), "
                        "or the path of a notebook of your own (a jupytext percent script, .py)")
    p.add_argument("--quick", action="store_true",
                   help="small workloads and few samples (sets SHIMLAB_QUICK=1)")
    p.add_argument("--kernel", action="store_true",
                   help="execute it through a Jupyter kernel (nbclient) instead of as a script, "
                        "and write the executed .ipynb beside its outputs (needs the "
                        "kernel extra: pip install -e '.[kernel]', which make setup does)")
    p.add_argument("--list", action="store_true", help="list the notebooks of experiments/")
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
    if args.kernel:
        reproduce.run_in_kernel(args.name, args.quick, args.cc)
        return 0
    return reproduce.run(args.name, args.quick, args.cc)
