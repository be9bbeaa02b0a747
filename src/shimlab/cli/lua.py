"""`shimlab lua fetch|build|bench|report|exits`: real interpreters (issue 27)."""
from __future__ import annotations

import sys

from ..errors import ShimlabError
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


def _finish(results, go, report, to_json) -> int:
    """Runs go() (the measurement, returning its analysis or None on a failed
    configuration), then prints the report and writes NAME-summary.json."""
    import json
    from ..bench.results import machine_line
    try:
        a = go()
    except KeyboardInterrupt:
        print(f"shimlab: interrupted; finished runs are in {results.path}", file=sys.stderr)
        return 130
    if a is None:
        return 1
    report(a, machine_line(results.environment))
    summary = results.path.with_name(results.path.stem + "-summary.json")
    summary.write_text(json.dumps(to_json(a), indent=1))
    print(f"\nresults: {results.path} (pyperf JSON), summary: {summary.name}")
    return 0


def _open(suite: str, configs, output):
    from ..bench.results import open_for
    results = open_for(suite, [c.key for c in configs], output=output)
    print(f"results file: {results.path.resolve()}", file=sys.stderr, flush=True)
    return results


def _check_output(output) -> None:
    """-o refused (an existing file, a place that cannot be written) before
    any Lua is built: open_for would refuse it only after the builds."""
    from ..bench.results import check_file_options
    check_file_options(output)


def _cpu(args) -> int:
    from ..bench import harness
    return args.cpu if args.cpu is not None else harness.default_cpu()


def _bench(args) -> int:
    from ..lua import bench, build
    _check_output(args.output)
    size = bench.SIZES[args.size]
    procs, warmup, samples = size["runs"]
    procs, samples = args.processes or procs, args.samples or samples
    builds = [build.build(f, d, cc) for f, d, cc in
              build.targets(args.cc, tuple(args.flavour or FLAVOURS))]
    programs = args.program or list(bench.PROGRAMS)
    configs = bench.configs_for(builds, programs, size["tiny"])
    results = _open("lua", configs, args.output)
    print(f"{len(configs)} configurations x {procs} worker processes x {samples} runs",
          file=sys.stderr)
    return _finish(results, lambda: bench.run(builds, programs, size["tiny"], results, procs,
                                              warmup, samples, _cpu(args), clock=args.clock),
                   bench.report, bench.to_json)


def _report(args) -> int:
    from ..bench.results import ResultFile
    from ..lua import bench, exits
    results = ResultFile.load(args.file)
    if results is None or not len(results):
        raise ShimlabError(f"{args.file}: no such results file, or an empty one")
    if results.configs()[0].startswith("lua-exits/"):
        return _finish(results, lambda: exits.reanalyze(results, args.clock), exits.report,
                       exits.to_json)
    return _finish(results, lambda: bench.analyze(results, bench.configs_from(results),
                                                  args.clock),
                   bench.report, bench.to_json)


def _exits(args) -> int:
    from ..lua import build, exits
    _check_output(args.output)
    size = exits.SIZES[args.size]
    procs, _warmup, samples = size["runs"]
    luajit = build.build(build.LUAJIT, "asm", args.cc or build.LUAJIT_COMPILERS[0])
    results = _open("lua-exits", exits.configs_for(luajit, size), args.output)
    return _finish(results, lambda: exits.run(size, luajit, results, _cpu(args),
                                              args.processes or procs, args.samples or samples,
                                              not args.no_shimlab, clock=args.clock),
                   exits.report, exits.to_json)


def _clock(p) -> None:
    p.add_argument("--clock", choices=("tsc", "cpu"), default="tsc",
                   help="read each run's time as TSC cycles of wall time (default, the lab's "
                        "unit) or as the process's CPU time in TSC cycles, which leaves out "
                        "the time other processes had the CPU; both are recorded")


def _common(p) -> None:
    p.add_argument("--processes", type=positive_int, help="worker processes per configuration")
    p.add_argument("--samples", type=positive_int, help="measured runs per worker")
    p.add_argument("--cpu", type=cpu, help="CPU to pin workers to (default: the last)")
    p.add_argument("-o", "--output", help="results file (default: results/SUITE-DATE.json)")


def add_parser(sub, help_text: str) -> None:
    p = sub.add_parser("lua", help=help_text)
    lsub = p.add_subparsers(dest="lua_command", required=True)
    f = lsub.add_parser("fetch", help="download lupa 2.8's sdist into the build directory, check "
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
    _clock(t)
    t.set_defaults(fn=_bench)
    r = lsub.add_parser("report", help="the tables of a results file of `shimlab lua bench` "
                        "or `exits` again, e.g. with the other clock")
    r.add_argument("file", help="a results file written by shimlab lua bench or exits")
    _clock(r)
    r.set_defaults(fn=_report)
    e = lsub.add_parser("exits", help="LuaJIT's cost per trace exit and re-entry, beside "
                        "shimlab's jit-shim and jit-direct round trips in the same rounds")
    e.add_argument("--size", choices=list(exits.SIZES), default="quick",
                   help="tiny: a smoke test; quick (default): 3 rounds, shimlab's quick sweep; "
                        "full: 8 rounds, longer loops")
    e.add_argument("--cc", help="LuaJIT's compiler (default gcc-12)")
    e.add_argument("--no-shimlab", action="store_true",
                   help="LuaJIT only, without shimlab's transitions sweep")
    _common(e)
    _clock(e)
    e.set_defaults(fn=_exits)
