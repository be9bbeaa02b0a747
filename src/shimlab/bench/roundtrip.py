"""`shimlab bench transitions` (the paired design, its default): what one
round trip between interpreter and JIT code costs, as the difference
between two programs that differ only in the crossing.

The program (synthetic.py, "crossing:"): a loop of M segments, each a NOP
and k interpreted instructions.  With jit=1 the JIT installs an empty trace
at every NOP, so each segment enters JIT code and comes back; its null
crossing, jit=0, runs the same bytecode with no trace: the NOP is
interpreted where the trace was.  Both dispatch the same handlers in the
same order; one worker process runs both, interleaved, on one build and one
code layout, each run at a memory layout of its own, so the process, the
build and its layout are common to both sides (stats.paired_difference).
A round trip is the difference per crossing: (T_jit - T_null) / M.

One factor moves at a time around a base point (M = 4, k = 16): the density
(M crossings per iteration, with as many traces), the interpreted stretch
k, and (traces=1) one trace entered M times instead of M traces.  Code
layout is a factor too: each configuration is built --code-layouts times
with its code shifted and the processes cycle through the builds.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import numpy as np

from .. import modes as mode_registry
from . import cpu as cpu_mod
from . import floors, harness, stats, transitions
from .results import ResultFile
from .table import table

MODES = mode_registry.JIT


@dataclass(frozen=True)
class Point:
    m: int            # crossings per iteration
    k: int            # interpreted instructions after each crossing
    traces: int = 0   # 0: M traces, one per crossing; 1: one trace entered M times

    def label(self) -> str:
        return f"M={self.m} k={self.k}" + (" one trace" if self.traces else "")


# per size: the base point, each factor's values (the others at the base),
# iterations, (processes, warm-up, samples) and code layouts
SIZES = {
    "tiny": dict(base=Point(2, 8), ms=(1, 2, 4), ks=(), one_trace=False, n=300,
                 runs=(2, 1, 4), code_layouts=2),
    "quick": dict(base=Point(4, 16), ms=(2, 4, 8), ks=(), one_trace=True, n=4000,
                  runs=(12, 1, 10), code_layouts=3),
    "full": dict(base=Point(4, 16), ms=(1, 2, 4, 8, 16), ks=(4, 16, 64), one_trace=True,
                 n=20000, runs=(12, 1, 20), code_layouts=3),
}


def points(size: dict) -> list[Point]:
    """Every point measured: the base, then each factor's other values."""
    base = size["base"]
    # one trace at every stretch k: what the shared entry jump's prediction
    # costs there is the difference from M traces (the entry table)
    out = [base] + [Point(m, base.k) for m in size["ms"]] + \
        [Point(base.m, k) for k in size["ks"]] + \
        ([Point(base.m, k, 1) for k in (base.k, *size["ks"])] if size["one_trace"] else [])
    return list(dict.fromkeys(out))


def spec(p: Point, size: dict, jit: int, live: int = 0) -> str:
    """A program of the pair: jit=1 crosses at every NOP, jit=0 is its null."""
    opt = size.get("jit_opt", 0)
    return (f"crossing:m={p.m},k={p.k},n={size['n']},jit={jit}"
            + (",traces=1" if p.traces else "") + (f",live={live}" if live else "")
            + (f",opt={opt}" if opt else ""))


def configs_for(size: dict, cc: str, modes=MODES, caches=(0,)) -> list[harness.Config]:
    """At each K: every crossing at every point, its null crossing as the
    partner (same worker, same build); the floors once."""
    out = []
    for k in caches:
        for mode in transitions.modes_at(modes, k):
            out += [harness.Config("transitions", spec(p, size, 1, k), mode, cc, cache=k,
                                   partner=spec(p, size, 0, k)) for p in points(size)]
    out += [harness.Config("transitions", f"floor:{f}", "jit-direct", cc) for f in floors.FLOORS]
    return out


# -- analysis ---------------------------------------------------------------------

