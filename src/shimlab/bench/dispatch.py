"""`bench dispatch`: every dispatch variant x every compiler that can build it,
on BF and minipy workloads; cycles per executed VM instruction, ratios to the
same compiler's goto build with bootstrap intervals, and the baseline check
printed next to the numbers.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .. import modes, toolchain
from ..errors import ShimlabError
from ..interp import build as build_mod
from ..interp import dispatch_check
from ..paths import EXAMPLES
from . import harness, stats
from .results import ResultFile
from .table import table


# (program, input) per suite size; quick ones run a few ms each
DISPATCH_WORKLOADS = {
    "quick": ["bf/nested.bf", "minipy/nested_loops.py"],
    "full": ["bf/squares.bf", "bf/rot13.bf", "bf/nested.bf", "bf/fib.bf", "minipy/fib.py",
             "minipy/sieve.py", "minipy/nested_loops.py"],
}
PRESETS = {   # processes (minimum), warmup, samples, target 95% CI half-width, max processes
    "quick": (4, 2, 30, None, 0),
    "full": (5, 2, 15, 0.01, 80),
}


def dispatch_configs(args) -> list[harness.Config]:
    size = "quick" if args.quick else "full"
    workloads = args.workload or [str(EXAMPLES / w) for w in DISPATCH_WORKLOADS[size]]
    compilers = [toolchain.get_compiler(n) for n in args.cc] if args.cc else \
        toolchain.find_compilers()
    chosen = args.mode or list(modes.INTERPRETERS)
    # --cache K: the modes that can cache at each K; the others (the goto
    # baseline, asm) at K = 0 only
    caches = sorted(set(getattr(args, "cache", None) or [0]))
    configs = []
    for w in workloads:
        if not Path(w).exists():
            raise ShimlabError(f"{w}: no such workload")
        inp = Path(w).with_suffix(".in")
        for cc in compilers:
            for mode in chosen:
                if cc.features >= set(modes.get(mode).features):
                    for k in (caches if modes.get(mode).cache else [0]):
                        configs.append(harness.Config("dispatch", w, mode, cc.name,
                                                      str(inp) if inp.exists() else None,
                                                      cache=k))
    if not configs:
        raise ShimlabError("no configuration to run (no compiler builds the chosen modes)")
    return configs


def label(c: harness.Config) -> str:
    """The mode as the tables name it: with its K when it caches values."""
    return f"{c.mode} K={c.cache}" if c.cache else c.mode


def _per_instruction(samples, vm_instructions: int) -> np.ndarray:
    return np.asarray(samples, dtype=float) / vm_instructions


def report(results: ResultFile, configs: list[harness.Config], out=sys.stdout) -> list[dict]:
    """Print the table; return the ratio rows (for plots and tests)."""
    checks = {}
    for cc in sorted({c.cc for c in configs}):
        for mode in ("goto", "goto-merged"):
            if any(c.cc == cc and c.mode == mode for c in configs):
                checks[(mode, cc)] = dispatch_check.analyze(build_mod.build(mode, cc))
    rows, ratio_rows = [], []
    for w in dict.fromkeys(c.workload for c in configs):
        for cc in dict.fromkeys(c.cc for c in configs):
            base_key = f"dispatch/{Path(w).name}/goto/{cc}"
            base = results.get(base_key) if base_key in results else None
            # the hand-written reference: the same compiler's asm interpreter
            asm_key = f"dispatch/{Path(w).name}/asm/{cc}"
            asm = results.get(asm_key) if asm_key in results else None
            for c in configs:
                if c.workload != w or c.cc != cc or c.key not in results:
                    continue
                r = results.get(c.key)
                n = r.runs[0].vm_instructions
                cyc = [_per_instruction(g, n) for g in r.cycles_groups()]
                med = stats.median(cyc)
                lo, hi = stats.bootstrap_ci(cyc)
                ratio = rlo = rhi = None
                verdict = ""
                if base is not None:
                    bcyc = [_per_instruction(g, n) for g in base.cycles_groups()]
                    ratio, rlo, rhi = stats.ratio_ci(cyc, bcyc)
                    verdict = "baseline" if c.mode == "goto" else stats.verdict(ratio, rlo, rhi)
                    flagged = checks.get(("goto", cc))
                    if flagged is not None and flagged.flagged and c.mode != "goto":
                        verdict += " (vs MERGED goto!)"
                    ratio_rows.append({"label": f"{Path(w).name} {label(c)}/{cc}", "ratio": ratio,
                                       "lo": rlo, "hi": rhi, "workload": Path(w).name,
                                       "mode": c.mode, "cache": c.cache, "cc": cc,
                                       "verdict": verdict})
                vs_asm = ""
                if asm is not None:
                    acyc = [_per_instruction(g, n) for g in asm.cycles_groups()]
                    a, alo, ahi = stats.ratio_ci(cyc, acyc)
                    vs_asm = f"{a:.3f} [{alo:.3f}, {ahi:.3f}]"
                    if ratio_rows and ratio_rows[-1]["label"] == f"{Path(w).name} {label(c)}/{cc}":
                        ratio_rows[-1].update(vs_asm=a, vs_asm_lo=alo, vs_asm_hi=ahi)
                rows.append((Path(w).name, cc, label(c), f"{n:,}", f"{med:.3f}",
                             f"[{lo:.3f}, {hi:.3f}]",
                             "" if ratio is None else f"{ratio:.3f}",
                             "" if ratio is None else f"[{rlo:.3f}, {rhi:.3f}]", verdict,
                             vs_asm))
            rows.append(None)
    print(table(rows[:-1] if rows and rows[-1] is None else rows,
                ["workload", "compiler", "mode", "VM instrs/run", "cycles/instr", "95% CI",
                 "vs goto", "95% CI", "verdict", "vs asm [95% CI]"], align="lllrrlrlll"),
          file=out)
    print("cycles/instr: TSC cycles per executed VM instruction (median over worker processes, "
          "each weighing the same); vs goto: time ratio to the same compiler's goto build "
          "(< 1 is faster); vs asm: time ratio to the same compiler's asm interpreter "
          "(PeachPy handlers written by hand: a reference point, not a bound; < 1: the "
          "compiled variant beats it); "
          "bootstrap 95% intervals.", file=out)
    _print_geomeans(results, configs, out)
    _print_geomeans(results, configs, out, base="asm")
    _print_placement(results, configs, out)
    print("\nbaseline check (shimlab dis --native --mode goto --cc CC for details):", file=out)
    for (mode, cc), rep in sorted(checks.items()):
        print(f"  {'!! ' if rep.flagged and mode == 'goto' else '   '}{rep.summary()}", file=out)
    if any(rep.flagged for (mode, _), rep in checks.items() if mode == "goto"):
        print("WARNING: a real goto build is MERGED (one shared dispatch jump): ratios against "
              "it flatter every other variant. Compare against an unflagged goto build.",
              file=out)
    return ratio_rows


def by_code_layout(result, vm_instructions: int) -> dict[int, float]:
    """Median cycles per VM instruction of each code layout's worker processes."""
    groups: dict[int, list] = {}
    for run in result.runs:
        if run.code_layout and run.cycles:
            groups.setdefault(run.code_layout, []).append(
                _per_instruction(run.cycles, vm_instructions))
    return {k: stats.median(g) for k, g in sorted(groups.items())}


