"""The transition benchmark: its programs are matched, its sweep runs and
reports well-formed tables and JSON on a tiny size."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from conftest import interpreter_configs
from shimlab import isa, modes, oracle, vm
from shimlab.interp import build
from shimlab.interp.loader import TABLE_SLOTS
from shimlab.bench import floors, harness, synthetic, transitions
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
        want = oracle.run(synthetic.build(spec)[0])
        assert counts == want.counts
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
    pytest.importorskip("peachpy")          # the floors are encoded with PeachPy
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
PAIRS = list(zip(SWEEP["ms"], SWEEP["ms"][1:]))


def _line(rt):
    """Cycles per iteration at each M of a constant cost per round trip."""
    return [BASE + rt * m for m in SWEEP["ms"]]


def _curve(steps):
    """Cycles per iteration at each M whose step between neighbouring M costs
    steps[k] cycles per added round trip."""
    y = [BASE + steps[0] * SWEEP["ms"][0]]
    for (m0, m1), c in zip(PAIRS, steps):
        y.append(y[-1] + c * (m1 - m0))
    return y


class _Results:
    """What analyze() reads of a results file: 5 processes x 7 samples per
    configuration, each sample the exact cycles times (1 + noise) with a
    per-process and a per-sample part.  curves: mode -> cycles per
    iteration at each M (default: the straight lines of ROUND_TRIP)."""

    def __init__(self, noise: float, seed: int = 0, curves=None):
        self.rng, self.noise, self.configs = np.random.default_rng(seed), noise, {}
        n = SWEEP["n"]
        curves = curves or {mode: _line(rt) for mode, rt in ROUND_TRIP.items()}
        for mode, ys in curves.items():
            for m, y in zip(SWEEP["ms"], ys):
                self._add(f"transitions/{transitions.spec(m, SWEEP)}/{mode}/{CC}",
                          n * y, n * (1000 + ROUND_TRIP_INSTRUCTIONS[mode] * m))
        for k in transitions.interp_ks(SWEEP):
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


def _report(a):
    out = io.StringIO()
    transitions.report(a, out)
    return out.getvalue()


def _row(text, mode):
    """The main table's row of mode (the first line that starts with it)."""
    return next(line for line in text.splitlines() if line.split()[:1] == [mode])


def _json(a):
    return json.loads(json.dumps(transitions.to_json(a)))


def test_analysis_of_exact_samples_gives_the_exact_costs():
    a = transitions.analyze(_Results(noise=0.0), SWEEP, CC, tuple(ROUND_TRIP), n_boot=200)
    exact = pytest.approx
    assert _triple(a["dispatch"]) == (exact(DISPATCH),) * 3
    assert a["dispatch_instructions"] == exact(DISPATCH_INSTRUCTIONS)
    for mode, rt in ROUND_TRIP.items():
        r = a["modes"][mode]
        assert r["per_iteration"] == exact(_line(rt))
        assert _triple(r["round_trip"]) == (exact(rt),) * 3
        assert [_triple(e) for e in r["steps"]] == [(exact(rt),) * 3] * len(PAIRS)
        assert r["linear"] is True and r["unequal_steps"] == []
        assert r["instructions"] == exact(ROUND_TRIP_INSTRUCTIONS[mode])
        assert _triple(r["dispatches"]) == (exact(rt / DISPATCH),) * 3
        assert _triple(r["vs_direct"]) == (exact(rt / ROUND_TRIP["jit-direct"]),) * 3
    for f, c in FLOOR.items():
        assert _triple(a["floors"][f]) == (exact(c),) * 3
    # the floors each crossing is held to (transitions.floor_parts says why)
    held_to = {"jit-shim": FLOOR["call-save6"] + FLOOR["indirect"],
               "jit-direct": 2 * FLOOR["indirect"],
               "jit-direct-handler": FLOOR["indirect"] + FLOOR["jump"],
               "jit-table": FLOOR["indirect"]}
    for mode, floor in held_to.items():
        assert _triple(a["modes"][mode]["floor"]) == (exact(floor),) * 3
    assert a["anomalies"] == []
    text = _report(a)
    assert "12.0 [12.0, 12.0]" in text and "6.00 [6.00, 6.00]" in text
    # the steps between neighbouring M of a straight line are its slope
    assert (["jit-shim"] + ["12.0", "[12.0,", "12.0]"] * 3 + ["yes"]
            in [line.split() for line in text.splitlines()])
    assert "7.0 [7.0, 7.0] more than a direct one (5.0)" in text
    assert "anomalies: none" in text and transitions.NOT_LINEAR not in text
    j = _json(a)
    assert j["modes"]["jit-shim"]["round_trip"] == {
        "value": exact(12.0), "ci95": [exact(12.0), exact(12.0)]}
    assert j["modes"]["jit-shim"]["steps"] == [
        {"m": list(p), "value": exact(12.0), "ci95": [exact(12.0), exact(12.0)]} for p in PAIRS]
    assert j["modes"]["jit-shim"]["linear"] is True and j["anomalies"] == []


