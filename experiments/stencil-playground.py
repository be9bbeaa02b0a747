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
# # Stencil playground: write a stencil in a cell, read its disassembly with holes, hold it to the oracle, time it inside a trace
#
# A stencil is a few PeachPy instructions under the register contract (`ip`
# r12, `sp` r13, `fp` r14, tape `head` r15, `vm` rdi, dispatch table rsi),
# with **holes** the JIT patches: here `a.hole("oparg")` is the instruction's
# operand.  This notebook writes one in a cell, without touching the source
# tree: `shimlab.jit.stencil_store.register` adds an assembled stencil to this
# process (and to children forked from it), where the JIT
# (`jit={"stencils": {"LOAD_INT": "LOAD_INT:rax"}}`) and the oracle test
# (`stencil_check.run_stencil`) find it by name like a built one.
#
# The prototype is a `LOAD_INT` that goes through a register: `LOAD_INT` is
# half of the work inside the traces of the transition benchmark's programs
# (`LOAD_INT`/`POP` pairs), so those programs time it directly.  A
# deliberately broken variant shows what the oracle test catches.
#
# Run: `shimlab reproduce stencil-playground [--quick]`; outputs in
# `experiments/out/stencil-playground/`.

# %%
import os
import random
import re
import sys

import matplotlib.pyplot as plt
import numpy as np

from peachpy_stencils.asm import assemble
from peachpy.x86_64 import ADD, MOV, dword, qword, rax
from shimlab import isolate, oracle, stencil_check, vm
from shimlab import notebook as nb
from shimlab.bench import harness, stats, synthetic
from shimlab.frontend import load_program
from shimlab.interp import build
from shimlab.jit import stencil_store
from shimlab.stencil import disassemble

NAME = "stencil-playground"
QUICK = nb.quick()
OUT = nb.out_dir(NAME)
TRIALS = 40 if QUICK else 400            # random VM states per oracle test
PROCS, WARMUP, SAMPLES = (6, 3, 20) if QUICK else (20, 5, 30)
ccs = nb.compilers(mode="jit-direct")
if not ccs:
    sys.exit("no compiler here builds the JIT modes (they need preserve_none: apt-get install clang-19)")
CC = ccs[0].name
built = stencil_store.load()    # builds the artifact if needed
print(f"quick={QUICK}; compiler {CC}; {len(built)} built stencils")

# %% [markdown]
# ## The standard stencil
#
# `LOAD_INT` stores the operand, sign-extended from 32 bits, in the free
# slot at `sp` and moves `sp` up: two instructions.  The hole's bytes are the
# placeholder `0x5ec0de01`, which the JIT overwrites with the operand.

# %%
standard = built["LOAD_INT"]
print(standard.disassembly)

# %% [markdown]
# ## A prototype, written here
#
# The same effect through `rax`: load the operand into a register, store it,
# move `sp`.  One instruction and two bytes more; whether that costs
# anything inside a trace is what the timing below measures.

# %%
def load_int_via_rax(a, r):
    a(MOV(rax, a.hole("oparg")), MOV(qword[r.sp], rax), ADD(r.sp, 8))


proto = stencil_store.register(assemble("LOAD_INT:rax", load_int_via_rax,
                                   "LOAD_INT through rax (a notebook prototype)"))
print(disassemble(proto.code, proto.holes))
print("holes:", ", ".join(f"{h.kind} at +{h.offset} ({h.width} bytes)" for h in proto.holes))

# %% [markdown]
# ## Held to the oracle
#
# `stencil_check.run_stencil` runs the stencil alone, as a one-instruction
# trace entered through the shim, from random VM states (stack values
# include INT64_MIN/MAX, operands include negatives), and compares the state
# it leaves with the Python oracle's.  It runs in a forked child, so a stencil
# that faults is reported, not fatal; the child inherits the registration.
#
# The broken variant stores the operand as a 32-bit `dword`: right for
# non-negative operands, wrong (the upper half of the slot is left as it was)
# for negative ones.  Random states find it.

# %%
def load_int_dword(a, r):
    a(MOV(dword[r.sp], a.hole("oparg")), ADD(r.sp, 8))


broken = stencil_store.register(assemble("LOAD_INT:dword", load_int_dword,
                                    "LOAD_INT storing 32 bits only (broken on purpose)"))
print(broken.disassembly)


def oracle_test(name):
    try:
        return isolate.call(f"stencil {name}", stencil_check.run_stencil, name, TRIALS, 0, CC)
    except isolate.Crash as e:
        return [str(e)]


