"""`shimlab bench transitions`: what one round trip between interpreter and
JIT code costs per crossing: one slope against round trips per iteration M
where the steps between neighbouring M agree, the steps themselves where not.

The sweep runs the synthetic programs of synthetic.py: every iteration does
the same work (J VM instructions in traces, I in the interpreter) split into
M segments, so M is the number of round trips per iteration and nothing
else changes.  Beside it, in the same run: one interpreter dispatch (the
slope of a purely interpreted loop against its length) and the machine-code
floors of floors.py; a negative cost, or one below its crossing's floor, is
reported as an anomaly.

With --cache K (repeatable) the sweep runs at each K: the interpreter built
with K operand-stack values in registers, its programs keeping K values live
across every crossing (synthetic.py, live=K), one dispatch measured at each
K too; the floors once.  The report is one table with a row group per K, and
the summary JSON has "cache": {"K": {mode: {the fields of "modes"}}}, while
"modes" stays the first K (0 by default) for the readers of before.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from .. import modes as mode_registry
from .. import toolchain
from . import floors, harness, stats
from .results import ResultFile
from .table import table

MODES = mode_registry.JIT
# per size: round trips per iteration, J, I, iterations, interp loop lengths,
# (processes, warmup, samples).  M starts at 4: with M = 1 the one entry is
# dispatched by the loop's back-edge, a handler that only ever goes to
# ENTER_JIT, while for M >= 2 entries are dispatched by POP, which also goes to
# LOAD_INT; and while stretches are long (M = 2: 16 POPs before the one that
# goes to ENTER_JIT) that costs the predictor something the crossing is not to
# blame for (the step from M = 2 to 4 comes out negative, -5 to -16 cycles).
SIZES = {
    "tiny": dict(ms=(1, 2, 4), j=16, i=16, n=500, ks=(4, 16), runs=(2, 1, 3)),
    "quick": dict(ms=(4, 8, 16, 32), j=64, i=64, n=4000, ks=(16, 80), runs=(3, 1, 15)),
    "full": dict(ms=(4, 8, 16, 32), j=64, i=64, n=20000, ks=(16, 80), runs=(10, 2, 20)),
}


def spec(m: int, size: dict, live: int = 0) -> str:
    """The sweep's program with M round trips; live=K at --cache K, its traces
    at the sweep's --jit-opt (size["jit_opt"]; synthetic.py)."""
    opt = size.get("jit_opt", 0)
    return f"transitions:m={m},j={size['j']},i={size['i']},n={size['n']}" + (
        f",live={live}" if live else "") + (f",opt={opt}" if opt else "")


def interp_spec(k: int, size: dict, live: int = 0) -> str:
    return f"interp:k={k},n={size['n']}" + (f",live={live}" if live else "")


def key(workload: str, mode: str, cc: str, cache: int = 0) -> str:
    """A configuration's key in the results file (K = 0: the key of before)."""
    return harness.Config("transitions", workload, mode, cc, cache=cache).key


