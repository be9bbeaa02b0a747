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
# # Per-opcode profile: where the time goes per VM instruction in the tail-call interpreter
#
# In the tail-call interpreter every handler is its own function
# (`sl_op_NAME`), so an ordinary per-function profile is a per-opcode
# profile.  For a BF and a minipy workload this notebook puts three views side
# by side:
#
# * **executed**: how often each VM instruction ran (a counting build);
# * **instructions**: machine instructions executed inside each handler,
#   exact and deterministic, from `valgrind --tool=callgrind` (builds carry
#   `-gdwarf-4` so valgrind 3.19 reads them);
# * **time**: `perf record -e cpu-clock` samples per handler, where the
#   kernel allows it.  This machine has no hardware counters, but cpu-clock is
#   a software event; the notebook probes and says which it could use.
#
# A handler whose share of time is larger than its share of instructions is
# where the machine stalls (mispredicted dispatch, memory).
#
# Run: `shimlab reproduce per-opcode-profile [--quick]`; outputs in
# `experiments/out/per-opcode-profile/`.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

from shimlab import build, isa, isolate, vm
from shimlab.bench import hotspots
from shimlab.frontend import load_program
from shimlab import notebook as nb

NAME = "per-opcode-profile"
QUICK = nb.quick()
OUT = nb.out_dir(NAME)
WORKLOADS = (["bf/nested.bf", "minipy/nested_loops.py"] if QUICK else
             ["bf/nested.bf", "bf/squares.bf", "minipy/nested_loops.py", "minipy/sieve.py"])
PERF_SECONDS = 0.3 if QUICK else 3.0      # interpreter time sampled per workload
TOP = 10                                  # handlers shown in the figure
OPCODES = {ins.name for ins in isa.INSTRUCTIONS}
ccs = nb.compilers(mode="tailcall")
ccs = ccs[:1] if QUICK else ccs
if not ccs:
    raise SystemExit("no compiler here builds the tailcall interpreter (apt-get install clang-19)")
perf_ok, perf_why = hotspots.perf_available()
print(f"quick={QUICK}; compilers: {', '.join(c.name for c in ccs)}; workloads: "
      f"{', '.join(WORKLOADS)}\nperf: {perf_why}")

# %% [markdown]
# ## Profile each workload

# %%
def executed(cc, path, inp):
    """VM instructions executed, by opcode name (a counting build, in a child)."""
    b = build.build("tailcall", cc, count=True)
    program = load_program(path)
    data = open(inp, "rb").read() if inp else b""
    result = isolate.call(f"counting {path}", vm.run, b, program, data)
    return {ins.name: n for ins, n in zip(isa.INSTRUCTIONS, result.counts) if n}


def wilson(k, n, z=1.96):
    """95% Wilson interval of a sampled share k/n."""
    if n == 0:
        return 0.0, 0.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


profiles = []
for cc in ccs:
    for w in WORKLOADS:
        path, inp = nb.workload(w)
        job = {"mode": "tailcall", "cc": cc.name, "program": path, "input": inp}
        counts = executed(cc.name, path, inp)
        ir = hotspots.by_handler(hotspots.callgrind_functions(job))
        samples = {}
        if perf_ok:
            # enough runs for about PERF_SECONDS of interpreter time (~1.5 ns
            # per VM instruction here is a rough guess; only the sample count
            # depends on it, never a result)
            runs = int(min(5000, max(5, PERF_SECONDS / (sum(counts.values()) * 1.5e-9))))
            samples = hotspots.by_handler(
                hotspots.perf_functions({**job, "warmup": 1, "samples": runs}))
        profiles.append({"compiler": cc.name, "workload": w, "executed": counts,
                         "instructions": dict(ir), "samples": dict(samples)})
        print(f"{cc.name} {w}: {sum(counts.values()):,} VM instructions, "
              f"{sum(ir.values()):,} machine instructions, "
              f"{sum(samples.values())} cpu-clock samples")

# %% [markdown]
# ## Table: share per handler
#
# `executed`: share of VM instructions; `instructions`: share of the machine
# instructions executed in the interpreter (callgrind), with the instructions
# per execution of the handler; `time`: share of cpu-clock samples in the
# interpreter with a 95% (Wilson) interval.  Functions that are not handlers
# (helpers such as `sl_print_int()`) have rows of their own.  Sorted by time
# where there are samples, else by instructions.

