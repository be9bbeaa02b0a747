"""Crash isolation: faults and timeouts in a child are reported, the parent
goes on, and results finished before them are kept -- in isolate.call, in
`shimlab run --isolate`, and in the benchmark harness."""
from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, compiler_for
from shimlab import childpy, cli, isolate, vm
from shimlab.bench import expected, harness
from shimlab.bench.results import ResultFile
from shimlab.errors import RunError

ENDLESS = "+[]"       # BF that never halts: the cell stays 1




def _raise_signal(sig):
    os.kill(os.getpid(), sig)


def _null_read():
    """A real SIGSEGV, not a sent one: read a page mapped with no access
    (address 0 itself is readable in some sandboxes)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    page = libc.mmap(None, 4096, 0, 0x22, -1, 0)     # PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS
    return ctypes.string_at(page, 8)


@pytest.mark.parametrize("sig,meaning", [
    (signal.SIGSEGV, "a memory fault"), (signal.SIGBUS, "a memory fault"),
    (signal.SIGILL, "an illegal instruction"), (signal.SIGFPE, "an arithmetic fault"),
])
def test_each_fatal_signal_is_named_with_what_was_running(sig, meaning):
    with pytest.raises(isolate.Crash) as e:
        isolate.call("the goto interpreter (clang-19) running x.bf", _raise_signal, sig)
    assert str(e.value) == (f"the goto interpreter (clang-19) running x.bf crashed: "
                            f"killed by {sig.name} ({meaning})")


def test_a_real_fault_is_a_crash_and_the_parent_keeps_its_results():
    before = isolate.call("first", lambda: 6 * 7)
    with pytest.raises(isolate.Crash, match="second crashed: killed by SIGSEGV"):
        isolate.call("second", _null_read)
    after = isolate.call("third", lambda: "still here")
    assert (before, after) == (42, "still here")


def test_a_timeout_kills_the_child_and_leaves_nothing_running(tmp_path):
    pidfile = tmp_path / "pid"

    def spin():
        pidfile.write_text(str(os.getpid()))
        while True:
            pass
    t0 = time.monotonic()
    with pytest.raises(isolate.Timeout) as e:
        isolate.call("the spinner", spin, timeout=0.5)
    assert time.monotonic() - t0 < 5
    assert str(e.value) == "the spinner did not finish within the 0.5 s timeout; stopped it"
    with pytest.raises(ProcessLookupError):       # killed and reaped, not a zombie
        os.kill(int(pidfile.read_text()), 0)


def test_a_result_larger_than_the_pipe_arrives_whole_under_a_timeout():
    assert len(isolate.call("big", bytes, 8 << 20, timeout=60)) == 8 << 20


# ---- shimlab run --isolate -------------------------------------------------------

@pytest.fixture
def hello(tmp_path):
    p = tmp_path / "h.bf"
    p.write_text("+" * 72 + ".")
    return str(p)


def test_a_result_comes_back_equal_and_of_its_own_type():
    """Plain values cross as marshal data (isolate._encode), anything else
    pickled: a buffer marshal would turn into bytes keeps its type."""
    import array
    from shimlab.isa import Error
    from shimlab.result import Result
    for value in [(1, -2**70, 2.5, "é", b"\0", None, True, [1, (2, 3)], {"k": frozenset({1})}),
                  bytearray(b"ab"), array.array("i", [1, 2]), ("ok", [bytearray(b"x")]),
                  Result(b"out", Error.TAPE_BOUNDS, 3, -1, counts=[1, 2]),
                  Result(b"out", Error.OK).plain(), Error.OK]:
        got = isolate.call("a child", lambda: value)
        assert got == value and type(got) is type(value), value
    r = Result(b"o", Error.ZERO_DIVISION, 7, 9, b"\1", 2, [3], [4])
    assert Result.from_plain(isolate.call("a child", r.plain)) == r
    assert isolate._encode(r.plain())[:1] == b"m" and isolate._encode(r)[:1] == b"p"


def test_run_isolates_native_modes_by_default(hello, monkeypatch, capsys):
    def faulting_run(build, program, data=b"", **limits):
        _null_read()
    monkeypatch.setattr(vm, "run", faulting_run)
    cc = compiler_for("switch")
    assert cli.main(["run", hello, "--mode", "switch", "--cc", cc]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"shimlab: the switch interpreter ({cc}) running {hello} crashed: "
                   f"killed by SIGSEGV (a memory fault)")


def test_run_no_isolate_runs_in_process(hello, monkeypatch, capsys):
    pids = []
    real = vm.run

    def spy(build, program, data=b"", **limits):
        pids.append(os.getpid())
        return real(build, program, data, **limits)
    monkeypatch.setattr(vm, "run", spy)
    cc = compiler_for("switch")
    assert cli.main(["run", hello, "--mode", "switch", "--cc", cc, "--no-isolate"]) == 0
    assert pids == [os.getpid()]
    assert capsys.readouterr().out == "H"
    pids.clear()
    assert cli.main(["run", hello, "--mode", "switch", "--cc", cc]) == 0
    assert pids == []               # it ran in the child


def test_run_timeout_needs_isolation(hello, capsys):
    assert cli.main(["run", hello, "--mode", "reference", "--no-isolate", "--timeout", "1"]) == 1
    assert "--timeout needs --isolate" in capsys.readouterr().err


# ---- the harness -----------------------------------------------------------------

@pytest.fixture
def endless(tmp_path):
    p = tmp_path / "endless.bf"
    p.write_text(ENDLESS)
    return str(p)


def test_a_worker_past_its_timeout_is_stopped_and_named(endless):
    cc = compiler_for("goto")
    job = harness.Config("t", endless, "goto", cc).job(0, 1, None)
    t0 = time.monotonic()
    with pytest.raises(RunError) as e:
        harness.run_worker(job, timeout=1)
    assert time.monotonic() - t0 < 30
    assert str(e.value) == (f"the goto interpreter ({cc}) running endless.bf did not finish "
                            "within the 1 s per-worker timeout; stopped it")


def test_a_worker_killed_by_a_signal_is_named(tmp_path, monkeypatch):
    fake = tmp_path / "python"            # a "worker" that dies of SIGBUS at once
    fake.write_text("#!/bin/sh\nkill -BUS $$\n")
    fake.chmod(0o755)
    monkeypatch.setattr(childpy.sys, "executable", str(fake))   # workers start through childpy
    job = harness.Config("t", "x/loop.bf", "tailcall", "clang-19").job(0, 1, None)
    with pytest.raises(RunError) as e:
        harness.run_worker(job, timeout=30)
    assert str(e.value) == ("the tailcall interpreter (clang-19) running loop.bf crashed its "
                            "worker: killed by SIGBUS (a memory fault)")


def test_measure_records_timeouts_as_failures_and_keeps_the_rest(tmp_path, endless,
                                                                 monkeypatch):
    hello = str(EXAMPLES / "bf" / "hello.bf")
    configs = [harness.Config("t", w, "switch", compiler_for("switch")) for w in (hello, endless)]
    rf = ResultFile.open(tmp_path / "r.json")
    # the endless workload fails while its instructions are counted ...
    out = harness.measure(configs, rf, harness.Options(processes=1, samples=1, quiet=True,
                                                       timeout=1))
    assert list(out.failures) == [configs[1].key]
    assert "running endless.bf did not finish within the 1 s" in \
        out.failures[configs[1].key]
    assert rf.runs_done(configs[0].key) == 1 and configs[1].key not in rf
    # ... and, if it got past that, in its worker
    real = expected.expected
    monkeypatch.setattr(expected, "expected",
                        lambda w, bf_opt, data, tape_len, timeout: (None, 1) if w == endless
                        else real(w, bf_opt, data, tape_len, timeout))
    rf2 = ResultFile.open(tmp_path / "r2.json")
    out = harness.measure(configs, rf2, harness.Options(processes=1, samples=1, quiet=True,
                                                        timeout=2))
    assert "per-worker timeout" in out.failures[configs[1].key]
    assert rf2.runs_done(configs[0].key) == 1
    assert Path(tmp_path / "r2.json").exists()
