"""`shimlab run FILE`: a program under one execution mode, its output exactly."""
from __future__ import annotations

import argparse
import sys

from .. import isa, isolate, modes, reference, vm
from ..errors import ShimlabError
from ..frontend import load_program
from ..interp import build
from ..jit import stencils
from ..jit.runtime import DEFAULT_THRESHOLD

RUN_MODES = modes.NAMES + (modes.REFERENCE,)


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("run", help=help_text)
    p.add_argument("file")
    p.add_argument("--mode", choices=RUN_MODES, default="tailcall")
    p.add_argument("--cc", help="compiler (default: the best one found)")
    p.add_argument("--input", help="file to read the program's input from ('-' for stdin; "
                   "default: stdin when it is not a terminal)")
    p.add_argument("--count", action="store_true",
                   help="print how many VM instructions ran, by opcode, on stderr")
    p.add_argument("--jit-threshold", type=int, default=DEFAULT_THRESHOLD, metavar="N",
                   help=f"JIT modes: back-edges before a loop is traced (default "
                        f"{DEFAULT_THRESHOLD}; 1 traces at once)")
    p.add_argument("--stats", action="store_true",
                   help="JIT modes: traces compiled, their sizes, entries and exits (stderr)")
    p.add_argument("--perf-map", action="store_true",
                   help="JIT modes: write /tmp/perf-PID.map so perf report names the traces")
    p.add_argument("--stencil", action="append", metavar="OP=NAME",
                   help="JIT modes: use stencil NAME for instruction OP (a prototype)")
    p.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                   help="run in a child process, so a crash is reported, not fatal "
                        "(default: on for native modes and with --timeout)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="stop the run after SECONDS (exit status 3)")
    p.set_defaults(fn=cmd_run)


def _read_input(arg: str | None) -> bytes:
    if arg == "-":
        return sys.stdin.buffer.read()
    if arg is not None:
        try:
            with open(arg, "rb") as f:
                return f.read()
        except OSError as e:
            raise ShimlabError(f"{arg}: cannot read input: {e.strerror}") from None
    if sys.stdin is not None and not sys.stdin.isatty():
        try:
            return sys.stdin.buffer.read()
        except (OSError, ValueError):
            return b""
    return b""


def _print_counts(counts, out) -> None:
    total = sum(counts)
    out.write(f"{total} VM instructions executed\n")
    for i in sorted(range(len(counts)), key=lambda i: -counts[i]):
        if counts[i]:
            out.write(f"  {isa.INSTRUCTIONS[i].name:<18} {counts[i]:>14}  "
                      f"{100.0 * counts[i] / total:5.1f}%\n")


def _stencil_overrides(specs) -> dict:
    """--stencil OP=NAME: the JIT uses stencil NAME (a prototype) for OP."""
    out = {}
    for spec in specs or ():
        op, sep, name = spec.partition("=")
        if not sep or not op or not name:
            raise ShimlabError(f"--stencil {spec}: expected OPCODE=STENCIL, e.g. DUP=DUP:mine")
        if name not in stencils.load():
            raise ShimlabError(f"--stencil {spec}: no stencil named {name!r} (shimlab stencils "
                               "list; prototypes come from jitstubs/ or $SHIMLAB_STENCILS)")
        out[op] = name
    return out


def cmd_run(args) -> int:
    # --isolate: the run happens in a forked child, so a fault or a timeout
    # is reported and never takes shimlab down; on by default for native
    # modes, and needed by --timeout (stopping a run means killing it)
    isolated = args.isolate
    if isolated is None:
        isolated = args.mode != modes.REFERENCE or args.timeout is not None
    if args.timeout is not None and args.timeout <= 0:
        raise ShimlabError(f"--timeout {args.timeout:g}: needs a positive number of seconds")
    if args.timeout is not None and not isolated:
        raise ShimlabError("--timeout needs --isolate (a run is stopped by killing its child)")
    program = load_program(args.file)
    data = _read_input(args.input)
    if args.mode == modes.REFERENCE:
        what = f"the reference interpreter running {args.file}"

        def child():
            return reference.run(program, data)
    else:
        b = build.build(args.mode, args.cc, count=args.count)
        jit = None
        if modes.is_jit(args.mode):
            jit = {"threshold": args.jit_threshold, "stats": args.stats,
                   "perf_map": args.perf_map, "stencils": _stencil_overrides(args.stencil)}
        elif args.stats or args.perf_map or args.stencil:
            raise ShimlabError(f"--stats, --perf-map and --stencil need a JIT mode "
                               f"({', '.join(modes.JIT)})")
        what = f"the {args.mode} interpreter ({b.compiler.name}) running {args.file}"

        def child():
            if jit is None:
                return vm.run(b, program, data), None
            with vm.Loaded(b, program, data, jit=jit) as loaded:
                result = loaded.run()
                return result, loaded.jit.report() if loaded.jit and args.stats else None
    if args.mode == modes.REFERENCE:
        result = isolate.call(what, child, timeout=args.timeout) if isolated else child()
    else:
        result, report = (isolate.call(what, child, timeout=args.timeout) if isolated
                          else child())
        if report:
            print(report, file=sys.stderr)
    sys.stdout.buffer.write(result.output)
    sys.stdout.buffer.flush()
    if args.count:
        _print_counts(result.counts, sys.stderr)
    if result.status:
        print(f"shimlab: {reference.describe_error(program, result)}", file=sys.stderr)
        return 1
    return 0
