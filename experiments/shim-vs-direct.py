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
# The same (empty) traces entered and left in every way the lab has:
# `jit-shim` (an ordinary C call into a shim that saves the callee-saved
# registers; the trace returns to it), `jit-shim-args` (the same, the cached
# values passed through the shim's C signature), `jit-direct` (the
# interpreter tail-calls the trace through `ENTER_JIT`'s one indirect jump,
# the exit jumps through the dispatch table), `jit-direct-handler` (the exit
# jumps straight to the handler), `jit-direct-sites` (each trace entered by
# an `ENTER_JIT` copy of its own), `jit-table` (the interpreter's dispatch
# lands in the trace) and `jit-trampoline` (traces in another register
# order, a stub moving every register each way).
#
# **The paired design** (`bench/roundtrip.py`, what `shimlab bench
# transitions` runs): a loop of M segments, each a NOP and k interpreted
# instructions; with a trace at every NOP each segment crosses into JIT code
# and back, and its null crossing is the same bytecode with no trace (the
# NOP interpreted).  One worker process runs both, interleaved, on one build
# and code layout: the round trip is (T_jit - T_null) / M with a paired
# bootstrap interval.  One factor moves at a time: the density M, the
# interpreted stretch k (full run), one trace entered M times (full run),
# and the code layout (each build's code shifted).
#
# **The old anomaly** (the README before: the shim's 47 extra instructions
# came out *cheaper* than a direct crossing): the design before (`--design
# sweep`, a slope over M of programs that are not the same program, each
# crossing its own binary) is run again here over code layouts, next to the
# null programs of every build, to see where that came from.
#
# **Whole programs** (`bench/programs.py`): BF and minipy programs under
# `tailcall` and the JIT modes, time relative to `tailcall`.
#
# Run: `shimlab reproduce shim-vs-direct [--quick]`; outputs in
# `experiments/out/shim-vs-direct/`.  Timing goes through the harness; every
# number is a ratio or a difference from one run, with a 95% bootstrap
# interval, and the CPU is named with it.

# %%
import sys

import matplotlib.pyplot as plt
import numpy as np

from shimlab.bench import harness, programs, roundtrip, stats, transitions
from shimlab import notebook as nb

NAME = "shim-vs-direct"
QUICK = nb.quick()
OUT = nb.out_dir(NAME)
SIZE_NAME = "quick" if QUICK else "full"
SIZE = dict(roundtrip.SIZES[SIZE_NAME], jit_opt=0)
# exact machine instructions per round trip come from one batched callgrind
# run: in the full run only, the quick one stays short
COUNT = not QUICK
PROGRAMS = programs.WORKLOADS["quick" if QUICK else "full"]
MODES = roundtrip.MODES
ccs = nb.compilers(mode="jit-direct")
if not ccs:
    sys.exit("no compiler here builds the JIT modes (they need preserve_none: apt-get install clang-19)")
CC = ccs[0].name
print(f"quick={QUICK}; compiler {CC}; size {SIZE_NAME!r}: base {SIZE['base'].label()}, "
      f"M = {SIZE['ms']}, k = {SIZE['ks'] or '-'}, {SIZE['n']} iterations, "
      f"{SIZE['code_layouts']} code layouts; programs: {', '.join(PROGRAMS)}")

# %% [markdown]
# ## The paired benchmark
#
# The size's own worker processes and samples (`roundtrip.SIZES`), so the
# numbers are those `shimlab bench transitions --size SIZE` prints.

# %%
procs, warmup, samples = SIZE["runs"]
paired = nb.measure(roundtrip.configs_for(SIZE, CC), OUT / "transitions.json",
                    harness.Options(processes=procs, warmup=warmup, samples=samples,
                                    count_instructions=COUNT, count_events=True,
                                    code_layouts=SIZE["code_layouts"]))
a = roundtrip.analyze(paired, SIZE, CC)
ms0 = a["cache"][0]
roundtrip.report(a)

# %% [markdown]
# ## Table: the shim against the direct crossing, one factor at a time
#
# `shim - direct` at every point measured, and at the base point per code
# layout.  Where the density changes the cost, it changes it for both.

