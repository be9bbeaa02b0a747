"""--tape-size (issue 16): the BF tape has as many cells as asked, in every
mode (the JIT's bounds checks compare against vm->tape_len) and in the
benchmarks' workers; 30,000 by default."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import compiler_for
from shimlab import oracle, vm
from shimlab.bench import expected, harness
from shimlab.errors import RunError
from shimlab.frontend import load_program
from shimlab.interp import build

MODES = ["tailcall", "switch", "asm", "jit-shim", "jit-direct", "reference"]


@pytest.fixture
def walker(tmp_path):
    """+[>+]: walks right until it falls off the tape (a traced loop)."""
    p = tmp_path / "walk.bf"
    p.write_text("+[>+]")
    return p


@pytest.fixture
def far(tmp_path):
    """Straight to cell 35,000, then prints it."""
    p = tmp_path / "far.bf"
    p.write_text(">" * 35_000 + "+++.")
    return p


def _run(mode, program, **kw):
    if mode == "reference":
        return oracle.run(program, **kw)
    jit = {"threshold": 1} if mode.startswith("jit") else None
    return vm.run(build.build(mode, compiler_for(mode)), program, jit=jit, **kw)


@pytest.mark.parametrize("mode", MODES)
def test_the_head_stops_at_the_asked_size(mode, walker):
    program = load_program(str(walker))
    for size in (oracle.TAPE_LEN, 5, 70_000):
        r = _run(mode, program, tape_len=size) if size != oracle.TAPE_LEN else \
            _run(mode, program)
        assert r.status.name == "TAPE_BOUNDS" and r.err_value == size, (size, r.status)


def test_run_tape_size_on_the_command_line(far):
    cmd = [sys.executable, "-m", "shimlab.cli", "run", str(far)]
    short = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert short.returncode == 1 and "out of bounds" in short.stderr
    for mode in ("tailcall", "jit-direct"):
        ok = subprocess.run(cmd + ["--tape-size", "35001", "--mode", mode],
                            capture_output=True, timeout=60)
        assert (ok.returncode, ok.stdout) == (0, b"\3"), ok.stderr
    help_text = subprocess.run(cmd[:-1] + ["--help"], capture_output=True, text=True).stdout
    assert "--tape-size" in help_text and "default 30000" in help_text


def test_the_benchmarks_run_with_the_asked_size(far):
    config = harness.Config("t", str(far), "tailcall", compiler_for("tailcall"))
    with pytest.raises(RunError, match="out of bounds"):
        expected.expected(config.workload, 0, None, 30_000, 60)
    assert expected.expected(config.workload, 0, None, 35_001, 60)[1] > 0
    job = config.job(0, 1, None)
    job["tape_len"] = 35_001
    out = harness.run_worker(job, timeout=60)
    assert len(out["ns"]) == 1
    job["tape_len"] = 30_000
    with pytest.raises(RunError, match="out of bounds"):
        harness.run_worker(job, timeout=60)
