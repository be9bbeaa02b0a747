"""Bad input: one clear line on stderr, a non-zero exit, never a traceback.

The table of inputs and their exact errors is test_bad_input_matrix.py;
these are the cases that check more than one line (every mode, stdout).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from shimlab import isolate, modes, toolchain


def shimlab(*args, input=b""):
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *args], input=input,
                          capture_output=True, timeout=300)


def one_line_error(r, *needles):
    err = r.stderr.decode()
    assert r.returncode != 0, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("shimlab: "), err
    for n in needles:
        assert n in lines[0], err
    return lines[0]


@pytest.fixture
def write(tmp_path):
    def w(name, data):
        p = tmp_path / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(p)
    return w


@pytest.mark.parametrize("mode", ["switch", "goto", "tailcall", "reference"])
def test_tape_out_of_bounds_at_run_time(write, mode):
    r = shimlab("run", write("oob.bf", "++.<."), "--mode", mode)
    assert r.stdout == b"\x02"          # the output before the fault is kept
    one_line_error(r, "tape head moved out of bounds", "oob.bf:1:4")


def test_empty_file(write):
    one_line_error(shimlab("run", write("e.bf", "")), "empty")
    one_line_error(shimlab("run", write("e.py", "  \n")), "empty")


def test_binary_garbage(write):
    one_line_error(shimlab("run", write("g.bf", bytes(range(256)) * 4)), "binary")
    one_line_error(shimlab("run", write("g.py", b"\xff\xfe[+.]")), "binary")


def test_unknown_file_type(write):
    one_line_error(shimlab("run", write("prog.txt", "+.")), "unknown file type", ".txt")


def test_missing_file(tmp_path):
    one_line_error(shimlab("run", str(tmp_path / "nope.bf")), "cannot read")


def test_unsupported_minipy(write):
    line = one_line_error(shimlab("run", write("c.py", "x = 1\nclass A:\n    pass\n")),
                          "unsupported")
    assert "c.py:2:" in line
    one_line_error(shimlab("run", write("f.py", "x = 1.5\n")), "f.py:1:", "unsupported")


def test_minipy_runtime_error_names_the_line(write):
    r = shimlab("run", write("z.py", "x = 0\nprint(1)\nprint(5 // x)\n"), "--mode", "goto")
    assert r.stdout == b"1\n"
    one_line_error(r, "z.py:3:", "division")


def test_compiler_lacking_feature(write):
    need = modes.get("tailcall").features
    lacking = [cc for cc in toolchain.find_compilers() if not need <= cc.features]
    if not lacking:
        pytest.skip("every compiler here builds the tailcall interpreter: none to refuse")
    cc = lacking[0]
    missing = sorted(need - cc.features)
    one_line_error(shimlab("run", write("h.bf", "+."), "--mode", "tailcall", "--cc", cc.name),
                   cc.name, *missing)


def test_dis_prints_bytecode(write):
    r = shimlab("dis", write("d.bf", "+++[->+<]"))
    assert r.returncode == 0
    assert b"CELL_ADD" in r.stdout and b"LOOP_IF_CELL" in r.stdout


def test_exceptions_cross_back_from_the_child():
    def fail():
        raise ValueError("nope")
    with pytest.raises(ValueError, match="nope"):
        isolate.call("x", fail)
    assert isolate.call("x", lambda: 41 + 1) == 42
