"""`shimlab bench dispatch|transitions|programs`: the suites' arguments."""
from __future__ import annotations

from .. import modes
from ..result import TAPE_LEN
from ..bench import dispatch, programs, roundtrip, transitions
from ..frontend import bf
from ..interp.generate import CACHE_MAX
from ..jit import optimize
from .numbers import cpu, int_in, nonnegative_int, positive_float, positive_int, seconds

MAX_TAPE = 1 << 30


def _tape_size(p) -> None:
    p.add_argument("--tape-size", type=int_in(1, MAX_TAPE, "a number of cells"),
                   default=TAPE_LEN, metavar="N",
                   help=f"BF programs: cells on the tape (default {TAPE_LEN})")


def _cache(p, what: str) -> None:
    p.add_argument("--cache", action="append", metavar="K",
                   type=int_in(0, CACHE_MAX, "a number of cached values"),
                   help=f"keep the operand stack's top K values in registers (0 to {CACHE_MAX}; "
                        f"repeat to measure several K side by side; default 0): {what}")


def _file_options(p) -> None:
    """--resume and --force: an existing results file is continued or replaced
    only when asked (bench/results.py open_for)."""
    p.add_argument("--resume", metavar="FILE",
                   help="continue an interrupted results file of this suite and these options")
    p.add_argument("--force", action="store_true",
                   help="replace an existing -o file (without it an existing file is refused)")


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("bench", help=help_text)
    bsub = p.add_subparsers(dest="suite", required=True)
    d = bsub.add_parser("dispatch", help="dispatch variants x compilers, ratios to goto")
    d.add_argument("--quick", action="store_true", help="small workloads, < 1 minute")
    d.add_argument("--cc", action="append", help="compiler(s) to include (default: all)")
    d.add_argument("--mode", action="append", choices=modes.INTERPRETERS,
                   help="dispatch variant(s) to include (default: all)")
    d.add_argument("--workload", action="append", help="program file(s) instead of the defaults")
    d.add_argument("--processes", type=positive_int, help="worker processes per configuration")
    d.add_argument("--warmup", type=nonnegative_int, help="warm-up runs per worker")
    d.add_argument("--samples", type=positive_int, help="measured runs per worker")
    d.add_argument("--cpu", type=cpu, help="CPU to pin workers to (default: the last)")
    d.add_argument("--target-ci", type=positive_float, metavar="PCT",
                   help="add worker processes until every median's 95%% interval is within "
                        "+-PCT%% (default: 1 without --quick, none with it)")
    d.add_argument("--max-processes", type=positive_int, help="cap for --target-ci (default 80)")
    d.add_argument("--layout", choices=["random", "fixed"], default="random",
                   help="VM memory layout: a new random one for every run (default) or one "
                        "fixed layout for all")
    d.add_argument("--code-layout", choices=["random", "fixed"], default="random",
                   help="interpreter code placement: each configuration built several times "
                        "with its code shifted, worker processes spread over the builds "
                        "(default), or the compiler's placement only")
    d.add_argument("--code-layouts", type=positive_int, default=3, metavar="K",
                   help="builds per configuration with --code-layout random (default 3)")
    d.add_argument("--count", choices=["instructions"],
                   help="also count machine instructions (perf counters or callgrind)")
    d.add_argument("-o", "--output", help="results file (default: results/dispatch-DATE.json)")
    _file_options(d)
    d.add_argument("--plot", action="store_true", help="write PNG and SVG plots next to it")
    d.add_argument("--timeout", type=seconds, metavar="SECONDS", default=600.0,
                   help="stop a worker process after SECONDS and record the configuration "
                        "as failed (default 600)")
    _tape_size(d)
    _cache(d, "the tailcall mode at each K, the others at K = 0")
    d.set_defaults(fn=dispatch.main)

    t = bsub.add_parser("transitions", help="the cost of one interpreter<->JIT round trip, "
                        "shim against direct")
    t.add_argument("--design", choices=["paired", "sweep"], default="paired",
                   help="paired (default): each crossing against a null crossing, the same "
                        "program with a NOP interpreted where the trace was, run by the same "
                        "worker on the same build (bench/roundtrip.py); sweep: the slope "
                        "against M round trips at constant work, each M its own program (the "
                        "design before, with its anomaly report)")
    t.add_argument("--size", choices=list(transitions.SIZES), default="quick",
                   help="paired: tiny, a smoke test; quick (default): M = 2, 4, 8 at k = 16, "
                        "6 processes over 3 code layouts, about 2 minutes; full: also k = 4 "
                        "and 64, M = 1 and 16, one trace entered M times, 12 processes. "
                        "sweep: tiny M = 1, 2, 4; quick M = 4, 8, 16, 32; full 5x longer loops")
    t.add_argument("--code-layouts", type=positive_int, metavar="K",
                   help="builds per crossing with the code shifted, the worker processes "
                        "spread over them (paired: default 3, tiny 2; sweep: default none, "
                        "the compiler's placement; with 2 or more each gets a per-layout "
                        "table)")
    t.add_argument("--cc", help="compiler (a clang with preserve_none; default: the best)")
    t.add_argument("--mode", action="append", choices=transitions.MODES,
                   help="crossing(s) to measure (default: all)")
    t.add_argument("--processes", type=positive_int,
                   help="worker processes per program (default: set by --size)")
    t.add_argument("--samples", type=positive_int,
                   help="measured runs per worker (default: set by --size)")
    t.add_argument("--cpu", type=cpu, help="CPU to pin workers to (default: the last)")
    t.add_argument("--no-count", action="store_true",
                   help="skip the exact instruction counts (callgrind)")
    t.add_argument("-o", "--output", help="results file (default: results/transitions-DATE.json)")
    _file_options(t)
    t.add_argument("--plot", action="store_true", help="write PNG/SVG plots next to it")
    _cache(t, "every crossing at each K, its programs keeping K values live across each "
              "crossing; one table, a row group per K")
    t.add_argument("--jit-opt", type=int, choices=optimize.LEVELS, default=0, metavar="LEVEL",
                   help="the traces' optimizer level (default 0: one stencil per instruction, "
                        "cached values spilled at entry; 2 or more: the work folds away and "
                        "the traces keep cached values in registers, so a round trip is the "
                        "crossing carrying them)")
    t.set_defaults(fn=run_transitions)

    g = bsub.add_parser("programs", help="BF and minipy programs: tailcall against the JIT modes")
    g.add_argument("--quick", action="store_true",
                   help="two small workloads, 3 processes of 10 runs (default: all, 5 of 5)")
    g.add_argument("--workload", action="append",
                   help="program file(s) instead of the default BF and minipy set")
    g.add_argument("--corpus", action="store_true",
                   help="the corpus (corpus/corpus.toml; --workload NAME picks programs of "
                        "it): tailcall at each --bf-opt against the JIT at its default levels "
                        "(or each --jit-opt), steady state and whole process, minipy also "
                        "against CPython; per program and the distribution per configuration")
    g.add_argument("--mode", action="append", choices=modes.JIT,
                   help="with --corpus: the JIT mode(s) to measure (default jit-direct)")
    g.add_argument("--no-whole", action="store_true",
                   help="with --corpus: steady state only, no whole-process runs")
    g.add_argument("--trace-cache", action="store_true",
                   help="with --corpus: the JIT's whole processes with its trace cache on "
                        "(after the first, each places its traces from the plans kept; "
                        "default: off, every process compiles every trace)")
    g.add_argument("--before", metavar="CHECKOUT",
                   help="with --corpus: also every configuration as another checkout (its "
                        "root, with a .venv made by make setup) runs it, in the same rounds: "
                        "before and after a change side by side")
    g.add_argument("--code-layouts", type=positive_int, metavar="K",
                   help="builds per configuration with the code shifted, the worker "
                        "processes (and whole-process samples) spread over them (default: 3 "
                        "with --corpus, where the table also says how far placement alone "
                        "moved each configuration; else the compiler's placement only)")
    g.add_argument("--cc", help="compiler (a clang with preserve_none; default: the best)")
    g.add_argument("--processes", type=positive_int, help="worker processes per configuration")
    g.add_argument("--samples", type=positive_int, help="measured runs per worker")
    g.add_argument("--cpu", type=cpu, help="CPU to pin workers to (default: the last)")
    _tape_size(g)
    _cache(g, "every mode at each K; at --jit-opt 2 or more the traces of every JIT mode but "
              "jit-shim are entered with the values in registers")
    g.add_argument("--stencil", action="append", metavar="OP=NAME",
                   help="also time each JIT mode with stencil NAME (a prototype) in place of "
                        "OP, against the same mode's standard stencils (repeatable)")
    g.add_argument("-o", "--output", help="results file (default: results/programs-DATE.json)")
    _file_options(g)
    g.add_argument("--jit-opt", type=int, action="append", choices=optimize.LEVELS,
                   metavar="LEVEL", help="JIT modes: a trace optimizer level to measure "
                   "(repeatable; default: every level, so each one's gain can be read off)")
    g.add_argument("--bf-opt", type=int, action="append", choices=bf.LEVELS, metavar="LEVEL",
                   help="BF workloads: a front end level to measure (repeatable; default: "
                   "every level; the first is the tailcall baseline): " + bf.LEVELS_HELP)
    g.set_defaults(fn=programs.main)


def run_transitions(args) -> int:
    """`bench transitions`: the paired design, or the sweep it replaced."""
    from ..bench import harness
    harness.check_file_options(args)     # before either design probes a compiler
    if getattr(args, "design", "paired") == "sweep":
        return transitions.main(args)
    return roundtrip.main(args)