def stretch_ks(size: dict) -> list[int]:
    """The length of each M's interpreted stretches (i/M instructions), shortest first."""
    return sorted({size["i"] // m for m in size["ms"]})


def interp_ks(size: dict) -> list[int]:
    """Every interpreted loop the sweep measures: the dispatch's two lengths
    and each M's stretch length (the check that the programs are matched in
    how the interpreter runs, not only in what it runs)."""
    return sorted(set(size["ks"]) | set(stretch_ks(size)))


def configs_for(size: dict, cc: str, modes=MODES, caches=(0,)) -> list[harness.Config]:
    """At each K of `caches` (--cache): every crossing at every M and the
    interpreted loops, built with K cached values and running programs that
    keep K values live across every crossing (live=K); the floors once (they
    are machine code of their own, no interpreter)."""
    out = []
    for k in caches:
        out += [harness.Config("transitions", spec(m, size, k), mode, cc, cache=k)
                for mode in modes_at(modes, k) for m in size["ms"]]
        out += [harness.Config("transitions", interp_spec(n, size, k), "jit-direct", cc, cache=k)
                for n in interp_ks(size)]
    out += [harness.Config("transitions", f"floor:{f}", "jit-direct", cc) for f in floors.FLOORS]
    return out


def modes_at(modes, cache: int) -> tuple[str, ...]:
    """The crossings of `modes` that can run with `cache` values in registers."""
    return tuple(m for m in modes if not cache or mode_registry.get(m).cache)


# -- analysis ---------------------------------------------------------------------

def _per_iteration(results: ResultFile, key: str, n: int) -> list[np.ndarray]:
    return [np.asarray(g, dtype=float) / n for g in results.get(key).cycles_groups()]


def analyze(results: ResultFile, size: dict, cc: str, modes=MODES,
            n_boot: int = 2000, caches=(0,)) -> dict:
    """The sweep's analysis.  Its top level ("modes", "dispatch", "stretches",
    ...) is the first K of `caches` (0 unless --cache says otherwise; "base_cache"
    names it), as before there was --cache; "cache" has every K's modes, with
    the same fields, and "cache_interp" every K's dispatch and stretches."""
    # one Generator for every median: their replicates must be independent of
    # each other for slopes and ratios of them to carry the right uncertainty
    rng = np.random.default_rng(0)
    caches = list(caches)
    out = {"modes": {}, "floors": {}, "size": {k: v for k, v in size.items() if k != "runs"},
           "base_cache": caches[0], "cache": {}, "cache_interp": {}}
    for k in caches:
        dispatch, dispatch_ins = _dispatch(results, size, cc, n_boot, rng, k)
        out["cache_interp"][str(k)] = {"dispatch": dispatch, "dispatch_instructions": dispatch_ins,
                                       "stretches": _stretches(results, size, cc, n_boot, rng, k)}
        ms = {mode: _mode(results, size, cc, mode, dispatch, n_boot, rng, k)
              for mode in modes_at(modes, k)}
        if "jit-direct" in ms:
            d = ms["jit-direct"]["round_trip"]
            for r in ms.values():
                r["vs_direct"] = stats.ratio_of(r["round_trip"], d)
        out["cache"][str(k)] = ms
    for f in floors.FLOORS:
        g = [np.asarray(x, float) / floors.elements_per_sample()
             for x in results.get(key(f"floor:{f}", "jit-direct", cc)).cycles_groups()]
        out["floors"][f] = stats.median_estimate(g, n_boot, rng)
    for k in caches:
        for mode, r in out["cache"][str(k)].items():
            parts = floor_parts(mode)
            r["floor_parts"] = [{"floor": f, "where": where} for f, where in parts]
            r["floor"] = stats.sum_of([out["floors"][f] for f, _ in parts])
            base = out["cache"][str(caches[0])].get(mode)
            if k != caches[0] and base is not None:
                # what K values add to the same crossing's round trip
                r["vs_base_cache"] = stats.difference(r["round_trip"], base["round_trip"])
    base = str(caches[0])
    out["modes"] = out["cache"][base]
    out["dispatch"] = out["cache_interp"][base]["dispatch"]
    out["dispatch_instructions"] = out["cache_interp"][base]["dispatch_instructions"]
    out["stretches"] = out["cache_interp"][base]["stretches"]
    out["anomalies"] = _anomalies(out)
    out["shim_vs_direct"] = shim_vs_direct(out)
    out["shim_args_vs_direct"] = shim_vs_direct(out, "jit-shim-args")
    return out


def _dispatch(results: ResultFile, size: dict, cc: str, n_boot: int, rng, cache: int = 0):
    """One interpreter dispatch: the slope of the interpreted loop against its
    length, in cycles (with replicates) and in instructions (or None)."""
    n, ks = size["n"], list(size["ks"])
    keys = [key(interp_spec(k, size, cache), "jit-direct", cc, cache) for k in ks]
    points = [stats.median_estimate(_per_iteration(results, k, n), n_boot, rng)
              for k in keys]
    return stats.slope_estimate(ks, points), _instruction_slope(ks, _instructions(results, keys), n)


def _stretches(results: ResultFile, size: dict, cc: str, n_boot: int, rng,
               cache: int = 0) -> dict:
    """The interpreter alone over each M's stretch length: one more interpreted
    instruction should cost one dispatch whatever the length.  Where it does
    not (a branch predictor that follows short runs of the same handlers and
    loses longer ones), programs with different M run their interpreted
    stretches differently, and the steps between those M measure that."""
    ks = stretch_ks(size)
    if len(ks) < 2:
        return {"ks": ks, "steps": [], "linear": True, "unequal_steps": []}
    points = [stats.median_estimate(_per_iteration(
        results, key(interp_spec(k, size, cache), "jit-direct", cc, cache), size["n"]),
        n_boot, rng) for k in ks]
    steps = stats.steps(ks, points)
    unequal = stats.unequal_pairs(steps)
    pairs = _pairs(ks)
    return {"ks": ks, "steps": steps, "linear": not unequal,
            "unequal_steps": [(pairs[i], pairs[j]) for i, j in unequal]}


def _instructions(results: ResultFile, keys: list[str]) -> list[int | None]:
    return [results.get(k).runs[0].instructions for k in keys]


def _instruction_slope(xs, ins: list[int | None], n: int) -> float | None:
    return stats.slope(xs, [i / n for i in ins]) if None not in ins else None


def _mode(results: ResultFile, size: dict, cc: str, mode: str, dispatch: stats.Estimate,
          n_boot: int, rng, cache: int = 0) -> dict:
    n, ms = size["n"], list(size["ms"])
    keys = [key(spec(m, size, cache), mode, cc, cache) for m in ms]
    points = [stats.median_estimate(_per_iteration(results, k, n), n_boot, rng) for k in keys]
    slope = stats.slope_estimate(ms, points)
    steps = stats.steps(ms, points)
    unequal = stats.unequal_pairs(steps)
    pairs = _pairs(ms)
    ins = _instructions(results, keys)
    return {"per_iteration": [p.value for p in points], "round_trip": slope,
            # each M's median with its replicates: for error bars and fits
            "per_iteration_ci": points,
            # the cost of each added round trip between neighbouring M; the
            # slope is the round trip's cost only where these agree
            "steps": steps, "linear": not unequal,
            "unequal_steps": [(pairs[i], pairs[j]) for i, j in unequal],
            "instructions": _instruction_slope(ms, ins, n),
            "instructions_per_iteration": [None if i is None else i / n for i in ins],
            "dispatches": stats.ratio_of(slope, dispatch)}


def floor_parts(mode: str) -> list[tuple[str, str]]:
    """The floors (floors.FLOORS) one round trip of `mode` must cost at least,
    each with the part of the crossing it stands for; their sum is the floor.

    A round trip adds to an iteration what the program with one round trip
    fewer does not run.  Every interpreted instruction is reached by one
    dispatch either way (from the handler before it, or from an exit), and
    the trace runs the same stencils, so what is added is the entry's jump
    into the trace, unless that is the interpreter's own dispatch, and the
    exit's jump back:
      entry  ENTER_JIT (jit-direct, jit-direct-handler) or a copy of it
             (jit-direct-sites) jumps to the trace through a pointer: an
             indirect jump.  jit-table adds none: a handler's own dispatch
             lands in the trace.  jit-shim calls the shim, which saves and
             restores five registers around a second call, into the trace,
             and returns: at least a call saving six registers, since the
             second call and return cost more than a sixth push and pop
             (clang 19's ENTER_JIT pushes rbp besides).
      exit   a jump through the dispatch table (indirect), or, with
             jit-direct-handler, a direct jump to the handler (its far
             variant, an indirect jump to one target, costs more); the
             shim's trace returns, and ENTER_JIT dispatches through the table.
    A jump the floors time at its cheapest (predicted, each to the next
    instruction) can only cost more in a crossing, unless the out-of-order
    core hides it behind other work, which these programs leave little of
    (LOAD_INT/POP, no dependency chain): a cost below the floor means the
    measurement, or this account of the crossing, is wrong somewhere.
    Read from the mode's record in modes.py, so a new crossing gets its floor.
    """
    m = mode_registry.get(mode)
    if m.shim:
        return [("call-save6", "the call into the shim, its saves and restores"),
                ("indirect", "ENTER_JIT's dispatch through the table after the shim returns")]
    parts = []
    if not m.trace_table:
        parts.append(("indirect", "ENTER_JIT's jump into the trace"))
    elif m.entry_copies:
        parts.append(("indirect", "the ENTER_JIT copy's jump into the trace"))
    if m.exits_to_handler == "all":
        parts.append(("jump", "the exit's jump to the handler"))
    else:
        parts.append(("indirect", "the exit's jump through the table"))
    return parts


def _anomalies(a: dict) -> list[str]:
    """What no crossing can cost: a step whose interval lies below 0, and a
    round trip (a step, where the mode is not linear) whose difference from
    its floor has an interval below 0.  The floor is measured too, so the
    difference, replicate by replicate, carries both uncertainties.  A
    negative step is not listed again as below its floor.  At every K of
    --cache; those of a K other than the first begin with "K=K: "."""
    out = []
    for k, ms in a["cache"].items():
        prefix = "" if int(k) == a["base_cache"] else f"K={k}: "
        out += [prefix + x for x in _anomalies_at(a["size"], ms,
                                                  a["cache_interp"][k]["stretches"])]
    return out


def _anomalies_at(size: dict, modes: dict, st: dict | None) -> list[str]:
    out = []
    for mode, r in modes.items():
        named = [(f"the step M {x0}->{x1}", e)
                 for (x0, x1), e in zip(_pairs(size["ms"]), r["steps"])]
        negative = set()
        for name, e in named:
            if e.hi < 0:
                negative.add(name)
                out.append(f"{mode}: negative cost: {name} is {e.fmt(1)} cycles per added round "
                           "trip (interval below 0)")
        floor = r["floor"]
        checked = [("one round trip", r["round_trip"])] if r["linear"] else named
        for name, e in checked:
            d = stats.difference(e, floor)
            if name not in negative and d.hi < 0:
                out.append(f"{mode}: below its floor: {name} is {e.fmt(1)} cycles, under "
                           f"{floor.fmt(2)} ({_floor_text(r['floor_parts'])}); "
                           f"difference {d.fmt(1)}")
    if st and not st["linear"]:
        i = size["i"]
        steps = ", ".join(f"{e.fmt(1)} from k {k0} to {k1} (M {i // k1} to {i // k0})"
                          for (k0, k1), e in zip(_pairs(st["ks"]), st["steps"]))
        out.append("the programs are not matched in how the interpreter runs them: one more "
                   f"instruction in an interpreted stretch of k instructions costs {steps} "
                   "cycles; the steps between those M measure that, not only the crossing")
    return out


def _pairs(ms) -> list[tuple[int, int]]:
    return list(zip(ms, ms[1:]))


def _floor_text(parts: list[dict]) -> str:
    return " + ".join(f"{p['floor']}: {p['where']}" for p in parts)


def floor_short(parts: list[dict]) -> str:
    names = [p["floor"] for p in parts]
    return " + ".join(f"{names.count(f)} x {f}" if names.count(f) > 1 else f
                      for f in dict.fromkeys(names))


# -- report ------------------------------------------------------------------------

FLOOR_TEXT = {"jump": "a direct jump", "indirect": "a predicted indirect jump (table)",
              "call-ret": "a call/ret pair", "call-save6": "a call saving 6 callee-saved regs"}
NOT_LINEAR = "not linear: see steps"


def report(a: dict, out=None) -> None:
    out = out or sys.stdout
    if list(a.get("cache") or {"0": None}) != ["0"]:
        return report_cache(a, out)
    disp = a["dispatch"]
    direct = a["modes"].get("jit-direct")
    rows = []
    for mode, r in a["modes"].items():
        # a ratio of slopes means something only where both are one cost
        vs = r.get("vs_direct") if r["linear"] and direct and direct["linear"] else None
        rows.append((mode, r["round_trip"].fmt(1) if r["linear"] else NOT_LINEAR,
                     f"{r['floor'].value:.2f} ({floor_short(r['floor_parts'])})",
                     "-" if r["instructions"] is None else f"{r['instructions']:.1f}",
                     r["dispatches"].fmt(2) if r["linear"] else "-",
                     "-" if vs is None else vs.fmt(2)))
    print(table(rows, ["mode", "cycles/round trip [95% CI]", "floor (cycles)",
                       "instructions/round trip", "dispatches/round trip",
                       "ratio to jit-direct"], align="llllll"), file=out)
    s = a["size"]
    print(f"round trip = the slope of cost per loop iteration against round trips per "
          f"iteration (M = {', '.join(map(str, s['ms']))}) at constant work: every program runs "
          f"{s['j']} VM instructions in traces and {s['i']} + 7 in the interpreter per "
          f"iteration; only M differs (matched: same VM instructions, tested). Given only where "
          f"the steps below agree. One dispatch = {disp.fmt(2)} cycles"
          + ("" if a.get("dispatch_instructions") is None
             else f", {a['dispatch_instructions']:.1f} instructions")
          + " (an interpreted LOAD_INT or POP in the same build, by the same slope method). "
          "Floor: the sum of the floors below that the crossing's added jumps must cost at least.",
          file=out)
    pairs = _pairs(s["ms"])
    steps = []
    for mode, r in a["modes"].items():
        linear = "yes" if r["linear"] else "no: " + ", ".join(
            f"{p[0]}->{p[1]} vs {q[0]}->{q[1]}" for p, q in r["unequal_steps"])
        steps.append((mode, *(e.fmt(1) for e in r["steps"]), linear))
    n_pairs = len(pairs) * (len(pairs) - 1) // 2
    level = (f"; each of the {n_pairs} pairs' differences at {100 * (1 - 0.05 / n_pairs):.3g}%, "
             "so that a straight line passes them all at 95%" if n_pairs > 1 else "")
    print(f"\ncycles per added round trip between neighbouring M [95% CI] (linear: no two steps "
          f"differ{level}):", file=out)
    print(table(steps, ["mode"] + [f"M {x0}->{x1}" for x0, x1 in pairs] + ["linear"],
                align="l" * (len(pairs) + 2)), file=out)
    frows = [(f, FLOOR_TEXT[f], e.fmt(2), floors.INSTRUCTIONS[f]) for f, e in a["floors"].items()]
    print("\nfloors, measured the same way in the same run:", file=out)
    print(table(frows, ["floor", "what it times", "cycles [95% CI]", "instructions"],
                align="lllr"), file=out)
    st = a.get("stretches")
    if st and st["steps"]:
        i = s["i"]
        srows = [(f"{k0} -> {k1}", f"{i // k1} -> {i // k0}", e.fmt(2))
                 for (k0, k1), e in zip(_pairs(st["ks"]), st["steps"])]
        print("\nthe interpreter alone over each M's interpreted stretch length k = i/M: cycles "
              "per added interpreted instruction (one dispatch each, if the programs are "
              "matched):", file=out)
        print(table(srows, ["k", "M", "cycles [95% CI]"], align="lll"), file=out)
    print("\n" + anomalies_text(a), file=out)
    print("\n" + reading(a), file=out)


FIT_MARK = "*"


def fit_text(r: dict) -> str:
    """A round trip in the --cache table: the slope, marked where the steps disagree."""
    return r["round_trip"].fmt(1) + ("" if r["linear"] else FIT_MARK)


def report_cache(a: dict, out) -> None:
    """The report of a sweep at several K (--cache): one table, a row group per K."""
    s, base = a["size"], str(a["base_cache"])
    rows = []
    for k, ms in a["cache"].items():
        if rows:
            rows.append(None)
        direct = ms.get("jit-direct")
        for mode, r in ms.items():
            vs = r.get("vs_direct") if direct else None
            added = r.get("vs_base_cache")
            rows.append((k, mode, fit_text(r), "-" if added is None else added.fmt(1),
                         f"{r['floor'].value:.2f}",
                         "-" if r["instructions"] is None else f"{r['instructions']:.1f}",
                         r["dispatches"].fmt(2), "-" if vs is None else vs.fmt(2)))
    print(table(rows, ["K", "mode", "cycles/round trip [95% CI]", f"vs K={base} (cycles)",
                       "floor (cycles)", "instructions/round trip", "dispatches/round trip",
                       "ratio to jit-direct"], align="rlllllll"), file=out)
    disp = ", ".join(
        f"{i['dispatch'].fmt(2)} cycles"
        + ("" if i["dispatch_instructions"] is None else
           f" ({i['dispatch_instructions']:.1f} instructions)") + f" at K={k}"
        for k, i in a["cache_interp"].items())
    print(f"K = operand-stack values kept in registers (--cache K): the interpreter built with K "
          f"cached values runs programs that keep K values on the stack across every crossing, "
          f"used after it (live={','.join(a['cache'])}; synthetic.py). Round trip = the slope "
          f"of cost per loop iteration against round trips per iteration (M = "
          f"{', '.join(map(str, s['ms']))}) at constant work: {s['j']} VM instructions in "
          f"traces and {s['i']} + 7 + 2K in the interpreter per iteration; only M differs. "
          f"{FIT_MARK}: not linear in M (steps below): the least-squares slope, which weighs "
          f"the steps alike at every K, so it still compares K with K. vs K={base}: the same "
          f"crossing's round trip minus its round trip at K={base}. Ratio to jit-direct: at "
          f"the same K. One dispatch = {disp}.", file=out)
    pairs = _pairs(s["ms"])
    steps = []
    for k, ms in a["cache"].items():
        if steps:
            steps.append(None)
        for mode, r in ms.items():
            linear = "yes" if r["linear"] else "no: " + ", ".join(
                f"{p[0]}->{p[1]} vs {q[0]}->{q[1]}" for p, q in r["unequal_steps"])
            steps.append((k, mode, *(e.fmt(1) for e in r["steps"]), linear))
    print("\ncycles per added round trip between neighbouring M [95% CI]:", file=out)
    print(table(steps, ["K", "mode"] + [f"M {x0}->{x1}" for x0, x1 in pairs] + ["linear"],
                align="r" + "l" * (len(pairs) + 2)), file=out)
    frows = [(f, FLOOR_TEXT[f], e.fmt(2), floors.INSTRUCTIONS[f]) for f, e in a["floors"].items()]
    print("\nfloors, measured the same way in the same run:", file=out)
    print(table(frows, ["floor", "what it times", "cycles [95% CI]", "instructions"],
                align="lllr"), file=out)
    srows = []
    for k, i in a["cache_interp"].items():
        st = i["stretches"]
        srows += [(k, f"{k0} -> {k1}", f"{s['i'] // k1} -> {s['i'] // k0}", e.fmt(2))
                  for (k0, k1), e in zip(_pairs(st["ks"]), st["steps"])]
    if srows:
        print("\nthe interpreter alone over each M's interpreted stretch length k = i/M: cycles "
              "per added interpreted instruction (one dispatch each, if the programs are "
              "matched):", file=out)
        print(table(srows, ["K", "k", "M", "cycles [95% CI]"], align="rlll"), file=out)
    print("\n" + anomalies_text(a), file=out)
    print("\n" + reading(a), file=out)
    text = cache_reading(a)
    if text:
        print("\n" + text, file=out)


def shim_vs_direct(a: dict, shim_mode: str = "jit-shim") -> dict:
    """Per K (str): what a round trip through the shim (`shim_mode`: jit-shim,
    or jit-shim-args, whose C signature carries the cached values) costs more
    than a direct one ("excess": the slope of the difference, replicate by
    replicate; "linear": whether the difference's steps agree, i.e. the
    excess is one number at every M even where each crossing alone is not
    linear), the same against the first K ("added"), and the exact
    instructions of the difference.  Empty without the shim or jit-direct."""
    out = {}
    base = None
    for k, ms in a["cache"].items():
        if not {shim_mode, "jit-direct"} <= set(ms):
            return {}
        shim, direct = ms[shim_mode], ms["jit-direct"]
        excess = stats.difference(shim["round_trip"], direct["round_trip"])
        steps = [stats.difference(x, y) for x, y in zip(shim["steps"], direct["steps"])]
        ins = (None if shim["instructions"] is None or direct["instructions"] is None
               else shim["instructions"] - direct["instructions"])
        out[k] = {"excess": excess, "steps": steps, "linear": not stats.unequal_pairs(steps),
                  "instructions": ins,
                  "added": None if base is None else stats.difference(excess, base)}
        base = base if base is not None else excess
    return out


def first_k_shim_dearer(svd: dict) -> str | None:
    """The K (str) from which on, up to the largest K measured, the shim's
    round trip costs significantly more than a direct one; None if not even
    at the largest."""
    found = None
    for k in reversed(list(svd)):
        if svd[k]["excess"].lo > 0:
            found = k
        else:
            break
    return found


def cache_reading(a: dict) -> str:
    """The answer of a sweep at several K: from which K on each shim costs more
    than a direct crossing, and by how much; what every other crossing costs
    over a direct one at each K (the trampoline's price among them); and how
    each crossing moves with K."""
    if len(a.get("cache") or {}) < 2:
        return ""
    ks = list(a["cache"])
    parts = _shim_reading(a.get("shim_vs_direct") or shim_vs_direct(a), ks, "jit-shim",
                          "the shim")
    args = a.get("shim_args_vs_direct") or shim_vs_direct(a, "jit-shim-args")
    if args:
        parts += ["With the values passed through the shim's C signature (jit-shim-args):"]
        parts += _shim_reading(args, ks, "jit-shim-args", "that shim")
    for mode in a["cache"][ks[-1]]:
        if mode == "jit-direct" or mode_registry.get(mode).shim:
            continue            # the shims had their sentences above
        diffs = [(k, stats.difference(ms[mode]["round_trip"], ms["jit-direct"]["round_trip"]))
                 for k, ms in a["cache"].items() if {mode, "jit-direct"} <= set(ms)]
        if diffs:
            parts.append(f"{mode} minus jit-direct, cycles per round trip: "
                         + "; ".join(f"K={k}: {d.fmt(1)}" for k, d in diffs) + ".")
    base = ks[0]
    moves = []
    for mode, r in a["cache"][ks[-1]].items():
        d = r.get("vs_base_cache")
        if d is None:
            continue
        word = "more" if d.lo > 0 else "less" if d.hi < 0 else "no significant change"
        moves.append(f"{mode} {d.fmt(1)} ({word})")
    if moves:
        parts.append(f"Each crossing's round trip at K={ks[-1]} against K={base}, in cycles: "
                     + "; ".join(moves) + ".")
    return " ".join(parts)


def _shim_reading(svd: dict, ks: list, mode: str, name: str) -> list[str]:
    """cache_reading's sentences on one shim (`mode`; `name`: how the
    sentences call it) against jit-direct."""
    base = ks[0]
    parts = []
    if svd:
        first = first_k_shim_dearer(svd)
        each = "; ".join(f"K={k}: {v['excess'].fmt(1)}" for k, v in svd.items())
        if first is None:
            top = svd[ks[-1]]["excess"]
            how = ("costs significantly less than" if top.hi < 0
                   else "does not cost significantly more than")
            parts.append(f"At K={ks[-1]}, the largest K measured, {name}'s round trip {how} a "
                         f"direct one ({mode} minus jit-direct, cycles per round trip: {each}).")
            also = [k for k in ks if svd[k]["excess"].lo > 0]
            if also:
                parts.append(f"It costs significantly more at K={', '.join(also)}: no K from "
                             "which on it always does in this run.")
        elif first == base:
            parts.append(f"At every K measured, from K={base} on, a round trip through {name} "
                         f"costs more than a direct one ({mode} minus jit-direct, cycles per round "
                         f"trip: {each}).")
        else:
            at = (f"{svd[first]['excess'].fmt(1)} cycles at K={first}"
                  + ("" if first == ks[-1] else
                     f" and {svd[ks[-1]]['excess'].fmt(1)} at K={ks[-1]}"))
            parts.append(f"From K={first} on (of K = {', '.join(ks)}), a round trip through "
                         f"{name} costs significantly more than a direct one, by {at} (all K: "
                         f"{each}).")
            below = ks[:ks.index(first)]
            also = [k for k in below if svd[k]["excess"].lo > 0]
            if also:
                not_at = [k for k in below if k not in also]
                parts.append(f"It costs significantly more at K={', '.join(also)} too, but "
                             f"not at K={', '.join(not_at)} (an interval that reaches 0 or "
                             "below).")
        top = svd[ks[-1]]
        if top["added"] is not None:
            ins = ("" if top["instructions"] is None or svd[base]["instructions"] is None else
                   f", {top['instructions'] - svd[base]['instructions']:+.0f} instructions")
            parts.append(f"From K={base} to K={ks[-1]} {name}'s excess over a direct round "
                         f"trip moved by {top['added'].fmt(1)} cycles{ins}.")
        bent = [k for k, v in svd.items() if not v["linear"]]
        if bent:
            parts.append(f"The excess is not one number at every M at K = {', '.join(bent)}: "
                         "read it with the steps.")
    return parts


def anomalies_text(a: dict) -> str:
    if not a["anomalies"]:
        return "anomalies: none"
    return "\n".join(["anomalies:", *(f"  - {x}" for x in a["anomalies"])])


def reading(a: dict) -> str:
    m = a["modes"]
    parts = []
    if {"jit-shim", "jit-direct"} <= set(m):
        shim_r, direct_r = m["jit-shim"], m["jit-direct"]
        shim, direct = shim_r["round_trip"], direct_r["round_trip"]
        if shim_r["linear"] and direct_r["linear"]:
            diff = stats.difference(shim, direct)
            lo, hi = diff.lo, diff.hi
            save6 = a["floors"]["call-save6"].value
            if lo > 0:
                parts.append(f"A round trip through the shim costs {shim.value:.1f} cycles, "
                             f"{diff.value:.1f} [{lo:.1f}, {hi:.1f}] more than a direct "
                             f"one ({direct.value:.1f}); the floor for what the shim adds, a call "
                             f"that saves and restores six registers, is {save6:.1f} cycles.")
            else:
                parts.append(f"The shim's round trip ({shim.value:.1f} cycles) and the direct "
                             f"one ({direct.value:.1f}) do not differ significantly in this run "
                             f"(difference interval [{lo:.1f}, {hi:.1f}]): run a larger sweep.")
        else:
            which = " and ".join(x for x in ("jit-shim", "jit-direct") if not m[x]["linear"])
            parts.append(f"The shim's and the direct round trip are not one number each in this "
                         f"run ({which} not linear in M): compare them step by step.")
        if shim_r["instructions"] is not None and direct_r["instructions"] is not None:
            parts.append(f"In instructions (exact): {shim_r['instructions']:.0f} against "
                         f"{direct_r['instructions']:.0f}.")
        if direct_r["linear"]:
            d = direct_r["dispatches"]
            shim_d = (f", the shim {shim_r['dispatches'].value:.2f}" if shim_r["linear"] else "")
            parts.append(f"A direct round trip costs {d.value:.2f} [{d.lo:.2f}, {d.hi:.2f}] "
                         f"interpreter dispatches{shim_d} "
                         "(CPython's JIT aims at two or three for entry plus exit).")
    if "jit-direct-handler" in m and "jit-direct" in m and all(
            m[x]["linear"] for x in ("jit-direct-handler", "jit-direct")):
        vs = m["jit-direct-handler"]["vs_direct"]
        sig = ("not significant" if stats.verdict(vs.value, vs.lo, vs.hi) == "not significant"
               else "significant")
        parts.append(f"Exiting straight to the handler instead of through the table: ratio "
                     f"{vs.fmt(2)} to jit-direct ({sig}).")
    if "jit-table" in m and "jit-direct" in m and m["jit-table"]["linear"]:
        t = m["jit-table"]
        parts.append(f"Dispatching straight into the trace from the interpreter's table "
                     f"(jit-table, no ENTER_JIT handler, one indirect jump per round trip "
                     f"instead of two): {t['round_trip'].value:.1f} cycles, "
                     f"{t['dispatches'].value:.2f} [{t['dispatches'].lo:.2f}, "
                     f"{t['dispatches'].hi:.2f}] dispatches.")
    nonlinear = [mode for mode, r in m.items() if not r["linear"]]
    if nonlinear:
        parts.append(f"Not one cost per round trip at every density of crossings (see the steps): "
                     f"{', '.join(nonlinear)}.")
    return " ".join(parts)


def to_json(a: dict) -> dict:
    """The analysis as JSON: every Estimate as {"value", "ci95"}, each mode's
    steps as {"m": [a, b], "value", "ci95"}."""
    def enc(v):
        if isinstance(v, stats.Estimate):
            return {"value": v.value, "ci95": [v.lo, v.hi]}
        if isinstance(v, dict):
            return {k: enc(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [enc(x) for x in v]
        return v
    out = enc(a)
    pairs = _pairs(a["size"]["ms"])
    for ms in [out["modes"], *out.get("cache", {}).values()]:
        for r in ms.values():
            r["steps"] = [{"m": list(p), **e} for p, e in zip(pairs, r["steps"])]
    for v in [*out.get("shim_vs_direct", {}).values(),
              *out.get("shim_args_vs_direct", {}).values()]:
        v["steps"] = [{"m": list(p), **e} for p, e in zip(pairs, v["steps"])]
    for st in [out.get("stretches"), *(i["stretches"] for i in out.get("cache_interp", {}).values())]:
        if st:
            st["steps"] = [{"k": list(p), **e} for p, e in zip(_pairs(st["ks"]), st["steps"])]
    return out


def plot(a: dict, prefix: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s = a["size"]
    ms = np.asarray(s["ms"], float)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for mode, r in a["modes"].items():
        y = np.asarray(r["per_iteration"])
        ax1.plot(ms, y, "o-", label=f"{mode}: {r['round_trip'].value:.1f} cyc/round trip"
                 if r["linear"] else f"{mode}: {NOT_LINEAR}")
        stretch = s["j"] / ms
        per_crossing = y / ms
        ax2.plot(stretch, per_crossing, "o-", label=mode)
    ax1.set_xlabel("round trips per iteration (constant work)")
    ax1.set_ylabel("TSC cycles per iteration")
    ax1.set_title("cost against crossings: the slope is one round trip")
    ax1.legend(fontsize=8)
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("VM instructions per JIT stretch")
    ax2.set_ylabel("cycles per segment (stretches + one round trip)")
    ax2.set_title("cost against stretch length")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    paths = _save(fig, str(prefix))
    if len(a.get("cache") or {}) > 1:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        draw_cache(ax, a)
        fig.tight_layout()
        paths += _save(fig, f"{prefix}-cache")
    return paths


def _save(fig, prefix: str) -> list[Path]:
    import matplotlib.pyplot as plt
    paths = []
    for ext in ("png", "svg"):
        p = Path(f"{prefix}.{ext}")
        fig.savefig(p, dpi=110)
        paths.append(p)
    plt.close(fig)
    return paths


def draw_cache(ax, a: dict) -> None:
    """Round trip against K, one line per crossing, 95% intervals as error
    bars; a hollow marker where that K's sweep is not linear in M."""
    modes = list(dict.fromkeys(m for ms in a["cache"].values() for m in ms))
    for i, mode in enumerate(modes):
        pts = [(int(k), ms[mode]) for k, ms in a["cache"].items() if mode in ms]
        ks = np.array([k for k, _ in pts], float)
        # side by side, a little apart, so the intervals do not hide each other
        x = ks + 0.06 * (i - (len(modes) - 1) / 2)
        y = np.array([r["round_trip"].value for _, r in pts])
        err = np.array([[r["round_trip"].value - r["round_trip"].lo,
                         r["round_trip"].hi - r["round_trip"].value] for _, r in pts]).T
        line = ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=mode)
        color = line[0].get_color()
        for xi, yi, (_, r) in zip(x, y, pts):
            if not r["linear"]:
                ax.plot([xi], [yi], "o", color=color, mfc="white", mec=color, zorder=5)
    # an interval stretched by one preempted worker would flatten every line:
    # the axis follows the values, and a bar it cuts names its end
    values = [r["round_trip"].value for ms in a["cache"].values() for r in ms.values()]
    span = max(max(values) - min(min(values), 0), 1.0)
    top, bottom = max(values) + 0.6 * span, min(min(values), 0) - 0.15 * span
    ax.set_ylim(bottom, top)
    for i, mode in enumerate(modes):
        for k, ms in a["cache"].items():
            r = ms.get(mode)
            if r is None:
                continue
            x = int(k) + 0.06 * (i - (len(modes) - 1) / 2)
            for end, y, va in ((r["round_trip"].hi, top, "top"),
                               (r["round_trip"].lo, bottom, "bottom")):
                if (end > top and va == "top") or (end < bottom and va == "bottom"):
                    ax.annotate(f"{end:.0f}", (x, y), fontsize=6, ha="center", va=va,
                                rotation=90, annotation_clip=False)
    ax.set_xticks(sorted({int(k) for k in a["cache"]}))
    ax.set_xlabel("K: operand-stack values kept in registers (--cache K)")
    ax.set_ylabel("cycles per round trip [95% CI]")
    ax.set_title("round trip against K (hollow: not linear in M; a cut bar's end is written "
                 "at the edge)", loc="left", fontsize="small")
    ax.legend(fontsize="small")


# -- command ------------------------------------------------------------------------

class OneLayout:
    """A results file seen through one code layout: every configuration's
    runs of the worker processes that ran that build (results.RunSamples
    .code_layout), so an analysis can be made per layout."""

    def __init__(self, results, layout: int):
        self.results, self.layout = results, layout

    def get(self, key: str):
        from dataclasses import replace
        r = self.results.get(key)
        runs = [x for x in r.runs if x.code_layout == self.layout] if not key.startswith(
            "transitions/floor:") else r.runs         # the floors are machine code of their own
        return replace(r, runs=runs)

    def __contains__(self, key: str) -> bool:
        return key in self.results


def layouts_of(results, keys) -> list[int]:
    """The code layouts the runs of `keys` were measured at."""
    return sorted({r.code_layout for k in keys if k in results
                   for r in results.get(k).runs if r.code_layout is not None})


def per_layout(results, size: dict, cc: str, modes=MODES, caches=(0,)) -> dict:
    """{layout: the sweep's analysis on that layout's runs alone}, when the
    sweep ran at more than one code layout (--code-layouts)."""
    keys = [c.key for c in configs_for(size, cc, modes, caches)]
    lays = layouts_of(results, keys)
    if len(lays) < 2:
        return {}
    return {lay: analyze(OneLayout(results, lay), size, cc, modes, n_boot=500, caches=caches)
            for lay in lays}


def layout_text(layouts: dict) -> str:
    """The shim's and the direct round trip, and their difference, per code layout."""
    rows = []
    for lay, a in layouts.items():
        m = a["modes"]
        if not {"jit-shim", "jit-direct"} <= set(m):
            continue
        d = stats.difference(m["jit-shim"]["round_trip"], m["jit-direct"]["round_trip"])
        rows.append((str(lay), fit_text(m["jit-shim"]), fit_text(m["jit-direct"]), d.fmt(1)))
    if not rows:
        return ""
    return ("per code layout (each crossing's build with its code shifted; * not linear in M):\n"
            + table(rows, ["layout", "jit-shim", "jit-direct", "shim minus direct"],
                    align="llll"))


def measure(args, configs, opts, cc: str, caches, what: str):
    """The command line's run of `configs`: the results file, one line on
    what runs, the measurement; (results, exit status: 0 when every
    configuration was measured)."""
    results = harness.open_results(args, "transitions", configs)
    print(f"{len(configs)} configurations{what} x {opts.processes} worker processes"
          + (f" over {opts.code_layouts} code layouts" if opts.code_layouts > 1 else "")
          + f" x {opts.samples} samples ({cc}"
          + (f"; K = {', '.join(map(str, caches))}" if list(caches) != [0] else "") + ")",
          file=sys.stderr)
    outcome = harness.measure_and_tell(configs, results, opts)
    return results, 130 if outcome.interrupted else 1 if outcome.failures else 0


def compiler(cc: str | None) -> str:
    """The compiler of a transition benchmark: one that builds every crossing."""
    return toolchain.get_compiler(cc, need=set(mode_registry.get("jit-direct").features)).name


def main(args) -> int:
    """The sweep design (`--design sweep`); cli/bench.py sends `paired` to roundtrip.main."""
    size = dict(SIZES[args.size], jit_opt=getattr(args, "jit_opt", 0) or 0)
    cc = compiler(args.cc)
    modes = tuple(args.mode or MODES)
    caches = sorted(set(getattr(args, "cache", None) or [0]))
    configs = configs_for(size, cc, modes, caches)
    procs, warmup, samples = size["runs"]
    opts = harness.Options(processes=args.processes or procs, warmup=warmup,
                           samples=args.samples or samples, cpu=args.cpu,
                           count_instructions=not args.no_count,
                           code_layouts=getattr(args, "code_layouts", None) or 0)
    results, failed = measure(args, configs, opts, cc, caches, "")
    if failed:
        return failed
    path = results.path
    a = analyze(results, size, cc, modes, caches=caches)
    report(a)
    layouts = per_layout(results, size, cc, modes, caches)
    if layouts:
        print("\n" + layout_text(layouts))
    summary = path.with_name(path.stem + "-summary.json")
    summary.write_text(json.dumps(to_json(a), indent=1))
    print(f"\nresults: {path} (pyperf JSON), summary: {summary.name}")
    if args.plot:
        for p in plot(a, path.with_suffix("")):
            print(f"plot: {p}")
    return 0
