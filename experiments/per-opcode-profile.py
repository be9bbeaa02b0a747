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
# # Per-opcode profile: where the time goes per VM instruction in the tail-call interpreter, and per stencil in JIT traces
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
# Then the same for a JIT run: a BF program under `jit-direct`, its time split
# between the stencils of its traces (named to perf through the JIT's perf
# map) and the interpreter's handlers, in steady state.
#
# Run: `shimlab reproduce per-opcode-profile [--quick]`; outputs in
# `experiments/out/per-opcode-profile/`.

# %%
import math
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

from shimlab import isa, isolate, vm
from shimlab.interp import build
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
# ## JIT traces, named through the perf map
#
# The same question for a JIT run: a BF program under `jit-direct`, whose
# hot loops run as traces of stencils.  JIT code has no symbols, so the JIT
# writes `/tmp/perf-PID.map` (`shimlab run --perf-map`, or
# `jit={"perf_map": True}`), one line per stencil of each trace
# (`shimlab:traceN:STENCIL@pcX`) and per exit slot; a sample there is named
# by the innermost line that holds it.  Samples in the interpreter's shared
# object are handlers, as above.
#
# Steady state only: the profiled process runs the program until 20 runs in
# a row record nothing new, then the measured runs, and only samples stamped
# (`perf record -k CLOCK_MONOTONIC`) between their start and end count, so
# recording and compiling traces in Python during warm-up stay out.  A loop
# that only gets hot later still compiles inside the window: that Python time
# is counted as "other", reported, and left out of the shares.
#
# Without perf the fallback is callgrind, which counts JIT code's machine
# instructions exactly but cannot name it (an unnamed object, `???`): one bar
# for all JIT code, instructions instead of time.

# %%
JIT_WORKLOADS = ["bf/nested.bf"] if QUICK else ["bf/nested.bf", "bf/squares.bf", "bf/heavy.bf"]
jit_ccs = nb.compilers(mode="jit-direct")[:1]
jit_profiles = []
for cc in jit_ccs:
    for w in JIT_WORKLOADS:
        path, inp = nb.workload(w)
        n = sum(executed(cc.name, path, inp).values())
        # traces run a VM instruction in well under a nanosecond here (a rough
        # guess that only sets how many runs give about PERF_SECONDS of samples)
        runs = int(min(20000, max(5, PERF_SECONDS / (n * 0.3e-9))))
        job = {"mode": "jit-direct", "cc": cc.name, "program": path, "input": inp,
               "samples": runs, "quiet_runs": 20}
        if perf_ok:
            prof = hotspots.jit_perf_profile(job)
            unit = "cpu-clock samples"
        else:
            prof = hotspots.jit_callgrind_profile({**job, "samples": 5})
            unit = "machine instructions (callgrind; JIT code unnamed)"
        jit_profiles.append({"compiler": cc.name, "workload": w, "unit": unit,
                             "sampled": perf_ok, **prof})
        print(f"{cc.name} {w} jit-direct: {prof['run']['warmup_runs']} warm-up runs, "
              f"{prof['run']['traces']} traces, {prof['run']['recordings_measured']} recorded "
              f"while measured; {sum(prof['jit'].values()):,} {unit} in JIT code, "
              f"{sum(prof['interpreter'].values()):,} in the interpreter"
              + (f", {prof['other']} elsewhere (Python, libc, kernel)" if "other" in prof else ""))
if not jit_ccs:
    print("no compiler here builds the JIT modes: this section is empty")

# %% [markdown]
# ### Table: JIT code by stencil and interpreter handlers, side by side
#
# A stencil's row sums it over every trace; `exit` is the exit slots (the
# crossing back: set ip, jump through the dispatch table); `ENTER_JIT` is the
# interpreter's side of the crossing in.  Shares are of the samples in JIT
# code and the interpreter together, with 95% (Wilson) intervals for
# samples; callgrind's counts are exact, so they have none.

# %%
def share_ci(p, k, n):
    """Wilson interval for sampled shares; exact counts (callgrind) have none."""
    return wilson(k, n) if p["sampled"] else (k / n, k / n)


def jit_rows(p):
    """One row per stencil (summed over traces) and per interpreter function."""
    where = Counter()
    kind = {}
    for name, k in p["jit"].items():
        stencil = "JIT code (unnamed)" if name == "???" else hotspots.split_jit_name(name)[1]
        where[stencil] += k
        kind[stencil] = "exit" if stencil == "exit" else "JIT"
    for name, k in hotspots.by_handler(p["interpreter"]).items():
        label = f"{name} (interp)" if name in where else name
        where[label] += k
        kind[label] = "interpreter"
    total = sum(where.values())
    return [{"where": h, "kind": kind[h], "share": k / total, "ci": share_ci(p, k, total), "n": k}
            for h, k in where.most_common()], total


def per_trace(p):
    """Share of each trace (its stencils and exits) of JIT code and interpreter together."""
    traces = Counter()
    for name, k in p["jit"].items():
        if name != "???":
            traces[hotspots.split_jit_name(name)[0]] += k
    total = sum(p["jit"].values()) + sum(p["interpreter"].values())
    return [{"trace": t, "header_pc": p.get("traces", {}).get(t), "share": k / total,
             "ci": share_ci(p, k, total)} for t, k in traces.most_common()]


