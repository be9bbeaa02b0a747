"""The paired transition benchmark (bench/roundtrip.py): its invariant (a
crossing and its null crossing run the same interpreted instructions in the
same order and differ only in the crossings), its statistics, the counters
path, and a tiny run end to end.  Figures come from `shimlab bench
transitions`, not from here."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import compiler_for, get_build
from shimlab import isa, modes, oracle, perfcounter, vm
from shimlab.bench import cpu, harness, roundtrip, stats, synthetic, worker
from shimlab.bench.results import ResultFile

NOP = isa.opcode("NOP")
POINTS = [roundtrip.Point(1, 2), roundtrip.Point(4, 16), roundtrip.Point(3, 6, 1)]
SIZE = dict(roundtrip.SIZES["tiny"], n=25, jit_opt=0)


def _pair(p, live=0, size=SIZE):
    return (roundtrip.spec(p, size, 1, live), roundtrip.spec(p, size, 0, live))


@pytest.mark.parametrize("p", POINTS, ids=lambda p: p.label())
@pytest.mark.parametrize("live", [0, 3])
def test_the_pair_is_one_program_whose_traces_cover_exactly_its_nops(p, live):
    a_spec, b_spec = _pair(p, live)
    a, stretches = synthetic.build(a_spec)
    b, none = synthetic.build(b_spec)
    assert a.code == b.code and a.consts == b.consts and none == []
    nops = [pc for pc, (op, _) in enumerate(a.code) if op == NOP]
    assert stretches == [(pc, pc + 1) for pc in nops]
    assert len(nops) == (1 if p.traces else p.m)
    # the same instructions run, in the same order: the oracle's counts, and
    # every segment's k interpreted instructions between crossings
    ra, rb = oracle.run(a), oracle.run(b)
    assert ra.counts == rb.counts and ra.locals == rb.locals
    assert ra.counts[NOP] == p.m * SIZE["n"]
    assert ra.instructions == synthetic.instructions_per_run(a_spec)


@pytest.mark.parametrize("mode", modes.JIT)
def test_on_a_build_the_two_differ_only_in_the_crossings(mode):
    """A count build runs both sides: identical per-opcode counts, output and
    locals; the jit side enters each trace (an empty one: the NOP) once per
    pass and leaves it once, the null side has no trace and crosses nowhere."""
    cc = compiler_for(mode)
    p = roundtrip.Point(3, 4)
    a_spec, b_spec = _pair(p)
    b = get_build(mode, cc, count=True)
    out = []
    for spec in (a_spec, b_spec):
        program, stretches = synthetic.build(spec)
        with vm.Loaded(b, program, jit={**synthetic.jit_options(spec, stretches),
                                        "stats": True}) as loaded:
            r = loaded.run()
            out.append((r, [(t.ops, t.entries(), t.exit_counts())
                            for t in loaded.jit.stats.traces]))
    (ra, ta), (rb, tb) = out
    assert ra.counts == rb.counts and ra.locals == rb.locals and ra.output == rb.output
    assert tb == []
    assert ta == [(1, SIZE["n"], [SIZE["n"]])] * p.m


def test_every_config_pairs_a_crossing_with_its_null_on_one_build():
    cc = compiler_for("jit-direct")
    size = dict(roundtrip.SIZES["quick"], jit_opt=0)
    configs = roundtrip.configs_for(size, cc, caches=(0, 2))
    paired = [c for c in configs if c.partner]
    assert len(paired) == len(roundtrip.points(size)) * (len(modes.JIT)
                                                         + len(modes.CACHING) - 1)
    for c in paired:
        p = c.partner_config()
        # the same build (mode, compiler, flags, K); only the program differs, by jit=
        assert (p.mode, p.cc, p.flags, p.cache) == (c.mode, c.cc, c.flags, c.cache)
        assert c.workload.replace("jit=1", "jit=0") == c.partner != c.workload
        assert synthetic.parse(c.workload).live == c.cache
        assert c.job(1, 1, None)["partner"] == c.partner


def test_the_paired_bootstrap_cancels_what_a_process_shares():
    rng = np.random.default_rng(3)
    shift = rng.normal(0, 50, 6)                       # each process its own layout
    a = [100 + s + rng.normal(0, 1, 20) + 7 for s in shift]
    b = [100 + s + rng.normal(0, 1, 20) for s in shift]
    paired = stats.paired_difference(a, b, 1000, 0)
    unpaired = stats.difference(stats.median_estimate(a, 1000, rng),
                                stats.median_estimate(b, 1000, rng))
    assert paired.lo < 7 < paired.hi and paired.hi - paired.lo < 3
    assert unpaired.hi - unpaired.lo > 10 * (paired.hi - paired.lo)
    with pytest.raises(ValueError):
        stats.paired_difference(a, b[:-1])


def test_density_is_linear_only_when_every_m_costs_the_same():
    rng = np.random.default_rng(5)

    def est(v):          # independent replicates, as of separate measurements
        return stats.estimate(v, v + rng.normal(0, 0.5, 2000))
    same = [est(10.0), est(10.2), est(9.9)]
    assert not stats.unequal_pairs(same)
    assert stats.unequal_pairs([est(3.0), est(12.0), est(15.0)])
    through = roundtrip._through_zero([2, 4, 8], [est(20.0), est(40.0), est(80.0)])
    assert abs(through.value - 10.0) < 1e-9


def test_the_cpu_is_named_by_its_microarchitecture():
    assert cpu.microarchitecture("AuthenticAMD", 25, 0x01) == "Zen 3"
    assert cpu.microarchitecture("AuthenticAMD", 25, 0x21) == "Zen 3"
    assert cpu.microarchitecture("AuthenticAMD", 25, 17) == "Zen 4"
    assert cpu.microarchitecture("AuthenticAMD", 25, 0x61) == "Zen 4"
    assert cpu.microarchitecture("AuthenticAMD", 26, 0x02) == "Zen 5"
    assert cpu.microarchitecture("GenuineIntel", 6, 0x8F) is None
    assert cpu.identify()["name"]


class FakeEvents:
    """A counter reader that returns known counts: what perf_event_open
    would, on a machine that has counters (these have none).  Each reader
    made takes the next side's counts per run (the worker counts the jit
    side, then its null side)."""
    sides: list = []
    made: list = []

    def __init__(self, names=()):
        self.per_run = FakeEvents.sides.pop(0)
        FakeEvents.made.append(self)
        self.runs = 0

    def start(self):
        self.runs += 1

    def stop(self):
        return dict(self.per_run)

    def close(self):
        pass


def test_hardware_events_per_round_trip_with_a_reader_of_known_counts(monkeypatch, tmp_path):
    """The worker counts each side's events around sl_run (counters.count_events
    through perfcounter.Events); the analysis reports (A - B) / (n M) per
    round trip.  Known counts: the jit side reads 1000 more branch-misses per
    run than its null side."""
    cc = compiler_for("jit-direct")
    p = roundtrip.Point(2, 4)
    a_spec, b_spec = _pair(p)
    FakeEvents.sides = [{"cycles": 6000, "instructions": 10000, "branch-misses": 1030},
                        {"cycles": 5000, "instructions": 9000, "branch-misses": 30}]
    FakeEvents.made = []
    monkeypatch.setattr(perfcounter, "Events", FakeEvents)
    job = harness.Config("transitions", a_spec, "jit-direct", cc, partner=b_spec).job(1, 3, None)
    job["perf_events"] = True
    out = worker.run_job(job)
    assert [r.runs for r in FakeEvents.made] == [worker.COUNTED_RUNS] * 2
    assert out["events"]["branch-misses"] - out["partner"]["events"]["branch-misses"] == 1000
    assert out["events"]["cycles"] == 6000
    # the same counts through the results file and the analysis
    rf = ResultFile.open(tmp_path / "r.json")
    pids = itertools.count(100)
    monkeypatch.setattr(harness, "run_worker", lambda job, timeout: {**out, "pid": next(pids)})
    monkeypatch.setattr(harness.counters, "event_counters", lambda: (True, "fake"))
    size = dict(roundtrip.SIZES["tiny"], base=p, ms=(), n=SIZE["n"], jit_opt=0)
    configs = [c for c in roundtrip.configs_for(size, cc, modes=("jit-direct",))
               if c.partner]
    res = harness.measure(configs, rf, harness.Options(processes=2, samples=3, quiet=True,
                                                       count_events=True))
    assert not res.failures
    r = roundtrip._point(rf, size, cc, "jit-direct", p, 0, np.random.default_rng(0), 200)
    assert r["events"]["branch-misses"] == pytest.approx(1000 / (SIZE["n"] * p.m))


def test_the_real_reader_opens_or_says_why_not():
    ok, why = perfcounter.probe_events()
    assert isinstance(ok, bool) and why
    if not ok:
        with pytest.raises(OSError):
            perfcounter.Events()


# the tiny paired run in `make test`: the two crossings of the verdict and
# jit-table, each at two code layouts; `make test-all` runs every crossing,
# as the default
PAIRED = [pytest.param(("jit-direct", "jit-shim", "jit-table"), id="three-crossings"),
          pytest.param(modes.JIT, id="every-crossing", marks=pytest.mark.slow)]


@pytest.mark.parametrize("crossings", PAIRED)
def test_a_tiny_paired_run_reports_every_crossing(tmp_path, crossings):
    """End to end, tiny: the answer first (the verdict, with the CPU), a round
    trip with an interval for every crossing, and a well-formed summary."""
    out = tmp_path / "t.json"
    chosen = [] if crossings == modes.JIT else [x for mode in crossings for x in ("--mode", mode)]
    p = subprocess.run([sys.executable, "-m", "shimlab.cli", "bench", "transitions", "--size",
                        "tiny", "--no-count", "--processes", "2", "--samples", "3",
                        "--code-layouts", "2", "-o", str(out), *chosen],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    first = p.stdout.splitlines()[0]
    assert first.startswith("On ") and cpu.identify()["name"] in first and "jit-direct" in first
    for mode in crossings:
        assert any(line.startswith(mode + " ") and "[" in line for line in p.stdout.splitlines())
    summary = json.loads((tmp_path / "t-summary.json").read_text())
    base = summary["size"]["base"]
    assert summary["verdict"] == first
    assert set(summary["cache"]["0"]) == set(crossings)
    for mode in crossings:
        r = summary["cache"]["0"][mode]["base"]["round_trip"]
        assert len(r["ci95"]) == 2 and r["ci95"][0] <= r["value"] <= r["ci95"][1]
    assert base == {"m": 2, "k": 8, "traces": 0}
    assert "per code layout" in p.stdout
