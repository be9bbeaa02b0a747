"""`shimlab bench programs`: whole programs under the tail-call interpreter
and the three JIT modes.  Their inner loops get traces and their outer loops
mostly do not, so they cross often: this shows how much of a crossing's cost
survives in a real program.  Ratios are time against `tailcall`."""
from __future__ import annotations

from pathlib import Path

from .. import modes as mode_registry
from .. import toolchain
from ..errors import ShimlabError
from ..paths import EXAMPLES
from . import harness, stats
from .results import ResultFile, results_path
from .table import table

MODES = ("tailcall",) + mode_registry.JIT
WORKLOADS = {"quick": ["bf/nested.bf", "minipy/nested_loops.py"],
             "full": ["bf/heavy.bf", "bf/nested.bf", "bf/squares.bf", "minipy/heavy.py",
                      "minipy/nested_loops.py", "minipy/sieve.py"]}


def configs_for(workloads: list[str], cc: str, modes=MODES) -> list[harness.Config]:
    """Each workload (a path; its .in file, if any, is the input) in each mode."""
    configs = []
    for w in workloads:
        if not Path(w).exists():
            raise ShimlabError(f"{w}: no such workload")
        inp = Path(w).with_suffix(".in")
        configs += [harness.Config("programs", w, m, cc, str(inp) if inp.exists() else None)
                    for m in modes]
    return configs


def ratios(results: ResultFile, workloads: list[str], cc: str, modes=MODES) -> list[dict]:
    """One record per measured (workload, mode): median cycles per VM
    instruction and time against the same workload under tailcall with its
    95% bootstrap interval and verdict.  A workload without its tailcall
    baseline has no records."""
    out = []
    for w in workloads:
        name = Path(w).name
        base = f"programs/{name}/tailcall/{cc}"
        if base not in results:
            continue
        bg = results.get(base).cycles_groups()
        n = results.get(base).runs[0].vm_instructions
        for m in modes:
            key = f"programs/{name}/{m}/{cc}"
            if key not in results:
                continue
            g = results.get(key).cycles_groups()
            r, lo, hi = stats.ratio_ci(g, bg)
            out.append({"workload": name, "mode": m, "cycles_per_instr": stats.median(g) / n,
                        "vs_tailcall": r, "ci95": [lo, hi],
                        "verdict": "baseline" if m == "tailcall" else stats.verdict(r, lo, hi)})
    return out


def main(args) -> int:
    cc = toolchain.get_compiler(args.cc, need=set(mode_registry.get("jit-direct").features)).name
    workloads = args.workload or [str(EXAMPLES / w)
                                  for w in WORKLOADS["quick" if args.quick else "full"]]
    configs = configs_for(workloads, cc)
    opts = harness.Options(processes=args.processes or (3 if args.quick else 5), warmup=2,
                           samples=args.samples or (10 if args.quick else 5), cpu=args.cpu)
    path = results_path(args.output, "programs")
    results = ResultFile.open(path)
    outcome = harness.measure_and_tell(configs, results, opts)
    if outcome.interrupted:
        return 130
    rows = []
    for w in workloads:
        records = ratios(results, [w], cc)
        for r in records:
            lo, hi = r["ci95"]
            rows.append((r["workload"], r["mode"], f"{r['cycles_per_instr']:.3f}",
                         f"{r['vs_tailcall']:.3f}", f"[{lo:.3f}, {hi:.3f}]", r["verdict"]))
        if records:
            rows.append(None)
    print(table(rows[:-1], ["workload", "mode", "cycles/VM instr", "vs tailcall", "95% CI",
                            "verdict"], align="lllrll"))
    print(f"({cc}; two warm-up runs first; a loop that gets hot later stops the timed runs,\n"
          f" is compiled, and the samples start over, so no sample holds a compile)")
    print(f"\nresults: {path}")
    return 1 if outcome.failures else 0
