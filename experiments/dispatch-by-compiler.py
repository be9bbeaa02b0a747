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
# # Dispatch by compiler: switch, computed goto and tail calls under every compiler, with and without PGO
#
# The same instruction table, compiled into three interpreters (`switch`,
# computed `goto`, `tailcall` with `preserve_none` + `musttail`) by every
# compiler the setup installs, each once plainly (`-O3`) and once
# profile-guided (PGO: an instrumented build is trained on programs that are
# *not* the measured workloads, then rebuilt with the profile).
#
# Every goto build gets the baseline check (`dispatch_check.analyze`: how many
# indirect dispatch jumps survived compilation), because a ratio against a goto
# build whose dispatch was merged into one jump is a ratio against a broken
# baseline.
#
# Run: `shimlab reproduce dispatch-by-compiler [--quick]`; outputs in
# `experiments/out/dispatch-by-compiler/`.  Timing goes through the harness
# (fresh pinned worker processes, random memory layouts, bootstrap intervals);
# all numbers are ratios or cycles per VM instruction from one run.

# %%
import sys

import matplotlib.pyplot as plt
import numpy as np

from shimlab.interp import build
from shimlab.interp import dispatch_check
from shimlab.interp import pgo
from shimlab.bench import harness, stats
from shimlab.errors import ShimlabError
from shimlab import notebook as nb

NAME = "dispatch-by-compiler"
QUICK = nb.quick()
OUT = nb.out_dir(NAME)
MODES = ["switch", "goto", "tailcall"]
WORKLOADS = (["bf/nested.bf"] if QUICK else
             ["bf/nested.bf", "bf/squares.bf", "minipy/nested_loops.py", "minipy/collatz.py"])
print(f"quick={QUICK}; workloads: {', '.join(WORKLOADS)}; PGO training: {', '.join(pgo.TRAINING)}")

# %% [markdown]
# ## Builds and profiles
#
# `tailcall` only where the toolchain probe says the compiler has
# `preserve_none` and `musttail`.  PGO needs, for clang, the `llvm-profdata`
# of the same LLVM version; where it is missing, that compiler is measured
# without PGO and the notebook says so.

# %%
compilers = nb.compilers()
if not compilers:
    sys.exit("no compiler to measure")
profiles, notes = {}, []
for cc in compilers:
    for mode in MODES:
        if not cc.can_build(mode):
            continue
        try:
            profiles[(cc.name, mode)] = pgo.train(mode, cc.name)
        except ShimlabError as e:
            notes.append(f"{cc.name} {mode}: no PGO: {e}")
for note in dict.fromkeys(notes):
    print("note:", note)
for (cc, mode), p in profiles.items():
    print(f"profile {mode}/{cc}: {pgo.profile_summary(p, next(c for c in compilers if c.name == cc))}")

configs = []
for w in WORKLOADS:
    path, inp = nb.workload(w)
    for cc in compilers:
        for mode in MODES:
            if not cc.can_build(mode):
                continue
            configs.append(harness.Config(NAME, path, mode, cc.name, inp))
            if (cc.name, mode) in profiles:
                configs.append(harness.Config(NAME, path, mode, cc.name, inp,
                                              profile=str(profiles[(cc.name, mode)]), tag="pgo"))
print(f"{len(configs)} configurations")

# %% [markdown]
# ## The baseline check of every goto build

# %%
checks = {}
for cc in compilers:
    for pgo_on in (False, True):
        if pgo_on and (cc.name, "goto") not in profiles:
            continue
        b = build.build("goto", cc.name, profile=profiles[(cc.name, "goto")] if pgo_on else None)
        checks[(cc.name, pgo_on)] = dispatch_check.analyze(b)
check_rows = [(cc, "PGO" if p else "-", r.dispatch_sites, len(r.handlers),
               "MERGED" if r.flagged else "ok", r.verdict) for (cc, p), r in checks.items()]
nb.show_table(check_rows, ["compiler", "build", "dispatch jumps", "handlers", "check", "verdict"],
              OUT, "baseline-check", align="llrrll")

# %% [markdown]
# ## Measure

# %%
results = nb.measure(configs, OUT / "timings.json")

# %% [markdown]
# ## Table: cycles per VM instruction, ratio to the same compiler's plain goto, PGO effect
#
# `vs goto`: time / time(same compiler, plain goto) — below 1 is faster.
# `PGO effect`: time(PGO build) / time(plain build) of the same mode and
# compiler.  Intervals are 95% bootstrap intervals over worker processes and
# runs.  A compiler whose plain goto build is MERGED is marked `!`: its
# `vs goto` ratios flatter every other variant.

