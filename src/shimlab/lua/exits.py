"""`shimlab lua exits`: what a trace exit and the re-entry cost in LuaJIT,
beside shimlab's own round trips (jit-shim, jit-direct), measured in the same
interleaved rounds on the same CPU.

examples/lua/exits.lua runs blocks of 64 loop iterations of identical work in
which m iterations (evenly spaced) take the branch the trace did not record:
each leaves the trace through a side exit.  With -Ohotexit=1000000000
-Omaxside=0 no side trace is ever recorded for it, so every exit goes through
LuaJIT's exit handler (all registers saved, lj_trace_exit restores the Lua
stack from the exit's snapshot) to the interpreter, which runs the rest of
the iteration (ADDVV, JMP) and re-enters the trace at the loop's JFORL.  The
cost of one such round trip is the slope of cycles per block against m,
reported with its steps as `bench transitions` does; the same sweep with
LuaJIT's defaults (the exit linked to a side trace after 10 exits) is the
control.  One LuaJIT interpreter dispatch is the slope of examples/lua/
interp.lua (k copies of `y = 1` per iteration) against k under -joff.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from ..bench import harness, stats, transitions
from ..bench.results import ResultFile, open_for
from ..bench.table import table
from .. import toolchain
from ..errors import RunError
from . import build as lua_build
from .runner import LuaConfig, clock_line, measure, program_path, samples, waiting

# the interpreted bytecodes a round trip adds: the taken branch's ADDVV and
# JMP, and the JFORL that enters the trace (examples/lua/exits.lua, `luajit -bl`)
INTERPRETED = 3
NO_LINK = ("-Ohotexit=1000000000", "-Omaxside=0")
BLOCK = 64
COUNTER = lua_build.EXIT_COUNTER
SIZES = {
    "tiny": dict(ms=(0, 8, 32), blocks=500, ks=(16, 80), n=5000, runs=(1, 0, 2),
                 shimlab="tiny"),
    "quick": dict(ms=(0, 4, 8, 16, 32), blocks=20000, ks=(16, 80), n=200000,
                  runs=(3, 1, 10), shimlab="quick"),
    "full": dict(ms=(0, 4, 8, 16, 32), blocks=40000, ks=(16, 80), n=400000,
                 runs=(8, 2, 15), shimlab="quick"),
}
SHIMLAB_MODES = ("jit-shim", "jit-direct")


def configs_for(luajit: lua_build.LuaBuild, size: dict) -> list[LuaConfig]:
    out = []
    for label, flags in (("nolink", NO_LINK), ("linked", ())):
        out += [LuaConfig(luajit, "exits", (str(m), str(size["blocks"])), flags, label, "lua-exits")
                for m in size["ms"]]
    out += [LuaConfig(luajit, "interp", (str(k), str(size["n"])), ("-joff",), "joff", "lua-exits")
            for k in size["ks"]]
    return out


def exit_counts(luajit: lua_build.LuaBuild, size: dict, flags) -> dict[int, int]:
    """Trace exits per run of exits.lua at each m (csrc/lua/count_exits.lua,
    LuaJIT's texit event), with the interpreter options `flags`."""
    out = {}
    for m in size["ms"]:
        cmd = [str(luajit.path), *flags, str(COUNTER), str(program_path("exits")), str(m),
               str(size["blocks"])]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        line = (proc.stdout.strip().splitlines() or [""])[-1]
        if proc.returncode != 0 or not line.startswith("exits "):
            tail = (proc.stderr.strip().splitlines() or ["no output"])[0]
            raise RunError(f"counting the exits of exits.lua m={m}: {tail}")
        out[m] = int(line.split()[1])
    return out


def check_exits(counts: dict[int, int], blocks: int) -> None:
    """Without linking, every taken branch is one exit: m x blocks more exits
    per run than at the smallest m, up to a few from the set-up code (whose
    loops over m can get traces of their own); otherwise the sweep would
    price something else.  At the smallest m the loop must stay in its trace.
    """
    low = min(counts)
    if counts[low] > blocks:
        raise RunError(f"exits.lua m={low}: {counts[low]} trace exits per run, more than one "
                       f"per block of {BLOCK} iterations without any taken branch: the loop "
                       f"leaves its trace for another reason")
    for m, n in counts.items():
        expected = (m - low) * blocks
        if abs(n - counts[low] - expected) > max(8, expected // 1000):
            raise RunError(f"exits.lua m={m}: {n} trace exits per run, expected {expected} "
                           f"more than the {counts[low]} at m={low}: the exits are not what "
                           f"the sweep prices")


def _points(results: ResultFile, cs: list[LuaConfig], per: int, rng,
            clock: str) -> list[stats.Estimate]:
    """Each configuration's median time per unit, in TSC cycles."""
    return [stats.median_estimate([g / per for g in samples(results, c.key, clock)], 2000, rng)
            for c in cs]


def _sweep(xs, points) -> dict:
    steps = stats.steps(xs, points)
    return {"xs": list(xs), "points": points, "slope": stats.slope_estimate(xs, points),
            "steps": steps, "linear": not stats.unequal_pairs(steps)}


def analyze(results: ResultFile, configs: list[LuaConfig], size: dict,
            shimlab: dict | None, clock: str = "tsc") -> dict:
    """The slopes over m (cycles per round trip) and over k (one dispatch),
    on `clock` ("tsc" or "cpu": runner.CLOCKS); shimlab's analysis beside."""
    rng = np.random.default_rng(0)
    ms, ks = list(size["ms"]), list(size["ks"])
    out = {"size": {k: v for k, v in size.items() if k != "runs"}, "interpreted": INTERPRETED,
           "clock": clock}
    for label in ("nolink", "linked"):
        cs = [c for c in configs if c.program == "exits" and c.label == label]
        out[label] = _sweep(ms, _points(results, cs, size["blocks"], rng, clock))
    cs = [c for c in configs if c.program == "interp"]
    out["dispatch"] = stats.slope_estimate(ks, _points(results, cs, size["n"], rng, clock))
    trip = out["nolink"]["slope"]
    disp = out["dispatch"]
    out["nolink"]["dispatches"] = stats.ratio_of(trip, disp)
    bytecodes = stats.estimate(INTERPRETED * disp.value, INTERPRETED * disp.reps)
    out["nolink"]["exit_and_entry"] = stats.difference(trip, bytecodes)
    out["shimlab"] = shimlab
    out["waiting"] = waiting(results, [c.key for c in configs])
    return out


def _steps_text(sw: dict) -> str:
    return ", ".join(f"{a}->{b}: {e.fmt(1)}" for (a, b), e in
                     zip(zip(sw["xs"], sw["xs"][1:]), sw["steps"]))


def report(a: dict, cpu: str, out=None) -> None:
    out = out or sys.stdout
    nl, ln, disp = a["nolink"], a["linked"], a["dispatch"]
    print(f"CPU: {cpu}", file=out)
    print(clock_line(a), file=out)
    rows = [("LuaJIT, exit not linked (-Ohotexit=1e9 -Omaxside=0)",
             nl["slope"].fmt(1) + ("" if nl["linear"] else "*"), nl["dispatches"].fmt(2),
             f"exit stub, exit handler, snapshot restore, {a['interpreted']} interpreted "
             "bytecodes, JFORL into the trace"),
            ("  the same less 3 LuaJIT dispatches", nl["exit_and_entry"].fmt(1), "-",
             "the exit and the entry alone (estimate)"),
            ("LuaJIT, defaults (exit linked to a side trace)",
             ln["slope"].fmt(1) + ("" if ln["linear"] else "*"), "-",
             "a side trace: no crossing once linked (the control)")]
    sh = a.get("shimlab")
    if sh:
        for mode in SHIMLAB_MODES:
            r = sh["modes"].get(mode)
            if r:
                rows.append((f"shimlab {mode}", r["round_trip"].fmt(1)
                             + ("" if r["linear"] else "*"), r["dispatches"].fmt(2),
                             "C shim, saves rbx, r12-r15" if mode == "jit-shim" else
                             "preserve_none tail call in, table jump out"))
    print("\ncycles per round trip (trace -> interpreter -> trace) [95% CI]; *: the steps "
          "below differ (not one cost at every rate):", file=out)
    print(table(rows, ["crossing", "cycles", "own dispatches", "what one round trip runs"],
                align="llll"), file=out)
    own = f"one LuaJIT interpreter dispatch (-joff, `y = 1`, KSHORT): {disp.fmt(2)} cycles"
    if sh:
        own += f"; one shimlab dispatch (clang tail-call interpreter): {sh['dispatch'].fmt(2)}"
    print(own, file=out)
    counts = a.get("exit_counts")
    if counts:
        print("trace exits per run, counted (LuaJIT's texit event), at m = "
              + ", ".join(map(str, a["size"]["ms"])) + ": not linked "
              + ", ".join(str(counts["nolink"][m]) for m in a["size"]["ms"]) + "; linked "
              + ", ".join(str(counts["linked"][m]) for m in a["size"]["ms"]), file=out)
    print(f"\nsteps, cycles per added exit between exit counts per block of {BLOCK} "
          f"iterations:\n  not linked: {_steps_text(nl)}\n  linked: {_steps_text(ln)}",
          file=out)
    if sh:
        for mode in SHIMLAB_MODES:
            r = sh["modes"].get(mode)
            if r:
                pairs = list(zip(sh["size"]["ms"], sh["size"]["ms"][1:]))
                print(f"  shimlab {mode}: " + ", ".join(
                    f"M {p}->{q}: {e.fmt(1)}" for (p, q), e in zip(pairs, r["steps"])),
                    file=out)
        if sh.get("anomalies"):
            print("shimlab's anomalies:\n" + "\n".join(f"  - {x}" for x in sh["anomalies"]),
                  file=out)


def to_json(a: dict) -> dict:
    from .bench import to_json as enc
    return enc({k: v for k, v in a.items() if k != "shimlab"}) | {
        "shimlab": transitions.to_json(a["shimlab"]) if a.get("shimlab") else None}


def reanalyze(results: ResultFile, clock: str = "tsc") -> dict:
    """The analysis of a results file `run` wrote (and of shimlab's sweep in
    NAME-transitions.json beside it, if there is one), e.g. on another clock;
    the exit counts are counted again."""
    from .bench import configs_from
    configs = configs_from(results, "lua-exits")
    luajit = configs[0].build
    exit_args = [c.args for c in configs if c.program == "exits"]
    interp_args = [c.args for c in configs if c.program == "interp"]
    size = {"ms": tuple(sorted({int(a[0]) for a in exit_args})), "blocks": int(exit_args[0][1]),
            "ks": tuple(sorted({int(a[0]) for a in interp_args})), "n": int(interp_args[0][1])}
    configs = configs_for(luajit, size)       # in the order analyze() reads them
    tpath = results.path.with_name(results.path.stem + "-transitions.json")
    tresults = ResultFile.load(tpath) if tpath.is_file() else None
    sh = None
    if tresults is not None:
        for name, tsize in transitions.SIZES.items():
            cc = tresults.get(tresults.configs()[0]).config.get("cc")
            keys = {c.key for c in transitions.configs_for(tsize, cc, SHIMLAB_MODES)}
            if keys == set(tresults.configs()):
                sh = transitions.analyze(tresults, tsize, cc, SHIMLAB_MODES)
    counts = {"nolink": exit_counts(luajit, size, NO_LINK), "linked": exit_counts(luajit, size, ())}
    return {**analyze(results, configs, size, sh, clock), "exit_counts": counts}


def shimlab_sweep(size: dict, cpu: int, output: Path | None):
    """shimlab's transitions sweep of jit-shim and jit-direct at the size's
    transitions size: (its size, compiler, results file, round) where
    round(r) runs one worker process per configuration (round r of the Lua
    sweep's)."""
    tsize = transitions.SIZES[size["shimlab"]]
    cc = toolchain.get_compiler(None, need=set(
        transitions.mode_registry.get("jit-direct").features)).name
    tconfigs = transitions.configs_for(tsize, cc, SHIMLAB_MODES)
    tresults = open_for("transitions", [c.key for c in tconfigs],
                        output=str(output) if output else None)
    _p, warmup, tsamples = tsize["runs"]

    def one_round(r: int) -> None:
        opts = harness.Options(processes=r + 1, warmup=warmup, samples=tsamples, cpu=cpu,
                               quiet=True)
        outcome = harness.measure(tconfigs, tresults, opts)
        tresults.release()
        if outcome.failures:
            raise RunError("shimlab's sweep: " + "; ".join(outcome.failures.values()))
    return tsize, cc, tresults, one_round


def run(size: dict, luajit: lua_build.LuaBuild, results: ResultFile, cpu: int,
        processes: int, samples: int, with_shimlab: bool = True,
        quiet: bool = False, clock: str = "tsc") -> dict | None:
    """The sweep of LuaJIT's exits (and shimlab's, in the same rounds) into
    `results` (shimlab's beside it, NAME-transitions.json); the analysis, or
    None when a configuration failed (named on stderr) or Ctrl-C stopped it."""
    configs = configs_for(luajit, size)
    counts = {"nolink": exit_counts(luajit, size, NO_LINK), "linked": exit_counts(luajit, size, ())}
    check_exits(counts["nolink"], size["blocks"])
    shim = None
    if with_shimlab:
        shim = shimlab_sweep(size, cpu, results.path.with_name(
            results.path.stem + "-transitions.json"))
        print(f"shimlab's sweep: {shim[2].path.resolve()} ({shim[1]})", file=sys.stderr)
    _p, warmup, _s = size["runs"]
    failures, interrupted = measure(configs, results, processes, warmup, samples, cpu,
                                    quiet=quiet, each_round=shim[3] if shim else None)
    if interrupted:
        raise KeyboardInterrupt
    if failures:
        return None
    sh = transitions.analyze(shim[2], shim[0], shim[1], SHIMLAB_MODES) if shim else None
    return {**analyze(results, configs, size, sh, clock), "exit_counts": counts}