checks = {name: oracle_test(name) for name in ("LOAD_INT", proto.name, broken.name)}
check_rows = [(name, TRIALS - len(f), TRIALS, "ok" if not f else "BAD",
               (f[0][:90] + "...") if f else "") for name, f in checks.items()]
nb.show_table(check_rows, ["stencil", "agree", "trials", "verdict", "first disagreement"],
              OUT, "table-oracle", align="lrrll")

# %% [markdown]
# ## The JIT uses it in a whole program
#
# `jit={"stencils": {...}}` puts the prototype in place of `LOAD_INT` in
# every trace the JIT compiles; the output must be the oracle's.

# %%
whole = "minipy/nested_loops.py"
program = load_program(nb.workload(whole)[0])


def run_with(overrides):
    b = build.build("jit-direct", CC)
    with vm.Loaded(b, program, b"", jit={"stencils": overrides, "threshold": 8}) as loaded:
        result = loaded.run()
        return result.output, len(loaded.jit.stats.traces)


want = oracle.run(program).output
got, traces = isolate.call(f"{whole} with {proto.name}", run_with, {"LOAD_INT": proto.name})
print(f"{whole}, jit-direct with {proto.name}: {traces} trace(s); output "
      f"{'is the oracle' if got == want else 'DIFFERS from the oracle'}'s")

# %% [markdown]
# ## Timed inside a trace
#
# A synthetic loop whose trace is one long stretch of `LOAD_INT`/`POP`
# pairs (installed before the first run, nothing recorded), run with the
# standard stencil and with the prototype.  The harness's worker processes
# cannot receive a stencil registered here (they are fresh interpreters), so
# each measurement is a child forked from this process: pinned to one CPU,
# a new random memory layout per run (as the harness does), warm-up runs,
# then timed runs inside C.  Rounds interleave the variants in a new order
# each time; intervals are bootstrap intervals over processes and runs.

# %%
SPEC = "transitions:m=1,j=256,i=2,n=20000"
spec = synthetic.parse(SPEC)
LOADS = spec.j // 2                  # LOAD_INT executions per iteration, all in the trace
VARIANTS = {"LOAD_INT (standard)": {}, proto.name: {"LOAD_INT": proto.name}}
cpu = harness.default_cpu()


def timed(overrides, seed):
    """Per-iteration cycles of SAMPLES runs, in this (forked) process."""
    os.sched_setaffinity(0, {cpu})
    prog, stretches = synthetic.build(SPEC)
    b = build.build("jit-direct", CC)
    with vm.Loaded(b, prog, b"", layout_seed=seed,
                   jit={"stretches": stretches, "record": False, "stencils": overrides}) as loaded:
        cycles, _ = loaded.bench(WARMUP, SAMPLES)
    return [c / spec.n for c in cycles]


rng = random.Random(0)
groups = {v: [] for v in VARIANTS}
for _ in range(PROCS):
    order = list(VARIANTS)
    rng.shuffle(order)
    for v in order:
        groups[v].append(np.asarray(isolate.call(f"timing {v}", timed, VARIANTS[v],
                                                 rng.randrange(1, 1 << 31))))
base = "LOAD_INT (standard)"
timing_rows, timing = [], {}
for v, g in groups.items():
    summary = stats.summarize(g)
    med, lo, hi = summary.median, summary.lo, summary.hi
    r = stats.ratio_ci(g, groups[base])
    per_load = tuple((x - 1) * stats.median(groups[base]) / LOADS for x in r)
    timing[v] = {"cycles_per_iteration": (med, lo, hi), "vs_standard": r,
                 "cycles_per_load_int_vs_standard": per_load}
    # four decimals: runs inside one trace vary by hundredths of a percent here
    timing_rows.append((v, f"{med:.2f} [{lo:.2f}, {hi:.2f}]",
                        f"{r[0]:.4f} [{r[1]:.4f}, {r[2]:.4f}]",
                        f"{per_load[0]:+.3f} [{per_load[1]:+.3f}, {per_load[2]:+.3f}]",
                        "baseline" if v == base else stats.verdict(*r)))
nb.show_table(timing_rows, ["variant", "cycles/iteration [95% CI]", "vs standard [95% CI]",
                            "cycles per LOAD_INT vs standard", "verdict"],
              OUT, "table-timing", align="lllll")
print(f"{SPEC}: {LOADS} LOAD_INT + {LOADS} POP in the trace per iteration, "
      f"{spec.i} + 7 interpreted, one round trip; {PROCS} processes x {SAMPLES} runs per variant")

