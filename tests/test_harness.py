"""The harness: workers, interleaving, crash reports, interruption and resume,
the baseline check, and `bench dispatch` output on a tiny size."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import EXAMPLES, compiler_for, get_build, interpreter_configs
from shimlab.interp import dispatch_check
from shimlab.bench import harness
from shimlab.bench.results import ResultFile
from shimlab.errors import RunError

TINY = str(EXAMPLES / "bf" / "hello.bf")
CCS = sorted({cc for _, cc in interpreter_configs()})


def _configs(modes=("switch", "goto")):
    return [harness.Config("t", TINY, m, compiler_for("goto")) for m in modes]


def test_worker_measures_inside_c():
    out = harness.run_worker(_configs()[1].job(warmup=1, samples=3, cpu=None), timeout=120)
    assert len(out["cycles"]) == 3 and len(out["ns"]) == 3 and len(out["warmup_ns"]) == 1
    assert all(c > 0 for c in out["cycles"]) and all(n > 0 for n in out["ns"])
    assert 1e8 < out["tsc_hz"] < 1e11


def test_worker_reports_a_bad_program(tmp_path):
    bad = tmp_path / "bad.bf"
    bad.write_text("<")
    job = harness.Config("t", str(bad), "goto", compiler_for("goto")).job(1, 1, None)
    with pytest.raises(RunError, match="tape head moved out of bounds"):
        harness.run_worker(job, timeout=120)


def test_a_crashing_worker_is_reported_not_fatal(tmp_path, monkeypatch):
    real = harness.run_worker
    crash = _configs()[0].key

    def flaky(job, timeout):
        if job["mode"] == "switch":
            raise RunError("worker crashed: killed by SIGSEGV")
        return real(job, timeout)
    monkeypatch.setattr(harness, "run_worker", flaky)
    rf = ResultFile.open(tmp_path / "r.json")
    out = harness.measure(_configs(), rf, harness.Options(processes=2, samples=2, quiet=True))
    assert out.failures == {crash: "worker crashed: killed by SIGSEGV"}
    assert rf.runs_done(_configs()[1].key) == 2 and crash not in rf


def test_rounds_interleave_configurations(tmp_path, monkeypatch):
    order = []
    real = harness.run_worker

    def spy(job, timeout):
        order.append(job["mode"])
        return real(job, timeout)
    monkeypatch.setattr(harness, "run_worker", spy)
    rf = ResultFile.open(tmp_path / "r.json")
    harness.measure(_configs(), rf, harness.Options(processes=3, samples=1, quiet=True))
    # each round runs every configuration once before any runs again
    assert [sorted(order[i:i + 2]) for i in range(0, 6, 2)] == [["goto", "switch"]] * 3


def test_interrupted_run_keeps_finished_work_and_resumes(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    real = harness.run_worker
    calls = {"n": 0}

    def interrupt_third(job, timeout):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(job, timeout)
    monkeypatch.setattr(harness, "run_worker", interrupt_third)
    opts = harness.Options(processes=2, samples=2, quiet=True)
    out = harness.measure(_configs(), ResultFile.open(path), opts)
    assert out.interrupted
    saved = ResultFile.load(path)
    assert sum(saved.runs_done(c.key) for c in _configs()) == 2
    monkeypatch.setattr(harness, "run_worker", real)
    resumed = ResultFile.open(path)
    out = harness.measure(_configs(), resumed, opts)
    assert not out.interrupted
    final = ResultFile.load(path)
    assert all(final.runs_done(c.key) == 2 for c in _configs())
    for c in _configs():
        run = final.get(c.key).runs[0]
        assert run.vm_instructions and len(run.cycles) == 2


@pytest.mark.parametrize("cc", [cc for cc in CCS if cc in ("gcc-12", "gcc-11", "clang-22")])
def test_detector_flags_goto_merged_and_not_goto(cc):
    assert dispatch_check.analyze(get_build("goto-merged", cc)).flagged
    report = dispatch_check.analyze(get_build("goto", cc))
    assert not report.flagged and report.dispatch_sites > 10


def test_goto_merged_is_flagged_with_every_compiler():
    for mode, cc in interpreter_configs():
        if mode == "goto-merged":
            rep = dispatch_check.analyze(get_build(mode, cc))
            assert rep.flagged and rep.dispatch_sites == 1, rep.summary()


def test_tailcall_dispatches_in_every_handler():
    for mode, cc in interpreter_configs():
        if mode == "tailcall":
            rep = dispatch_check.analyze(get_build(mode, cc))
            dispatching = [h for h in rep.handlers if h.name != "HALT"]
            assert all(h.own_sites >= 1 for h in dispatching), rep.summary()


def test_bench_dispatch_tiny_is_well_formed(tmp_path):
    out = tmp_path / "d.json"
    cc = compiler_for("goto-merged")
    r = subprocess.run([sys.executable, "-m", "shimlab.cli", "bench", "dispatch",
                        "--workload", TINY, "--cc", cc, "--processes", "1",
                        "--mode", "switch", "--mode", "goto", "--mode", "goto-merged",
                        # the table's form is the point here; tests/test_layouts.py
                        # covers code layouts (three builds each would triple the time)
                        "--code-layout", "fixed",
                        # --quick: no target interval, so 1 process is 1 process
                        "--quick",
                        "--samples", "3", "--warmup", "0", "-o", str(out), "--plot"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "cycles/instr" in r.stdout and "baseline check" in r.stdout
    rows = [re.split(r"\s{2,}", line.strip())[:3] for line in r.stdout.splitlines()]
    for mode in ("switch", "goto", "goto-merged"):
        assert ["hello.bf", cc, mode] in rows, r.stdout
    assert (tmp_path / "d.png").exists() and (tmp_path / "d-ratios.svg").exists()
    stats = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(out)],
                           capture_output=True, text=True)
    assert stats.returncode == 0, stats.stderr
    data = json.loads(out.read_text())
    assert len(data["benchmarks"]) == 3


def test_target_interval_adds_processes_until_narrow_or_capped(tmp_path):
    tight = ResultFile.open(tmp_path / "tight.json")
    out = harness.measure(_configs(), tight, harness.Options(
        processes=1, samples=2, quiet=True, target_ci=1e-9, max_processes=3))
    assert all(tight.runs_done(c.key) == 3 for c in _configs())
    assert set(out.imprecise) == {c.key for c in _configs()}     # reported, not hidden
    # a target any finite interval meets: on runs of microseconds one
    # preempted sample once made an interval wider than +-1000% (fresh clone)
    loose = ResultFile.open(tmp_path / "loose.json")
    out = harness.measure(_configs(), loose, harness.Options(
        processes=2, samples=2, quiet=True, target_ci=1e9, max_processes=5))
    assert all(loose.runs_done(c.key) == 2 for c in _configs()) and not out.imprecise


def test_each_worker_process_gets_its_own_memory_layout(tmp_path):
    rf = ResultFile.open(tmp_path / "r.json")
    harness.measure(_configs(("goto",)), rf, harness.Options(processes=3, samples=1, quiet=True))
    seeds = [r.layout_seed for r in ResultFile.load(tmp_path / "r.json").get(_configs()[1].key).runs]
    assert len(seeds) == 3 and len(set(seeds)) == 3 and all(seeds)


def test_a_round_runs_one_workload_s_configurations_together_in_new_orders():
    """A ratio's two sides run side by side (seconds apart, not a round's
    minutes): each workload's configurations are contiguous in a round;
    the workloads and the configurations within them change order."""
    import random
    configs = [harness.Config("t", w, m, "clang-19", whole=whole)
               for w in ("a.bf", "b.bf", "c.py", "d.bf")
               for m in ("tailcall", "jit-direct") for whole in (False, True)]
    rng, workload_orders, within = random.Random(7), set(), set()
    for _ in range(6):
        order = harness.round_order(list(configs), rng)
        assert sorted(c.key for c in order) == sorted(c.key for c in configs)
        runs = [w for i, w in enumerate(c.workload for c in order)
                if i == 0 or order[i - 1].workload != w]
        assert sorted(runs) == ["a.bf", "b.bf", "c.py", "d.bf"], runs   # one run each
        workload_orders.add(tuple(runs))
        within.add(tuple(c.key for c in order if c.workload == "a.bf"))
    assert len(workload_orders) > 1 and len(within) > 1