def test_floors_come_from_each_modes_entry_and_exit():
    parts = {mode: [f for f, _ in transitions.floor_parts(mode)] for mode in modes.JIT}
    assert parts == {"jit-shim": ["call-save6", "indirect"],
                     "jit-shim-args": ["call-save6", "indirect"],
                     "jit-direct": ["indirect", "indirect"],
                     "jit-direct-handler": ["indirect", "jump"],
                     "jit-table": ["indirect"],
                     "jit-direct-sites": ["indirect", "indirect"],
                     # its moves are no jump: held to jit-direct's floor
                     "jit-trampoline": ["indirect", "indirect"]}
    for mode in modes.JIT:
        assert all(where for _, where in transitions.floor_parts(mode))


def test_analysis_of_noisy_samples_brackets_the_true_costs():
    # 0.5% noise per process and per sample: the medians move by about a
    # cycle, the slopes by a few tenths
    a = transitions.analyze(_Results(noise=0.005, seed=3), SWEEP, CC, tuple(ROUND_TRIP),
                            n_boot=1000)
    for mode, rt in ROUND_TRIP.items():
        e = a["modes"][mode]["round_trip"]
        assert abs(e.value - rt) < 0.5, (mode, e)
        assert e.lo <= rt <= e.hi and e.hi - e.lo < 2.0, (mode, e)
        for step in a["modes"][mode]["steps"]:
            assert step.lo <= rt <= step.hi, (mode, step)
    d = a["dispatch"]
    assert abs(d.value - DISPATCH) < 0.1 and d.lo <= DISPATCH <= d.hi, d
    shim = a["modes"]["jit-shim"]["round_trip"]
    assert "more than a direct one" in transitions.reading(a)
    assert shim.lo > ROUND_TRIP["jit-direct"]


def test_a_constant_cost_is_linear_and_its_slope_printed():
    # noisy, so that "linear" is a test that passed and not intervals of width 0
    for seed in (3, 4):
        a = transitions.analyze(_Results(noise=0.005, seed=seed), SWEEP, CC, tuple(ROUND_TRIP),
                                n_boot=1000)
        text, j = _report(a), _json(a)
        for mode in ROUND_TRIP:
            r = a["modes"][mode]
            assert r["linear"] is True, (seed, mode, [e.fmt(2) for e in r["steps"]])
            row = _row(text, mode)
            assert r["round_trip"].fmt(1) in row and r["dispatches"].fmt(2) in row
            assert transitions.NOT_LINEAR not in row
            assert j["modes"][mode]["linear"] is True
            assert [s["m"] for s in j["modes"][mode]["steps"]] == [list(p) for p in PAIRS]
        assert "anomalies: none" in text and j["anomalies"] == []