# %%
pts = list(ms0["jit-shim"]["points"])
rows = [(p.label(), ms0["jit-shim"]["points"][p]["round_trip"].fmt(1),
         ms0["jit-direct"]["points"][p]["round_trip"].fmt(1),
         ms0["jit-shim"]["vs_direct"][p].fmt(1)) for p in pts]
HP = roundtrip.headline_point(a)      # where the verdict is read (one trace, if measured)
rows += [(f"{HP.label()}, code layout {lay}",
          ms0["jit-shim"]["points"][HP]["layouts"][lay].fmt(1),
          ms0["jit-direct"]["points"][HP]["layouts"][lay].fmt(1), e.fmt(1))
         for lay, e in ms0["jit-shim"]["vs_direct_layouts"][HP].items()]
nb.show_table(rows, ["point", "jit-shim", "jit-direct", "shim - direct"], OUT,
              "table-shim-vs-direct", align="llll")

# %% [markdown]
# ## The old anomaly: the design before, over code layouts
#
# The sweep (`--design sweep`) of `jit-shim` and `jit-direct`, each build at
# three code layouts: its per-layout round trips and their difference.  And
# the null program of the paired run, the same bytecode with no crossing,
# on every crossing's build: how far the builds differ with no crossing.

# %%
SWEEP = dict(transitions.SIZES["quick"], jit_opt=0)
sweep_modes = ("jit-shim", "jit-direct")
sprocs, swarm, ssamples = SWEEP["runs"]
sweep = nb.measure(transitions.configs_for(SWEEP, CC, sweep_modes), OUT / "sweep.json",
                   harness.Options(processes=max(sprocs, 6 if QUICK else 9), warmup=swarm,
                                   samples=ssamples, code_layouts=3))
old = transitions.analyze(sweep, SWEEP, CC, sweep_modes)
per_layout = transitions.per_layout(sweep, SWEEP, CC, sweep_modes)
old_rows = [("all layouts", transitions.fit_text(old["modes"]["jit-shim"]),
             transitions.fit_text(old["modes"]["jit-direct"]),
             stats.difference(old["modes"]["jit-shim"]["round_trip"],
                              old["modes"]["jit-direct"]["round_trip"]).fmt(1))]
old_rows += [(f"layout {lay}", transitions.fit_text(x["modes"]["jit-shim"]),
              transitions.fit_text(x["modes"]["jit-direct"]),
              stats.difference(x["modes"]["jit-shim"]["round_trip"],
                               x["modes"]["jit-direct"]["round_trip"]).fmt(1))
             for lay, x in per_layout.items()]
nb.show_table(old_rows, ["sweep (M = 4..32)", "jit-shim slope", "jit-direct slope",
                         "shim - direct"], OUT, "table-old-sweep", align="llll")
nulls = {mode: r["base"]["null"] for mode, r in ms0.items()}
spread = max(e.value for e in nulls.values()) / min(e.value for e in nulls.values()) - 1
nb.show_table([(m, e.fmt(1)) for m, e in nulls.items()],
              ["build", "null program, cycles/iteration"], OUT, "table-nulls", align="ll")
print(f"the same bytecode with no crossing: the builds differ by up to {100 * spread:.0f}%")

# %% [markdown]
# ## Figure
#
# Left: cycles per round trip against M crossings per iteration, every
# crossing, paired intervals.  Right: shim minus direct at every point and
# code layout (paired design), and per code layout in the old sweep.

# %%
COLOURS = {"jit-shim": "tab:red", "jit-shim-args": "tab:pink", "jit-direct": "tab:blue",
           "jit-direct-handler": "tab:green", "jit-table": "tab:purple",
           "jit-direct-sites": "tab:orange", "jit-trampoline": "tab:brown"}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