# %%
rows, records = [], []
for w in WORKLOADS:
    wname = w.split("/")[-1]
    for c in configs:
        if c.workload_name != wname or c.key not in results:
            continue
        base = harness.Config(NAME, c.workload, "goto", c.cc, c.input).key
        plain = harness.Config(NAME, c.workload, c.mode, c.cc, c.input).key
        cyc = nb.cycles(results, c.key)
        vs_goto = nb.ratio(results, c.key, base) if base in results else None
        pgo_eff = nb.ratio(results, c.key, plain) if c.tag == "pgo" and plain in results else None
        merged = checks.get((c.cc, False))
        flag = "!" if merged is not None and merged.flagged else ""
        site = checks.get((c.cc, c.tag == "pgo")) if c.mode == "goto" else None
        rows.append((wname, c.cc + flag, c.mode, "PGO" if c.tag else "-",
                     f"{cyc[0]:.3f} [{cyc[1]:.3f}, {cyc[2]:.3f}]",
                     nb.fmt_ratio(vs_goto) if vs_goto else "",
                     nb.fmt_ratio(pgo_eff) if pgo_eff else "",
                     stats.verdict(*pgo_eff) if pgo_eff else "",
                     site.dispatch_sites if site else ""))
        records.append({"workload": wname, "compiler": c.cc, "mode": c.mode, "pgo": bool(c.tag),
                        "cycles_per_instr": cyc, "vs_goto": vs_goto, "pgo_effect": pgo_eff,
                        "goto_dispatch_sites": site.dispatch_sites if site else None,
                        "goto_merged": site.flagged if site else None})
    rows.append(None)
nb.show_table(rows[:-1], ["workload", "compiler", "mode", "build", "cycles/instr [95% CI]",
                          "vs goto [95% CI]", "PGO effect [95% CI]", "PGO verdict",
                          "goto jumps"], OUT, "table", align="lllllllll")

# %% [markdown]
# ## Figure: time relative to one reference build, plain and PGO side by side
#
# One reference for all compilers (the plain goto build of the newest
# compiler whose goto build passes the baseline check), so bars compare
# across compilers too; error bars are 95% intervals.

# %%
ok_refs = [cc.name for cc in compilers if not checks[(cc.name, False)].flagged]
ref_cc = "clang-22" if "clang-22" in ok_refs else (ok_refs or [compilers[0].name])[0]
fig, axes = plt.subplots(len(WORKLOADS), 1, figsize=(9, 3.2 * len(WORKLOADS)), squeeze=False)
for ax, w in zip(axes[:, 0], WORKLOADS):
    path, inp = nb.workload(w)
    ref = harness.Config(NAME, path, "goto", ref_cc, inp).key
    groups = [(cc.name, m) for cc in compilers for m in MODES if cc.can_build(m)]
    x = np.arange(len(groups))
    for j, tag in enumerate(["", "pgo"]):
        vals, errs = [], [[], []]
        for cc, m in groups:
            key = harness.Config(NAME, path, m, cc, inp, tag=tag).key
            if key in results and ref in results:
                r, lo, hi = nb.ratio(results, key, ref)
                vals.append(r)
                errs[0].append(r - lo)
                errs[1].append(hi - r)
            else:
                vals.append(np.nan)
                errs[0].append(0)
                errs[1].append(0)
        ax.bar(x + (j - 0.5) * 0.38, vals, 0.38, yerr=errs, capsize=2,
               label="PGO" if tag else "plain -O3", color="tab:orange" if tag else "tab:blue")
    ax.axhline(1.0, color="black", linewidth=0.8)
    labels = [f"{m}\n{cc}{' (MERGED)' if m == 'goto' and checks[(cc, False)].flagged else ''}"
              for cc, m in groups]
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel(f"time / time(goto, {ref_cc})")
    ax.set_title(w, loc="left", fontsize="medium")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
fig.suptitle("Dispatch by compiler (< 1: faster than the reference)"
             + (" — quick run" if QUICK else ""))
fig.tight_layout()
nb.save_figure(fig, OUT, "dispatch-by-compiler")

# %% [markdown]
# ## What this run says

# %%
findings = []
for cc in compilers:
    plain, guided = checks[(cc.name, False)], checks.get((cc.name, True))
    line = f"{cc.name}: plain goto has {plain.dispatch_sites} dispatch jump(s)"
    line += " (MERGED)" if plain.flagged else ""
    if guided is not None:
        line += f", with PGO {guided.dispatch_sites}" + (" (MERGED)" if guided.flagged else "")
    findings.append(line)
for r in records:
    if r["pgo_effect"]:
        e = r["pgo_effect"]
        findings.append(f"{r['workload']} {r['mode']}/{r['compiler']}: PGO build takes "
                        f"{e[0]:.3f}x the time of the plain build [{e[1]:.3f}, {e[2]:.3f}] "
                        f"({stats.verdict(*e)})")
print("\n".join(findings))
nb.save_json({"notebook": NAME, "quick": QUICK, "workloads": WORKLOADS,
              "training": list(pgo.TRAINING), "reference": ref_cc, "notes": notes,
              "baseline_checks": [{"compiler": cc, "pgo": p, "dispatch_sites": r.dispatch_sites,
                                   "merged": r.flagged, "verdict": r.verdict}
                                  for (cc, p), r in checks.items()],
              "rows": records, "findings": findings}, OUT)
