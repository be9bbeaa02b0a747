"""Result files: round trip, pyperf compatibility, atomic save, resume."""
import json
import os
import subprocess
import sys

import numpy as np
import pyperf
import pytest

from shimlab.bench import results
from shimlab.bench.results import ResultFile, RunSamples
from shimlab.errors import ShimlabError

ENV = {"hostname": "testhost", "cpu_model_name": "Test CPU", "cpu_count": 2,
       "shimlab_version": "0.1.0", "shimlab_git_commit": "abc123"}


def config(workload="mandelbrot.bf", mode="tailcall"):
    return {"suite": "dispatch", "workload": workload, "mode": mode,
            "compiler": "clang", "compiler_version": "19.1.7", "flags": "-O2 -march=x86-64"}


def key(workload="mandelbrot.bf", mode="tailcall"):
    return f"dispatch/{workload}/{mode}/clang-19"


def make_runs(nproc=3, nsamples=10, scale=1.0, seed=0, cycles=True):
    rng = np.random.default_rng(seed)
    runs = []
    for p in range(nproc):
        ns = (scale * 2_000_000 * np.exp(rng.normal(0, 0.02, nsamples))).astype(np.int64)
        runs.append(RunSamples(
            cycles=[int(v * 3) for v in ns] if cycles else [],
            ns=[int(v) for v in ns],
            warmup_ns=[int(ns[0]) * 2, 0],
            vm_instructions=1_234_567,
            instructions=9_876_543 + p,
            worker_pid=4000 + p,
            cpu=p % 2))
    return runs


def write_file(path, scale=1.0, seed=0, keys=None):
    rf = ResultFile(path, environment=ENV)
    for i, (wl, mode) in enumerate(keys or [("mandelbrot.bf", "tailcall"),
                                            ("mandelbrot.bf", "switch"),
                                            ("hanoi.bf", "goto")]):
        rf.add(key(wl, mode), config(wl, mode), make_runs(scale=scale, seed=seed + i),
               tsc_hz=2.995e9)
    rf.save()
    return rf


def test_round_trip(tmp_path):
    path = tmp_path / "r.json"
    odd = dict(config(), flags=" -O2 ", empty="", none=None, flag=True,
               lst=["-O2", 3], n=3, x=0.5, tricky="json:{}")
    runs = make_runs()
    runs.append(RunSamples(cycles=[], ns=[np.int64(7), 10**13 + 1], warmup_ns=[]))
    rf = ResultFile(path, environment=ENV)
    rf.add("k/odd", odd, runs, tsc_hz=3e9, metadata={"note": "first try"})
    rf.add(key(), config(), make_runs(seed=1))
    rf.save()

    back = results.load(path)
    assert back.configs() == ["k/odd", key()]
    assert back.configs_done() == {"k/odd", key()}
    got = back.get("k/odd")
    assert got.config == odd
    assert got.runs == [RunSamples(r.cycles, [int(v) for v in r.ns], r.warmup_ns,
                                   r.vm_instructions, r.instructions, r.worker_pid, r.cpu)
                        for r in runs]
    assert got.tsc_hz == 3e9
    assert got.metadata["note"] == "first try"
    for k, v in ENV.items():
        assert got.metadata[k] == v
    assert got.metadata["shimlab_format"] == results.FORMAT_VERSION
    assert "date" in got.metadata
    assert not got.has_cycles      # the last run has none
    assert back.get(key()).has_cycles
    assert back.get(key()).tsc_hz is None


def test_exact_ns_for_large_values(tmp_path):
    rng = np.random.default_rng(3)
    ns = [int(v) for v in rng.integers(1, 10**14, 500)]
    rf = ResultFile(tmp_path / "big.json", environment=ENV)
    rf.add("big", {}, [RunSamples(cycles=[], ns=ns, warmup_ns=ns[:20])])
    rf.save()
    run = results.load(tmp_path / "big.json").get("big").runs[0]
    assert run.ns == ns and run.warmup_ns == ns[:20]


def test_pyperf_reads_it(tmp_path):
    path = tmp_path / "r.json"
    write_file(path)
    suite = pyperf.BenchmarkSuite.load(str(path))
    bench = suite.get_benchmark(key())
    assert bench.get_unit() == "second"
    assert bench.get_nrun() == 3
    assert 1e-3 < bench.median() < 3e-3
    assert bench.get_metadata()["shimlab_config.mode"] == "tailcall"


