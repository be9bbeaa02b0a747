"""Layouts as measured factors: code placement per build (build.code_layout),
a new memory layout and trace placement for every measured run of a program
with installed traces (vm.Loaded.bench_relocating), and the harness spreading
worker processes over code layouts."""
from __future__ import annotations

import pytest

from conftest import EXAMPLES, interpreter_configs
from shimlab import oracle, vm
from shimlab.abi.vmh import ffi
from shimlab.bench import harness, synthetic
from shimlab.bench.results import ResultFile
from shimlab.interp import build, loader
from shimlab.interp.build import code_shift

CONFIGS = interpreter_configs()
JIT_CCS = sorted({cc for mode, cc in CONFIGS if mode == "tailcall"})
needs_jit = pytest.mark.skipif(not JIT_CCS, reason="no compiler here builds the JIT modes")


def _placement(b) -> tuple[int, list[int]]:
    """(sl_interpret's address mod 4096, each handler's offset from it)."""
    lib = loader.library(str(b.path))
    base = int(ffi().cast("uintptr_t", lib.sl_interpret))
    return base % 4096, [a - base for a in loader.handler_addresses(b)]


def test_code_shift_is_a_deterministic_multiple_of_16_within_a_page():
    assert code_shift(0) == 0
    shifts = [code_shift(k) for k in range(1, 40)]
    assert shifts == [code_shift(k) for k in range(1, 40)]
    assert all(s % 16 == 0 and 0 <= s < 4096 for s in shifts)
    assert len(set(shifts)) > 30          # layouts really differ
    # any four consecutive layouts cover every 16-byte offset in a 64-byte line
    assert all({s % 64 for s in shifts[k:k + 4]} == {0, 16, 32, 48} for k in range(0, 36))


@pytest.mark.parametrize("mode, cc", [c for c in CONFIGS if c[0] in ("goto", "tailcall")][:3])
def test_a_code_layout_moves_the_code_but_not_the_code_itself(mode, cc):
    placements = [_placement(build.build(mode, cc, code_layout=k)) for k in (0, 1, 2, 3)]
    assert len({at for at, _ in placements}) >= 3, placements
    # layouts 1, 2, 3 put the code at three different offsets in its cache line
    assert len({at % 64 for at, _ in placements[1:]}) == 3, placements
    # the handlers keep their offsets from each other: the same machine code, elsewhere
    assert all(offsets == placements[0][1] for _, offsets in placements)
    assert build.build(mode, cc).key == build.build(mode, cc, code_layout=0).key


def test_a_negative_code_layout_is_refused():
    with pytest.raises(build.BuildError, match="code layout -1"):
        build.build("switch", CONFIGS[0][1], code_layout=-1)


@needs_jit
@pytest.mark.parametrize("mode", ["jit-direct", "jit-shim", "jit-table", "jit-direct-sites"])
def test_relocating_runs_move_the_traces_and_stay_exact(mode):
    spec = "transitions:m=4,j=16,i=16,n=50"
    program, stretches = synthetic.build(spec)
    want = oracle.run(program)
    b = build.build(mode, JIT_CCS[0], count=True)
    with vm.Loaded(b, program, b"", layout_seed=7,
                   jit=synthetic.jit_options(spec, stretches)) as loaded:
        places = []
        for seed in (11, 12, 13):
            loaded.jit.relocate(seed)
            places.append((int(ffi().cast("uintptr_t", loaded.vm.code)),
                           tuple(t.address for t in loaded.jit.stats.traces)))
            got = loaded.run()
            assert got.status == 0 and got.counts == want.counts and got.locals == want.locals
        cycles, ns = loaded.bench_relocating(3, seed=5)
    assert len(cycles) == len(ns) == 3 and all(c > 0 for c in cycles)
    assert len({p[0] for p in places}) == 3 and len({p[1] for p in places}) == 3


def test_the_harness_spreads_workers_over_code_layouts(tmp_path):
    cc = next(cc for mode, cc in CONFIGS if mode == "switch")
    config = harness.Config("t", str(EXAMPLES / "bf" / "hello.bf"), "switch", cc)
    results = ResultFile(tmp_path / "r.json")
    harness.measure([config], results, harness.Options(processes=4, warmup=0, samples=1,
                                                       code_layouts=2, quiet=True))
    runs = ResultFile.load(tmp_path / "r.json").get(config.key).runs
    assert sorted(r.code_layout for r in runs) == [1, 1, 2, 2]
    assert all(r.code_at is not None and 0 <= r.code_at < 4096 for r in runs)