# %% [markdown]
# ## Figure
#
# Left: the three stencils' code, holes marked.  Middle: how many random
# states each agreed with the oracle on.  Right: cycles per loop iteration
# with each variant (dots: one process's median; bar: the median with its
# 95% interval).

# %%
fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(15, 4.6),
                                    gridspec_kw={"width_ratios": [1.25, 0.8, 1]})
ax0.axis("off")
text = "\n".join(f"{s.name} ({len(s.code)} bytes)\n"
                 + re.sub(r" {3,}", "  ", disassemble(s.code, s.holes).rstrip()) + "\n"
                 for s in (standard, proto, broken))
ax0.text(0, 1, text, family="monospace", fontsize=7.5, va="top")
ax0.set_title("the stencils (holes marked)", loc="left", fontsize="medium")

names = list(checks)
agree = [TRIALS - len(checks[n]) for n in names]
ax1.bar(np.arange(len(names)), agree,
        color=["tab:green" if not checks[n] else "tab:red" for n in names])
ax1.axhline(TRIALS, color="black", linewidth=0.8)
ax1.set_xticks(np.arange(len(names)))
ax1.set_xticklabels(names, fontsize=7, rotation=15)
ax1.set_ylabel(f"random states agreeing with the oracle (of {TRIALS})")
ax1.set_title("oracle test", loc="left", fontsize="medium")
ax1.grid(axis="y", alpha=0.3)

for i, (v, g) in enumerate(groups.items()):
    med, lo, hi = timing[v]["cycles_per_iteration"]
    ax2.bar(i, med, yerr=[[med - lo], [hi - med]], capsize=4, color="tab:blue" if i == 0
            else "tab:orange", alpha=0.7)
    ax2.plot(np.full(len(g), i) + np.linspace(-0.2, 0.2, len(g)), [stats.median(x) for x in g],
             "k.", markersize=4)
    r = timing[v]["vs_standard"]
    if v != base:
        top = max(hi, max(stats.median(x) for x in g))
        ax2.annotate(f"x{r[0]:.4f} [{r[1]:.4f}, {r[2]:.4f}]", (i, top), xytext=(0, 6),
                     textcoords="offset points", ha="center", va="bottom", fontsize=8)
ax2.margins(y=0.12)
ax2.set_xticks(range(len(groups)))
ax2.set_xticklabels(list(groups), fontsize=8)
ax2.set_ylabel("TSC cycles per loop iteration")
ax2.set_title(f"inside a trace: {LOADS} LOAD_INT per iteration", loc="left", fontsize="medium")
ax2.grid(axis="y", alpha=0.3)
fig.suptitle(f"Stencil playground ({CC})" + (" — quick run" if QUICK else ""))
fig.tight_layout()
nb.save_figure(fig, OUT, NAME)

# %% [markdown]
# ## What this run says

# %%
findings = []
for name, f in checks.items():
    findings.append(f"{name}: agrees with the oracle on {TRIALS - len(f)} of {TRIALS} random "
                    "states" + (f"; first disagreement: {f[0]}" if f else ""))
findings.append(f"{whole} under jit-direct with {proto.name} in every trace: output "
                f"{'matches' if got == want else 'DIFFERS from'} the oracle ({traces} traces)")
r, d = timing[proto.name]["vs_standard"], timing[proto.name]["cycles_per_load_int_vs_standard"]
findings.append(f"{proto.name} inside a trace: {r[0]:.4f}x the time of the standard LOAD_INT "
                f"[{r[1]:.4f}, {r[2]:.4f}] ({stats.verdict(*r)}), {d[0]:+.3f} [{d[1]:+.3f}, "
                f"{d[2]:+.3f}] cycles per LOAD_INT executed")
print("\n".join(findings))
for s in (proto, broken):          # leave the process's stencils as they were
    stencil_store.unregister(s.name)
nb.save_json({"notebook": NAME, "quick": QUICK, "compiler": CC, "spec": SPEC,
              "stencils": {s.name: {"bytes": len(s.code), "holes": [h.kind for h in s.holes],
                                    "disassembly": disassemble(s.code, s.holes)}
                           for s in (standard, proto, broken)},
              "oracle": {n: {"trials": TRIALS, "failures": f} for n, f in checks.items()},
              "whole_program": {"workload": whole, "matches_oracle": got == want,
                                "traces": traces},
              "timing": timing, "findings": findings}, OUT)