for p in jit_profiles:
    p["rows"], p["total"] = jit_rows(p)
    p["per_trace"] = per_trace(p)
    stem = p["workload"].replace("/", "-").rsplit(".", 1)[0]
    print(f"\n{p['workload']} ({p['compiler']}, jit-direct): {p['unit']}")
    nb.show_table([(r["where"], r["kind"], pct(r["share"]),
                    f"[{100 * r['ci'][0]:.1f}, {100 * r['ci'][1]:.1f}]" if p["sampled"] else "exact")
                   for r in p["rows"]],
                  ["stencil or handler", "where", "share", "95% CI"], OUT,
                  f"table-jit-{p['compiler']}-{stem}", align="llrl")
    if p["per_trace"]:
        nb.show_table([(f"trace {t['trace']}", "" if t["header_pc"] is None else t["header_pc"],
                        pct(t["share"]), f"[{100 * t['ci'][0]:.1f}, {100 * t['ci'][1]:.1f}]")
                       for t in p["per_trace"][:TOP]],
                      ["trace", "loop header pc", "share", "95% CI"], OUT,
                      f"table-jit-traces-{p['compiler']}-{stem}", align="lrrl")

# %% [markdown]
# ### Figure: where a JIT run's time goes
#
# Left: stencils (summed over traces), exit slots and interpreter handlers,
# by share.  Right: the traces that take the most, next to the interpreter.

# %%
KIND_COLOUR = {"JIT": "tab:orange", "exit": "tab:red", "interpreter": "tab:blue"}
if jit_profiles:
    fig, axes = plt.subplots(len(jit_profiles), 2, figsize=(13, 4.5 * len(jit_profiles)),
                             squeeze=False)
    for (ax1, ax2), p in zip(axes, jit_profiles):
        top = p["rows"][:TOP + 4]
        y = np.arange(len(top))
        v = np.array([100 * r["share"] for r in top])
        ax1.barh(y, v, xerr=[v - [100 * r["ci"][0] for r in top], [100 * r["ci"][1] for r in top] - v],
                 capsize=2, color=[KIND_COLOUR[r["kind"]] for r in top])
        ax1.set_yticks(y)
        ax1.set_yticklabels([r["where"] for r in top], fontsize=8)
        ax1.invert_yaxis()
        ax1.set_xlabel(f"share of JIT code + interpreter, % ({p['unit']})")
        ax1.set_title(f"{p['workload']} — jit-direct, {p['compiler']}: by stencil / handler",
                      loc="left", fontsize="medium")
        ax1.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in KIND_COLOUR.values()],
                   labels=["JIT stencil", "JIT exit slot", "interpreter"], fontsize=7,
                   loc="lower right")
        ax1.grid(axis="x", alpha=0.3)
        tr = p["per_trace"][:TOP]
        interp = sum(r["n"] for r in p["rows"] if r["kind"] == "interpreter")
        labels = [f"trace {t['trace']} (loop at pc {t['header_pc']})" for t in tr] + ["interpreter"]
        vals = [100 * t["share"] for t in tr] + [100 * interp / p["total"]]
        cis = [t["ci"] for t in tr] + [share_ci(p, interp, p["total"])]
        y = np.arange(len(labels))
        ax2.barh(y, vals, xerr=[[vals[i] - 100 * c[0] for i, c in enumerate(cis)],
                                [100 * c[1] - vals[i] for i, c in enumerate(cis)]], capsize=2,
                 color=["tab:orange"] * len(tr) + ["tab:blue"])
        ax2.set_yticks(y)
        ax2.set_yticklabels(labels, fontsize=8)
        ax2.invert_yaxis()
        ax2.set_xlabel("share, %")
        ax2.set_title("by trace" if tr else "by trace (callgrind cannot name traces)",
                      loc="left", fontsize="medium")
        ax2.grid(axis="x", alpha=0.3)
    fig.suptitle("JIT run profile, steady state" + (" — quick run" if QUICK else ""))
    fig.tight_layout()
    nb.save_figure(fig, OUT, "per-opcode-profile-jit")

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
for p in jit_profiles:
    jit = sum(r["share"] for r in p["rows"] if r["kind"] != "interpreter")
    first = p["rows"][0]
    findings.append(f"{p['workload']} under jit-direct ({p['compiler']}, {p['unit']}): "
                    f"{pct(jit)} in JIT code, {pct(1 - jit)} in the interpreter; the largest "
                    f"share is {first['where']} ({first['kind']}, {pct(first['share'])})"
                    + (f"; {p['run']['recordings_measured']} recording(s) fell in the measured "
                       "runs" if p["run"]["recordings_measured"] else ""))
print("\n".join(findings))
nb.save_json({"notebook": NAME, "quick": QUICK, "workloads": WORKLOADS, "perf": perf_why,
              "profiles": profiles,
              "jit_profiles": [{"compiler": p["compiler"], "workload": p["workload"],
                                "mode": "jit-direct", "unit": p["unit"], "run": p["run"],
                                "other": p.get("other"), "rows": p["rows"],
                                "per_trace": p["per_trace"], "jit": dict(p["jit"]),
                                "interpreter": dict(p["interpreter"])} for p in jit_profiles],
              "findings": findings}, OUT)
