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
# # Real interpreters: Lua 5.4 and 5.5 and LuaJIT 2.1, built here from their sources
#
# Every finding of shimlab is about its own VM.  This notebook asks whether
# they hold on interpreters someone else wrote and tuned, and whether the
# lab's instruments work on them (issue 27):
#
# 1. **the baseline check** on every build: the indirect jumps that dispatch
#    in Lua's `luaV_execute` with `LUA_USE_JUMPTABLE=1` (computed goto) and
#    `=0` (switch), with clang 19 and 22 and gcc 11 and 12, and in LuaJIT's
#    hand-written handlers; MERGED where a goto build has only a handful;
# 2. **goto against switch** per compiler on eight Lua programs of
#    `examples/lua/`, the baseline check next to every ratio, and LuaJIT's
#    asm interpreter (`-joff`) and its JIT against the best compiled Lua;
# 3. **LuaJIT's crossings**: a trace exit that no side trace links, and the
#    re-entry at the loop's JFORL, priced by a slope over the exit rate,
#    beside shimlab's `jit-shim` and `jit-direct` round trips measured in
#    the same rounds on the same CPU.
#
# The sources come from lupa 2.8's sdist on PyPI, checked against a pinned
# SHA-256 (`shimlab lua fetch`).  Run: `shimlab reproduce lua-interpreters
# [--quick]`; outputs in `experiments/out/lua-interpreters/`.  The same
# measurements as commands: `shimlab lua build`, `shimlab lua bench`,
# `shimlab lua exits`.

# %%
import os
import sys

import matplotlib.pyplot as plt

from shimlab import notebook as nb
from shimlab.bench import harness
from shimlab.bench.results import ResultFile, machine_line
from shimlab.lua import baseline, bench, exits, source
from shimlab.lua import build as lua_build

NAME = "lua-interpreters"
QUICK = nb.quick()
OUT = nb.out_dir(NAME)
CPU = harness.default_cpu()
try:
    source.fetch()
except source.SourceError as e:
    sys.exit(f"the Lua sources cannot be had: {e}")
COMPILERS = [cc.name for cc in nb.compilers(lua_build.COMPILERS)]
LUAJIT_CCS = [cc for cc in lua_build.LUAJIT_COMPILERS if cc in COMPILERS]
PROGRAMS = ["fib", "mandelbrot", "strings"] if QUICK else list(bench.PROGRAMS)
PROCESSES, WARMUP, SAMPLES = (2, 1, 3) if QUICK else (5, 1, 8)
EXIT_SIZE = exits.SIZES["tiny" if QUICK else "quick"]
# the process's CPU time in TSC cycles: on a shared machine a Lua run of some
# hundred milliseconds waits for the CPU for much of its wall time (the
# reports print how much); SHIMLAB_LUA_CLOCK=tsc for the lab's wall-clock cycles
CLOCK = os.environ.get("SHIMLAB_LUA_CLOCK", "cpu")
print(f"quick={QUICK}; compilers {', '.join(COMPILERS)}; programs {', '.join(PROGRAMS)}")

# %% [markdown]
# ## 1. The baseline check on every build

# %%
builds = [lua_build.build(f, d, cc) for f, d, cc in lua_build.targets(COMPILERS)
          if f != lua_build.LUAJIT]
builds += [lua_build.build(lua_build.LUAJIT, "asm", cc) for cc in LUAJIT_CCS]
census = {b.name: baseline.census(b) for b in builds}
nb.show_table([(c.build, c.where, c.opcodes, c.jumps, "MERGED" if c.merged else "-", c.verdict)
               for c in census.values()],
              ["build", "read", "opcodes", "indirect jumps", "merged", "verdict"], OUT, "census",
              align="llrrll")

# %% [markdown]
# ## 2. Goto against switch, and LuaJIT against the best compiled Lua
#
# Each configuration runs in fresh `lua` processes pinned with taskset, in
# rounds that interleave every configuration in a new order; every run's
# output is held to the expected output before its time is kept
# (`csrc/lua/driver.lua`); intervals resample processes, then runs.  Times
# are the process's CPU time in TSC cycles (CLOCK above): the report says
# how much of the wall time the runs waited for the CPU.

# %%
results = ResultFile(OUT / "lua.json")
(OUT / "lua.json").unlink(missing_ok=True)
a = bench.run(builds, PROGRAMS, False, results, PROCESSES, WARMUP, SAMPLES, CPU, clock=CLOCK)
if a is None:
    sys.exit("a configuration failed (named above)")
cpu = machine_line(results.environment)
bench.report(a, cpu)
nb.save_json(bench.to_json(a), OUT, "lua-summary")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
gs = a["goto_vs_switch"]
for i, g in enumerate(gs):
    e = g["geomean"]
    merged = census[g["goto"]].merged
    ax1.errorbar([i], [e.value], yerr=[[e.value - e.lo], [e.hi - e.value]], fmt="o",
                 capsize=4, color="tab:red" if merged else "tab:blue",
                 mfc="white" if merged else None)
ax1.axhline(1.0, color="grey", lw=0.8)
ax1.set_xticks(range(len(gs)))
ax1.set_xticklabels([f"{g['flavour']}\n{g['compiler']}\n{census[g['goto']].jumps} jumps"
                     for g in gs], fontsize=7)
ax1.set_ylabel("time of goto / time of switch [95% CI]")
ax1.set_title("goto against switch (hollow red: the goto build is MERGED)", fontsize=9)
lj = a["luajit"]
for i, v in enumerate(lj):
    e = v["geomean"]
    ax2.errorbar([i], [e.value], yerr=[[e.value - e.lo], [e.hi - e.value]], fmt="o", capsize=4)