def test_steps_that_grow_are_not_linear_and_get_no_single_slope():
    # jit-direct's cost per added round trip grows with the density of
    # crossings, as in the quick sweep (2.5, 2.9, 6.4)
    grows = [2.0, 3.0, 6.0]
    curves = {mode: _line(rt) for mode, rt in ROUND_TRIP.items()}
    curves["jit-direct"] = _curve(grows)
    a = transitions.analyze(_Results(noise=0.005, seed=3, curves=curves), SWEEP, CC,
                            tuple(ROUND_TRIP), n_boot=1000)
    r = a["modes"]["jit-direct"]
    assert r["linear"] is False
    assert [e.value for e in r["steps"]] == pytest.approx(grows, abs=0.5)
    # the dear last step differs from both before it
    assert ((4, 8), (16, 32)) in r["unequal_steps"] and ((8, 16), (16, 32)) in r["unequal_steps"]
    text = _report(a)
    row = _row(text, "jit-direct")
    assert transitions.NOT_LINEAR in row
    assert r["round_trip"].fmt(1) not in row and r["dispatches"].fmt(2) not in row
    # nor a ratio to it, nor a reading that quotes its slope
    for mode in ROUND_TRIP:
        assert a["modes"][mode]["vs_direct"].fmt(2) not in _row(text, mode)
    assert "more than a direct one" not in text and "jit-direct not linear" in text
    steps_row = next(line for line in text.splitlines()
                     if line.startswith("jit-direct ") and "->" in line)
    assert [e.fmt(1) in steps_row for e in r["steps"]] == [True] * 3
    assert "no: " in steps_row and "4->8 vs 16->32" in steps_row
    for mode in ("jit-shim", "jit-direct-handler", "jit-table"):   # the others are lines
        assert a["modes"][mode]["linear"] is True
        assert a["modes"][mode]["round_trip"].fmt(1) in _row(text, mode)
    j = _json(a)["modes"]["jit-direct"]
    assert j["linear"] is False
    assert [s["m"] for s in j["steps"]] == [list(p) for p in PAIRS]
    assert [s["value"] for s in j["steps"]] == pytest.approx(grows, abs=0.5)
    for s, e in zip(j["steps"], r["steps"]):
        assert s["ci95"] == [e.lo, e.hi] and s["ci95"][0] <= s["value"] <= s["ci95"][1]
    # the fit is still there for whoever reads the JSON (with "linear" beside it)
    assert set(j["round_trip"]) == {"value", "ci95"}


def test_negative_steps_and_costs_below_the_floor_are_anomalies():
    curves = {mode: _line(rt) for mode, rt in ROUND_TRIP.items()}
    # jit-table: a straight line below its floor (one predicted indirect jump)
    curves["jit-table"] = _line(0.4)
    # jit-direct-handler: the first step negative, as jit-table's in the issue
    curves["jit-direct-handler"] = _curve([-2.5, 4.5, 4.5])
    # jit-direct: not linear, its last step positive but below two indirect jumps
    curves["jit-direct"] = _curve([5.0, 5.0, 1.0])
    a = transitions.analyze(_Results(noise=0.002, seed=5, curves=curves), SWEEP, CC,
                            tuple(ROUND_TRIP), n_boot=1000)
    assert a["modes"]["jit-table"]["linear"] is True
    assert [a["modes"][m]["linear"] for m in ("jit-direct", "jit-direct-handler")] == [False] * 2
    found = a["anomalies"]
    assert len(found) == 3, found
    negative = [x for x in found if x.startswith("jit-direct-handler: negative cost")]
    below = [x for x in found if x.startswith("jit-table: below its floor: one round trip")]
    step_below = [x for x in found
                  if x.startswith("jit-direct: below its floor: the step M 16->32")]
    assert len(negative) == len(below) == len(step_below) == 1, found
    assert "M 4->8" in negative[0]
    assert a["modes"]["jit-table"]["round_trip"].fmt(1) in below[0]
    assert a["modes"]["jit-table"]["floor"].fmt(2) in below[0] and "indirect" in below[0]
    # the shim is a line above its floor: nothing to say
    assert not any(x.startswith("jit-shim") for x in found)
    text = _report(a)
    tail = text[text.index("anomalies:"):]
    for x in found:
        assert f"  - {x}" in tail
    assert "anomalies: none" not in text
    assert _json(a)["anomalies"] == found


# the tiny sweep in `make test`: the direct crossing (every other's
# reference), the shim and the indirect jump of jit-table, each counted by
# callgrind at every M; `make test-all` sweeps every crossing, as the default
SWEEPS = [pytest.param(("jit-direct", "jit-shim", "jit-table"), id="three-crossings"),
          pytest.param(transitions.MODES, id="every-crossing", marks=pytest.mark.slow)]


