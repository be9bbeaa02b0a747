"""Results files as files (issue 17): unique names under concurrency, only
regular files of bounded size are read, resume and overwrite only when asked,
a file of another suite or configuration set is refused, and a corrupted
field is a one-line error in --resume and in compare."""
from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time

import pytest

from conftest import EXAMPLES
from shimlab.bench import results
from shimlab.bench.results import ResultFile, RunSamples
from shimlab.errors import ShimlabError

HELLO = str(EXAMPLES / "bf" / "hello.bf")
KEYS = ["dispatch/hello.bf/switch/cc", "dispatch/hello.bf/goto/cc"]


def _write(path, keys=KEYS, suite="dispatch"):
    rf = ResultFile(path, environment={"hostname": "test"})
    rf.set_plan(suite, keys)
    for k in keys:
        rf.add(k, {"suite": suite, "mode": k.split("/")[2]},
               [RunSamples(cycles=[1000, 1010, 990], ns=[400, 404, 396])])
    rf.save()
    return rf


def _shimlab(*argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *argv], capture_output=True,
                          text=True, timeout=timeout)


def _one_line_error(proc, needle):
    err = proc.stderr.strip()
    assert proc.returncode == 1, (proc.returncode, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert needle in err, err


# -- unique names -----------------------------------------------------------------

def _claim(directory, barrier, queue):
    barrier.wait()
    rf = results.open_for("dispatch", KEYS, directory=directory)
    rf.add(KEYS[0], {"pid": os.getpid()}, [RunSamples(cycles=[1], ns=[1])])
    rf.save()
    queue.put(str(rf.path))


def test_runs_started_in_the_same_second_get_files_of_their_own(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "_stamp", lambda: "20261203-142319")
    ctx = multiprocessing.get_context("fork")
    n = 8
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(tmp_path, barrier, queue)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    paths = {queue.get(timeout=5) for _ in range(n)}
    assert len(paths) == n
    assert all("dispatch-20261203-142319" in p for p in paths)
    # each file holds its own run, none lost to another writer
    pids = {ResultFile.load(p).get(KEYS[0]).config["pid"] for p in paths}
    assert len(pids) == n


def test_an_unused_new_file_is_removed(tmp_path):
    rf = results.open_for("dispatch", KEYS, directory=tmp_path)
    assert rf.path.exists() and rf.path.stat().st_size == 0
    rf.release()
    assert not rf.path.exists()


# -- only regular files, of bounded size ------------------------------------------------

@pytest.mark.parametrize("argv,needle", [
    (["-o", "/dev/full"], "already exists"),
    (["-o", "/dev/full", "--force"], "not a regular file"),
    (["--resume", "/dev/zero"], "not a regular file"),
])
def test_devices_are_refused_not_read_forever(argv, needle):
    start = time.monotonic()
    proc = _shimlab("bench", "dispatch", "--quick", "--mode", "switch", "--workload", HELLO,
                    *argv, timeout=60)
    _one_line_error(proc, needle)
    assert time.monotonic() - start < 30


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    with pytest.raises(ShimlabError, match="not a regular file"):
        ResultFile.load(fifo)


def test_a_file_bigger_than_the_bound_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    _write(path)
    monkeypatch.setattr(results, "MAX_BYTES", 100)
    with pytest.raises(ShimlabError, match="more than a results file holds"):
        ResultFile.load(path)


def test_a_gzip_bomb_is_refused(tmp_path, monkeypatch):
    import gzip
    path = tmp_path / "r.json.gz"
    path.write_bytes(gzip.compress(b" " * 10_000))
    monkeypatch.setattr(results, "MAX_BYTES", 1000)
    with pytest.raises(ShimlabError, match="decompresses to more than"):
        ResultFile.load(path)


# -- resume and overwrite only when asked --------------------------------------------------

def test_an_existing_output_is_refused_replaced_with_force_resumed_with_resume(tmp_path):
    path = tmp_path / "r.json"
    _write(path)
    with pytest.raises(ShimlabError, match="already exists; --resume .* --force replaces"):
        results.open_for("dispatch", KEYS, output=str(path))
    replaced = results.open_for("dispatch", KEYS, output=str(path), force=True)
    assert len(replaced) == 0 and len(ResultFile.load(path)) == 2   # replaced at first save
    resumed = results.open_for("dispatch", KEYS, resume=str(path))
    assert resumed.runs_done(KEYS[0]) == 1


def test_resume_refuses_another_suite(tmp_path):
    path = tmp_path / "t.json"
    _write(path, keys=["transitions/x/jit-shim/cc"], suite="transitions")
    with pytest.raises(ShimlabError, match="results of bench transitions .*not dispatch"):
        results.open_for("dispatch", KEYS, resume=str(path))


def test_resume_refuses_another_configuration_set(tmp_path):
    path = tmp_path / "r.json"
    _write(path)
    with pytest.raises(ShimlabError, match="another set of configurations"):
        results.open_for("dispatch", KEYS + ["dispatch/hello.bf/tailcall/cc"], resume=str(path))
    with pytest.raises(ShimlabError, match="another set of configurations"):
        results.open_for("dispatch", KEYS[:1], resume=str(path))


def test_resume_of_an_interrupted_file_with_missing_configurations_is_fine(tmp_path):
    path = tmp_path / "r.json"
    rf = ResultFile(path, environment={})
    rf.set_plan("dispatch", KEYS)
    rf.add(KEYS[0], {}, [RunSamples(cycles=[5], ns=[5])])
    rf.save()
    assert KEYS[0] in results.open_for("dispatch", KEYS, resume=str(path))


def test_resume_needs_a_file(tmp_path):
    with pytest.raises(ShimlabError, match="nothing to resume"):
        results.open_for("dispatch", KEYS, resume=str(tmp_path / "none.json"))
    (tmp_path / "empty.json").touch()
    with pytest.raises(ShimlabError, match="not a readable pyperf results file"):
        results.open_for("dispatch", KEYS, resume=str(tmp_path / "empty.json"))


def test_cli_refuses_an_existing_output_file(tmp_path):
    path = tmp_path / "r.json"
    _write(path)
    before = path.read_bytes()
    proc = _shimlab("bench", "transitions", "--size", "tiny", "-o", str(path))
    _one_line_error(proc, "already exists")
    assert path.read_bytes() == before


# -- corrupted fields ------------------------------------------------------------------------

def _corrupt_cycles(path, value):
    data = json.loads(path.read_text())
    run = data["benchmarks"][0]["runs"][0]
    run.setdefault("metadata", {})["shimlab_cycles"] = value
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("value", ["1000,x,990", "1000,1010", "", 12, "-1,2,3", "1e3,1,1"])
def test_a_corrupted_cycles_field_is_one_line(tmp_path, value):
    path = tmp_path / "r.json"
    _write(path)
    _corrupt_cycles(path, value)
    with pytest.raises(ShimlabError) as info:
        ResultFile.load(path)
    msg = str(info.value)
    assert "\n" not in msg and "corrupted" in msg and "shimlab_cycles" in msg, msg


def test_compare_and_resume_report_a_corrupted_file_in_one_line(tmp_path):
    good, bad = tmp_path / "a.json", tmp_path / "b.json"
    _write(good)
    _write(bad)
    _corrupt_cycles(bad, "12,abc,7")
    _one_line_error(_shimlab("compare", str(good), str(bad)), "shimlab_cycles")
    _one_line_error(_shimlab("bench", "dispatch", "--quick", "--mode", "switch", "--workload",
                             HELLO, "--resume", str(bad)), "shimlab_cycles")