def _pairs(results: ResultFile, a_key: str, b_key: str, n: int, layout=None):
    """The per-iteration cycle samples of the two sides, one group per worker
    process that ran both (optionally only the processes of one code layout)."""
    a_runs, b_runs = results.get(a_key).runs, results.get(b_key).runs
    by_pid = {r.worker_pid: r for r in b_runs}
    a, b = [], []
    for r in a_runs:
        partner = by_pid.get(r.worker_pid)
        if partner is None or (layout is not None and r.code_layout != layout):
            continue
        a.append(np.asarray(r.cycles, float) / n)
        b.append(np.asarray(partner.cycles, float) / n)
    return a, b


def _scaled(e: stats.Estimate, by: float) -> stats.Estimate:
    return stats.estimate(e.value / by, e.reps / by)


def _per_run_difference(results: ResultFile, a_key: str, b_key: str, field: str,
                        per: float) -> float | None:
    """(A - B) / per from a per-run count (exact instructions), or None."""
    a, b = results.get(a_key).runs[0], results.get(b_key).runs[0]
    x, y = getattr(a, field), getattr(b, field)
    return None if x is None or y is None else (x - y) / per


def _events(results: ResultFile, a_key: str, b_key: str, per: float) -> dict | None:
    """Hardware events per round trip (the mean over processes of A - B), or None."""
    pairs = [(r, q) for r, q in zip(results.get(a_key).runs, results.get(b_key).runs)
             if r.events and q.events]
    if not pairs:
        return None
    names = sorted(set.intersection(*(set(r.events) & set(q.events) for r, q in pairs)))
    return {name: float(np.mean([(r.events[name] - q.events[name]) / per for r, q in pairs]))
            for name in names}


def _point(results, size, cc, mode, p: Point, k: int, rng, n_boot: int) -> dict:
    n = size["n"]
    a_key = transitions.key(spec(p, size, 1, k), mode, cc, k)
    b_key = transitions.key(spec(p, size, 0, k), mode, cc, k)
    a, b = _pairs(results, a_key, b_key, n)
    diff = stats.paired_difference(a, b, n_boot, rng)
    layouts = sorted({r.code_layout for r in results.get(a_key).runs
                      if r.code_layout is not None})
    per_layout = {}
    for lay in layouts:
        la, lb = _pairs(results, a_key, b_key, n, lay)
        if la:
            per_layout[lay] = _scaled(stats.paired_difference(la, lb, n_boot, rng), p.m)
    return {"point": p, "difference": diff, "round_trip": _scaled(diff, p.m),
            "null": stats.median_estimate(b, n_boot, rng),
            "instructions": _per_run_difference(results, a_key, b_key, "instructions",
                                                n * p.m),
            "events": _events(results, a_key, b_key, n * p.m), "layouts": per_layout,
            "processes": len(a)}


def analyze(results: ResultFile, size: dict, cc: str, modes=MODES, caches=(0,),
            n_boot: int = 2000) -> dict:
    rng = np.random.default_rng(0)
    pts, base = points(size), size["base"]
    out = {"size": {k: v for k, v in size.items() if k not in ("runs",)},
           "cache": {}, "floors": {}, "cpu": cpu_mod.identify(), "cc": cc}
    for f in floors.FLOORS:
        g = [np.asarray(x, float) / floors.elements_per_sample()
             for x in results.get(transitions.key(f"floor:{f}", "jit-direct", cc)).cycles_groups()]
        out["floors"][f] = stats.median_estimate(g, n_boot, rng)
    for k in caches:
        ms_out = {}
        for mode in transitions.modes_at(modes, k):
            at = {p: _point(results, size, cc, mode, p, k, rng, n_boot) for p in pts}
            dens = [p for _, p in sorted(by_m(at, base).items())]
            r = {"points": at, "base": at[base]}
            if len(dens) >= 2:
                xs = [p.m for p in dens]
                per = [at[p]["round_trip"] for p in dens]
                # the difference is 0 at M = 0 by construction (the programs are
                # then one program): linear means one cost per crossing at every M
                unequal = stats.unequal_pairs(per)
                # one interpreted instruction here: the null program's cost
                # against M, per added segment of k + 1 instructions
                per_ins = _scaled(stats.slope_estimate(xs, [at[p]["null"] for p in dens]),
                                  base.k + 1)
                r["density"] = {"ms": xs, "linear": not unequal,
                                "unequal": [(xs[i], xs[j]) for i, j in unequal],
                                "through_zero": _through_zero(xs, [at[p]["difference"]
                                                                   for p in dens]),
                                "interpreted_instruction": per_ins}
                r["dispatches"] = stats.ratio_of(r["base"]["round_trip"], per_ins)
            parts = floor_parts(mode)
            r["floor_parts"] = [{"floor": f, "where": w} for f, w in parts]
            r["floor"] = stats.sum_of([out["floors"][f] for f, _ in parts]) if parts \
                else stats.estimate(0.0, np.zeros(n_boot))
            ms_out[mode] = r
        if "jit-direct" in ms_out:
            d = ms_out["jit-direct"]
            for r in ms_out.values():
                r["vs_direct"] = {p: stats.difference(r["points"][p]["round_trip"],
                                                      d["points"][p]["round_trip"]) for p in pts}
                r["vs_direct_layouts"] = {p: {
                    lay: stats.difference(e, d["points"][p]["layouts"][lay])
                    for lay, e in r["points"][p]["layouts"].items()
                    if lay in d["points"][p]["layouts"]} for p in pts}
        out["cache"][k] = ms_out
    out["anomalies"] = _anomalies(out)
    return out