def _print_placement(results: ResultFile, configs, out) -> None:
    """How far the same configuration moves between code layouts: the part of
    a verdict that code placement, not the dispatch technique, decides."""
    lines = []
    for c in configs:
        r = results.get(c.key)
        per = by_code_layout(r, r.runs[0].vm_instructions)
        if len(per) < 2:
            continue
        lo, hi = min(per.values()), max(per.values())
        lines.append((c.workload_name, c.cc, label(c), len(per),
                      " ".join(f"{v:.3f}" for v in per.values()), f"{100 * (hi / lo - 1):.1f}%"))
    if lines:
        print("\ncode placement: cycles/instr of each code layout's worker processes (the same "
              "machine code, shifted):", file=out)
        print(table(lines, ["workload", "compiler", "mode", "layouts", "cycles/instr per layout",
                            "max/min - 1"], align="lllrll"), file=out)


def _print_geomeans(results, configs, out, base: str = "goto") -> None:
    combos = dict.fromkeys((c.mode, c.cc, c.cache) for c in configs if c.mode != base)
    lines = []
    for mode, cc, cache in combos:
        pairs = []
        for w in dict.fromkeys(c.workload for c in configs):
            k = harness.Config("dispatch", w, mode, cc, cache=cache).key
            b = f"dispatch/{Path(w).name}/{base}/{cc}"
            if k in results and b in results:
                pairs.append((results.get(k).cycles_groups(), results.get(b).cycles_groups()))
        if len(pairs) > 1:
            g, lo, hi = stats.geometric_mean_ratio(pairs)
            name = f"{mode} K={cache}" if cache else mode
            lines.append((f"{name}/{cc}", f"{g:.3f}", f"[{lo:.3f}, {hi:.3f}]",
                          stats.verdict(g, lo, hi)))
    if lines:
        print(f"\ngeometric mean over workloads, time vs the same compiler's {base}:", file=out)
        print(table(lines, ["variant", "ratio", "95% CI", "verdict"], align="lrll"), file=out)