ax2.axhline(1.0, color="grey", lw=0.8)
ax2.set_xticks(range(len(lj)))
ax2.set_xticklabels([v["luajit"].replace("luajit21-asm-", "") for v in lj], fontsize=8)
ax2.set_yscale("log")
ax2.set_ylabel(f"time / time of {a['best_puc']} [95% CI]")
ax2.set_title("LuaJIT (-joff: its asm interpreter) against the best compiled Lua", fontsize=9)
fig.tight_layout()
nb.save_figure(fig, OUT, "dispatch")

# %% [markdown]
# ## 3. LuaJIT's trace exits beside shimlab's crossings
#
# `examples/lua/exits.lua`: blocks of 64 identical loop iterations, m of them
# taking the branch the trace did not record.  With `-Ohotexit=1000000000
# -Omaxside=0` no side trace links that exit, so each one goes through the
# exit handler and the snapshot restore to the interpreter, which runs the
# rest of the iteration (three bytecodes) and re-enters the trace at JFORL.
# The slope over m is one round trip; the sweep with LuaJIT's defaults (the
# exit linked after 10) is the control.  shimlab's transitions sweep of
# `jit-shim` and `jit-direct` runs in the same rounds.

# %%
luajit = lua_build.build(lua_build.LUAJIT, "asm", LUAJIT_CCS[0])
(OUT / "exits.json").unlink(missing_ok=True)
(OUT / "exits-transitions.json").unlink(missing_ok=True)
ex = exits.run(EXIT_SIZE, luajit, ResultFile(OUT / "exits.json"), CPU,
               EXIT_SIZE["runs"][0], EXIT_SIZE["runs"][2], clock=CLOCK)
if ex is None:
    sys.exit("a configuration of the exit sweep failed (named above)")
exits.report(ex, cpu)
nb.save_json(exits.to_json(ex), OUT, "exits-summary")

# %%
fig, ax = plt.subplots(figsize=(7, 4))
rows = [("LuaJIT exit\n(not linked)", ex["nolink"]["slope"]),
        ("LuaJIT exit\nless 3 dispatches", ex["nolink"]["exit_and_entry"]),
        ("LuaJIT\n(linked)", ex["linked"]["slope"])]
rows += [(f"shimlab\n{m}", ex["shimlab"]["modes"][m]["round_trip"]) for m in exits.SHIMLAB_MODES]
for i, (label, e) in enumerate(rows):
    ax.errorbar([i], [e.value], yerr=[[e.value - e.lo], [e.hi - e.value]], fmt="o", capsize=4)
ax.set_xticks(range(len(rows)))
ax.set_xticklabels([r[0] for r in rows], fontsize=8)
ax.axhline(0, color="grey", lw=0.8)
ax.set_ylabel("cycles per round trip [95% CI]")
ax.set_title(f"trace -> interpreter -> trace ({cpu})", fontsize=8)
fig.tight_layout()
nb.save_figure(fig, OUT, "exits")

# %% [markdown]
# ## What held and what did not
#
# Computed from this run.

# %%
def _sig(e) -> str:
    return ("faster than" if e.hi < 1 else "slower than" if e.lo > 1
            else "not significantly different from")


findings = []
c19 = [c for c in census.values() if c.dispatch == "goto" and c.build.endswith("clang-19")]
if c19:
    merged = [c.build for c in c19 if c.merged]
    findings.append(
        f"clang 19 {'merges' if merged else 'does not merge'} Lua's computed-goto dispatch: "
        + "; ".join(f"{c.build} {c.jumps} indirect jump(s) for {c.opcodes} opcodes" for c in c19)
        + (" (as it merged shimlab's goto interpreter)." if merged else
           " (unlike shimlab's goto interpreter, which it merges)."))
others = [c for c in census.values() if c.dispatch == "goto" and not c.build.endswith("clang-19")]
if others:
    findings.append("The other compilers' goto builds: " + "; ".join(
        f"{c.build} {c.jumps}{' MERGED' if c.merged else ''}" for c in others) + ".")
for g in gs:
    e = g["geomean"]
    findings.append(f"{g['flavour']} {g['compiler']}: goto is {_sig(e)} switch, "
                    f"{e.fmt(3)} of its time ({census[g['goto']].jumps} goto dispatch jumps, "
                    f"{'MERGED' if census[g['goto']].merged else 'not merged'}).")
for v in lj:
    e = v["geomean"]
    findings.append(f"{v['luajit']} takes {e.fmt(3)} of the time of {v['best']} ({_sig(e)} "
                    f"it).")
nl = ex["nolink"]
sh = ex["shimlab"]["modes"]
findings.append(
    f"A LuaJIT trace exit that no side trace links, with the re-entry, costs "
    f"{nl['slope'].fmt(1)} cycles ({nl['dispatches'].fmt(1)} LuaJIT dispatches; "
    f"{nl['exit_and_entry'].fmt(1)} without the three interpreted bytecodes), against "
    + ", ".join(f"shimlab {m} {sh[m]['round_trip'].fmt(1)}" for m in exits.SHIMLAB_MODES)
    + " on the same CPU: LuaJIT's exit is a conversion (all registers saved, a C call, the "
      "snapshot written back to the Lua stack), shimlab's are not; its entry is a direct jump "
      "like jit-direct's.")
for f in findings:
    print("-", f)
(OUT / "findings.txt").write_text("\n".join(findings) + "\n")
nb.save_json({"quick": QUICK, "cpu": cpu, "clock": CLOCK, "findings": findings,
              "census": {n: c.line() for n, c in census.items()}}, OUT)
