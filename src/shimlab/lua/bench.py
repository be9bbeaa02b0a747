"""`shimlab lua bench`: the dispatch table of the README on real interpreters.
Every Lua build (5.4 and 5.5, goto and switch, four compilers) and LuaJIT
(its asm interpreter with -joff, and with the JIT) on eight programs of
examples/lua/, with the baseline check of each build next to its ratios:
goto against switch within a compiler, every build against the fastest of
its version, LuaJIT's interpreter against the best compiled Lua.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from ..bench import stats
from ..errors import ShimlabError
from ..bench.results import ResultFile
from ..bench.table import table
from . import baseline
from . import build as lua_build
from .runner import CLOCKS, LuaConfig, clock_line, measure, samples, waiting

# name: (arguments of the timed size, of the tiny one the tests run)
PROGRAMS = {
    "fib": ((), ("15",)),
    "sieve": ((), ("1000", "1")),
    "queens": ((), ("6",)),
    "mandelbrot": ((), ("20",)),
    "nbody": ((), ("100",)),
    "spectral": ((), ("20",)),
    "strings": ((), ("200",)),
    "closures": ((), ("20",)),
}
# per size: (worker processes, warm-up runs, measured runs) and which arguments
SIZES = {
    "tiny": dict(runs=(1, 0, 1), tiny=True),
    "quick": dict(runs=(3, 1, 5), tiny=False),
    "full": dict(runs=(6, 2, 10), tiny=False),
}
LUAJIT_MODES = {"joff": ("-joff",), "jit": ()}


def configs_from(results: ResultFile, suite: str = "lua") -> list[LuaConfig]:
    """The configurations a results file of `suite` holds (lua: shimlab lua
    bench, lua-exits: shimlab lua exits), with their builds (from the cache,
    or built again from the same sources)."""
    out = []
    for key in results.configs():
        cfg = results.get(key).config
        program, _, args = cfg["workload"].partition(".")
        label = "" if cfg.get("label", "none") == "none" else cfg["label"]
        flags = tuple(cfg.get("interpreter_flags", "none").split()) \
            if cfg.get("interpreter_flags", "none") != "none" else ()
        b = lua_build.build(cfg["flavour"], cfg["dispatch"], cfg["compiler"])
        out.append(LuaConfig(b, program, tuple(args.split("-")) if args else (), flags, label,
                             suite))
    # the order configs_for makes: programs, then versions, compilers and dispatches
    known = list(PROGRAMS) + ["exits", "interp"]
    ccs = list(lua_build.COMPILERS)
    out.sort(key=lambda c: (known.index(c.program) if c.program in known else len(known),
                            c.args, c.build.flavour,
                            ccs.index(c.build.compiler) if c.build.compiler in ccs else len(ccs),
                            c.build.dispatch, c.label))
    missing = {c.key for c in out} ^ set(results.configs())
    if missing:
        raise ShimlabError(f"{results.path}: not a results file of {suite} "
                           f"(e.g. {sorted(missing)[0]})")
    return out


def configs_for(builds: list[lua_build.LuaBuild], programs, tiny: bool) -> list[LuaConfig]:
    out = []
    for p in programs:
        args = PROGRAMS[p][1 if tiny else 0]
        for b in builds:
            if b.is_luajit:
                out += [LuaConfig(b, p, args, flags, label) for label, flags in LUAJIT_MODES.items()]
            else:
                out.append(LuaConfig(b, p, args))
    return out


# -- analysis ---------------------------------------------------------------------



def _geo(pairs) -> stats.Estimate:
    value, lo, hi = stats.geometric_mean_ratio(pairs)
    return stats.Estimate(value, lo, hi, np.empty(0))


def _row_name(c: LuaConfig) -> str:
    return c.build.name + (f" {c.label}" if c.label else "")


def analyze(results: ResultFile, configs: list[LuaConfig], clock: str = "tsc") -> dict:
    """Medians per configuration; goto/switch per version and compiler; each
    build against the fastest of its version (geometric mean over programs);
    LuaJIT -joff and JIT against the best compiled Lua.  clock: "tsc" (wall
    time in TSC cycles) or "cpu" (the process's CPU time, in TSC cycles)."""
    if clock not in CLOCKS:
        raise ValueError(f"clock {clock!r}: one of {', '.join(CLOCKS)}")
    rng = np.random.default_rng(0)

    def _samples(results, c):
        return samples(results, c.key, clock)

    by = {(_row_name(c), c.program): c for c in configs if c.key in results}
    programs = list(dict.fromkeys(c.program for c in configs))
    rows = list(dict.fromkeys(_row_name(c) for c in configs))
    builds = {_row_name(c): c.build for c in configs}
    medians = {k: stats.median_estimate(_samples(results, c), 2000, rng)
               for k, c in by.items()}

    def pairs(a: str, b: str):
        return [(_samples(results, by[a, p]), _samples(results, by[b, p]))
                for p in programs if (a, p) in by and (b, p) in by]

    def per_program(a: str, b: str) -> dict:
        return {p: stats.ratio_of(medians[a, p], medians[b, p]) for p in programs
                if (a, p) in medians and (b, p) in medians}

    out = {"clock": clock, "waiting": waiting(results, [c.key for c in by.values()]),
           "programs": programs, "medians": {f"{r}|{p}": e for (r, p), e in medians.items()},
           "goto_vs_switch": [], "vs_fastest": [], "luajit": [], "census": {}}
    for r in rows:
        out["census"][r] = baseline.census(builds[r])
    puc = [r for r in rows if not builds[r].is_luajit]
    for r in puc:
        b = builds[r]
        if b.dispatch != "goto":
            continue
        sw = f"{b.flavour}-switch-{b.compiler}"
        if sw in puc and pairs(r, sw):
            out["goto_vs_switch"].append({"flavour": b.flavour, "compiler": b.compiler,
                                          "goto": r, "switch": sw, "geomean": _geo(pairs(r, sw)),
                                          "programs": per_program(r, sw)})
    # the fastest build of each version: the smallest geometric mean of medians
    gm = {r: math.exp(np.mean([math.log(medians[r, p].value) for p in programs
                               if (r, p) in medians])) for r in rows}
    fastest = {}
    for r in puc:
        f = builds[r].flavour
        if f not in fastest or gm[r] < gm[fastest[f]]:
            fastest[f] = r
    for r in puc:
        best = fastest[builds[r].flavour]
        out["vs_fastest"].append({"build": r, "fastest": best,
                                  "geomean": _geo(pairs(r, best)) if r != best else None})
    best_all = min((fastest[f] for f in fastest), key=lambda r: gm[r]) if fastest else None
    out["best_puc"] = best_all
    for r in rows:
        if builds[r].is_luajit and best_all:
            out["luajit"].append({"luajit": r, "best": best_all, "geomean": _geo(pairs(r, best_all)),
                                  "programs": per_program(r, best_all)})
    return out


# -- report -----------------------------------------------------------------------

def _jumps(cen: baseline.Census) -> str:
    return f"{cen.jumps}" + (" MERGED" if cen.merged else "")


def report(a: dict, cpu: str, out=None) -> None:
    out = out or sys.stdout
    progs = a["programs"]
    print(f"CPU: {cpu}", file=out)
    print(clock_line(a), file=out)
    rows = [(c.build, c.where, c.opcodes, c.jumps,
             "" if c.with_own is None else c.with_own, "MERGED" if c.merged else "-", c.verdict)
            for c in {c.build: c for c in a["census"].values()}.values()]
    print("\nthe baseline check of every build (indirect jumps in the dispatch code):", file=out)
    print(table(rows, ["build", "read", "opcodes", "jumps", "with own", "merged", "verdict"],
                align="llrrrll"), file=out)
    if a["goto_vs_switch"]:
        print("\ngoto against switch, same version and compiler: time ratio, geometric mean "
              "over programs and per program [95% CI] (below 1: goto faster):", file=out)
        rows = []
        for g in a["goto_vs_switch"]:
            cen_g, cen_s = a["census"][g["goto"]], a["census"][g["switch"]]
            rows.append((g["flavour"], g["compiler"], _jumps(cen_g), _jumps(cen_s),
                         g["geomean"].fmt(3), *(g["programs"][p].fmt(2) if p in g["programs"]
                                                else "-" for p in progs)))
        print(table(rows, ["version", "compiler", "goto jumps", "switch jumps", "geomean"]
                    + progs, align="l" * (5 + len(progs))), file=out)
    if a["vs_fastest"]:
        print("\nevery build against the fastest build of its version (geometric mean of time "
              "ratios [95% CI]):", file=out)
        rows = [(v["build"], _jumps(a["census"][v["build"]]), v["fastest"],
                 "1 (the fastest)" if v["geomean"] is None else v["geomean"].fmt(3))
                for v in a["vs_fastest"]]
        print(table(rows, ["build", "jumps", "fastest of its version", "ratio"], align="llll"),
              file=out)
    if a["luajit"]:
        print(f"\nLuaJIT against the best compiled Lua ({a['best_puc']}, "
              f"{_jumps(a['census'][a['best_puc']])} dispatch jumps): time ratio [95% CI]:",
              file=out)
        rows = [(v["luajit"], _jumps(a["census"][v["luajit"]]), v["geomean"].fmt(3),
                 *(v["programs"][p].fmt(2) if p in v["programs"] else "-" for p in progs))
                for v in a["luajit"]]
        print(table(rows, ["LuaJIT", "jumps", "geomean"] + progs,
                    align="l" * (3 + len(progs))), file=out)
    print("\nmedian time per run (millions of cycles) [95% CI]:", file=out)
    names = list(dict.fromkeys(k.split("|")[0] for k in a["medians"]))
    rows = []
    for n in names:
        cells = []
        for p in progs:
            e = a["medians"].get(f"{n}|{p}")
            cells.append("-" if e is None else f"{e.value / 1e6:.1f} [{e.lo / 1e6:.1f}, "
                                               f"{e.hi / 1e6:.1f}]")
        rows.append((n, *cells))
    print(table(rows, ["build"] + progs, align="l" * (1 + len(progs))), file=out)


def to_json(a: dict) -> dict:
    def enc(v):
        if isinstance(v, stats.Estimate):
            return {"value": v.value, "ci95": [v.lo, v.hi]}
        if isinstance(v, baseline.Census):
            return {k: getattr(v, k) for k in v.__dataclass_fields__}
        if isinstance(v, dict):
            return {k: enc(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [enc(x) for x in v]
        return v
    return enc(a)


def run(builds, programs, tiny: bool, results: ResultFile, processes: int, warmup: int,
        runs: int, cpu: int, quiet: bool = False, clock: str = "tsc") -> dict | None:
    """Every program on every build into `results`; the analysis, or None
    when a configuration failed (each named on stderr)."""
    configs = configs_for(builds, programs, tiny)
    failures, interrupted = measure(configs, results, processes, warmup, runs, cpu,
                                    quiet=quiet)
    if interrupted:
        raise KeyboardInterrupt
    return None if failures else analyze(results, configs, clock)
