"""Streaming program I/O (issue 17): input is read as the program reads it,
output is written as it is produced and at every way a run ends (halt,
error, timeout, Ctrl-C), --max-output stops a run, and a full disk or a
closed stdin is one line -- in the C interpreters, the JIT and the oracle."""
from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading

import pytest

from processes import cpu_seconds, wait_for_child, wait_until_busy

from conftest import EXAMPLES, compiler_for
from shimlab import oracle, vm
from shimlab.frontend import load_program
from shimlab.interp import build
from shimlab.progio import CHUNK, OutputLimit, Streams

SHIMLAB = [sys.executable, "-m", "shimlab.cli"]
# native modes with different I/O code: the C macros, the asm handlers
# (stencil bodies, deopting to C) and the JIT's stencils
MODES = ["tailcall", "switch", "asm", "jit-shim", "jit-direct", "reference"]


def _shimlab(*args, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 60)
    return subprocess.run([*SHIMLAB, *map(str, args)], **kw)


def _one_line_error(proc, *needles):
    err = proc.stderr.decode().strip()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


@pytest.fixture
def prog(tmp_path):
    def write(name, text):
        p = tmp_path / name
        p.write_text(text)
        return p
    return write


def _build(mode):
    return build.build(mode, compiler_for(mode))


def _run(mode, program, **kw):
    if mode == "reference":
        return oracle.run(program, b"", **kw)
    jit = {"threshold": 1} if mode.startswith("jit") else None
    return vm.run(_build(mode), program, b"", jit=jit, **kw)


def _feed(data: bytes) -> int:
    """The read end of a pipe a thread writes `data` into."""
    r, w = os.pipe()

    def writer():
        with os.fdopen(w, "wb") as f:
            f.write(data)
    threading.Thread(target=writer, daemon=True).start()
    return r


def _drain(fd: int, into: list) -> threading.Thread:
    def reader():
        with os.fdopen(fd, "rb") as f:
            into.append(f.read())
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    return t


# ---- in-process: every mode streams through pipes, the oracle agrees ---------

