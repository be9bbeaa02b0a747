"""The corpus report's arithmetic on made-up samples: the whole-process
ceiling splits a JIT's shortfall into the process start's and its own."""
from __future__ import annotations

from dataclasses import replace

from shimlab.bench import corpus_report, harness
from shimlab.bench.results import ResultFile, RunSamples
from shimlab.corpus import Entry
from shimlab.paths import ROOT


def _results(tmp_path, times_ms: dict) -> tuple[ResultFile, list[harness.Config], list[Entry]]:
    """One program, p.bf: the baseline and the JIT, steady and whole, at the
    given medians (ms)."""
    w = str(ROOT / "p.bf")
    base = harness.Config("programs", w, "tailcall", "cc")
    jit = harness.Config("programs", w, "jit-direct", "cc", jit_opt=3, bf_opt=1)
    cfgs = [base, replace(base, whole=True), jit, replace(jit, whole=True)]
    res = ResultFile(tmp_path / "r.json")
    for c, ms in zip(cfgs, times_ms):
        res.add(c.key, c.describe(), [RunSamples(cycles=[], ns=[int(ms * 1e6)] * 3)])
    return res, cfgs, [Entry(ROOT / "p.bf", "hand", True, "")]


def test_the_ceiling_is_the_whole_speedup_with_a_free_jit_start(tmp_path):
    # the baseline: 200 ms whole, 100 in the VM; the JIT: 10 ms in the VM, 150 whole
    res, cfgs, _ = _results(tmp_path, (100, 200, 10, 150))
    ceil = corpus_report.ceilings(res, cfgs)
    assert list(ceil) == [cfgs[3].key]
    ceiling, first_run_ns = ceil[cfgs[3].key]
    assert abs(ceiling - 200 / 110) < 1e-9
    assert abs(first_run_ns - 40e6) < 1     # 150 - (100 outside the VM + 10 in it)


def test_the_report_shows_the_ceiling_per_program_and_over_the_corpus(tmp_path):
    res, cfgs, entries = _results(tmp_path, (100, 200, 10, 150))
    lines = corpus_report.report(res, cfgs, entries)
    text = "\n".join(lines)
    row = next(ln for ln in text.splitlines() if ln.startswith("p.bf"))
    assert row.split()[-2:] == ["1.82", "40"]
    ceiling_rows = [ln for ln in text.splitlines() if " ceiling " in f" {ln} "
                    and "jit-direct --jit-opt 3" in ln]
    assert len(ceiling_rows) == 2           # the corpus and its mandelbrot-class subset
    assert all("1.82" in ln for ln in ceiling_rows)


def test_no_ceiling_without_the_steady_runs_it_needs(tmp_path):
    res, cfgs, _ = _results(tmp_path, (100, 200, 10, 150))
    assert corpus_report.ceilings(res, [c for c in cfgs if c.whole]) != {}  # keys are in results
    partial = ResultFile(tmp_path / "p.json")
    for c in cfgs[1:]:                      # no baseline steady run
        g = res.get(c.key)
        partial.add(c.key, c.describe(), g.runs)
    assert corpus_report.ceilings(partial, cfgs) == {}


def test_a_negative_first_run_cost_is_marked_not_clipped(tmp_path):
    res, cfgs, entries = _results(tmp_path, (100, 200, 10, 100))    # 10 ms under the floor
    text = "\n".join(corpus_report.report(res, cfgs, entries))
    row = next(ln for ln in text.splitlines() if ln.startswith("p.bf"))
    assert row.split()[-3:] == ["1.82", "-10", "!"]


def test_the_time_outside_the_vm_is_one_median_over_programs(tmp_path):
    """A long program's whole and steady medians differ by their noise, not
    by the start: the time outside the VM is the median over programs."""
    cfgs, res = [], ResultFile(tmp_path / "r.json")
    for name, (sb, wb, sj, wj) in {"p.bf": (100, 200, 10, 150), "q.bf": (900, 910, 100, 200),
                                   "r.bf": (50, 170, 5, 160)}.items():
        w = str(ROOT / name)
        base = harness.Config("programs", w, "tailcall", "cc")
        jit = harness.Config("programs", w, "jit-direct", "cc", jit_opt=3, bf_opt=1)
        for c, ms in zip([base, replace(base, whole=True), jit, replace(jit, whole=True)],
                         (sb, wb, sj, wj)):
            res.add(c.key, c.describe(), [RunSamples(cycles=[], ns=[int(ms * 1e6)] * 3)])
            cfgs.append(c)
    assert corpus_report.outside_vm_ns(res, cfgs) == 100e6      # of 100, 10 and 120 ms
    ceil = corpus_report.ceilings(res, cfgs)
    q = next(c for c in cfgs if c.whole and c.mode == "jit-direct" and "q.bf" in c.workload)
    assert abs(ceil[q.key][0] - 910 / 200) < 1e-9 and abs(ceil[q.key][1]) < 1


def test_the_start_sweep_puts_each_start_before_both_steady_times(tmp_path):
    """(S + baseline steady) / (S + JIT steady), S the measured time outside
    the VM and then START_SWEEP_MS: a faster start lifts the ceiling toward
    the steady speedup, never past it."""
    res, cfgs, entries = _results(tmp_path, (100, 200, 10, 150))
    rows = corpus_report.start_sweep(res, cfgs, entries, 100e6)
    assert [r[0] for r in rows] == ["100 ms (measured)"] + [
        f"{ms} ms" for ms in corpus_report.START_SWEEP_MS]
    for row, start in zip(rows, [100] + list(corpus_report.START_SWEEP_MS)):
        want = f"{(start + 100) / (start + 10):.2f}"
        assert row[1:] == ["jit-direct --jit-opt 3", want, want]   # p.bf is mandelbrot-class
    values = [float(r[2]) for r in rows]
    assert values == sorted(values) and values[-1] < 10
    text = "\n".join(corpus_report.report(res, cfgs, entries))
    assert "1 ms  jit-direct --jit-opt 3" in text and "9.18" in text


def test_a_loss_beyond_the_noise_is_marked_and_listed_one_within_it_is_not(tmp_path):
    res, cfgs, entries = _results(tmp_path, (100, 200, 10, 250))   # whole: 0.80, every run
    text = "\n".join(corpus_report.report(res, cfgs, entries))
    row = next(ln for ln in text.splitlines() if ln.startswith("p.bf"))
    assert "0.80*" in row.split()
    assert "slower than tailcall --bf-opt 0 beyond the noise: jit-direct --jit-opt 3 whole: " \
           "p.bf 0.80 [0.80, 0.80]" in text
    # the same median with runs that spread across 1: not a loss on the evidence
    noisy = ResultFile(tmp_path / "n.json")
    for c, ms in zip(cfgs, (100, 200, 10, 250)):
        spread = [ms * 0.6, ms, ms * 1.4] if c.whole else [ms] * 3
        noisy.add(c.key, c.describe(), [RunSamples(cycles=[], ns=[int(x * 1e6) for x in spread])
                                        for _ in range(3)])
    text = "\n".join(corpus_report.report(noisy, cfgs, entries))
    assert "beyond the noise: no configuration on any program (of 2 speedups" in text
    assert "0.80*" not in text