def main(args) -> int:
    if args.suite != "dispatch":
        raise ShimlabError(f"unknown suite {args.suite}")
    # every refusal of the options first: dispatch_configs probes the compilers
    if args.code_layout == "random" and args.code_layouts < 1:
        raise ShimlabError(f"--code-layouts {args.code_layouts}: needs at least 1")
    if args.timeout <= 0:
        raise ShimlabError(f"--timeout {args.timeout:g}: needs a positive number of seconds")
    harness.check_workloads(args.workload)
    harness.check_file_options(args)
    configs = dispatch_configs(args)
    preset = PRESETS["quick" if args.quick else "full"]
    target = args.target_ci / 100 if args.target_ci is not None else preset[3]
    opts = harness.Options(processes=args.processes or preset[0],
                           warmup=args.warmup if args.warmup is not None else preset[1],
                           samples=args.samples or preset[2], cpu=args.cpu,
                           count_instructions=args.count == "instructions",
                           target_ci=target or None,
                           max_processes=args.max_processes or preset[4] or 40,
                           layout=args.layout, timeout=args.timeout,
                           code_layouts=(args.code_layouts if args.code_layout == "random"
                                         else 0),
                           tape_len=getattr(args, "tape_size", None) or harness.Options.tape_len)
    results = harness.open_results(args, "dispatch", configs)
    path = results.path
    cpu = opts.cpu if opts.cpu is not None else harness.default_cpu()
    more = (f" (more, up to {opts.max_processes}, until each median is known to "
            f"+-{100 * opts.target_ci:g}%)" if opts.target_ci else "")
    print(f"{len(configs)} configurations x {opts.processes} worker processes{more} x "
          f"{opts.samples} samples, pinned to CPU {cpu}", file=sys.stderr)
    outcome = harness.measure_and_tell(configs, results, opts, resume_hint=True)
    if outcome.interrupted:
        return 130
    if not len(results):
        print("shimlab: no configuration finished; no results file written", file=sys.stderr)
        return 1
    rows = report(results, [c for c in configs if c.key in results])
    layouts = ("each configuration built " f"{opts.code_layouts} times with its code at "
               "another place, worker processes spread over the builds" if opts.code_layouts
               else "the compiler's placement only (--code-layout fixed)")
    print(f"\ncode layouts: {layouts}; memory layouts: "
          + ("a new one every run" if opts.layout == "random" else "one fixed layout"))
    for key, hw in sorted(outcome.imprecise.items()):
        print(f"note: {key}: 95% interval +-{100 * hw:.2f}% after {results.runs_done(key)} "
              f"processes, wider than the +-{100 * opts.target_ci:g}% asked for")
    print(f"\nresults: {path}  (python -m pyperf stats {path.name} works on it)")
    if args.plot:
        from . import plot
        for p in plot.plot_distributions(results, path.with_suffix("")) + \
                plot.plot_ratios([r for r in rows if r["mode"] != "goto"],
                                 str(path.with_suffix("")) + "-ratios", "goto"):
            print(f"plot: {p}")
    return 1 if outcome.failures else 0
