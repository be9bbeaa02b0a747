"""`shimlab dis`: a program's bytecode, or how a built interpreter dispatches
(the baseline check), or one handler's machine code."""
from __future__ import annotations

from .. import modes
from ..frontend import bf
from ..errors import ShimlabError
from . import stdout     # a full disk is one line, not a traceback


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("dis", help=help_text)
    p.add_argument("file", nargs="?",
                   help="a program (.b, .bf, .py, .slbc): its bytecode; with --native, how "
                        "often each handler ran on it")
    p.add_argument("--native", action="store_true",
                   help="the interpreter's machine code instead: each handler's size and how "
                        "it dispatches, MERGED when the dispatch jumps collapsed into one")
    p.add_argument("--mode", choices=modes.NAMES, default="goto",
                   help="with --native: the interpreter to read (JIT modes read the tail-call "
                        "binary they build on; default goto)")
    p.add_argument("--cc", help="with --native: the compiler of that build (default: the "
                                "mode's default compiler, as shimlab doctor lists it)")
    p.add_argument("--bf-opt", type=int, choices=bf.LEVELS, default=0, metavar="LEVEL",
                   help=f"BF programs: the front end's level to show (default 0; `run` "
                        f"uses {bf.DEFAULT_LEVEL}): {bf.LEVELS_HELP}")
    p.add_argument("--handler", metavar="NAME",
                   help="with --native: print one handler's machine code (an instruction name "
                        "such as LOAD_INT, or a function of a tail-call build)")
    p.set_defaults(fn=cmd_dis)


def cmd_dis(args) -> int:
    if args.native:
        return _native(args)
    if args.handler:
        raise ShimlabError("dis: --handler needs --native")
    if not args.file:
        raise ShimlabError("dis: name a program file (or use --native)")
    from ..bytecode import disassemble
    from ..frontend import load_program
    stdout.write(disassemble(load_program(args.file, bf_opt=args.bf_opt)))
    return 0


def _native(args) -> int:
    if args.handler and args.file:
        raise ShimlabError("dis: --handler prints machine code; it takes no program file")
    from ..interp import build, dispatch_check
    b = build.build(args.mode, args.cc)
    if args.handler:
        stdout.write(dispatch_check.handler_listing(b, args.handler))
        return 0
    counts = None
    if args.file:
        from .. import isolate, vm
        from ..frontend import load_program
        program = load_program(args.file, bf_opt=args.bf_opt)
        cb = build.build(args.mode, args.cc, count=True)
        counts = isolate.call(f"the {args.mode} interpreter",
                              lambda: _counts(vm, cb, program, args.mode))
    stdout.write(dispatch_check.format_report(dispatch_check.analyze(b), counts))
    return 0


def _counts(vm, build, program, mode):
    # a JIT build runs only with its JIT (vm.Loaded passes the hooks)
    with vm.Loaded(build, program, b"", jit={} if modes.is_jit(mode) else None) as loaded:
        return loaded.run().counts