@needs_jit
@pytest.mark.parametrize("crossings", SWEEPS)
def test_tiny_sweep_table_json_and_plot(tmp_path, capsys, crossings):
    from shimlab import cli
    out = tmp_path / "t.json"
    chosen = [] if crossings == transitions.MODES else [
        x for mode in crossings for x in ("--mode", mode)]
    rc = cli.main(["bench", "transitions", "--design", "sweep", "--size", "tiny",
                   "--cc", JIT_CC[0], "-o", str(out),
                   "--plot", "--processes", "2", "--samples", "2", *chosen])
    text = capsys.readouterr().out
    assert rc == 0
    for mode in crossings:
        assert mode in text
    assert "cycles/round trip" in text and "dispatches/round trip" in text
    assert "floors" in text and "call saving 6" in text
    summary = json.loads(out.with_name("t-summary.json").read_text())
    results = ResultFile.load(out)
    tiny = transitions.SIZES["tiny"]
    assert set(summary["modes"]) == set(crossings)
    for mode in crossings:
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
        transitions.SIZES["tiny"], JIT_CC[0], crossings))


@needs_jit
def test_programs_bench_runs_and_reports_ratios(tmp_path, capsys):
    from shimlab import cli
    from conftest import EXAMPLES
    rc = cli.main(["bench", "programs", "--workload", str(EXAMPLES / "bf" / "squares.bf"),
                   "--cc", JIT_CC[0], "--processes", "1", "--samples", "2",
                   "--jit-opt", "0", "--jit-opt", "2", "--bf-opt", "0",
                   "-o", str(tmp_path / "p.json")])
    text = capsys.readouterr().out
    assert rc == 0
    # a row of its own for every mode (a bare `mode in text` would take
    # jit-direct-handler's row for jit-direct's): workload, bf-opt, mode, jit-opt
    rows = {(line.split()[0], line.split()[2]) for line in text.splitlines()
            if len(line.split()) > 3}
    assert ("squares.bf", "0", "jit-direct", "2") in {tuple(line.split()[:4])
                                                      for line in text.splitlines()}, text
    assert "M crossings/s" in text
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


def test_interpreted_stretches_whose_cost_jumps_are_an_anomaly():
    """The sweep's programs run their interpreted work in stretches of i/M
    instructions; where one more such instruction costs far more at one
    length than at another (a predictor that loses longer runs), the report
    says the programs are not matched, in the text and the JSON."""
    fake = _Results(noise=0.002, seed=7)
    ks = transitions.stretch_ks(SWEEP)
    assert len(ks) >= 3
    # a jump of 40 cycles between the two longest stretches, linear elsewhere
    for k in ks:
        cost = 50 + DISPATCH * k + (40 if k == ks[-1] else 0)
        fake._add(f"transitions/{transitions.interp_spec(k, SWEEP)}/jit-direct/{CC}",
                  SWEEP["n"] * cost, None)
    a = transitions.analyze(fake, SWEEP, CC, tuple(ROUND_TRIP), n_boot=300)
    assert not a["stretches"]["linear"]
    text = _report(a)
    assert "not matched in how the interpreter runs them" in text
    j = _json(a)
    assert any("not matched" in x for x in j["anomalies"])
    assert [s["k"] for s in j["stretches"]["steps"]] == [list(p) for p in zip(ks, ks[1:])]
    clean = transitions.analyze(_Results(noise=0.002, seed=7), SWEEP, CC, tuple(ROUND_TRIP),
                                n_boot=300)
    assert clean["stretches"]["linear"]
    assert not any("not matched" in x for x in clean["anomalies"])


# -- --cache K: programs that keep K values live across every crossing ---------------

CACHE_KS = (1, 2, 3, 5)


def _live_spec(m, k, j=16, i=16, n=50):
    return f"transitions:m={m},j={j},i={i},n={n}" + (f",live={k}" if k else "")