def floor_parts(mode: str) -> list[tuple[str, str]]:
    """The floors (floors.FLOORS) that one round trip of `mode` must cost at
    least over its null crossing, each with the part it stands for.

    The null crossing interpreted a NOP: one dispatch into its handler and
    its own dispatch, an indirect jump through the table, to the next
    instruction.  The crossing is dispatched to as the NOP was, and its exit
    takes the place of the NOP's dispatch (through the table, or straight to
    the handler: a direct jump, no dearer), so what it adds is its entry:
      jit-direct, jit-direct-handler, jit-trampoline: ENTER_JIT's indirect
             jump into the trace; jit-direct-sites: its copy's;
      jit-table: nothing (the dispatch lands in the trace, the exit is a
             dispatch): no floor above 0;
      the shims: a call into the shim that saves and restores the
             callee-saved registers around its call into the trace, which
             returns (at least a call saving six registers).
    Read from the mode's record in modes.py, so a new crossing gets its floor."""
    m = mode_registry.get(mode)
    if m.shim:
        return [("call-save6", "the call into the shim, its saves and restores, around "
                               "the call into the trace")]
    if m.trace_table and not m.entry_copies:
        return []
    return [("indirect", "the jump into the trace" + (" (the ENTER_JIT copy's)"
                                                      if m.entry_copies else ""))]


def _through_zero(xs, points) -> stats.Estimate:
    """The least-squares slope of the differences against M through the
    origin (sum M d / sum M^2): one round trip's cost over every density,
    a finding where the density is linear."""
    x = np.asarray(xs, float)
    ys = np.vstack([p.reps for p in points])
    value = float(np.dot(x, [p.value for p in points]) / np.dot(x, x))
    return stats.estimate(value, (x[:, None] * ys).sum(axis=0) / np.dot(x, x))


def _anomalies(a: dict) -> list[str]:
    """What no crossing can cost: a round trip whose interval lies below 0,
    or below its floor.  (A cost that changes with the density is a
    finding, reported with the density, not an anomaly: the two programs
    are one program at M = 0, so nothing but the crossings can differ.)"""
    out = []
    for k, ms in a["cache"].items():
        pre = f"K={k}: " if k else ""
        for mode, r in ms.items():
            for p, at in r["points"].items():
                e = at["round_trip"]
                if e.hi < 0:
                    out.append(f"{pre}{mode}: negative cost at {p.label()}: {e.fmt(1)} cycles "
                               "per round trip (interval below 0)")
                elif stats.difference(e, r["floor"]).hi < 0:
                    out.append(f"{pre}{mode}: below its floor at {p.label()}: {e.fmt(1)} "
                               f"cycles, under {r['floor'].fmt(2)} "
                               f"({transitions.floor_short(r['floor_parts'])})")
    return out


