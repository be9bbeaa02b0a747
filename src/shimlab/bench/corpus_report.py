"""`bench programs --corpus`: every configuration judged over the whole
corpus (corpus/corpus.toml), not by its best program.

Per program: each configuration's speedup over `tailcall --bf-opt 0`, in
steady state (time inside the VM, compiles excluded) and whole process
(`shimlab run` timed from the outside: start-up, compiles and the run);
minipy programs also under CPython (the venv's, in process and as `python
FILE`); and what the JIT compiled: traces, bytes of code, bytes per VM
instruction in traces, compile time.  Then, per configuration, the
distribution: the geometric mean with its bootstrap interval, the worst and
the best program, over the whole corpus and over its mandelbrot-class
programs.
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from .. import corpus as corpus_mod
from .. import modes as mode_registry
from ..frontend import bf
from . import harness, stats
from .table import table

CPYTHON = harness.CPYTHON


def configs(entries, cc: str, modes_, jit_opts, bf_opts, whole: bool,
            before: str | None = None, trace_cache: bool = False) -> list[harness.Config]:
    """tailcall at every front end level (the first is the baseline), each
    JIT mode at every optimizer level at the JIT's front end level (run's
    default, 1, when it is measured: a trace ends at level 2's walks; else
    the last one measured), CPython for minipy; each steady and, with `whole`, whole
    process; with `before` (another checkout's root) each shimlab
    configuration also as that checkout runs it; trace_cache: the JIT's
    whole processes also with their trace cache on, beside those with it
    off (a first run's)."""
    out = []
    for e in entries:
        w = str(e.path)
        inp = str(e.input) if e.input else None
        levels = bf_opts if e.language == "bf" else (0,)
        base = [harness.Config("programs", w, m, cc, inp, bf_opt=b)
                for m in modes_ if not mode_registry.is_jit(m) for b in levels]
        jit_level = bf.DEFAULT_LEVEL if bf.DEFAULT_LEVEL in levels else levels[-1]
        jit = [harness.Config("programs", w, m, cc, inp, jit_opt=o, bf_opt=jit_level)
               for m in modes_ if mode_registry.is_jit(m) for o in jit_opts]
        py = [harness.Config("programs", w, CPYTHON, cc, inp)] if e.language == "minipy" else []
        for c in base + jit + py:
            for v in [c] + ([replace(c, checkout=before)] if before and c.mode != CPYTHON
                            else []):
                out.append(v)
                if whole:
                    out.append(_whole(v))
                    if trace_cache and mode_registry.is_jit(v.mode):
                        out.append(_whole(v, True))
    return out


def _whole(c: harness.Config, trace_cache: bool = False) -> harness.Config:
    return replace(c, whole=True, trace_cache=trace_cache and mode_registry.is_jit(c.mode))


def label(c: harness.Config) -> str:
    """A configuration's column in the per-program table (a JIT runs at its
    one front end level, so its column names only its optimizer level)."""
    if c.mode == CPYTHON:
        return "CPython"
    before = " before" if c.checkout else ""
    if mode_registry.is_jit(c.mode):
        return f"{c.mode} o{c.jit_opt}{before}" + (" tc" if c.trace_cache else "")
    return f"{c.mode} bf{c.bf_opt}{before}"


def _group_label(c: harness.Config) -> str:
    """The name a configuration has across programs."""
    if c.mode == CPYTHON:
        return "CPython"
    before = " (before)" if c.checkout else ""
    if mode_registry.is_jit(c.mode):
        return f"{c.mode} --jit-opt {c.jit_opt}{before}" + (
            " (trace cache)" if c.trace_cache else "")
    return f"{c.mode} --bf-opt {c.bf_opt}{before}"


def _base(c: harness.Config) -> harness.Config:
    """What a configuration's speedup is over: tailcall --bf-opt 0 of this
    checkout (the interpreter at level 0 is the same code before and after)."""
    return harness.Config("programs", c.workload, "tailcall", c.cc, c.input, whole=c.whole)


def speedups(results, cfgs: list[harness.Config]) -> dict:
    """key -> (speedup over tailcall --bf-opt 0 of the same kind, lo, hi, samples, base samples)."""
    out = {}
    for c in cfgs:
        b = _base(c)
        if c.key not in results or b.key not in results:
            continue
        g, bg = results.get(c.key).ns_groups(), results.get(b.key).ns_groups()
        r, lo, hi = stats.ratio_ci(bg, g)
        out[c.key] = (r, lo, hi, g, bg)
    return out


def _steady(c: harness.Config) -> harness.Config:
    return replace(c, whole=False, trace_cache=False)


def outside_vm_ns(results, cfgs: list[harness.Config]) -> float | None:
    """The baseline's time outside the VM (process start, front end, exit):
    the median over programs of its whole median less its steady median.
    One figure for the run, not one a program: on a program that runs for
    seconds the two medians differ by their noise (a few %, more than the
    start; mandel_bits.bf's was 14 ms against a median of 119, Zen 3)."""
    diffs = []
    for w in dict.fromkeys(c.workload for c in cfgs):
        base = _base(next(c for c in cfgs if c.workload == w))
        keys = [replace(base, whole=True).key, replace(base, whole=False).key]
        if all(k in results for k in keys):
            wb, sb = (stats.median(results.get(k).ns_groups()) for k in keys)
            diffs.append(wb - sb)
    return stats.median(diffs) if diffs else None


def ceilings(results, cfgs: list[harness.Config], outside: float | None = None) -> dict:
    """Whole-process JIT key -> (ceiling, first-run cost in ns), from medians.

    The ceiling is the whole-process speedup the JIT would have if its start,
    its wait and its compiles cost nothing: the baseline's time outside the
    VM (`outside`, else outside_vm_ns) plus the JIT's steady time, against
    the baseline's whole time.  A program whose run is short next to the
    process's start has a low ceiling whatever the JIT does, so a
    whole-process shortfall splits in two: the ceiling's (the start's) and
    the first-run cost's (the JIT's: its whole time less that sum).
    Assumes the JIT's process costs the baseline's outside the VM, which
    the programs that make no trace (hello.bf) check."""
    out = {}
    outside = outside_vm_ns(results, cfgs) if outside is None else outside
    if outside is None:
        return out
    for c in cfgs:
        if not (c.whole and not c.trace_cache and mode_registry.is_jit(c.mode)):
            continue
        keys = [_base(c).key, _steady(c).key, c.key]
        if not all(k in results for k in keys):
            continue
        wb, sj, wj = (stats.median(results.get(k).ns_groups()) for k in keys)
        floor = outside + sj
        out[c.key] = (wb / floor, wj - floor)
    return out


def slower_than_baseline(sp: dict, cfgs: list[harness.Config]) -> dict:
    """shimlab's configurations (as across programs, and their kind; not
    CPython) -> the programs on which the speedup's 95% interval lies below
    1: slower than the baseline beyond the noise.  A point estimate below
    1 with an interval across it is not a loss on the evidence (a
    whole-process run of a short program varies by ~30% from process to
    process on a shared host)."""
    out: dict = {}
    for c in {c.key: c for c in cfgs if c.mode != CPYTHON}.values():
        if c.key in sp and sp[c.key][2] < 1:
            name = f"{_group_label(c)} {'whole' if c.whole else 'steady'}"
            out.setdefault(name, []).append(
                f"{Path(c.workload).name} {sp[c.key][0]:.2f} [{sp[c.key][1]:.2f}, "
                f"{sp[c.key][2]:.2f}]")
    return out


def _jit_stats(results, c: harness.Config) -> dict | None:
    if c.key not in results:
        return None
    runs = [r.jit for r in results.get(c.key).runs if r.jit]
    if not runs:
        return None
    return {k: stats.median([r[k] for r in runs]) for k in runs[0]}


def report(results, cfgs: list[harness.Config], entries) -> list[str]:
    sp = speedups(results, cfgs)
    lines = []
    shown = [c for c in cfgs if not (c.mode == "tailcall" and c.bf_opt == 0 and not c.checkout)]
    by_name = {str(e.path): e for e in entries}
    # per program
    cols = []
    for c in shown:
        lab = label(c) + (" whole" if c.whole else "")
        if lab not in cols:
            cols.append(lab)
    rows = []
    jit_cfg = [c for c in cfgs if mode_registry.is_jit(c.mode) and not c.whole]
    outside = outside_vm_ns(results, cfgs)
    ceil = ceilings(results, cfgs, outside)
    ceil_cfg = [c for c in cfgs if c.key in ceil and not c.checkout]
    for w in dict.fromkeys(c.workload for c in cfgs):
        e = by_name.get(w)
        cells = {}
        for c in shown:
            if c.workload == w and c.key in sp:
                cells[label(c) + (" whole" if c.whole else "")] = f"{sp[c.key][0]:.2f}" + (
                    "*" if sp[c.key][2] < 1 else "")
        js = next((_jit_stats(results, c) for c in jit_cfg if c.workload == w
                   and _jit_stats(results, c)), None)
        extra = ["-"] * 4
        if js:
            extra = [f"{js['traces']:.0f}", f"{js['code_bytes'] / 1024:.1f}",
                     f"{js['code_bytes'] / max(js['trace_ops'], 1):.0f}",
                     f"{js['compile_ns'] / 1e6:.1f}"]
        cc_ = next((c for c in ceil_cfg if c.workload == w), None)
        # a negative cost says the parts do not add up (noise, or a steady
        # time above what the first run reached): shown, never clipped
        extra += [f"{ceil[cc_.key][0]:.2f}", f"{ceil[cc_.key][1] / 1e6:.0f}"
                  + (" !" if ceil[cc_.key][1] < 0 else "")] if cc_ else ["-"] * 2
        rows.append([Path(w).name, (e.style + (" M" if e.mandel else "")) if e else ""]
                    + [cells.get(k, "-") for k in cols] + extra)
    lines.append(table(rows, ["program", "style"] + cols +
                       ["traces", "code KB", "B/VM instr", "compile ms", "ceiling",
                        "1st-run ms"]))
    lines.append("speedups over tailcall --bf-opt 0 of the same kind (steady: the run inside "
                 "the VM, compiles excluded; whole: `shimlab run` from the outside); M: "
                 "mandelbrot-class; traces, code, bytes per VM instruction in traces and "
                 "record+optimize+compile time of the first JIT configuration, from a --stats run "
                 "(the trace cache off: every trace compiled); ceiling: the first JIT "
                 "configuration's whole-process speedup if its start, wait and compiles cost "
                 "nothing (the baseline's time outside the VM, "
                 + (f"{outside / 1e6:.0f} ms: " if outside is not None else "")
                 + "the median over programs of its whole less its steady time, plus the "
                 "JIT's steady time), "
                 "1st-run ms: what they cost (its whole time less that), from medians; "
                 "! a negative cost: the parts do not add up (noise, or a first run faster "
                 "than the steady time predicts), an anomaly to look at; * slower than "
                 "tailcall --bf-opt 0 beyond the noise (the speedup's 95% interval is below 1)")
    slower = slower_than_baseline(sp, shown)
    compared = len({c.key for c in shown if c.key in sp and c.mode != CPYTHON})
    lines.append("slower than tailcall --bf-opt 0 beyond the noise: " + (
        "; ".join(f"{name}: {', '.join(progs)}" for name, progs in slower.items())
        if slower else "no configuration on any program")
        + f" (of {compared} speedups; one that equals the baseline lies below 1 so by chance "
          f"1 time in 40: ~{compared / 40:.0f} here)")
    # distributions
    drows = []
    groups: dict = {}
    for c in shown:
        if c.key in sp:
            groups.setdefault((_group_label(c), c.whole), []).append(c)
    for subset, pick in (("corpus", lambda e: True), ("mandelbrot-class", lambda e: e.mandel)):
        for (name, whole), cs in groups.items():
            cs = [c for c in cs if by_name.get(c.workload) and pick(by_name[c.workload])]
            if not cs:
                continue
            g, lo, hi = stats.geometric_mean_ratio([(sp[c.key][4], sp[c.key][3]) for c in cs])
            worst = min(cs, key=lambda c: sp[c.key][0])
            best = max(cs, key=lambda c: sp[c.key][0])
            drows.append([subset, name, "whole" if whole else "steady", str(len(cs)),
                          f"{g:.2f}", f"[{lo:.2f}, {hi:.2f}]",
                          f"{sp[worst.key][0]:.2f} {Path(worst.workload).name}",
                          f"{sp[best.key][0]:.2f} {Path(best.workload).name}"])
            if whole and any(c.key in ceil for c in cs):
                cs = [c for c in cs if c.key in ceil]
                g = _geomean([ceil[c.key][0] for c in cs])
                worst = min(cs, key=lambda c: ceil[c.key][0])
                best = max(cs, key=lambda c: ceil[c.key][0])
                drows.append([subset, name, "ceiling", str(len(cs)), f"{g:.2f}", "-",
                              f"{ceil[worst.key][0]:.2f} {Path(worst.workload).name}",
                              f"{ceil[best.key][0]:.2f} {Path(best.workload).name}"])
        drows.append(None)
    lines.append("")
    lines.append(table(drows[:-1], ["programs", "configuration", "kind", "n", "geomean",
                                    "95% CI", "worst", "best"], align="llllrlll"))
    lines.append("geomean, worst, best: speedup over tailcall --bf-opt 0 (CPython: on the "
                 "minipy programs only); intervals resample worker processes and runs; "
                 "ceiling: the whole-process geomean if the JIT started and compiled for "
                 "nothing (per program above), a point estimate")
    srows = start_sweep(results, cfgs, entries, outside)
    if srows:
        lines.append("")
        lines.append(table(srows, ["outside the VM", "JIT configuration", "corpus ceiling",
                                   "mandelbrot-class ceiling"], align="rlrr"))
        lines.append("the JIT's whole-process ceiling as if a process spent that long "
                     "outside the VM (starting, reading the program, exiting; the measured "
                     "time first): geomean of (that + the baseline's steady time) / (that + "
                     "the JIT's steady time); what a faster start would allow any JIT, and "
                     "what none can win back on its own")
    prow = placement(results, cfgs)
    if prow:
        lines.append("")
        lines.append(table(prow, ["configuration", "kind", "n", "geomean spread",
                                  "largest"], align="lllrl"))
        lines.append("code placement: per program, the median time of its slowest code "
                     "layout over its fastest (the same machine code, shifted; process-to-"
                     "process noise included); a spread near a speedup's distance from 1 "
                     "means that speedup may be placement")
    return lines


START_SWEEP_MS = (50, 20, 5, 1)


def start_sweep(results, cfgs: list[harness.Config], entries,
                outside: float | None) -> list[list[str]]:
    """Per JIT configuration (whole, first run), the geomean over the corpus
    and its mandelbrot-class programs of (S + the baseline's steady time) /
    (S + the JIT's steady time): its whole-process ceiling if a process
    spent S outside the VM, S the measured time and then START_SWEEP_MS.
    How much of a shortfall a faster process start could take back (from
    steady medians alone, so the measured row can differ from the ceiling
    row above by the baseline's noise)."""
    mandel = {str(e.path) for e in entries if e.mandel}
    pairs: dict = {}
    for c in cfgs:
        if not (c.whole and not c.trace_cache and not c.checkout
                and mode_registry.is_jit(c.mode)):
            continue
        keys = [replace(_base(c), whole=False).key, _steady(c).key]
        if all(k in results for k in keys):
            sb, sj = (stats.median(results.get(k).ns_groups()) for k in keys)
            pairs.setdefault(_group_label(c), []).append((sb, sj, c.workload in mandel))
    starts = [(f"{outside / 1e6:.0f} ms (measured)", outside)] if outside is not None else []
    starts += [(f"{ms} ms", ms * 1e6) for ms in START_SWEEP_MS]
    rows = []
    for label_, start in starts:
        for name, xs in pairs.items():
            ratios = [((start + sb) / (start + sj), is_m) for sb, sj, is_m in xs]
            m = [r for r, is_m in ratios if is_m]
            rows.append([label_, name, f"{_geomean([r for r, _ in ratios]):.2f}",
                         f"{_geomean(m):.2f}" if m else "-"])
    return rows


def placement(results, cfgs: list[harness.Config]) -> list[list[str]]:
    """Per configuration, how far code placement alone moved its times: the
    geometric mean over programs of slowest layout / fastest layout, and the
    program it moved most.  A baseline that got slower because new handlers
    shifted the hot ones across cache lines (December 2026) shows here."""
    groups: dict = {}
    for c in cfgs:
        if c.mode == CPYTHON or c.key not in results:
            continue
        by: dict = {}
        for r in results.get(c.key).runs:
            if r.code_layout is not None and r.ns:
                by.setdefault(r.code_layout, []).extend(r.ns)
        if len(by) < 2:
            continue
        meds = [stats.median(v) for v in by.values()]
        groups.setdefault((_group_label(c), c.whole), []).append(
            (max(meds) / min(meds), Path(c.workload).name))
    rows = []
    for (name, whole), xs in groups.items():
        g = _geomean([x for x, _ in xs])
        worst = max(xs)
        rows.append([name, "whole" if whole else "steady", str(len(xs)),
                     f"{(g - 1) * 100:.1f}%", f"{(worst[0] - 1) * 100:.1f}% {worst[1]}"])
    return rows


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def entries_for(names) -> list:
    """The corpus, or the programs of it whose file names are in `names`."""
    entries = corpus_mod.entries()
    if names:
        wanted = {Path(n).name for n in names}
        entries = [e for e in entries if e.name in wanted]
        missing = wanted - {e.name for e in entries}
        if missing:
            from ..errors import ShimlabError
            raise ShimlabError(f"not in the corpus: {', '.join(sorted(missing))}")
    return entries