def test_two_identical_runs_give_the_same_verdicts(tmp_path):
    """A verdict must not follow the layout draw: measured twice, with memory
    layouts per run and code layouts per worker, no verdict turns into its
    opposite.  (A difference near the edge of its interval may read "faster"
    once and "not significant" once: that is what an interval says, and on a
    shared machine it happened to tailcall against goto, so only a flip from
    faster to slower fails.)"""
    import io
    from shimlab.bench import dispatch
    cc = next((cc for mode, cc in CONFIGS if mode == "tailcall"), None)
    if cc is None:
        pytest.skip("no compiler here builds the tail-call interpreter")
    workload = str(EXAMPLES / "bf" / "nested.bf")
    configs = [harness.Config("dispatch", workload, m, cc) for m in ("goto", "tailcall", "switch")]
    verdicts = []
    for run in range(2):
        results = ResultFile(tmp_path / f"r{run}.json")
        harness.measure(configs, results, harness.Options(processes=4, warmup=1, samples=5,
                                                          code_layouts=2, quiet=True))
        rows = dispatch.report(results, configs, out=io.StringIO())
        verdicts.append({r["mode"]: r["verdict"] for r in rows})
    for mode in verdicts[0]:
        assert {verdicts[0][mode], verdicts[1][mode]} != {"faster", "slower"}, verdicts


# ---- code layouts in whole processes and the corpus table -----------------------------

def _cli(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_run_places_the_interpreter_at_a_code_layout():
    cc = next(cc for mode, cc in CONFIGS if mode == "goto")
    hello = str(EXAMPLES / "bf" / "hello.bf")
    want = _cli("run", hello, "--mode", "goto", "--cc", cc)
    got = _cli("run", hello, "--mode", "goto", "--cc", cc, "--code-layout", "3")
    assert want.returncode == got.returncode == 0 and got.stdout == want.stdout
    # the build it ran is the shifted one (built, so cached, under its own key)
    assert build.build("goto", cc, code_layout=3).path.exists()
    bad = _cli("run", hello, "--code-layout", "-1")
    assert bad.returncode != 0 and "--code-layout" in bad.stderr
    ref = _cli("run", hello, "--mode", "reference", "--code-layout", "2")
    assert ref.returncode != 0 and "no machine code" in ref.stderr


def test_whole_process_samples_run_at_the_jobs_code_layout(monkeypatch):
    from shimlab.bench import whole
    seen = []

    def one(cmd, stdin, env, cwd=None):
        seen.append(cmd)
        return 1, 1, b""
    monkeypatch.setattr(whole, "_one", one)
    job = harness.Config("programs", "x.bf", "tailcall", "cc").job(0, 1, None)
    out = whole.run_job({**job, "code_layout": 2})
    assert seen[-1][-2:] == ["--code-layout", "2"] and out["code_layout"] == 2
    out = whole.run_job({**job, "code_layout": 0})
    assert "--code-layout" not in seen[-1] and out["code_layout"] == 0


def test_the_corpus_table_says_how_far_placement_moved_a_configuration(tmp_path):
    from shimlab.bench import corpus_report
    from shimlab.bench.results import RunSamples
    results = ResultFile(tmp_path / "r.json")
    cfgs = []
    for name, slow in (("a.bf", 1.20), ("b.bf", 1.05)):
        c = harness.Config("programs", name, "tailcall", "cc")
        runs = [RunSamples(cycles=[], ns=[100, 101, 99], code_layout=1),
                RunSamples(cycles=[], ns=[int(100 * slow)] * 3, code_layout=2)]
        results.add(c.key, c.describe(), runs)
        cfgs.append(c)
    one = harness.Config("programs", "c.bf", "goto", "cc")       # one layout: no spread
    results.add(one.key, one.describe(), [RunSamples(cycles=[], ns=[5], code_layout=1)])
    rows = corpus_report.placement(results, cfgs + [one])
    assert len(rows) == 1
    name, kind, n, spread, largest = rows[0]
    assert (name, kind, n) == ("tailcall --bf-opt 0", "steady", "2")
    assert spread == f"{((1.2 * 1.05) ** 0.5 - 1) * 100:.1f}%" and largest == "20.0% a.bf"