@pytest.mark.parametrize("mode", MODES)
def test_a_cat_loop_streams_many_chunks_through_pipes(mode, prog):
    """`,[.,]` copies its input up to a 0 byte: 3.5 chunks in and out, so the
    traced loop's CELL_IN finds the buffer empty and CELL_OUT finds it full
    several times (both deopt to the interpreter, which reads or writes on)."""
    rng = random.Random(17)
    data = bytes(rng.randrange(1, 256) for _ in range(CHUNK * 7 // 2))
    program = load_program(str(prog("cat.bf", ",[.,]")))
    out_r, out_w = os.pipe()
    got: list[bytes] = []
    t = _drain(out_r, got)
    try:
        result = _run(mode, program, streams=Streams(in_fd=_feed(data + b"\0tail"),
                                                     out_fd=out_w))
    finally:
        os.close(out_w)
    t.join(30)
    assert result.status == 0 and result.output == b""
    assert got == [data]


@pytest.mark.parametrize("mode", MODES)
def test_reads_past_the_end_leave_the_cell_unchanged(mode, prog):
    program = load_program(str(prog("eof.bf", "+++,.,.,.")))
    out_r, out_w = os.pipe()
    got: list[bytes] = []
    t = _drain(out_r, got)
    try:
        _run(mode, program, streams=Streams(in_fd=_feed(b"A"), out_fd=out_w))
    finally:
        os.close(out_w)
    t.join(30)
    assert got == [b"AAA"]


@pytest.mark.parametrize("mode", MODES)
def test_max_output_stops_at_exactly_the_limit(mode, prog):
    """PRINT of "12345\\n" does not fit in the last 2 bytes: nothing of it is
    written, in every mode alike."""
    program = load_program(str(prog("p.py", "while True:\n    print(12345)\n")))
    out_r, out_w = os.pipe()
    got: list[bytes] = []
    t = _drain(out_r, got)
    try:
        with pytest.raises(OutputLimit, match="--max-output limit of 20 bytes"):
            _run(mode, program, streams=Streams(out_fd=out_w, max_output=20))
    finally:
        os.close(out_w)
    t.join(30)
    assert got == [b"12345\n" * 3]


@pytest.mark.parametrize("mode", ["tailcall", "jit-direct", "reference"])
def test_max_output_holds_without_streaming_too(mode, prog):
    program = load_program(str(prog("inf.bf", "+[.]")))
    with pytest.raises(OutputLimit):
        _run(mode, program, streams=Streams(max_output=3 * CHUNK + 5))


def test_without_streams_the_output_is_kept_whole(prog):
    """Benchmarks and tests read Result.output: no fds, nothing written."""
    program = load_program(str(EXAMPLES / "bf" / "hello.bf"))
    assert _run("tailcall", program).output == oracle.run(program).output != b""


# ---- the CLI ------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["tailcall", "jit-direct", "reference"])
def test_yes_into_a_program_that_reads_three_bytes_finishes(mode, prog):
    eof = prog("eof.bf", ",.,.,.")
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        proc = _shimlab("run", eof, "--mode", mode, stdin=yes.stdout, timeout=30)
    finally:
        yes.kill()
        yes.wait()
    assert (proc.returncode, proc.stdout) == (0, b"y\ny")


@pytest.mark.parametrize("source", ["--input", "<"])
@pytest.mark.parametrize("device", ["/dev/urandom", "/dev/zero"])
def test_endless_devices_are_read_only_as_far_as_the_program_reads(source, device, prog):
    eof = prog("eof.bf", ",.,.,.")
    if source == "--input":
        proc = _shimlab("run", eof, "--input", device, timeout=30)
    else:
        with open(device, "rb") as f:
            proc = _shimlab("run", eof, stdin=f, timeout=30)
    assert proc.returncode == 0 and len(proc.stdout) == 3


@pytest.mark.parametrize("source", ["yes", "/dev/zero"])
def test_check_streams_endless_input_too(source, prog):
    """--check gives the oracle the run's input: it keeps what the run read
    (a tee), not the whole input, which never ends here (it read until out
    of memory: the address-space limit makes that quick)."""
    eof = prog("eof.bf", ",.,.,.")
    if source == "yes":
        yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
        try:
            proc = _shimlab("run", eof, "--check", stdin=yes.stdout, timeout=60,
                            preexec_fn=_address_space(1024))
        finally:
            yes.kill()
            yes.wait()
        want = b"y\ny"
    else:
        proc = _shimlab("run", eof, "--check", "--input", source, timeout=60,
                        preexec_fn=_address_space(1024))
        want = b"\0\0\0"
    assert (proc.returncode, proc.stdout) == (0, want), proc.stderr


def test_output_before_a_timeout_reaches_stdout(prog):
    hang = prog("hang.py", "print(1)\nwhile True:\n    pass\n")
    for mode in ("tailcall", "reference"):
        proc = _shimlab("run", hang, "--mode", mode, "--timeout", "1.5")
        assert (proc.returncode, proc.stdout) == (3, b"1\n"), proc.stderr


def test_endless_output_stays_bounded_and_reaches_stdout(prog):
    """+[.] under jit-direct for 3 s: hundreds of MB pass through stdout,
    and shimlab and its child stay far below 200 MB (the peak RSS of the
    processes a wrapper reaps, counted by the wrapper)."""
    inf = prog("inf.bf", "+[.]")
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, "
               "stderr=subprocess.DEVNULL)\n"
               "n = 0\n"
               "while (b := p.stdout.read1(1 << 20)):\n"
               "    n += len(b)\n"
               "print(n, p.wait(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", wrapper, *SHIMLAB, "run", str(inf),
                           "--mode", "jit-direct", "--timeout", "3"],
                          capture_output=True, text=True, timeout=60)
    n, rc, peak_kb = map(int, proc.stdout.split())
    assert rc == 3, proc.stderr
    assert n > 100 * CHUNK                   # it streamed: megabytes, not a buffer's worth
    assert peak_kb < 200 * 1024, f"peak RSS {peak_kb} KB"


def _address_space(mb: int):
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    return limit


@pytest.mark.parametrize("mode", ["tailcall", "jit-direct", "reference"])
def test_under_a_memory_limit_endless_output_runs_and_a_big_tape_is_the_vms_error(mode, prog):
    """`prlimit --as`: +[.] runs until its timeout with its output streamed
    (it grew to 24 GB once, and ended in a MemoryError traceback under a
    limit), and a tape that does not fit is the VM's own one-line error."""
    inf = prog("inf.bf", "+[.]")
    proc = subprocess.run([*SHIMLAB, "run", str(inf), "--mode", mode, "--timeout", "1.5"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                          preexec_fn=_address_space(400))
    assert proc.returncode == 3 and len(proc.stdout) > CHUNK, proc.stderr
    assert b"Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    proc = _shimlab("run", prog("a.bf", "+."), "--mode", mode, "--tape-size", 1 << 30,
                    preexec_fn=_address_space(400))
    _one_line_error(proc, "out of memory")


@contextlib.contextmanager
def _group_killed_after(proc):
    """A test of an endless run that fails half-way leaves no runaway behind
    (one that did burned a CPU for the rest of the session)."""
    try:
        yield
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _sigint(disposition):
    """For a child: SIGINT as a terminal's foreground job has it (SIG_DFL),
    or ignored (SIG_IGN), whatever this test process has (a pytest-xdist
    worker ignores it)."""
    return lambda: signal.signal(signal.SIGINT, disposition)