def _iteration(program):
    """The pcs of one loop iteration, in order (the loop body is straight
    code from the LOOP's target to the LOOP; JUMP_IF_FALSE falls through while
    the loop goes on)."""
    back = next(pc for pc, (op, _) in enumerate(program.code)
                if isa.INSTRUCTIONS[op].name == "LOOP")
    return list(range(back + program.code[back][1], back + 1))


def _live_across_crossings(spec):
    """For each crossing of one iteration (a trace's first pc: its entry; the
    pc after its last: where its exit resumes), how many of the values on the
    operand stack there a later instruction of the iteration uses (pops
    other than POP, which drops it).  Worked out from the bytecode alone, by
    a walk that gives every pushed value an identity."""
    program, stretches = synthetic.build(spec)
    crossings = {pc for st in stretches for pc in st}
    stack, next_id, at, used = [], 0, {}, set()
    for pc in _iteration(program):
        if pc in crossings:
            at[pc] = list(stack)
        op, _ = program.code[pc]
        ins = isa.INSTRUCTIONS[op]
        popped = [stack.pop() for _ in range(ins.pops)]
        if ins.name != "POP":
            used.update(popped)
        for _ in range(ins.pushes):
            stack.append(next_id)
            next_id += 1
    assert stack == [], "an iteration leaves its stack as it found it"
    return {pc: sum(v in used for v in vals) for pc, vals in at.items()}, stretches


@pytest.mark.parametrize("k", (0,) + CACHE_KS)
@pytest.mark.parametrize("m", (1, 2, 4, 8))
def test_every_crossing_has_k_live_values_on_the_stack(k, m):
    live, stretches = _live_across_crossings(_live_spec(m, k))
    assert len(live) == 2 * m                       # every entry and every exit
    assert all(n >= k for n in live.values()), live
    if k == 0:
        assert set(live.values()) == {0}


@pytest.mark.parametrize("k", CACHE_KS)
def test_live_values_add_the_same_interpreted_work_at_every_m(k):
    """At K > 0 a program is the K = 0 program with K pushes before its first
    trace and their consumption after its last segment: the segments (what M
    splits) are the same instructions, and the 2K more are the same at every M."""
    for m in (1, 2, 4, 8):
        plain, plain_st = synthetic.build(_live_spec(m, 0))
        live, live_st = synthetic.build(_live_spec(m, k))
        names = lambda p: [isa.INSTRUCTIONS[op].name for op, _ in p.code]   # noqa: E731
        a, b = names(plain), names(live)
        top = _iteration(plain)[0]
        assert b[top:top + k] == ["LOAD_INT"] * k
        assert b[top + k:top + k + (a.index("LOAD_LOCAL", top) - top)] == \
            a[top:a.index("LOAD_LOCAL", top)]
        end = b.index("LOAD_LOCAL", top)
        assert b[end - k:end] == ["ADD"] * (k - 1) + ["STORE_LOCAL"]
        assert b[:top] + b[top + k:end - k] + b[end:] == a
        assert [(s + k, e + k) for s, e in plain_st] == live_st
        assert synthetic.instructions_per_run(_live_spec(m, k)) == \
            synthetic.instructions_per_run(_live_spec(m, 0)) + 50 * 2 * k
    assert synthetic.parse(_live_spec(4, 0)).live == 0
    assert _live_spec(4, 0) == transitions.spec(4, dict(j=16, i=16, n=50))   # K = 0: as before


@pytest.mark.parametrize("bad", ["transitions:m=1,j=2,i=2,n=1,live=-1",
                                 "interp:k=4,n=2,live=99"])
def test_bad_live_counts_are_one_line_errors(bad):
    with pytest.raises(ShimlabError) as e:
        synthetic.parse(bad)
    assert "\n" not in str(e.value) and "live" in str(e.value)


def _counts_at(mode, spec, cache):
    program, stretches = synthetic.build(spec)
    b = build.build(mode, JIT_CC[0], count=True, cache=cache)
    jit = {"stretches": stretches, "record": False} if modes.is_jit(mode) else None
    with vm.Loaded(b, program, b"", jit=jit) as loaded:
        result = loaded.run()
        enter = sum(int(loaded.vm.counts[i]) for i in range(ENTER_JIT, ENTER_JIT + 1 + TABLE_SLOTS))
        sink = int(loaded.vm.stack[1])
    assert result.status == 0
    return result.counts, enter, sink