def test_pyperf_cli_stats_and_compare_to(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_file(a)
    write_file(b, scale=1.1, seed=7)
    for args in (["stats", str(a)], ["compare_to", str(a), str(b)], ["show", str(b)]):
        p = subprocess.run([sys.executable, "-m", "pyperf", *args],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    assert "slower" in p.stdout or "ms" in p.stdout


def test_gzip(tmp_path):
    path = tmp_path / "r.json.gz"
    write_file(path)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert results.load(path).configs_done() == {key(), key(mode="switch"),
                                                 key("hanoi.bf", "goto")}
    assert len(pyperf.BenchmarkSuite.load(str(path))) == 3


def test_save_leaves_no_temp_files(tmp_path):
    write_file(tmp_path / "r.json")
    write_file(tmp_path / "r.json", seed=3)     # replace an existing file
    assert os.listdir(tmp_path) == ["r.json"]


def test_failed_write_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    write_file(path)
    before = path.read_bytes()
    rf = results.load(path, environment=ENV)
    rf.add("another", {}, make_runs(seed=9))

    real_write = os.write

    def half_write_then_disk_full(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_write_then_disk_full)
    with pytest.raises(OSError):
        rf.save()
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["r.json"]

    def no_replace(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", no_replace)
    with pytest.raises(OSError):
        rf.save()
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["r.json"]

    rf.save()
    assert "another" in results.load(path).configs_done()


def test_resume(tmp_path):
    path = tmp_path / "r.json"
    assert results.load(path) is None
    rf = ResultFile.open(path, environment=ENV)
    assert rf.configs_done() == set()
    rf.add(key(), config(), make_runs(nproc=1))
    rf.save()        # ... and the sweep is interrupted here

    rf = ResultFile.open(path, environment=ENV)
    assert rf.configs_done() == {key()}
    assert rf.runs_done(key()) == 1
    rf.add(key(), config(), make_runs(nproc=2, seed=5))      # more workers
    rf.add(key(mode="switch"), config(mode="switch"), make_runs())
    rf.save()
    back = results.load(path)
    assert back.configs_done() == {key(), key(mode="switch")}
    assert back.runs_done(key()) == 3
    assert [r.worker_pid for r in back.get(key()).runs] == [4000, 4000, 4001]


def test_add_validates_before_changing_anything(tmp_path):
    rf = ResultFile(tmp_path / "r.json", environment=ENV)
    rf.add(key(), config(), make_runs(nproc=1))
    with pytest.raises(ValueError):
        rf.add(key(), config(mode="switch"), make_runs())     # same key, other config
    with pytest.raises(ValueError):
        rf.add("bad", {}, [RunSamples(cycles=[], ns=[5, 0])])     # pyperf needs > 0
    with pytest.raises(ValueError):
        rf.add("bad", {}, [RunSamples(cycles=[1, 2, 3], ns=[5, 6])])
    with pytest.raises(ValueError):
        rf.add("bad", {}, [RunSamples(cycles=[], ns=[1.5])])
    with pytest.raises(ValueError):
        rf.add("bad\nkey", {}, make_runs())
    with pytest.raises(ValueError):
        rf.add("bad", {}, [])
    with pytest.raises(ValueError):
        rf.add("bad", {}, make_runs(), metadata={"shimlab_cycles": "1"})
    other_host = ResultFile(tmp_path / "r.json", environment=dict(ENV, hostname="elsewhere"))
    other_host._benchmarks = dict(rf._benchmarks)
    other_host._configs = dict(rf._configs)
    with pytest.raises(ValueError):     # pyperf refuses mixing hosts in one benchmark
        other_host.add(key(), config(), make_runs())
    assert rf.configs_done() == {key()} and rf.runs_done(key()) == 1
    with pytest.raises(ValueError):
        ResultFile(tmp_path / "empty.json").save()


def test_unreadable_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ShimlabError):
        results.load(bad)
    bad.write_text(json.dumps({"version": "9.9", "benchmarks": []}))
    with pytest.raises(ShimlabError):
        results.load(bad)


def test_plain_pyperf_file_loads(tmp_path):
    # A file pyperf wrote itself (no shimlab metadata) still loads, as ns.
    run = pyperf.Run([0.001, 0.002], metadata={"name": "bench", "unit": "second", "loops": 4},
                     collect_metadata=False)
    path = tmp_path / "p.json"
    pyperf.Benchmark([run]).dump(str(path))
    got = results.load(path).get("bench")
    assert got.config == {}
    assert got.runs[0].ns == [1_000_000, 2_000_000]     # per loop iteration
    assert got.runs[0].cycles == []


def test_collect_environment():
    env = results.collect_environment()
    assert env["shimlab_version"]
    assert env["cpu_count"] >= 1
    for value in env.values():
        assert isinstance(value, (str, int)) and "\n" not in str(value)
    # the Python is part of a figure's machine: its build moves start-up and compile time
    assert os.path.realpath(sys._base_executable) in env["python"]
    line = results.machine_line(env)
    assert env["cpu_model_name"] in line and env["python"] in line
    assert results.machine_line({}) == "? (?)"
