# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Shim vs direct: one interpreter/JIT round trip through a C shim and through direct tail calls, and what is left of it in whole programs
#
# The same traces, built from the same stencils, entered and left three
# ways: `jit-shim` (an ordinary C call into a shim that saves the
# callee-saved registers; the trace returns to it), `jit-direct` (the
# interpreter tail-calls the trace, whose exit jumps through the dispatch
# table) and `jit-direct-handler` (the exit jumps straight to the handler of
# the instruction it resumes at).
#
# **The sweep** (`bench/transitions.py`, `bench/synthetic.py`): every loop
# iteration does the same work, J VM instructions in traces and I in the
# interpreter, split into M segments of [trace][interpreted]; programs with
# different M run exactly the same VM instructions (a test checks it opcode
# by opcode) and differ only in M round trips per iteration.  The cost of one
# round trip is the slope of cycles per iteration against M, where the costs
# *between neighbouring M* (the steps) agree; where they do not, the steps are
# the answer.  Beside it, in the same run, one interpreter dispatch and the
# machine-code floors (a jump, a predicted indirect jump, a call/ret, a call
# that saves six registers) that each crossing's added jumps must cost at
# least; a cost below its floor, or below 0, is an anomaly.
#
# **Whole programs** (`bench/programs.py`): BF and minipy programs under
# `tailcall` and the three JIT modes, time relative to `tailcall`.
#
# Run: `shimlab reproduce shim-vs-direct [--quick]`; outputs in
# `experiments/out/shim-vs-direct/`.  Timing goes through the harness; every
# number is a ratio, a slope or a difference from one run, with a 95%
# bootstrap interval.

# %%
import sys

import matplotlib.pyplot as plt
import numpy as np

from shimlab.bench import floors, harness, programs, stats, transitions
from shimlab import notebook as nb

NAME = "shim-vs-direct"
QUICK = nb.quick()
OUT = nb.out_dir(NAME)
SIZE_NAME = "quick" if QUICK else "full"
SIZE = transitions.SIZES[SIZE_NAME]
# exact machine instructions per round trip come from one batched callgrind
# run (about 40 s here): in the full run only, the quick one stays short
COUNT = not QUICK
PROGRAMS = programs.WORKLOADS["quick" if QUICK else "full"]
MODES = transitions.MODES
ccs = nb.compilers(mode="jit-direct")
if not ccs:
    sys.exit("no compiler here builds the JIT modes (they need preserve_none: apt-get install clang-19)")
CC = ccs[0].name
print(f"quick={QUICK}; compiler {CC}; sweep size {SIZE_NAME!r}: M = {SIZE['ms']}, J = {SIZE['j']}, "
      f"I = {SIZE['i']}, {SIZE['n']} iterations; programs: {', '.join(PROGRAMS)}")

# %% [markdown]
# ## The sweep
#
# The size's own worker processes and samples (`transitions.SIZES`), so the
# numbers are those `shimlab bench transitions --size SIZE` prints.

# %%
procs, warmup, samples = SIZE["runs"]
sweep = nb.measure(transitions.configs_for(SIZE, CC), OUT / "transitions.json",
                   harness.Options(processes=procs, warmup=warmup, samples=samples,
                                   count_instructions=COUNT))
a = transitions.analyze(sweep, SIZE, CC)

# %% [markdown]
# ## Table: one round trip per crossing, in cycles, instructions and dispatches
#
# `cycles/round trip`: the slope against M, for the modes whose steps agree
# (the others: see the steps below); `dispatches`: that slope over the cost of
# one interpreted instruction (the slope of a purely interpreted loop against
# its length, same build, same run); `floor`: the sum of the floors the
# crossing's added jumps must cost at least (`transitions.floor_parts`).
# Instructions are exact (callgrind) and only in the full run.

# %%
direct_linear = a["modes"]["jit-direct"]["linear"]
rows = []
for mode, r in a["modes"].items():
    linear = r["linear"]
    floor = ", ".join(p["floor"] for p in r["floor_parts"])
    rows.append((mode, r["round_trip"].fmt(2) if linear else transitions.NOT_LINEAR,
                 f"{r['floor'].fmt(2)} ({floor})",
                 "-" if r["instructions"] is None else f"{r['instructions']:.1f}",
                 r["dispatches"].fmt(2) if linear else "-",
                 r["vs_direct"].fmt(2) if linear and direct_linear else "-"))
nb.show_table(rows, ["mode", "cycles/round trip [95% CI]", "floor [95% CI]",
                     "instructions/round trip", "dispatches/round trip [95% CI]",
                     "vs jit-direct [95% CI]"], OUT, "table-round-trip", align="llllll")
floor_rows = [(transitions.FLOOR_TEXT[f], e.fmt(2), floors.INSTRUCTIONS[f])
              for f, e in a["floors"].items()]
floor_rows.append(("one interpreter dispatch (LOAD_INT or POP)", a["dispatch"].fmt(2),
                   "-" if a["dispatch_instructions"] is None
                   else f"{a['dispatch_instructions']:.1f}"))