# %%
def shares(p):
    """One row per handler (and per helper function, named "name()")."""
    n_exec = sum(p["executed"].values())
    n_ir = sum(p["instructions"].values())
    n_s = sum(p["samples"].values())
    by = "samples" if n_s else "instructions"
    names = sorted(set(p["executed"]) | set(p["instructions"]) | set(p["samples"]),
                   key=lambda h: -p[by].get(h, 0))
    rows = []
    for h in names:
        e, i, s = p["executed"].get(h, 0), p["instructions"].get(h, 0), p["samples"].get(h, 0)
        handler = h in OPCODES     # helpers have no executions of their own
        rows.append({"handler": h, "executed": e / n_exec if handler else None,
                     "instructions": i / n_ir,
                     "instructions_per_execution": i / e if e else None,
                     "time": s / n_s if n_s else None,
                     "time_ci": wilson(s, n_s) if n_s else None})
    return rows


def pct(x):
    return "" if x is None else f"{100 * x:.1f}%"


for p in profiles:
    p["shares"] = shares(p)
    rows = [(r["handler"], pct(r["executed"]), pct(r["instructions"]),
             "" if r["instructions_per_execution"] is None else f"{r['instructions_per_execution']:.1f}",
             pct(r["time"]),
             "" if r["time_ci"] is None else f"[{100 * r['time_ci'][0]:.1f}, {100 * r['time_ci'][1]:.1f}]")
            for r in p["shares"]]
    print(f"\n{p['workload']} ({p['compiler']}, tailcall)")
    stem = p["workload"].replace("/", "-").rsplit(".", 1)[0]
    nb.show_table(rows, ["handler", "executed", "instructions", "instr/exec", "time", "95% CI"],
                  OUT, f"table-{p['compiler']}-{stem}", align="lrrrrl")

# %% [markdown]
# ## Figure: share per handler, three views

# %%
fig, axes = plt.subplots(1, len(profiles), figsize=(6.5 * len(profiles), 5), squeeze=False)
for ax, p in zip(axes[0], profiles):
    top = p["shares"][:TOP]
    y = np.arange(len(top))
    h = 0.27
    ax.barh(y - h, [100 * (r["executed"] or 0) for r in top], h, label="executed (VM instructions)",
            color="tab:gray")
    ax.barh(y, [100 * r["instructions"] for r in top], h,
            label="machine instructions (callgrind)", color="tab:blue")
    if p["samples"]:
        t = [100 * r["time"] for r in top]
        err = [[t[i] - 100 * r["time_ci"][0] for i, r in enumerate(top)],
               [100 * r["time_ci"][1] - t[i] for i, r in enumerate(top)]]
        ax.barh(y + h, t, h, xerr=err, capsize=2, label="time (perf cpu-clock samples)",
                color="tab:orange")
    ax.set_yticks(y)
    ax.set_yticklabels([r["handler"] for r in top], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("share of the interpreter, %")
    ax.set_title(f"{p['workload']} — tailcall, {p['compiler']}", loc="left", fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
fig.suptitle("Per-opcode profile" + (" — quick run" if QUICK else "")
             + ("" if perf_ok else f" (no time samples: {perf_why})"))
fig.tight_layout()
nb.save_figure(fig, OUT, "per-opcode-profile")

# %% [markdown]
# ## JIT traces: not measured here yet
#
# **Placeholder, clearly not a result.**  Once the JIT lands (another part of
# the project), its traces will be named to `perf` through a perf map
# (`/tmp/perf-PID.map`), so a profile like the one above can put time spent in
# JIT code next to the handlers.  That naming is being written elsewhere; this
# notebook measures only the interpreter, and this section will be filled in
# when the perf map exists.

# %% [markdown]
# ## What this run says

# %%
findings = []
for p in profiles:
    top = p["shares"][0]
    line = (f"{p['workload']} ({p['compiler']}): {top['handler']} is {pct(top['executed'])} of "
            f"VM instructions, {pct(top['instructions'])} of machine instructions")
    if top["time"] is not None:
        line += f", {pct(top['time'])} of time samples"
    findings.append(line)
    if p["samples"]:
        gaps = sorted((r for r in p["shares"] if r["time"] is not None and r["executed"]),
                      key=lambda r: r["instructions"] - r["time"])
        g = gaps[0]
        findings.append(f"  largest excess of time over instructions: {g['handler']} "
                        f"({pct(g['time'])} of time, {pct(g['instructions'])} of instructions)")
print("\n".join(findings))
nb.save_json({"notebook": NAME, "quick": QUICK, "workloads": WORKLOADS, "perf": perf_why,
              "profiles": profiles, "findings": findings}, OUT)