@needs_jit
@pytest.mark.parametrize("k", (1, 3))
@pytest.mark.parametrize("mode", transitions.modes_at(transitions.MODES, 1))
def test_matched_programs_at_each_k_run_the_same_vm_instructions(mode, k):
    """At K cached values every M runs the same VM instructions as the oracle
    and as each other, one entry per segment, and the K values kept across
    every crossing arrive intact (their sum, stored after the last segment,
    is the oracle's)."""
    n, base = 50, None
    for m in (1, 2, 4, 8):
        spec = _live_spec(m, k, n=n)
        counts, enter, sink = _counts_at(mode, spec, k)
        assert counts == oracle.run(synthetic.build(spec)[0]).counts
        assert sum(counts) == synthetic.instructions_per_run(spec)
        assert enter == m * n
        assert sink == sum(range(2, k + 2))
        base = base or counts
        assert counts == base


def _cached_results(noise, seed, extra):
    """_Results with a second K: at K = 2 each crossing's round trip is
    ROUND_TRIP plus extra[mode], one dispatch the same."""
    fake = _Results(noise=noise, seed=seed)
    n = SWEEP["n"]
    for mode, rt in ROUND_TRIP.items():
        for m, y in zip(SWEEP["ms"], _line(rt + extra[mode])):
            fake._add(transitions.key(transitions.spec(m, SWEEP, 2), mode, CC, 2), n * y,
                      n * (1000 + (ROUND_TRIP_INSTRUCTIONS[mode] + 2 * extra[mode]) * m))
    for k in transitions.interp_ks(SWEEP):
        fake._add(transitions.key(transitions.interp_spec(k, SWEEP, 2), "jit-direct", CC, 2),
                  n * (60 + DISPATCH * k), n * (40 + DISPATCH_INSTRUCTIONS * k))
    return fake


def test_analysis_at_two_ks_gives_each_ks_costs_and_the_shims_excess():
    # the shim gets 4 cycles dearer at K = 2, the direct crossings 1
    extra = {"jit-shim": 4.0, "jit-direct": 1.0, "jit-direct-handler": 1.0, "jit-table": 1.0}
    a = transitions.analyze(_cached_results(0.0, 0, extra), SWEEP, CC, tuple(ROUND_TRIP),
                            n_boot=200, caches=(0, 2))
    exact = pytest.approx
    assert a["base_cache"] == 0 and list(a["cache"]) == ["0", "2"]
    assert a["modes"] is a["cache"]["0"]
    for mode, rt in ROUND_TRIP.items():
        assert _triple(a["cache"]["2"][mode]["round_trip"]) == (exact(rt + extra[mode]),) * 3
        assert _triple(a["cache"]["2"][mode]["vs_base_cache"]) == (exact(extra[mode]),) * 3
        assert a["cache"]["2"][mode]["instructions"] == exact(
            ROUND_TRIP_INSTRUCTIONS[mode] + 2 * extra[mode])
    assert _triple(a["cache_interp"]["2"]["dispatch"]) == (exact(DISPATCH),) * 3
    svd = a["shim_vs_direct"]
    assert _triple(svd["0"]["excess"]) == (exact(7.0),) * 3
    assert _triple(svd["2"]["excess"]) == (exact(10.0),) * 3
    assert _triple(svd["2"]["added"]) == (exact(3.0),) * 3 and svd["0"]["added"] is None
    assert svd["2"]["instructions"] == exact(18 + 6)
    assert transitions.first_k_shim_dearer(svd) == "0"
    assert a["anomalies"] == []
    text = _report(a)
    # one table, a row group per K
    rows = [line.split() for line in text.splitlines()]
    assert ["2", "jit-shim", "16.0", "[16.0,", "16.0]", "4.0", "[4.0,", "4.0]"] in \
        [r[:8] for r in rows]
    assert ["0", "jit-shim", "12.0", "[12.0,", "12.0]", "-"] in [r[:6] for r in rows]
    assert "from K=0 on, a round trip through the shim costs more than a direct one" in text
    assert "moved by 3.0 [3.0, 3.0] cycles, +6 instructions" in text
    j = _json(a)
    assert set(j["cache"]) == {"0", "2"} and j["modes"] == j["cache"]["0"]
    for k in ("0", "2"):
        assert set(j["cache"][k]) == set(ROUND_TRIP)
        for mode, r in j["cache"][k].items():
            assert set(j["modes"][mode]) <= set(r)
            assert [s["m"] for s in r["steps"]] == [list(p) for p in PAIRS]
    assert j["shim_vs_direct"]["2"]["excess"] == {"value": exact(10.0),
                                                   "ci95": [exact(10.0), exact(10.0)]}