# -- report ------------------------------------------------------------------------

def headline_point(a: dict) -> Point:
    """Where the verdict is read: one trace entered at every crossing when it
    was measured.  There the entry jump (and the shim's call) has one target,
    so the round trip is the crossing's own work; with a trace per crossing
    it is dominated by how well one branch with M targets is predicted, which
    moves with the stretch k and the code layout (the entry table)."""
    base = a["size"]["base"]
    one = Point(base.m, base.k, 1)
    first = next(iter(a["cache"].values()))
    return one if one in next(iter(first.values()))["points"] else base


def verdict(a: dict, k=None, shim: str = "jit-shim") -> str:
    """One sentence: which of the shim and the direct crossing is cheaper on
    this CPU and by how much, and at how many code layouts it holds."""
    k = next(iter(a["cache"])) if k is None else k
    ms = a["cache"][k]
    if shim not in ms or "jit-direct" not in ms:
        return ""
    p = headline_point(a)
    r, d = ms[shim], ms["jit-direct"]
    diff, base = r["vs_direct"][p], d["points"][p]["round_trip"]
    own = r["points"][p]["round_trip"]
    where = (f"On {a['cpu']['name']} ({a['cc']}{', K=' + str(k) if k else ''}), at "
             f"{p.label()}" + (" (the entry has one target)" if p.traces else ""))
    per = r["vs_direct_layouts"][p]
    if diff.lo > 0:
        word, sign = "more", 1
    elif diff.hi < 0:
        word, sign = "less", -1
    else:
        return (f"{where}, a round trip through the shim ({own.fmt(1)} "
                f"cycles) and a direct one ({base.fmt(1)}) do not differ significantly: "
                f"{shim} minus jit-direct is {diff.fmt(1)} cycles.")
    agree = sum(1 for e in per.values() if (e.lo > 0 if sign > 0 else e.hi < 0))
    same = sum(1 for e in per.values() if e.value * sign > 0)
    return (f"{where}, a round trip through the shim costs {abs(diff.value):.1f} cycles {word} "
            f"than a direct one ({shim} minus jit-direct {diff.fmt(1)}; direct "
            f"{base.fmt(1)} cycles, shim {own.fmt(1)}); the same way at "
            f"{same} of {len(per)} code layouts on their own (significantly at {agree}).")


def _signed(e: stats.Estimate, what: str, other: str) -> str:
    """'costs 2.6 cycles more than' / 'less than' / 'does not differ from', from an interval."""
    if e.lo > 0:
        return f"{what} costs {e.value:.1f} cycles more ({e.fmt(1)}) than {other}"
    if e.hi < 0:
        return f"{what} costs {-e.value:.1f} cycles less ({e.fmt(1)}) than {other}"
    return f"{what} does not differ significantly from {other} ({e.fmt(1)})"


def reading(a: dict, k=None) -> list[str]:
    """The sentences after the verdict, computed from the run: the shim's
    own price where the entry jump has one target (one trace entered at
    every crossing), and why the direct crossings are not linear in M
    (the shared entry jump, against an entry jump per trace)."""
    k = next(iter(a["cache"])) if k is None else k
    ms, base = a["cache"][k], a["size"]["base"]
    out = []
    if headline_point(a) != base and "jit-shim" in ms and "jit-direct" in ms:
        shim, direct = ms["jit-shim"]["points"][base], ms["jit-direct"]["points"][base]
        out.append(_signed(ms["jit-shim"]["vs_direct"][base], f"With a trace per crossing "
                           f"({base.label()}: {base.m} traces share ENTER_JIT's jump, or the "
                           "shim's call), a round trip through the shim", "a direct one")
                   + f" (shim {shim['round_trip'].fmt(1)}, direct "
                   f"{direct['round_trip'].fmt(1)} cycles): both then pay for predicting one "
                   "branch with M targets, which the entry table prices per stretch k.")
    d, sites = ms.get("jit-direct"), ms.get("jit-direct-sites")
    if d and "density" in d and not d["density"]["linear"]:
        xs = d["density"]["ms"]
        at = {m: d["points"][p]["round_trip"] for m, p in by_m(d["points"], base).items()}
        text = (f"A direct round trip is not one number: it grows with the traces that "
                f"share ENTER_JIT's jump, from {at[xs[0]].fmt(1)} cycles at M={xs[0]} to "
                f"{at[xs[-1]].fmt(1)} at M={xs[-1]}")
        if sites and "density" in sites:
            st = {m: sites["points"][p]["round_trip"]
                  for m, p in by_m(sites["points"], base).items()}
            text += (f", while jit-direct-sites, the same crossing with an entry jump per "
                     f"trace, costs {st[xs[0]].fmt(1)} at M={xs[0]} and "
                     f"{st[xs[-1]].fmt(1)} at M={xs[-1]}: what grows is the prediction of "
                     f"one jump with M targets, not the crossing")
        out.append(text + ".")
    return out


