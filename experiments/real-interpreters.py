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
# # Real interpreters: is the dispatch of the builds people run merged?
#
# The baseline check that `shimlab dis --native` runs on shimlab's own builds,
# run by `shimlab census` on interpreters others built: Debian's CPython 3.11
# on this machine, the virtual environment's CPython (through the
# `libpython` it links), CPython 3.13 and 3.14 from Debian's unstable suite,
# and Lua 5.4, Ruby, Perl and PHP from its stable suite (downloaded as
# `.deb` files and unpacked, never installed; an interpreter that cannot be
# fetched here is named and left out), beside shimlab's own computed-goto
# builds (clang 19 merges their dispatch jumps; clang 22 and GCC 12 do not)
# and the CPython stand-in in each of CPython's styles.
#
# For each binary the census finds the dispatch code (by its symbol, by
# following calls and jumps from an exported function, by the dispatch
# table its jumps index, and checks it against the densest cluster of
# indirect jumps), counts the indirect jumps, reads the table, and flags a
# build that should have one jump per handler but has a handful: MERGED.
#
# Run: `shimlab reproduce real-interpreters [--quick]`; outputs in
# `experiments/out/real-interpreters/`.  Nothing here is timed.

# %%
import sys
from pathlib import Path

import matplotlib.pyplot as plt

from shimlab import notebook as nb
from shimlab.census import census, fetch, standin
from shimlab.errors import ShimlabError
from shimlab.interp import build

NAME = "real-interpreters"
QUICK = nb.quick()
OUT = nb.out_dir(NAME)
print(f"quick={QUICK}")

# %% [markdown]
# ## The binaries
#
# Fetched ones are downloaded once and reused from the build directory after.

# %%
targets, notes = [], []      # (group, label, path)
for path in (Path("/usr/bin/python3.11"), Path(sys.executable)):
    if path.exists():
        targets.append(("real", f"CPython {path}", path))
for name in fetch.WANTED:
    try:
        path = fetch.fetched(name) or fetch.fetch(name)
    except ShimlabError as e:
        notes.append(f"{name}: not fetched here ({e})")
        continue
    suite = fetch.WANTED[name].suite
    debs = ", ".join(d.rsplit("_", 1)[0] for d in fetch.packages(name)) or "cached"
    targets.append(("real", f"{name} (Debian {suite}: {debs})", path))
for cc in nb.compilers(mode="goto"):
    targets.append(("shimlab", f"shimlab goto / {cc.name}", build.build("goto", cc.name).path))
for style in standin.STYLES:
    for cc in nb.compilers():
        if standin.can_build(style, cc.name):
            targets.append(("stand-in", f"stand-in {style} / {cc.name}",
                            standin.build(style, cc.name, stripped=True)))
for n in notes:
    print("note:", n)
print(f"{len(targets)} binaries")

# %% [markdown]
# ## The census

# %%
reports = []
for group, label, path in targets:
    try:
        reports.append((group, label, census(path)))
    except ShimlabError as e:
        notes.append(f"{label}: {e}")
        print("note:", e)
rows = [(label, r.compiler, r.kind, f"{r.size + (r.size_handlers or 0):,}", r.dispatch_jumps,
         f"{r.handlers_own}/{r.handlers}" if r.handlers is not None else "-",
         r.confidence.split(":")[0], "MERGED" if r.merged else "ok")
        for _, label, r in reports]
nb.show_table(rows, ["binary", "compiler", "kind", "bytes", "dispatch jumps", "own/handlers",
                     "found", "check"], OUT, "census", align="llllrrll")

# %% [markdown]
# ## How each dispatch loop was found, and how sure

# %%
for _, label, r in reports:
    print(f"{label}: {r.found_by}")
    print(f"    how sure: {r.confidence}")
    for e in r.evidence:
        print(f"    {e}")

# %% [markdown]
# ## Figure: indirect jumps per KB of dispatch code, and per handler
#
# A merged build sits near zero on both: its handlers share a few jumps.
# Tail-call builds count their handlers' code and jumps.

# %%
shown = [(g, label, r) for g, label, r in reports if r.kind != "call loop"]
colors = {"real": "tab:blue", "shimlab": "tab:green", "stand-in": "tab:gray"}
fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 0.35 * len(shown) + 1.5), sharey=True)
y = range(len(shown))
for ax, values, xlabel in (
        (a1, [r.jumps_per_kb for _, _, r in shown], "indirect jumps per KB of dispatch code"),
        (a2, [r.dispatch_jumps / r.handlers if r.handlers else 0 for _, _, r in shown],
         "dispatch jumps per handler")):
    ax.barh(list(y), values, color=["tab:red" if r.merged else colors[g] for g, _, r in shown])
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
a1.set_yticks(list(y))
a1.set_yticklabels([label + ("  MERGED" if r.merged else "") for _, label, r in shown],
                   fontsize=7)
a1.invert_yaxis()
fig.suptitle("Dispatch jumps in real and shimlab builds (red: MERGED)")
fig.tight_layout()
nb.save_figure(fig, OUT, NAME)

# %% [markdown]
# ## What this run says

# %%
real = [(label, r) for g, label, r in reports if g == "real"]
merged_real = [label for label, r in real if r.merged]
findings = [
    "merged real builds: " + (", ".join(merged_real) if merged_real else "none of the "
                              f"{len(real)} read"),
    "real builds with a dispatch jump per handler: " + ", ".join(
        f"{label} ({r.dispatch_jumps} jumps, {r.handlers_own}/{r.handlers} handlers)"
        for label, r in real if not r.merged and r.handlers and r.kind != "call loop"),
]
findings += [f"{label}: {r.kind}, {r.verdict}" for label, r in real
             if r.kind == "call loop" or r.handlers is None]
for label, r in real:
    if not r.confidence.startswith("certain"):
        findings.append(f"{label}: dispatch code without a symbol, found by: {r.found_by} "
                        f"({r.confidence})")
mine = {label: r.merged for g, label, r in reports if g == "shimlab"}
findings.append("shimlab's goto builds: " + ", ".join(
    f"{label.split('/ ')[1]} {'MERGED' if m else 'not merged'}" for label, m in mine.items()))
print("\n".join(findings))
nb.save_json({"notebook": NAME, "quick": QUICK, "notes": notes, "findings": findings,
              "reports": [{"group": g, "label": label, **r.to_json()}
                          for g, label, r in reports]}, OUT)