nb.show_table(floor_rows, ["floor", "cycles [95% CI]", "instructions"], OUT, "table-floors",
              align="llr")
print("\n" + transitions.anomalies_text(a))
print("\n" + transitions.reading(a))

# %% [markdown]
# ## Marginal cost between neighbouring M: the steps
#
# The slope assumes every round trip costs the same.  Between M and the
# next M the cost per added round trip is
# (cycles(M') − cycles(M)) / (M' − M); each step has its own interval
# (bootstrap replicates of the two medians, `transitions.analyze`).  The
# stretch length is J / M' VM instructions in the trace per segment.  A
# mode is *linear* when no two of its steps differ (every pair's difference,
# replicate by replicate, has an interval containing 0, at a level that
# holds 95% for all pairs together); only then does its slope stand for it.
# An earlier full sweep on this machine saw the shim's cost per round trip
# jump from about 7 to about 20 cycles at M = 32 (stretches of 2 VM
# instructions); a later full run did not see it again (16 → 32: 8.2
# [7.4, 8.9] cycles).

# %%
ms = list(SIZE["ms"])
steps = {mode: r["steps"] for mode, r in a["modes"].items()}
step_rows = []
for k in range(len(ms) - 1):
    step_rows.append((f"{ms[k]} -> {ms[k + 1]}", SIZE["j"] // ms[k + 1],
                      *(steps[m][k].fmt(2) for m in MODES)))
step_rows.append(("linear", "", *("yes" if a["modes"][m]["linear"] else "no" for m in MODES)))
nb.show_table(step_rows, ["M", "stretch (VM instr)", *(f"{m} cycles/added round trip"
                                                        for m in MODES)],
              OUT, "table-marginal", align="lr" + "l" * len(MODES))

# %% [markdown]
# ## Whole programs: the JIT modes against the tail-call interpreter
#
# Traces are compiled during the first runs of each worker, and a rarely hot
# loop can reach its threshold many runs later (`bf/nested.bf` here still
# compiles a trace in its twentieth run), so every worker warms up 25 runs
# before it measures; the median of the measured runs is robust to a late
# compile in one of them.  Ratios are time / time(`tailcall`), < 1 faster.

# %%
paths = [nb.workload(w)[0] for w in PROGRAMS]
popts = harness.Options(processes=3 if QUICK else 5, warmup=25, samples=10)
whole = nb.measure(programs.configs_for(paths, CC), OUT / "programs.json", popts)
prog_records = programs.ratios(whole, paths, CC)
prog_rows = [(r["workload"], r["mode"], f"{r['cycles_per_instr']:.3f}",
              f"{r['vs_tailcall']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]", r["verdict"])
             for r in prog_records]
nb.show_table(prog_rows, ["workload", "mode", "cycles/VM instr", "vs tailcall [95% CI]",
                          "verdict"], OUT, "table-programs", align="llrll")

# %% [markdown]
# ## Figure
#
# Top left: cycles per iteration against round trips per iteration, each
# point a median with its interval, each line the least-squares fit whose
# slope is the round trip (band: 95% of the bootstrap fits; dashed where the
# mode is not linear, so no slope stands for it).  Top right: the marginal
# cost per added round trip between neighbouring M, against the stretch
# length.  Bottom left: round trips (the steps, for a mode that is not
# linear) next to the floors and one dispatch.  Bottom right: whole programs
# against `tailcall`.

# %%
COLOURS = {"jit-shim": "tab:red", "jit-direct": "tab:blue", "jit-direct-handler": "tab:green",
           "jit-table": "tab:purple", "jit-direct-sites": "tab:orange"}
fig, ((ax1, ax2), (ax3, ax4)) = plt.subplots(2, 2, figsize=(13, 9))
x = np.asarray(ms, float)
grid = np.linspace(0, x.max() * 1.03, 50)
for mode, r in a["modes"].items():
    c = COLOURS[mode]
    est = r["per_iteration_ci"]
    y = np.array([e.value for e in est])
    ax1.errorbar(x, y, yerr=[y - [e.lo for e in est], [e.hi for e in est] - y], fmt="o",
                 color=c, capsize=3, markersize=4)
    line, lo, hi = stats.fit_band(x, est, grid)
    ax1.plot(grid, line, color=c, linestyle="-" if r["linear"] else "--",
             label=f"{mode}: {r['round_trip'].fmt(1)} cycles/round trip" if r["linear"]
             else f"{mode}: {transitions.NOT_LINEAR}")
    ax1.fill_between(grid, lo, hi, color=c, alpha=0.15)
ax1.set_xlabel("round trips per iteration, M (same work at every M)")
ax1.set_ylabel("TSC cycles per iteration")
ax1.set_title("cost against crossings: the slope is one round trip", loc="left", fontsize="medium")
ax1.legend(fontsize=8)
ax1.grid(alpha=0.3)