def report(a: dict, out=None) -> None:
    out = out or sys.stdout
    s, base = a["size"], a["size"]["base"]
    for k, ms in a["cache"].items():
        print(verdict(a, k), file=out)
        if "jit-shim-args" in ms:
            print(verdict(a, k, "jit-shim-args").replace("the shim", "the shim that passes "
                                                         "the values (jit-shim-args)"), file=out)
        for line in reading(a, k):
            print(line, file=out)
    print(file=out)
    for k, ms in a["cache"].items():
        _headline(a, k, ms, out)
    print(f"\nround trip = (T_jit - T_null) / M: the same loop run with an empty trace at each "
          f"of its M NOPs and with none (the NOP interpreted), by one worker process on one "
          f"build, interleaved; {base.label()}, {s['n']} iterations, "
          f"{s['code_layouts']} code layouts. The interval is over worker processes, paired.",
          file=out)
    for k, ms in a["cache"].items():
        _density(a, k, ms, out)
        _factors(a, k, ms, out)
        _entry(a, k, ms, out)
        _layouts(a, k, ms, out)
        _nulls(a, k, ms, out)
    frows = [(f, transitions.FLOOR_TEXT[f], e.fmt(2), floors.INSTRUCTIONS[f])
             for f, e in a["floors"].items()]
    print("\nfloors, measured in the same run (a round trip costs at least its floor):",
          file=out)
    print(table(frows, ["floor", "what it times", "cycles [95% CI]", "instructions"],
                align="lllr"), file=out)
    print("\nanomalies: none" if not a["anomalies"] else
          "\n".join(["\nanomalies:", *(f"  - {x}" for x in a["anomalies"])]), file=out)


def _headline(a: dict, k, ms: dict, out) -> None:
    events = any(r["base"]["events"] for r in ms.values())
    rows = []
    cols = list(dict.fromkeys([headline_point(a), a["size"]["base"]]))
    for mode, r in ms.items():
        b = r["base"]
        row = [mode]
        for p in cols:
            vs = r.get("vs_direct", {}).get(p)
            row += [r["points"][p]["round_trip"].fmt(1),
                    "-" if vs is None or mode == "jit-direct" else vs.fmt(1)]
        row += ["-" if b["instructions"] is None else f"{b['instructions']:.1f}",
                r["dispatches"].fmt(2) if "dispatches" in r else "-",
                f"{r['floor'].value:.1f}"]
        if events:
            ev = b["events"] or {}
            row.append("-" if "branch-misses" not in ev else f"{ev['branch-misses']:.2f}")
        rows.append(tuple(row))
    head = ["mode"]
    for p in cols:
        head += [f"{p.label()}: cycles [95% CI]", "minus jit-direct"]
    head += ["instructions", "dispatches", "floor"] + (["branch misses"] if events else [])
    title = f"K={k}: " if k else ""
    print(f"{title}one round trip per crossing ({a['cpu']['name']}, {a['cc']}), cycles per "
          "round trip" + (": one trace entered at every crossing (the entry has one target), "
                          "then a trace per crossing" if len(cols) > 1 else "") + ":", file=out)
    print(table(rows, head, align="l" * len(head)), file=out)
    if not events:
        print(f"(hardware counters: {a['cpu'].get('counters', 'not read')}; instructions are "
              "exact, from callgrind)", file=out)