def test_the_shim_dearer_from_a_k_on_is_found_and_said():
    # the same round trip at K = 0; at K = 2 the shim 4 dearer than direct
    rt = dict(ROUND_TRIP, **{"jit-shim": ROUND_TRIP["jit-direct"]})
    extra = {"jit-shim": 4.0, "jit-direct": 0.0, "jit-direct-handler": 0.0, "jit-table": 0.0}
    fake = _cached_results(0.003, 2, extra)
    n = SWEEP["n"]
    for m, y in zip(SWEEP["ms"], _line(rt["jit-shim"])):      # the K = 0 shim, as direct
        fake._add(f"transitions/{transitions.spec(m, SWEEP)}/jit-shim/{CC}", n * y, n * 1000)
    for m, y in zip(SWEEP["ms"], _line(rt["jit-shim"] + 4.0)):
        fake._add(transitions.key(transitions.spec(m, SWEEP, 2), "jit-shim", CC, 2), n * y,
                  n * 1000)
    a = transitions.analyze(fake, SWEEP, CC, tuple(ROUND_TRIP), n_boot=1000, caches=(0, 2))
    svd = a["shim_vs_direct"]
    assert svd["0"]["excess"].lo < 0 < svd["0"]["excess"].hi
    assert transitions.first_k_shim_dearer(svd) == "2"
    assert "From K=2 on (of K = 0, 2)" in transitions.cache_reading(a)


@needs_jit
def test_tiny_sweep_at_two_ks_has_a_well_formed_cache_section(tmp_path, capsys):
    from shimlab import cli
    out = tmp_path / "t.json"
    rc = cli.main(["bench", "transitions", "--design", "sweep", "--size", "tiny",
                   "--cc", JIT_CC[0], "-o", str(out),
                   "--mode", "jit-shim", "--mode", "jit-direct", "--cache", "0", "--cache", "2",
                   "--processes", "2", "--samples", "2", "--plot", "--no-count"])
    text = capsys.readouterr().out
    assert rc == 0
    assert "vs K=0 (cycles)" in text
    for k in ("0", "2"):
        for mode in ("jit-shim", "jit-direct"):
            assert [k, mode] in [line.split()[:2] for line in text.splitlines()], text
    summary = json.loads(out.with_name("t-summary.json").read_text())
    tiny = transitions.SIZES["tiny"]
    assert set(summary["cache"]) == {"0", "2"} and summary["base_cache"] == 0
    # "modes" is K = 0, as before --cache, for the readers that know no more
    assert summary["modes"] == summary["cache"]["0"]
    results = ResultFile.load(out)
    for k in ("0", "2"):
        assert set(summary["cache"][k]) == {"jit-shim", "jit-direct"}
        i = summary["cache_interp"][k]
        assert set(i["dispatch"]) == {"value", "ci95"}
        for mode, r in summary["cache"][k].items():
            assert set(summary["modes"][mode]) <= set(r)
            assert set(r["round_trip"]) == {"value", "ci95"}
            lo, hi = r["round_trip"]["ci95"]
            assert lo <= r["round_trip"]["value"] <= hi
            assert len(r["per_iteration"]) == len(tiny["ms"])
            assert [s["m"] for s in r["steps"]] == [list(p) for p in zip(tiny["ms"],
                                                                         tiny["ms"][1:])]
            keys = [transitions.key(transitions.spec(m, tiny, int(k)), mode, JIT_CC[0], int(k))
                    for m in tiny["ms"]]
            assert r["per_iteration"] == pytest.approx(
                [np.median(np.concatenate(results.get(x).cycles_groups())) / tiny["n"]
                 for x in keys], rel=1e-12)
            assert r["instructions"] is None        # --no-count (counted: the test below)
            if k == "2":
                assert set(r["vs_base_cache"]) == {"value", "ci95"}
                # the K = 2 program keeps 2 values live: its config says so
                assert results.get(keys[0]).config["cache"] == 2
                assert synthetic.parse(results.get(keys[0]).config["workload"]).live == 2
    assert set(summary["shim_vs_direct"]) == {"0", "2"}
    assert out.with_name("t-cache.png").stat().st_size > 1000


