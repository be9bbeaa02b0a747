"""The `shimlab` command: run, dis, doctor, bench, compare.

Every failure the user can cause is a ShimlabError printed as one line on
stderr with exit status 1; a crashing interpreter is exit status 2, one that
--timeout stopped exit status 3.
"""
from __future__ import annotations

import argparse
import os
import sys

from .errors import ShimlabError
from .isolate import Crash, Timeout

MODES = ("switch", "goto", "goto-merged", "tailcall", "asm", "jit-shim", "jit-direct",
         "jit-direct-handler", "jit-table", "reference")


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


def _print_counts(program, counts, out) -> None:
    from . import isa
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
        from .jit import stencils
        if name not in stencils.load():
            raise ShimlabError(f"--stencil {spec}: no stencil named {name!r} (shimlab stencils "
                               "list; prototypes come from jitstubs/ or $SHIMLAB_STENCILS)")
        out[op] = name
    return out


def cmd_run(args) -> int:
    from . import build, isolate, reference, vm
    from .frontend import load_program

    # --isolate: the run happens in a forked child, so a fault or a timeout
    # is reported and never takes shimlab down; on by default for native
    # modes, and needed by --timeout (stopping a run means killing it)
    isolated = args.isolate
    if isolated is None:
        isolated = args.mode != "reference" or args.timeout is not None
    if args.timeout is not None and args.timeout <= 0:
        raise ShimlabError(f"--timeout {args.timeout:g}: needs a positive number of seconds")
    if args.timeout is not None and not isolated:
        raise ShimlabError("--timeout needs --isolate (a run is stopped by killing its child)")
    program = load_program(args.file)
    data = _read_input(args.input)
    if args.mode == "reference":
        what = f"the reference interpreter running {args.file}"

        def child():
            return reference.run(program, data)
    else:
        b = build.build(args.mode, args.cc, count=args.count)
        jit = None
        if build.is_jit(args.mode):
            jit = {"threshold": args.jit_threshold, "stats": args.stats,
                   "perf_map": args.perf_map, "stencils": _stencil_overrides(args.stencil)}
        elif args.stats or args.perf_map or args.stencil:
            raise ShimlabError("--stats, --perf-map and --stencil need a JIT mode (jit-shim, "
                               "jit-direct, jit-direct-handler, jit-table)")
        what = f"the {args.mode} interpreter ({b.compiler.name}) running {args.file}"

        def child():
            if jit is None:
                return vm.run(b, program, data), None
            with vm.Loaded(b, program, data, jit=jit) as loaded:
                result = loaded.run()
                return result, loaded.jit.report() if loaded.jit and args.stats else None
    if args.mode == "reference":
        result = isolate.call(what, child, timeout=args.timeout) if isolated else child()
    else:
        result, report = (isolate.call(what, child, timeout=args.timeout) if isolated
                          else child())
        if report:
            print(report, file=sys.stderr)
    sys.stdout.buffer.write(result.output)
    sys.stdout.buffer.flush()
    if args.count:
        _print_counts(program, result.counts, sys.stderr)
    if result.status:
        print(f"shimlab: {vm.describe_error(program, result)}", file=sys.stderr)
        return 1
    return 0


def cmd_dis(args) -> int:
    if args.native:
        from . import inspect
        return inspect.main_native(args)
    from .bytecode import disassemble
    from .frontend import load_program
    if not args.file:
        raise ShimlabError("dis: name a program file (or use --native)")
    sys.stdout.write(disassemble(load_program(args.file)))
    return 0


def cmd_doctor(args) -> int:
    from . import doctor
    return doctor.run()


def cmd_compare(args) -> int:
    from .bench import compare
    return compare.compare(args.a, args.b)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="shimlab", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a BF (.b/.bf) or minipy (.py) program")
    p.add_argument("file")
    p.add_argument("--mode", choices=MODES, default="tailcall")
    p.add_argument("--cc", help="compiler (default: the best one found)")
    p.add_argument("--input", help="file to read the program's input from ('-' for stdin; "
                   "default: stdin when it is not a terminal)")
    p.add_argument("--count", action="store_true",
                   help="print how many VM instructions ran, by opcode, on stderr")
    from .jit.runtime import DEFAULT_THRESHOLD
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

    p = sub.add_parser("dis", help="print a program's bytecode, or with --native an "
                       "interpreter's machine code")
    p.add_argument("file", nargs="?")
    p.add_argument("--native", action="store_true")
    p.add_argument("--mode", choices=MODES[:-1], default="goto")
    p.add_argument("--cc")
    p.set_defaults(fn=cmd_dis)

    p = sub.add_parser("doctor", help="what this machine's toolchain can do")
    p.set_defaults(fn=cmd_doctor)

    from .bench import suites
    suites.add_parsers(sub)

    from .jit import commands as stencil_commands
    stencil_commands.add_parsers(sub)

    p = sub.add_parser("compare", help="compare two results files")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(fn=cmd_compare)

    from . import reproduce
    reproduce.add_parser(sub)
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except ShimlabError as e:
        print(f"shimlab: {e}", file=sys.stderr)
        return 3 if isinstance(e, Timeout) else 2 if isinstance(e, Crash) else 1
    except KeyboardInterrupt:
        print("shimlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
