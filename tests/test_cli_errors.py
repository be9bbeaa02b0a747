"""One-line errors instead of tracebacks (issue 17): .slbc nested 1,000 deep,
integers past Python's digit limit, and usage errors with exit status 1 (not
argparse's 2, the status of a crashed interpreter)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import EXAMPLES

HELLO = str(EXAMPLES / "bf" / "hello.bf")


def _shimlab(*argv):
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *argv], capture_output=True,
                          text=True, timeout=120)


def _one_line(proc, status, needle):
    err = proc.stderr.strip()
    assert proc.returncode == status, (proc.returncode, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert needle in err, err


@pytest.mark.parametrize("command", ["run", "dis"])
@pytest.mark.parametrize("text,needle", [
    ('{"code": ' + "[" * 1000 + "]" * 1000 + "}", "nested too deeply"),
    ('{"code": [["LOAD_INT", ' + "9" * 5000 + '], ["HALT", 0]]}', "more than 4300 digits"),
    ('{"code": [["HALT", 0]], "consts": [' + "1" * 4301 + "]}", "more than 4300 digits"),
], ids=["deep", "big-operand", "big-constant"])
def test_hostile_slbc_is_one_line_exit_1(tmp_path, command, text, needle):
    path = tmp_path / "p.slbc"
    path.write_text(text)
    _one_line(_shimlab(command, str(path)), 1, needle)


@pytest.mark.parametrize("command", ["run", "dis"])
def test_a_minipy_integer_past_pythons_digit_limit_is_one_line_without_pythons_advice(
        tmp_path, command):
    path = tmp_path / "p.py"
    path.write_text("x = 1\nif x:\n    y = " + "7" * 4400 + "\n")
    proc = _shimlab(command, str(path))
    _one_line(proc, 1, "p.py:3:")
    assert "more than 4300 digits" in proc.stderr and "set_int_max_str_digits" not in proc.stderr


@pytest.mark.parametrize("argv,needle", [
    (["run", "--mode", "nope", HELLO], "argument --mode: invalid choice: 'nope'"),
    (["run"], "the following arguments are required: file"),
    (["nonsense"], "invalid choice: 'nonsense'"),
    (["bench", "dispatch", "--no-such-option"], "unrecognized arguments"),
])
def test_usage_errors_are_one_line_and_exit_1_not_the_crash_status(argv, needle):
    _one_line(_shimlab(*argv), 1, needle)


def test_help_still_exits_0():
    assert _shimlab("run", "--help").returncode == 0
