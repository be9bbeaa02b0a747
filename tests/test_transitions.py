"""The transition benchmark: its programs are matched, its sweep runs and
reports well-formed tables and JSON on a tiny size."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from conftest import interpreter_configs
from shimlab import isa, modes, reference, vm
from shimlab.interp import build
from shimlab.interp.loader import TABLE_SLOTS
from shimlab.bench import floors, synthetic, transitions
from shimlab.bench.results import ConfigResult, ResultFile, RunSamples
from shimlab.errors import ShimlabError

JIT_CC = sorted({cc for mode, cc in interpreter_configs() if mode == "tailcall"})
needs_jit = pytest.mark.skipif(not JIT_CC, reason="no compiler here builds the JIT modes")
ENTER_JIT = isa.NUM_OPCODES


def _counts(mode, spec):
    program, stretches = synthetic.build(spec)
    b = build.build(mode, JIT_CC[0], count=True)
    jit = {"stretches": stretches, "record": False} if modes.is_jit(mode) else None
    with vm.Loaded(b, program, b"", jit=jit) as loaded:
        result = loaded.run()
        enter = sum(int(loaded.vm.counts[i]) for i in range(ENTER_JIT, ENTER_JIT + 1 + TABLE_SLOTS))
    assert result.status == 0
    return result.counts, enter


@needs_jit
@pytest.mark.parametrize("mode", transitions.MODES)
def test_matched_programs_run_the_same_vm_instructions(mode):
    """Every M runs the same VM instructions, opcode by opcode, as the oracle
    and as each other; only the ENTER_JIT count (the crossings) differs."""
    n = 50
    base = None
    for m in (1, 2, 4, 8):
        spec = f"transitions:m={m},j=16,i=16,n={n}"
        counts, enter = _counts(mode, spec)
        oracle = reference.run(synthetic.build(spec)[0])
        assert counts == oracle.counts
        assert sum(counts) == synthetic.instructions_per_run(spec)
        assert enter == m * n          # one entry per segment per iteration
        if base is None:
            base = counts
        assert counts == base


@needs_jit
def test_interp_programs_never_enter_the_jit():
    counts, enter = _counts("jit-direct", "interp:k=16,n=30")
    assert enter == 0 and sum(counts) == synthetic.instructions_per_run("interp:k=16,n=30")


@pytest.mark.parametrize("bad", ["transitions:m=3,j=16,i=16,n=5", "transitions:m=0",
                                 "transitions:q=1", "interp:k=3,n=2", "nonsense:x=1",
                                 "transitions:m=1,j=2,i=2,n=0"])
def test_bad_specs_are_one_line_errors(bad):
    with pytest.raises(ShimlabError) as e:
        synthetic.parse(bad)
    assert "\n" not in str(e.value)


def test_floor_code_has_the_copies_it_claims():
    from peachpy import x86_64  # noqa: F401  (the floors are encoded with PeachPy)
    for kind in floors.FLOORS:
        lo, hi = floors.code(kind, floors.U_LO, 0x10000), floors.code(kind, floors.U_HI, 0x10000)
        assert len(hi) > len(lo)
    with pytest.raises(ShimlabError):
        floors.code("teleport", 1, 0)


# -- the analysis on synthetic results whose answers are known ----------------------

SWEEP = dict(ms=(4, 8, 16, 32), j=64, i=64, n=1000, ks=(16, 80))
CC = "cc"
BASE = 300.0                     # cycles per iteration at M = 0
ROUND_TRIP = {"jit-shim": 12.0, "jit-direct": 5.0, "jit-direct-handler": 4.5, "jit-table": 4.0}
ROUND_TRIP_INSTRUCTIONS = {"jit-shim": 40, "jit-direct": 22, "jit-direct-handler": 21,
                           "jit-table": 19}
DISPATCH, DISPATCH_INSTRUCTIONS = 2.0, 9
FLOOR = {"jump": 0.5, "indirect": 1.0, "call-ret": 2.0, "call-save6": 6.0}


class _Results:
    """What analyze() reads of a results file: 5 processes x 7 samples per
    configuration, each sample the exact cycles times (1 + noise) with a
    per-process and a per-sample part."""

    def __init__(self, noise: float, seed: int = 0):
        self.rng, self.noise, self.configs = np.random.default_rng(seed), noise, {}
        n = SWEEP["n"]
        for mode, rt in ROUND_TRIP.items():
            for m in SWEEP["ms"]:
                self._add(f"transitions/{transitions.spec(m, SWEEP)}/{mode}/{CC}",
                          n * (BASE + rt * m), n * (1000 + ROUND_TRIP_INSTRUCTIONS[mode] * m))
        for k in SWEEP["ks"]:
            self._add(f"transitions/{transitions.interp_spec(k, SWEEP)}/jit-direct/{CC}",
                      n * (50 + DISPATCH * k), n * (30 + DISPATCH_INSTRUCTIONS * k))
        for f, c in FLOOR.items():
            self._add(f"transitions/floor:{f}/jit-direct/{CC}", floors.elements_per_sample() * c,
                      None)

    def _add(self, key, cycles, instructions):
        runs = []
        for _ in range(5):
            scale = 1 + self.noise * (self.rng.normal() + self.rng.normal(size=7))
            runs.append(RunSamples(cycles=list(np.rint(cycles * scale).astype(int)), ns=[],
                                   instructions=instructions))
        self.configs[key] = ConfigResult(key, {}, runs, {})

    def get(self, key):
        return self.configs[key]


def _triple(e):
    return e.value, e.lo, e.hi


def test_analysis_of_exact_samples_gives_the_exact_costs():
    a = transitions.analyze(_Results(noise=0.0), SWEEP, CC, tuple(ROUND_TRIP), n_boot=200)
    exact = pytest.approx
    assert _triple(a["dispatch"]) == (exact(DISPATCH),) * 3
    assert a["dispatch_instructions"] == exact(DISPATCH_INSTRUCTIONS)
    for mode, rt in ROUND_TRIP.items():
        r = a["modes"][mode]
        assert r["per_iteration"] == exact([BASE + rt * m for m in SWEEP["ms"]])
        assert _triple(r["round_trip"]) == (exact(rt),) * 3
        assert r["instructions"] == exact(ROUND_TRIP_INSTRUCTIONS[mode])
        assert _triple(r["dispatches"]) == (exact(rt / DISPATCH),) * 3
        assert _triple(r["vs_direct"]) == (exact(rt / ROUND_TRIP["jit-direct"]),) * 3
    for f, c in FLOOR.items():
        assert _triple(a["floors"][f]) == (exact(c),) * 3
    out = io.StringIO()
    transitions.report(a, out)
    text = out.getvalue()
    assert "12.0 [12.0, 12.0]" in text and "6.00 [6.00, 6.00]" in text
    # the steps between consecutive M of a straight line are its slope
    assert ["jit-shim", "12.0", "12.0", "12.0"] in [line.split() for line in text.splitlines()]
    assert "7.0 [7.0, 7.0] more than a direct one (5.0)" in text
    assert json.loads(json.dumps(transitions.to_json(a)))["modes"]["jit-shim"]["round_trip"] == {
        "value": exact(12.0), "ci95": [exact(12.0), exact(12.0)]}


def test_analysis_of_noisy_samples_brackets_the_true_costs():
    # 0.5% noise per process and per sample: the medians move by about a
    # cycle, the slopes by a few tenths
    a = transitions.analyze(_Results(noise=0.005, seed=3), SWEEP, CC, tuple(ROUND_TRIP),
                            n_boot=1000)
    for mode, rt in ROUND_TRIP.items():
        e = a["modes"][mode]["round_trip"]
        assert abs(e.value - rt) < 0.5, (mode, e)
        assert e.lo <= rt <= e.hi and e.hi - e.lo < 2.0, (mode, e)
    d = a["dispatch"]
    assert abs(d.value - DISPATCH) < 0.1 and d.lo <= DISPATCH <= d.hi, d
    shim = a["modes"]["jit-shim"]["round_trip"]
    assert "more than a direct one" in transitions.reading(a)
    assert shim.lo > ROUND_TRIP["jit-direct"]


@needs_jit
def test_tiny_sweep_table_json_and_plot(tmp_path, capsys):
    from shimlab import cli
    out = tmp_path / "t.json"
    rc = cli.main(["bench", "transitions", "--size", "tiny", "--cc", JIT_CC[0], "-o", str(out),
                   "--plot", "--processes", "2", "--samples", "2"])
    text = capsys.readouterr().out
    assert rc == 0
    for mode in transitions.MODES:
        assert mode in text
    assert "cycles/round trip" in text and "dispatches/round trip" in text
    assert "floors" in text and "call saving 6" in text
    summary = json.loads(out.with_name("t-summary.json").read_text())
    results = ResultFile.load(out)
    tiny = transitions.SIZES["tiny"]
    for mode in transitions.MODES:
        r = summary["modes"][mode]
        assert set(r["round_trip"]) == {"value", "ci95"}
        # each M's median, by hand from the results file, and the round trip
        # as numpy's own least-squares fit through them
        keys = [f"transitions/{transitions.spec(m, tiny)}/{mode}/{JIT_CC[0]}" for m in tiny["ms"]]
        assert r["per_iteration"] == pytest.approx(
            [np.median(np.concatenate(results.get(k).cycles_groups())) / tiny["n"]
             for k in keys], rel=1e-12)
        assert [e["value"] for e in r["per_iteration_ci"]] == r["per_iteration"]
        fit = np.polyfit(tiny["ms"], r["per_iteration"], 1)[0]
        assert r["round_trip"]["value"] == pytest.approx(fit, rel=1e-9, abs=1e-9)
        assert r["dispatches"]["value"] == pytest.approx(
            r["round_trip"]["value"] / summary["dispatch"]["value"], rel=1e-12)
        # exact instruction counts are linear in M: the slope is an integer
        assert r["instructions"] == pytest.approx(round(r["instructions"]), abs=1e-6)
    # against itself, replicate by replicate: exactly 1
    assert summary["modes"]["jit-direct"]["vs_direct"] == {"value": 1.0, "ci95": [1.0, 1.0]}
    # the shim does more work per round trip than a direct crossing, exactly
    assert summary["modes"]["jit-shim"]["instructions"] > summary["modes"]["jit-direct"]["instructions"]
    assert out.with_suffix(".png").stat().st_size > 1000
    # the results file is pyperf JSON
    import pyperf
    suite = pyperf.BenchmarkSuite.load(str(out))
    assert len(suite.get_benchmarks()) == len(transitions.configs_for(
        transitions.SIZES["tiny"], JIT_CC[0]))


@needs_jit
def test_programs_bench_runs_and_reports_ratios(tmp_path, capsys):
    from shimlab import cli
    from conftest import EXAMPLES
    rc = cli.main(["bench", "programs", "--workload", str(EXAMPLES / "bf" / "squares.bf"),
                   "--cc", JIT_CC[0], "--processes", "1", "--samples", "2",
                   "-o", str(tmp_path / "p.json")])
    text = capsys.readouterr().out
    assert rc == 0
    # a row of its own for every mode (a bare `mode in text` would take
    # jit-direct-handler's row for jit-direct's)
    rows = {tuple(line.split()[:2]) for line in text.splitlines()}
    for mode in ("tailcall", "jit-shim", "jit-direct", "jit-direct-handler"):
        assert ("squares.bf", mode) in rows, text
    assert "vs tailcall" in text and (tmp_path / "p.json").exists()
    # the rows as records (what the shim-vs-direct notebook plots)
    from shimlab.bench import programs
    results = ResultFile.load(tmp_path / "p.json")
    records = programs.ratios(results, [str(EXAMPLES / "bf" / "squares.bf")], JIT_CC[0])
    assert [r["mode"] for r in records] == list(programs.MODES)
    assert records[0]["vs_tailcall"] == pytest.approx(1.0) and records[0]["verdict"] == "baseline"
    # medians by hand from the results file
    base = results.get(f"programs/squares.bf/tailcall/{JIT_CC[0]}")
    n = base.runs[0].vm_instructions
    for r in records:
        mine = results.get(f"programs/squares.bf/{r['mode']}/{JIT_CC[0]}")
        med = np.median(np.concatenate(mine.cycles_groups()))
        assert r["cycles_per_instr"] == pytest.approx(med / n, rel=1e-12)
        assert r["vs_tailcall"] == pytest.approx(
            med / np.median(np.concatenate(base.cycles_groups())), rel=1e-12)
