"""`shimlab stencils list|show|test|compare`: look at, check and compare the stencils."""
from __future__ import annotations

import sys

from .. import isa, isolate, stencil_check
from ..bench import stencil_timing
from ..bench.table import table
from ..jit import stencil_store
from .numbers import nonnegative_int, positive_int


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("stencils", help=help_text)
    s = p.add_subparsers(dest="action", required=True)
    s.add_parser("list", help="every stencil: size, holes, what it does").set_defaults(fn=cmd_list)
    show = s.add_parser("show", help="a stencil's disassembly with its holes marked")
    show.add_argument("name", help="the stencil, e.g. LOAD_INT or JUMP_IF_FALSE:taken")
    show.set_defaults(fn=cmd_show)
    test = s.add_parser("test", help="run stencils alone from random states against the oracle")
    test.add_argument("name", nargs="*", help="stencils to test (default: all)")
    test.add_argument("--trials", type=positive_int, default=40,
                      help="random VM states per stencil (default 40)")
    test.add_argument("--seed", type=nonnegative_int, default=0,
                      help="seed of the random states (default 0)")
    test.add_argument("--cc", help="compiler for the harness (default: the best one found)")
    test.add_argument("--source", choices=("peachpy", "clang"), default="peachpy",
                      help="PeachPy stencils (peachpy_stencils/) or ones compiled from isa.py's C by --cc")
    test.set_defaults(fn=cmd_test)
    cmp_ = s.add_parser("compare", help="PeachPy against compiler-built stencils, or two "
                        "stencils of one instruction (A B): code size and cycles per "
                        "instruction in a traced loop, with intervals and a verdict")
    cmp_.add_argument("instruction", nargs="*", metavar="NAME",
                      help="instructions, each timed with its PeachPy and its clang stencil "
                           "(default: all with a unit); or two stencils of one instruction, "
                           "A B (e.g. CELL_ADD CELL_ADD:rmw), timed against each other")
    cmp_.add_argument("--cc", help="the clang that builds the stencils and the interpreter")
    cmp_.add_argument("--quick", action="store_true", help="small loops, few runs")
    cmp_.add_argument("--rounds", type=positive_int, default=4, help="rounds of runs (default 4)")
    cmp_.set_defaults(fn=cmd_compare)


def _load(source: str = "peachpy", cc: str | None = None):
    return stencil_store.load(source=source, cc=cc)


def cmd_list(args) -> int:
    rows = []
    for s in _load().values():
        base = isa.BY_NAME.get(s.name.split(":")[0])
        doc = " ".join((s.doc or (base.doc if base else "")).split())   # one line in the table
        where = stencil_store.origin(s.name)
        if where:
            doc = f"{doc} ({where})" if doc else f"({where})"
        rows.append((s.name, len(s.code), ", ".join(h.kind for h in s.holes) or "-", doc))
    print(table(rows, ["stencil", "bytes", "holes", "what it does"], align="lrll"))
    for why in stencil_store.problems():       # prototypes that did not build: not listed
        print(f"shimlab: left out: {why}", file=sys.stderr)
    return 0


def _get(name: str):
    """The stencil, or one line: unknown (with names like it), or a broken
    prototype's file, line and stencil."""
    return stencil_store.lookup(name)


def cmd_show(args) -> int:
    s = _get(args.name)
    where = stencil_store.origin(s.name)
    print(f"{s.name}: {len(s.code)} bytes" + (f" -- {s.doc}" if s.doc else "")
          + (f" ({where})" if where else ""))
    for h in s.holes:
        print(f"  hole {h.kind:<9} at +{h.offset}, {h.width} bytes")
    print(s.disassembly, end="")
    return 0


def cmd_compare(args) -> int:
    return stencil_timing.main(args)


def cmd_test(args) -> int:
    names = args.name or list(_load(args.source, args.cc))
    for n in names:
        _get(n)
    # testing them all: a prototype that did not build is a failure, named by its line
    broken = [] if args.name else stencil_store.problems()
    for why in broken:
        print(f"  BAD {why}")
    bad = len(broken)
    names_and_broken = len(names) + len(broken)
    for n in names:
        try:
            failures = isolate.call(f"stencil {n}", stencil_check.run_stencil, n, args.trials,
                                    args.seed, args.cc, args.source)
        except isolate.Crash as e:
            failures = [str(e)]
        except Exception as e:      # a harness error is this stencil's failure, not a crash
            failures = [f"{type(e).__name__}: {e}"]
        if n.startswith(("exit:", "count", "uncount", "tally")) and not failures:
            print(f"  -   {n}  (checked inside every other stencil's trace)")
            continue
        print(f"  {'ok ' if not failures else 'BAD'} {n}")
        for f in failures[:3]:
            print(f"        {f}")
        bad += bool(failures)
    print(f"{names_and_broken - bad} of {names_and_broken} stencils agree with the oracle "
          f"({args.trials} random states each)"
          + (f"; {len(broken)} prototype(s) did not build" if broken else ""), file=sys.stderr)
    return 1 if bad else 0
