"""`shimlab lua fetch|build|bench|exits`: real interpreters (issue 27)."""
from __future__ import annotations

import sys

from .numbers import cpu, positive_int

FLAVOURS = ("lua54", "lua55", "luajit21")


def _fetch(args) -> int:
    from ..lua import source
    path = source.fetch()
    print(f"{source.SDIST} (sha256 {source.SHA256[:16]}...): {path}")
    return 0


def _build(args) -> int:
    from ..lua import baseline, build
    for flavour, dispatch, cc in build.targets(args.cc, tuple(args.flavour or FLAVOURS)):
        b = build.build(flavour, dispatch, cc)
        print(baseline.census(b).line())
        print(f"  {b.path}", file=sys.stderr)
    return 0


def _common(p) -> None:
    p.add_argument("--processes", type=positive_int, help="worker processes per configuration")
    p.add_argument("--samples", type=positive_int, help="measured runs per worker")
    p.add_argument("--cpu", type=cpu, help="CPU to pin workers to (default: the last)")
    p.add_argument("-o", "--output", help="results file (default: results/SUITE-DATE.json)")


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("lua", help=help_text)
    lsub = p.add_subparsers(dest="lua_command", required=True)
    f = lsub.add_parser("fetch", help="download lupa 2.8's sdist into the build cache, check "
                        "its hash and unpack the Lua sources")
    f.set_defaults(fn=_fetch)
    b = lsub.add_parser("build", help="build every Lua interpreter and print its baseline check")
    b.add_argument("--cc", action="append", help="compiler(s) (default: clang-19, clang-22, "
                   "gcc-11, gcc-12; LuaJIT: gcc-12 and clang-19)")
    b.add_argument("--flavour", action="append", choices=FLAVOURS, help="lua54, lua55, luajit21 "
                   "(default: all)")
    b.set_defaults(fn=_build)
    from ..lua import bench, exits
    t = lsub.add_parser("bench", help="time eight Lua programs on every build, goto against "
                        "switch, LuaJIT against the best compiled Lua")
    t.add_argument("--size", choices=list(bench.SIZES), default="quick",
                   help="tiny: a smoke test; quick (default): 3 processes of 5 runs; full: 6 of 10")
    t.add_argument("--cc", action="append", help="compiler(s) (default: all four)")
    t.add_argument("--flavour", action="append", choices=FLAVOURS,
                   help="lua54, lua55, luajit21 (default: all)")
    t.add_argument("--program", action="append", choices=list(bench.PROGRAMS),
                   help="program(s) of examples/lua/ (default: all eight)")
    _common(t)
    t.set_defaults(fn=bench.main)
    e = lsub.add_parser("exits", help="LuaJIT's cost per trace exit and re-entry, beside "
                        "shimlab's jit-shim and jit-direct round trips in the same rounds")
    e.add_argument("--size", choices=list(exits.SIZES), default="quick",
                   help="tiny: a smoke test; quick (default): 3 rounds, shimlab's quick sweep; "
                        "full: 8 rounds, longer loops")
    e.add_argument("--cc", help="LuaJIT's compiler (default gcc-12)")
    e.add_argument("--no-shimlab", action="store_true",
                   help="LuaJIT only, without shimlab's transitions sweep")
    _common(e)
    e.set_defaults(fn=exits.main)