def test_ctrl_c_writes_out_what_was_output(prog):
    hang = prog("hang.py", "print(1)\nwhile True:\n    pass\n")
    proc = subprocess.Popen([*SHIMLAB, "run", str(hang)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_sigint(signal.SIG_DFL))
    with _group_killed_after(proc):
        wait_until_busy(wait_for_child(proc.pid))
        os.killpg(proc.pid, signal.SIGINT)      # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=30)
    assert out == b"1\n", err
    assert proc.returncode == 130 and b"Traceback" not in err


def test_a_run_started_ignoring_sigint_goes_on_through_one(prog):
    """A run whose process was started with SIGINT ignored (nohup, a
    background job of a script, a test runner's worker) is not ended by a
    SIGINT to its group: the streaming run's handler (driver.c) leaves an
    ignored signal ignored.  (It once took the signal and died of it, and
    shimlab reported a crash.)"""
    hang = prog("hang.py", "print(1)\nwhile True:\n    pass\n")
    proc = subprocess.Popen([*SHIMLAB, "run", str(hang), "--timeout", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_sigint(signal.SIG_IGN))
    with _group_killed_after(proc):
        child = wait_for_child(proc.pid)
        wait_until_busy(child)
        os.killpg(proc.pid, signal.SIGINT)
        before = cpu_seconds(child)
        wait_until_busy(child, before + 0.3)    # the run goes on using CPU
        assert proc.poll() is None
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert out == b"1\n" and b"crashed" not in err, err


@pytest.mark.parametrize("mode", ["tailcall", "reference"])
def test_stdout_on_a_full_disk_is_one_line(mode):
    with open("/dev/full", "wb") as full:
        proc = _shimlab("run", EXAMPLES / "bf" / "hello.bf", "--mode", mode, stdout=full,
                        stderr=subprocess.PIPE, capture_output=False)
    _one_line_error(proc, "No space left on device")


def test_dis_on_a_full_disk_is_one_line():
    with open("/dev/full", "wb") as full:
        proc = _shimlab("dis", EXAMPLES / "bf" / "hello.bf", stdout=full,
                        stderr=subprocess.PIPE, capture_output=False)
    _one_line_error(proc, "No space left on device")


@pytest.mark.parametrize("argv", [["run", "--mode", "tailcall"], ["run", "--mode", "reference"],
                                  ["dis"]])
def test_a_closed_stdout_is_one_line(argv):
    """`>&-`: one line and exit 1, not an AttributeError traceback (run) or
    silence with exit 0 (dis)."""
    proc = subprocess.run([*SHIMLAB, *argv, str(EXAMPLES / "bf" / "hello.bf")],
                          stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), timeout=120)
    _one_line_error(proc, "stdout is closed")


def test_input_dash_with_stdin_closed_is_one_line(prog):
    eof = prog("eof.bf", ",.,.,.")
    proc = _shimlab("run", eof, "--input", "-", stdin=None,
                    preexec_fn=lambda: os.close(0))
    _one_line_error(proc, "--input -: stdin is closed")
    # without --input, a closed stdin is no input
    proc = _shimlab("run", eof, preexec_fn=lambda: os.close(0))
    assert (proc.returncode, proc.stdout) == (0, b"\0\0\0")


def test_max_output_on_the_command_line(prog):
    inf = prog("inf.bf", "+[.]")
    proc = _shimlab("run", inf, "--max-output", "1000")
    assert proc.stdout == b"\1" * 1000
    _one_line_error(proc, "--max-output limit of 1000 bytes")


def test_a_directory_as_input_is_one_line(prog, tmp_path):
    proc = _shimlab("run", prog("eof.bf", ","), "--input", tmp_path)
    _one_line_error(proc, "is a directory")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("streamed", [True, False], ids=["pipe", "bytes"])
def test_a_traced_loop_reads_on_past_the_end(mode, streamed, prog):
    """After the end of the input a trace's CELL_IN leaves the cell as it is
    without going back to the interpreter each time (in_eof)."""
    program = load_program(str(prog("eof5.bf", "+++++[>,.<-]")))
    if not streamed:
        data = b"AB"
        if mode == "reference":
            result = oracle.run(program, data)
        else:
            result = vm.run(_build(mode), program, data,
                            jit={"threshold": 1} if mode.startswith("jit") else None)
        assert result.output == b"ABBBB"
        return
    out_r, out_w = os.pipe()
    got: list[bytes] = []
    t = _drain(out_r, got)
    try:
        _run(mode, program, streams=Streams(in_fd=_feed(b"AB"), out_fd=out_w))
    finally:
        os.close(out_w)
    t.join(30)
    assert got == [b"ABBBB"]


@pytest.mark.parametrize("mode", MODES)
def test_a_traced_output_loop_stops_at_exactly_the_limit(mode, prog):
    """+[.] traced: CELL_OUT's stencil fills to out_cap, which stays within
    what is left of the limit after every write; the last byte written is
    byte number max_output."""
    program = load_program(str(prog("inf.bf", "+[.]")))
    limit = 3 * CHUNK + 5
    out_r, out_w = os.pipe()
    got: list[bytes] = []
    t = _drain(out_r, got)
    try:
        with pytest.raises(OutputLimit):
            _run(mode, program, streams=Streams(out_fd=out_w, max_output=limit))
    finally:
        os.close(out_w)
    t.join(30)
    assert got == [b"\1" * limit]
