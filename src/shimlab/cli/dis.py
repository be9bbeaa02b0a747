"""`shimlab dis`: a program's bytecode, or how a built interpreter dispatches."""
from __future__ import annotations

import sys

from .. import isolate, modes, vm
from ..bytecode import disassemble
from ..errors import ShimlabError
from ..frontend import load_program
from ..interp import build, dispatch_check


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("dis", help=help_text)
    p.add_argument("file", nargs="?")
    p.add_argument("--native", action="store_true")
    p.add_argument("--mode", choices=modes.NAMES, default="goto")
    p.add_argument("--cc")
    p.set_defaults(fn=cmd_dis)


def cmd_dis(args) -> int:
    if args.native:
        return _native(args)
    if not args.file:
        raise ShimlabError("dis: name a program file (or use --native)")
    sys.stdout.write(disassemble(load_program(args.file)))
    return 0


def _native(args) -> int:
    b = build.build(args.mode, args.cc)
    counts = None
    if args.file:
        program = load_program(args.file)
        cb = build.build(args.mode, args.cc, count=True)
        counts = isolate.call(f"the {args.mode} interpreter", lambda: vm.run(cb, program).counts)
    sys.stdout.write(dispatch_check.format_report(dispatch_check.analyze(b), counts))
    return 0