def by_m(points, base: Point) -> dict[int, Point]:
    """The density points among `points` by M: the base's stretch k, a trace
    per crossing."""
    return {p.m: p for p in points if p.k == base.k and not p.traces}


def _density(a: dict, k, ms: dict, out) -> None:
    first = next(iter(ms.values()))
    if "density" not in first:
        return
    xs = first["density"]["ms"]
    rows = []
    for mode, r in ms.items():
        d = r["density"]
        at = by_m(r["points"], a["size"]["base"])
        vs = [("-" if mode == "jit-direct" or "vs_direct" not in r
               else r["vs_direct"][at[m]].fmt(1)) for m in xs]
        rows.append((mode, *(r["points"][at[m]]["round_trip"].fmt(1) for m in xs),
                     d["through_zero"].fmt(1) if d["linear"] else "-",
                     "yes" if d["linear"] else "no: " + ", ".join(
                         f"M={x} vs {y}" for x, y in d["unequal"]), *vs))
    n_pairs = len(xs) * (len(xs) - 1) // 2
    print(f"\n{'K=' + str(k) + ': ' if k else ''}density: cycles per round trip at M crossings "
          f"(and traces) per iteration, k={a['size']['base'].k}; linear: one cost at every M "
          f"(no two differ, each pair at {100 * (1 - 0.05 / max(n_pairs, 1)):.3g}%); "
          "over all M: the slope of the difference through 0, where linear; then minus "
          "jit-direct at each M:", file=out)
    print(table(rows, ["mode"] + [f"M={m}" for m in xs] + ["over all M", "linear"]
                + [f"-direct M={m}" for m in xs], align="l" * (2 * len(xs) + 3)), file=out)


def _factors(a: dict, k, ms: dict, out) -> None:
    base = a["size"]["base"]
    others = [p for p in next(iter(ms.values()))["points"]
              if p.k != base.k or p.traces]
    if not others:
        return
    cols = [base] + others
    rows = [(mode, *(r["points"][p]["round_trip"].fmt(1) for p in cols),
             *(r["vs_direct"][p].fmt(1) for p in cols if mode != "jit-direct"))
            if mode != "jit-direct" else
            (mode, *(r["points"][p]["round_trip"].fmt(1) for p in cols), *("-" for _ in cols))
            for mode, r in ms.items()]
    print(f"\n{'K=' + str(k) + ': ' if k else ''}one factor at a time around {base.label()}: "
          "cycles per round trip, then minus jit-direct at the same point:", file=out)
    print(table(rows, ["mode"] + [p.label() for p in cols] + [f"-direct {p.label()}"
                                                              for p in cols],
                align="l" * (1 + 2 * len(cols))), file=out)


def _entry(a: dict, k, ms: dict, out) -> None:
    """Per stretch k: the round trip with M traces sharing the entry and with
    one trace entered M times, their difference (what predicting the shared
    entry's M targets costs), and shim minus direct in both: where the shim
    comes out cheaper, whether its own part or its entry's prediction is."""
    base = a["size"]["base"]
    pairs = [(Point(base.m, p.k), p) for p in next(iter(ms.values()))["points"] if p.traces]
    if not pairs:
        return
    rows = []
    for mode, r in ms.items():
        for many, one in sorted(pairs, key=lambda x: x[0].k):
            at = r["points"]
            vs = r.get("vs_direct", {})
            rows.append((mode, f"k={many.k}", at[many]["round_trip"].fmt(1),
                         at[one]["round_trip"].fmt(1),
                         stats.difference(at[many]["round_trip"], at[one]["round_trip"]).fmt(1),
                         "-" if mode == "jit-direct" or not vs else vs[many].fmt(1),
                         "-" if mode == "jit-direct" or not vs else vs[one].fmt(1)))
    print(f"\n{'K=' + str(k) + ': ' if k else ''}the entry, at M={base.m}: a trace per "
          "crossing (M traces share ENTER_JIT's jump, or the shim's call) against one trace "
          "entered at every crossing (one target); cycles per round trip:", file=out)
    print(table(rows, ["mode", "stretch", "M traces", "one trace", "the entry's prediction",
                       "-direct, M traces", "-direct, one trace"], align="l" * 7), file=out)


