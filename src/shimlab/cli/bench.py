"""`shimlab bench dispatch|transitions|programs`: the suites' arguments."""
from __future__ import annotations

from .. import modes
from ..bench import dispatch, programs, transitions


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("bench", help=help_text)
    bsub = p.add_subparsers(dest="suite", required=True)
    d = bsub.add_parser("dispatch", help="dispatch variants x compilers, ratios to goto")
    d.add_argument("--quick", action="store_true", help="small workloads, < 1 minute")
    d.add_argument("--cc", action="append", help="compiler(s) to include (default: all)")
    d.add_argument("--mode", action="append", choices=modes.INTERPRETERS)
    d.add_argument("--workload", action="append", help="program file(s) instead of the defaults")
    d.add_argument("--processes", type=int, help="worker processes per configuration")
    d.add_argument("--warmup", type=int, help="warm-up runs per worker")
    d.add_argument("--samples", type=int, help="measured runs per worker")
    d.add_argument("--cpu", type=int, help="CPU to pin workers to (default: the last)")
    d.add_argument("--target-ci", type=float, metavar="PCT",
                   help="add worker processes until every median's 95%% interval is within "
                        "+-PCT%% (default: 1 without --quick, none with it)")
    d.add_argument("--max-processes", type=int, help="cap for --target-ci (default 80)")
    d.add_argument("--layout", choices=["random", "fixed"], default="random",
                   help="VM memory layout: a new random one for every run (default) or one "
                        "fixed layout for all")
    d.add_argument("--code-layout", choices=["random", "fixed"], default="random",
                   help="interpreter code placement: each configuration built several times "
                        "with its code shifted, worker processes spread over the builds "
                        "(default), or the compiler's placement only")
    d.add_argument("--code-layouts", type=int, default=3, metavar="K",
                   help="builds per configuration with --code-layout random (default 3)")
    d.add_argument("--count", choices=["instructions"],
                   help="also count machine instructions (perf counters or callgrind)")
    d.add_argument("-o", "--output", help="results file (default: results/dispatch-DATE.json)")
    d.add_argument("--resume", metavar="FILE", help="continue an interrupted results file")
    d.add_argument("--plot", action="store_true", help="write PNG and SVG plots next to it")
    d.add_argument("--timeout", type=float, metavar="SECONDS", default=600.0,
                   help="stop a worker process after SECONDS and record the configuration "
                        "as failed (default 600)")
    d.set_defaults(fn=dispatch.main)

    t = bsub.add_parser("transitions", help="the cost of one interpreter<->JIT round trip, "
                        "shim against direct")
    t.add_argument("--size", choices=list(transitions.SIZES), default="quick")
    t.add_argument("--cc", help="compiler (a clang with preserve_none; default: the best)")
    t.add_argument("--mode", action="append", choices=transitions.MODES)
    t.add_argument("--processes", type=int)
    t.add_argument("--samples", type=int)
    t.add_argument("--cpu", type=int)
    t.add_argument("--no-count", action="store_true",
                   help="skip the exact instruction counts (callgrind)")
    t.add_argument("-o", "--output", help="results file (default: results/transitions-DATE.json)")
    t.add_argument("--plot", action="store_true", help="write PNG/SVG plots next to it")
    t.set_defaults(fn=transitions.main)

    g = bsub.add_parser("programs", help="BF and minipy programs: tailcall against the JIT modes")
    g.add_argument("--quick", action="store_true")
    g.add_argument("--workload", action="append")
    g.add_argument("--cc")
    g.add_argument("--processes", type=int)
    g.add_argument("--samples", type=int)
    g.add_argument("--cpu", type=int)
    g.add_argument("-o", "--output")
    g.set_defaults(fn=programs.main)
