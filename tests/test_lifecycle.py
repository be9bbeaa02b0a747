"""No child outlives its parent (issue 17): `shimlab run` of a hanging
program killed with SIGTERM or SIGKILL leaves no child running, and the
children childpy starts die with their parent too."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from processes import wait_for_child, wait_until_busy

from shimlab import isolate

SHIMLAB = [sys.executable, "-m", "shimlab.cli"]


def _alive(pid: int) -> bool:
    """Running, not gone and not a zombie (an orphan's zombie waits for its
    reaper, which need not reap at once in a container)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def hang(tmp_path):
    p = tmp_path / "hang.py"
    p.write_text("print(1)\nwhile True:\n    pass\n")
    return p


@pytest.mark.parametrize("mode", ["tailcall", "reference"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_shimlab_run_leaves_no_child(hang, mode, sig):
    parent = subprocess.Popen([*SHIMLAB, "run", str(hang), "--mode", mode, "--isolate"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        child = wait_for_child(parent.pid)
        wait_until_busy(child)          # into the program's endless loop
        os.kill(parent.pid, sig)
        out, _ = parent.communicate(timeout=30)
        assert parent.returncode == -sig
        assert _gone_within(child, 10), f"child {child} outlived its parent ({sig.name})"
        if sig == signal.SIGTERM:        # stopped, not killed: its output was written
            assert out == b"1\n"
    finally:
        parent.kill()
        parent.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_the_oracle_in_process_writes_out_its_output_when_terminated(hang, sig):
    """The reference mode without --isolate runs in shimlab itself: SIGTERM or
    SIGHUP unwinds the run so the output it holds is written, then shimlab
    dies of that signal (as the native modes' driver does)."""
    proc = subprocess.Popen([*SHIMLAB, "run", str(hang), "--mode", "reference"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until_busy(proc.pid, seconds=1.0)      # start-up takes far less
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=30)
        assert (proc.returncode, out) == (-sig, b"1\n"), err
        assert b"Traceback" not in err
    finally:
        proc.kill()
        proc.wait()


def _death_signal() -> int:
    """This process's parent-death signal (prctl PR_GET_PDEATHSIG), read with
    ctypes: not the way isolate sets it."""
    import ctypes
    sig = ctypes.c_int(-1)
    assert ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0) == 0
    return sig.value


def test_an_isolated_child_is_set_to_die_with_its_parent():
    assert isolate.call("the child", _death_signal) == signal.SIGKILL


def test_a_subprocess_child_dies_with_its_parent(tmp_path):
    """childpy's children get the same parent-death signal (it survives exec)."""
    pidfile = tmp_path / "pid"
    script = ("import subprocess, sys, time\n"
              "from shimlab import isolate\n"
              "p = subprocess.Popen(['sleep', '300'], preexec_fn=isolate.die_with_parent_hook())\n"
              f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
              "time.sleep(300)\n")
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        end = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < end:
            time.sleep(0.02)
        child = int(pidfile.read_text())
        assert _alive(child)
        parent.kill()
        parent.wait()
        assert _gone_within(child, 10)
    finally:
        parent.kill()
        parent.wait()


def test_a_timeout_stops_the_child_gently_then_for_good():
    """A child that ignores SIGTERM is killed after the grace period."""
    def stubborn():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            pass
    t0 = time.monotonic()
    with pytest.raises(isolate.Timeout):
        isolate.call("the stubborn one", stubborn, timeout=0.3)
    assert time.monotonic() - t0 < 0.3 + isolate.STOP_GRACE + 5


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1.0, 0.0])
def test_a_timeout_that_cannot_be_meant_is_refused_before_any_fork(timeout):
    with pytest.raises(isolate.RunError, match="positive, finite number of seconds"):
        isolate.call("never", lambda: 1, timeout=timeout)