def _layouts(a: dict, k, ms: dict, out) -> None:
    for p in dict.fromkeys([headline_point(a), a["size"]["base"]]):
        _layouts_at(a, k, ms, p, out)


def _layouts_at(a: dict, k, ms: dict, p: Point, out) -> None:
    lays = sorted({lay for r in ms.values() for lay in r["points"][p]["layouts"]})
    if len(lays) < 2:
        return
    rows = []
    for mode, r in ms.items():
        at = r["points"][p]["layouts"]
        cells = [at[lay].fmt(1) if lay in at else "-" for lay in lays]
        per = r.get("vs_direct_layouts", {}).get(p, {})
        vs = [per[lay].fmt(1) if mode != "jit-direct" and lay in per else "-" for lay in lays]
        rows.append((mode, *cells, *vs))
    print(f"\n{'K=' + str(k) + ': ' if k else ''}per code layout (the build's code shifted), "
          f"at {p.label()}: cycles per round trip, then minus jit-direct:", file=out)
    print(table(rows, ["mode"] + [f"layout {x}" for x in lays] +
                [f"-direct, layout {x}" for x in lays], align="l" * (1 + 2 * len(lays))),
          file=out)


def _nulls(a: dict, k, ms: dict, out) -> None:
    """The null program, the same bytecode on every crossing's build: how far
    the builds differ with no crossing at all (what a comparison of crossings
    that are not paired inside one build also measures)."""
    base = a["size"]["base"]
    rows = [(mode, r["base"]["null"].fmt(1)) for mode, r in ms.items()]
    print(f"\n{'K=' + str(k) + ': ' if k else ''}the null program ({base.label()}, no trace) "
          "on each crossing's build: cycles per iteration (the same bytecode; the builds "
          "differ in their ENTER_JIT and where their code lies):", file=out)
    print(table(rows, ["build", "cycles/iteration [95% CI]"], align="ll"), file=out)


def to_json(a: dict) -> dict:
    """The analysis as JSON: every Estimate as {"value", "ci95"}, points by label."""
    def enc(v):
        if isinstance(v, stats.Estimate):
            return {"value": v.value, "ci95": [v.lo, v.hi]}
        if isinstance(v, Point):
            return {"m": v.m, "k": v.k, "traces": v.traces}
        if isinstance(v, dict):
            return {(x.label() if isinstance(x, Point) else str(x)): enc(y) for x, y in v.items()}
        if isinstance(v, (list, tuple)):
            return [enc(x) for x in v]
        return v
    out = enc(a)
    out["verdict"] = verdict(a)
    out["reading"] = reading(a)
    return out


def main(args) -> int:
    size = dict(SIZES[args.size], jit_opt=getattr(args, "jit_opt", 0) or 0)
    if getattr(args, "code_layouts", None):
        size["code_layouts"] = args.code_layouts
    cc = transitions.compiler(args.cc)
    modes = tuple(args.mode or MODES)
    caches = sorted(set(getattr(args, "cache", None) or [0]))
    configs = configs_for(size, cc, modes, caches)
    procs, warmup, samples = size["runs"]
    opts = harness.Options(processes=args.processes or procs, warmup=warmup,
                           samples=args.samples or samples, cpu=args.cpu,
                           count_instructions=not args.no_count, count_events=True,
                           code_layouts=size["code_layouts"])
    results, failed = transitions.measure(args, configs, opts, cc, caches,
                                          " (a crossing and its null crossing each)")
    if failed:
        return failed
    path = results.path
    a = analyze(results, size, cc, modes, caches)
    a["cpu"]["counters"] = cpu_mod.counters_note()
    report(a)
    summary = path.with_name(path.stem + "-summary.json")
    summary.write_text(json.dumps(to_json(a), indent=1))
    print(f"\nresults: {path} (pyperf JSON), summary: {summary.name}")
    return 0