dens = sorted((p for p in pts if p.k == SIZE["base"].k and not p.traces), key=lambda p: p.m)
for j, (mode, r) in enumerate(ms0.items()):
    x = np.array([p.m for p in dens], float) * 2 ** ((j - 3) * 0.03)
    e = [r["points"][p]["round_trip"] for p in dens]
    y = np.array([v.value for v in e])
    ax1.errorbar(x, y, yerr=[y - [v.lo for v in e], [v.hi for v in e] - y], fmt="o-",
                 color=COLOURS.get(mode), capsize=3, markersize=4, label=mode)
ax1.axhline(0, color="black", linewidth=0.8)
ax1.set_xscale("log", base=2)
ax1.set_xticks([p.m for p in dens])
ax1.set_xticklabels([str(p.m) for p in dens])
ax1.set_xlabel(f"M: crossings (and traces) per iteration, k = {SIZE['base'].k}")
ax1.set_ylabel("cycles per round trip [95% CI]")
ax1.set_title("a round trip against the null crossing", loc="left", fontsize="medium")
ax1.legend(fontsize=7)
ax1.grid(alpha=0.3)
labels, vals = [], []
for p in pts:
    labels.append(f"paired {p.label()}")
    vals.append(ms0["jit-shim"]["vs_direct"][p])
for lay, e in ms0["jit-shim"]["vs_direct_layouts"][HP].items():
    labels.append(f"paired {HP.label()}, layout {lay}")
    vals.append(e)
for lay, x in per_layout.items():
    labels.append(f"old sweep, layout {lay}")
    vals.append(stats.difference(x["modes"]["jit-shim"]["round_trip"],
                                 x["modes"]["jit-direct"]["round_trip"]))
yy = np.arange(len(vals))
v = np.array([e.value for e in vals])
ax2.barh(yy, v, xerr=[v - [e.lo for e in vals], [e.hi for e in vals] - v], capsize=3,
         color=["tab:red" if lab.startswith("paired") else "tab:gray" for lab in labels])
ax2.axvline(0, color="black", linewidth=0.8)
ax2.set_yticks(yy)
ax2.set_yticklabels(labels, fontsize=7)
ax2.invert_yaxis()
ax2.set_xlabel("jit-shim minus jit-direct, cycles per round trip [95% CI]")
ax2.set_title("the shim's price, paired and in the old sweep", loc="left", fontsize="medium")
ax2.grid(axis="x", alpha=0.3)
fig.suptitle(f"Shim vs direct on {a['cpu']['name']} ({CC}, size {SIZE_NAME})"
             + (" — quick run" if QUICK else ""), fontsize="medium")
fig.tight_layout()
nb.save_figure(fig, OUT, NAME)

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
# ## What this run says

# %%
findings = [roundtrip.verdict(a), roundtrip.verdict(a, shim="jit-shim-args")]
for mode, r in ms0.items():
    d = r.get("density")
    if d and not d["linear"]:
        at = ", ".join(f"M={p.m}: {r['points'][p]['round_trip'].fmt(1)}" for p in dens)
        findings.append(f"{mode}: not linear in the density, the round trip is not one cost "
                        f"at every M: {at}")
findings.append(f"null programs: the same bytecode with no crossing differs by up to "
                f"{100 * spread:.0f}% between the builds")
for lay, x in per_layout.items():
    findings.append(f"old sweep, code layout {lay}: shim minus direct "
                    + stats.difference(x["modes"]["jit-shim"]["round_trip"],
                                       x["modes"]["jit-direct"]["round_trip"]).fmt(1))
findings += [f"anomaly: {x}" for x in a["anomalies"]] or ["anomalies: none"]
for r in prog_records:
    if r["mode"] != "tailcall":
        findings.append(f"{r['workload']} {r['mode']}: {r['vs_tailcall']:.3f}x the time of "
                        f"tailcall [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] ({r['verdict']})")
print("\n".join(findings))
nb.save_json({"notebook": NAME, "quick": QUICK, "compiler": CC, "size": SIZE_NAME,
              "cpu": a["cpu"], "transitions": roundtrip.to_json(a),
              "old_sweep": {str(lay): transitions.to_json(x) for lay, x in per_layout.items()},
              "nulls": {m: [e.value, e.lo, e.hi] for m, e in nulls.items()},
              "programs": prog_records, "findings": findings}, OUT)