stretch = np.array([SIZE["j"] / m for m in ms[1:]])
for j, (mode, st) in enumerate(steps.items()):
    v = np.array([e.value for e in st])
    offset = 2 ** ((j - 1) * 0.06)                   # side by side on the log axis
    ax2.errorbar(stretch * offset, v, yerr=[v - [e.lo for e in st], [e.hi for e in st] - v],
                 fmt="o-", color=COLOURS[mode], capsize=3, markersize=4, label=mode)
ax2.axhline(a["dispatch"].value, color="gray", linestyle=":",
            label=f"one dispatch ({a['dispatch'].value:.2f})")
ax2.set_xscale("log", base=2)
ax2.invert_xaxis()
ax2.set_xticks(stretch)
ax2.set_xticklabels([f"{s:g}\n(M {ms[k]}→{ms[k + 1]})" for k, s in enumerate(stretch)], fontsize=7)
ax2.set_xlabel("VM instructions per trace stretch (shorter: crossings closer together)")
ax2.set_ylabel("cycles per added round trip")
ax2.set_title("marginal cost between consecutive M", loc="left", fontsize="medium")
ax2.legend(fontsize=8)
ax2.grid(alpha=0.3)

bars = [(transitions.FLOOR_TEXT[f], e, "tab:gray") for f, e in a["floors"].items()]
bars.append(("one interpreter dispatch", a["dispatch"], "black"))
for m, r in a["modes"].items():
    if r["linear"]:
        bars.append((f"round trip: {m}", r["round_trip"], COLOURS[m]))
    else:
        bars += [(f"{m}, step M {ms[k]}→{ms[k + 1]}", e, COLOURS[m])
                 for k, e in enumerate(r["steps"])]
yy = np.arange(len(bars))
vals = np.array([e.value for _, e, _ in bars])
ax3.barh(yy, vals, xerr=[vals - [e.lo for _, e, _ in bars], [e.hi for _, e, _ in bars] - vals],
         color=[c for _, _, c in bars], capsize=3)
ax3.set_yticks(yy)
ax3.set_yticklabels([t for t, _, _ in bars], fontsize=8)
ax3.invert_yaxis()
ax3.set_xlabel("TSC cycles [95% CI]")
ax3.set_title("round trips next to the floors", loc="left", fontsize="medium")
ax3.grid(axis="x", alpha=0.3)

names = list(dict.fromkeys(r["workload"] for r in prog_records))
jit_modes = [m for m in programs.MODES if m != "tailcall"]
w = 0.8 / len(jit_modes)
for j, mode in enumerate(jit_modes):
    sel = {r["workload"]: r for r in prog_records if r["mode"] == mode}
    v = np.array([sel[n]["vs_tailcall"] if n in sel else np.nan for n in names])
    err = [[v[i] - sel[n]["ci95"][0] if n in sel else 0 for i, n in enumerate(names)],
           [sel[n]["ci95"][1] - v[i] if n in sel else 0 for i, n in enumerate(names)]]
    ax4.bar(np.arange(len(names)) + (j - (len(jit_modes) - 1) / 2) * w, v, w, yerr=err,
            capsize=3, color=COLOURS[mode], label=mode)
ax4.axhline(1.0, color="black", linewidth=0.8)
ax4.set_xticks(np.arange(len(names)))
ax4.set_xticklabels(names, fontsize=8)
ax4.set_ylabel("time / time(tailcall)")
ax4.set_title("whole programs (< 1: faster than the tail-call interpreter)", loc="left",
              fontsize="medium")
ax4.legend(fontsize=8)
ax4.grid(axis="y", alpha=0.3)
fig.suptitle(f"Shim vs direct ({CC}, sweep size {SIZE_NAME})" + (" — quick run" if QUICK else ""))
fig.tight_layout()
nb.save_figure(fig, OUT, NAME)

# %% [markdown]
# ## What this run says

# %%
findings = [transitions.reading(a)]
for mode, st in steps.items():
    parts = ", ".join(f"{e.fmt(1)} (M {ms[k]}->{ms[k + 1]})" for k, e in enumerate(st))
    findings.append(f"{mode}: cycles per added round trip, from long stretches to short: {parts}")
    r = a["modes"][mode]
    if not r["linear"]:
        pairs = ", ".join(f"M {p[0]}->{p[1]} and {q[0]}->{q[1]}" for p, q in r["unequal_steps"])
        findings.append(f"  {mode}: not linear, the round trip is not one constant cost: the "
                        f"steps {pairs} differ beyond their intervals")
findings += [f"anomaly: {x}" for x in a["anomalies"]] or ["anomalies: none"]
for r in prog_records:
    if r["mode"] != "tailcall":
        findings.append(f"{r['workload']} {r['mode']}: {r['vs_tailcall']:.3f}x the time of "
                        f"tailcall [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] ({r['verdict']})")
print("\n".join(findings))
nb.save_json({"notebook": NAME, "quick": QUICK, "compiler": CC, "size": SIZE_NAME,
              "transitions": transitions.to_json(a),
              "programs": prog_records, "findings": findings}, OUT)
