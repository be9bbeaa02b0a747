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
# # Cached state: what a round trip costs when K operand-stack values live in registers
#
# With `--cache K` the tail-call interpreter keeps the operand stack's top K
# values in registers (K more `preserve_none` arguments, generated per K
# from `isa.py`).  At `--jit-opt` 2 the traces keep them too: a trace is
# entered with them in the handlers' registers and leaves with them there
# (`jit/fuse.py`), so the direct crossings carry them as they are.  The shim
# cannot: `jit-shim`'s `ENTER_JIT` spills them to the memory stack before its
# C call and reloads them after (`csrc/crossing.h`); `jit-shim-args` passes
# them as the shim's C arguments (past the sixth, the C stack) into the
# trace's registers, and its exits spill them for `ENTER_JIT` to reload (a C
# function returns one value).  `jit-trampoline` runs traces built for
# another register order, so a stub moves every value each way.  The
# question of issue 14: how does a round trip's cost grow with K for each
# crossing, from which K on does the C shim cost more than a direct
# crossing, and what does the trampoline cost?
#
# **Method** (`bench/transitions.py`, `bench/synthetic.py`): the transition
# sweep at each K.  Every loop iteration does the same work, split into M
# segments of [trace][interpreted]; the round trip is the slope of cycles per
# iteration against M.  At K > 0 each iteration first pushes K values that
# stay on the operand stack under every segment and are consumed only after
# the last one (`live=K`): at every entry into a trace and every exit from
# one, the top K stack values are values a later instruction uses, so the
# crossing carries K live values (tests/test_transitions.py checks it from
# the bytecode, and that the programs at each K run the same VM
# instructions at every M).  One dispatch is measured at each K too.
#
# Run: `shimlab reproduce cached-state [--quick]` (`--quick`: K = 0, 1, 3,
# M = 8, 16, 32, short loops, 3 processes, a few minutes; the default: K = 0
# to 3 at `bench transitions`' quick size, its figures comparable with it);
# outputs in `experiments/out/cached-state/`.  Every number comes with a 95%
# bootstrap interval over worker processes.

# %%
import sys

import matplotlib.pyplot as plt

from shimlab import notebook as nb
from shimlab.bench import harness, transitions
from shimlab.interp.generate import CACHE_MAX

NAME = "cached-state"
QUICK = nb.quick()
OUT = nb.out_dir(NAME)
if QUICK:
    # small: short loops, few samples, three K; M from 8 on, where every
    # interpreted stretch is at most 4 LOAD_INT/POP pairs (at M = 4 it is 8,
    # which this host's branch predictor loses: docs/findings.md's negative first step)
    SIZE = dict(ms=(8, 16, 32), j=64, i=64, n=1000, ks=(16, 48), runs=(3, 1, 5))
    KS = [0, 1, 3]
else:
    SIZE = dict(transitions.SIZES["quick"])
    KS = [k for k in (0, 1, 2, 3) if k <= CACHE_MAX]
# level 2: the sweep's LOAD_INT/POP work folds away and the traces keep the K
# values in registers, so a round trip is the crossings carrying them
SIZE["jit_opt"] = 2
MODES = transitions.MODES            # every crossing modes.py has, new ones included
# exact instructions per round trip (one batched callgrind run): the full run only
COUNT = not QUICK
ccs = nb.compilers(wanted=("clang-19", "clang-22"), mode="jit-direct") or \
    nb.compilers(mode="jit-direct")
if not ccs:
    sys.exit("no compiler here builds the JIT modes (they need preserve_none: apt-get install clang-19)")
CC = ccs[0].name
procs, warmup, samples = SIZE["runs"]
OPTS = harness.Options(processes=procs, warmup=warmup, samples=samples,
                       count_instructions=COUNT, quiet=True)
print(f"quick={QUICK}; {CC}; K = {KS}; crossings: {', '.join(MODES)}; M = {SIZE['ms']}, "
      f"J = {SIZE['j']}, I = {SIZE['i']}, {SIZE['n']} iterations")

# %%
configs = transitions.configs_for(SIZE, CC, MODES, KS)
results = nb.measure(configs, OUT / "transitions.json", OPTS)
a = transitions.analyze(results, SIZE, CC, MODES, caches=KS)

# %% [markdown]
# ## Round trip at each K
#
# Cycles per round trip (the slope over M) for each crossing at each K, and
# what K values add to the same crossing's round trip at K = 0.  A `*` marks
# a K whose sweep is not linear in M: the slope is then a least-squares fit
# that weighs the steps alike at every K, still comparable K with K.

# %%
rows = []
for k, ms in a["cache"].items():
    for mode, r in ms.items():
        added = r.get("vs_base_cache")
        rows.append([k, mode, transitions.fit_text(r), "-" if added is None else added.fmt(1),
                     r["dispatches"].fmt(2),
                     "-" if r["instructions"] is None else f"{r['instructions']:.0f}"])
nb.show_table(rows, ["K", "mode", "cycles/round trip [95% CI]", f"vs K={KS[0]}",
                     "dispatches/round trip", "instructions/round trip"], OUT, "table-round-trip",
              align="rlllll")
srows = [[shim, k, v["excess"].fmt(1), "yes" if v["linear"] else "no",
          "-" if v["added"] is None else v["added"].fmt(1),
          "-" if v["instructions"] is None else f"{v['instructions']:.0f}"]
         for shim in ("jit-shim", "jit-shim-args")
         for k, v in transitions.shim_vs_direct(a, shim).items()]
nb.show_table(srows, ["shim", "K", "shim - direct (cycles) [95% CI]", "same at every M",
                      f"vs K={KS[0]}", "instructions"], OUT, "table-shim-vs-direct",
              align="rrllll")

# %% [markdown]
# ## The figure: round trip against K, one line per crossing

# %%
fig, ax = plt.subplots(figsize=(7.5, 4.5))
transitions.draw_cache(ax, a)
ax.set_title(f"round trip against K ({CC}; M = {', '.join(map(str, SIZE['ms']))}; "
             "hollow: not linear in M; a cut bar's end at the edge)", loc="left",
             fontsize="small")
fig.tight_layout()
nb.save_figure(fig, OUT, NAME)

# %% [markdown]
# ## The answer
#
# Computed from the run above, not written in advance.

# %%
# both shims against jit-direct, then every other crossing against it at each K
# (the trampoline's price among them)
findings = [transitions.cache_reading(a)]
nonlinear = sorted({f"{m} (K={k})" for k, ms in a["cache"].items()
                    for m, r in ms.items() if not r["linear"]})
if nonlinear:
    findings.append("Not linear in M (slopes are fits; see the steps): " + ", ".join(nonlinear)
                    + ".")
findings += [f"anomaly: {x}" for x in a["anomalies"]] or ["anomalies: none"]
print("\n".join(findings))

# %%
nb.save_json({"quick": QUICK, "compiler": CC, "ks": KS, "modes": list(MODES),
              "size": {k: v for k, v in SIZE.items() if k != "runs"},
              "transitions": transitions.to_json(a), "findings": findings}, OUT)
