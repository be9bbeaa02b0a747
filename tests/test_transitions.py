"""The transition benchmark: its programs are matched, its sweep runs and
reports well-formed tables and JSON on a tiny size."""
from __future__ import annotations

import json

import pytest

from conftest import interpreter_configs
from shimlab import build, isa, reference, vm
from shimlab.bench import floors, synthetic, transitions
from shimlab.errors import ShimlabError

JIT_CC = sorted({cc for mode, cc in interpreter_configs() if mode == "tailcall"})
needs_jit = pytest.mark.skipif(not JIT_CC, reason="no compiler here builds the JIT modes")
ENTER_JIT = isa.NUM_OPCODES


def _counts(mode, spec):
    program, stretches = synthetic.build(spec)
    b = build.build(mode, JIT_CC[0], count=True)
    jit = {"stretches": stretches, "record": False} if build.is_jit(mode) else None
    with vm.Loaded(b, program, b"", jit=jit) as loaded:
        result = loaded.run()
        enter = sum(int(loaded.vm.counts[i]) for i in range(ENTER_JIT, ENTER_JIT + 1 + vm.TABLE_SLOTS))
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
    for mode in transitions.MODES:
        r = summary["modes"][mode]
        assert set(r["round_trip"]) == {"value", "ci95"}
        lo, hi = r["round_trip"]["ci95"]
        assert lo <= r["round_trip"]["value"] <= hi
        # exact instruction counts are linear in M: the slope is an integer
        assert r["instructions"] == pytest.approx(round(r["instructions"]), abs=1e-6)
        assert len(r["per_iteration"]) == len(transitions.SIZES["tiny"]["ms"])
        for v, e in zip(r["per_iteration"], r["per_iteration_ci"]):
            assert e["value"] == v and e["ci95"][0] <= v <= e["ci95"][1]
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
    for mode in ("tailcall", "jit-shim", "jit-direct", "jit-direct-handler"):
        assert f"squares.bf        {mode}" in text or mode in text
    assert "vs tailcall" in text and (tmp_path / "p.json").exists()
    # the rows as records (what the shim-vs-direct notebook plots)
    from shimlab.bench import programs
    from shimlab.bench.results import ResultFile
    records = programs.ratios(ResultFile.load(tmp_path / "p.json"),
                              [str(EXAMPLES / "bf" / "squares.bf")], JIT_CC[0])
    assert [r["mode"] for r in records] == list(programs.MODES)
    assert records[0]["vs_tailcall"] == pytest.approx(1.0) and records[0]["verdict"] == "baseline"
    for r in records:
        assert r["ci95"][0] <= r["vs_tailcall"] <= r["ci95"][1] and r["cycles_per_instr"] > 0