@needs_jit
@pytest.mark.slow
def test_a_direct_round_trip_at_k_runs_the_spill_and_reload_of_k_values():
    """Exact instructions (callgrind) per added round trip of jit-direct: at
    K = 2 the entry stores two values and the exit loads them back, so a
    round trip runs more instructions than at K = 0, and the same at every M."""
    from shimlab.bench import counters
    if not counters.callgrind_available():
        pytest.skip("valgrind is not installed")
    tiny = dict(transitions.SIZES["tiny"], n=200)
    jobs = [harness.Config("transitions", transitions.spec(m, tiny, k), "jit-direct",
                           JIT_CC[0], cache=k).job(0, 1, None)
            for k in (0, 2) for m in (1, 2, 4)]
    counts = counters.callgrind_batch(jobs)
    per_trip = {}
    for i, k in enumerate((0, 2)):
        c = counts[3 * i:3 * i + 3]
        steps = {(c[1] - c[0]) / tiny["n"], (c[2] - c[1]) / (2 * tiny["n"])}
        assert len(steps) == 1, (k, c)
        per_trip[k] = steps.pop()
    assert per_trip[2] > per_trip[0], per_trip


def test_the_reading_says_where_the_shim_is_dearer_when_no_k_starts_it():
    from shimlab.bench import stats

    def est(v, width):
        return stats.estimate(v, np.linspace(v - width, v + width, 101))
    svd = {"0": {"excess": est(7.0, 1.0), "linear": True, "instructions": 47.0, "added": None},
           "1": {"excess": est(6.0, 1.0), "linear": True, "instructions": 46.0,
                 "added": est(-1.0, 1.5)},
           "3": {"excess": est(1.0, 3.0), "linear": True, "instructions": 46.0,
                 "added": est(-6.0, 3.0)}}
    a = {"cache": {k: {} for k in svd}, "shim_vs_direct": svd, "base_cache": 0}
    assert transitions.first_k_shim_dearer(svd) is None
    text = transitions.cache_reading(a)
    assert "At K=3, the largest K measured, the shim's round trip does not cost significantly" \
        in text
    assert "It costs significantly more at K=0, 1: no K from which on it always does" in text
    assert "-1 instructions" in text


def test_the_reading_covers_the_shim_with_arguments_and_the_trampoline():
    """cache_reading answers for both shims and prices every other crossing
    against jit-direct at each K (the trampoline's cost)."""
    from shimlab.bench import stats

    def est(v):
        return stats.estimate(v, np.linspace(v - 0.5, v + 0.5, 101))

    def mode(rt, ins):
        return {"round_trip": est(rt), "steps": [est(rt), est(rt)], "instructions": ins}
    a = {"cache": {k: {"jit-direct": mode(8.0, 8.0), "jit-shim": mode(14.0 + 2 * int(k), 55.0),
                       "jit-shim-args": mode(13.0 + int(k), 55.0 + int(k)),
                       "jit-trampoline": mode(10.0 + int(k), 22.0 + 2 * int(k))}
                   for k in ("0", "2")}, "base_cache": 0}
    text = transitions.cache_reading(a)
    assert "a round trip through the shim costs more than a direct one (jit-shim minus" in text
    assert "With the values passed through the shim's C signature (jit-shim-args):" in text
    assert "through that shim costs more than a direct one (jit-shim-args minus jit-direct" in text
    assert "jit-trampoline minus jit-direct, cycles per round trip: K=0: 2.0" in text
    assert "K=2: 4.0" in text
