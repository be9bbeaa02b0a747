"""Every benchmark holds each configuration's first run to what its program
must compute (bench/expected.py) before it times anything: a configuration
that computes a wrong answer is reported and never timed."""
from __future__ import annotations

import pytest

from conftest import EXAMPLES, compiler_for
from shimlab.bench import expected, harness
from shimlab.bench.results import ResultFile
from shimlab.errors import RunError


def _configs():
    jit_cc, cc = compiler_for("jit-direct"), compiler_for("goto")
    return [harness.Config("transitions", "transitions:m=2,j=8,i=8,n=50", "jit-direct", jit_cc),
            harness.Config("transitions", "transitions:m=2,j=8,i=8,n=50", "tailcall", jit_cc,
                           cache=2),
            harness.Config("dispatch", str(EXAMPLES / "bf" / "hello.bf"), "goto", cc),
            harness.Config("programs", str(EXAMPLES / "minipy" / "fib.py"), "jit-direct",
                           jit_cc, jit_opt=3, cache=1)]


def _measure(tmp_path, name):
    rf = ResultFile.open(tmp_path / name)
    return rf, harness.measure(_configs(), rf, harness.Options(processes=1, samples=1,
                                                               quiet=True, timeout=120))


def test_right_answers_are_timed(tmp_path):
    rf, out = _measure(tmp_path, "ok.json")
    assert not out.failures
    assert all(rf.runs_done(c.key) == 1 for c in _configs())


@pytest.mark.parametrize("field, value, said", [
    ("output", "Hello?", "output"), ("locals", [1, 2, 3], "locals"), ("status", 3, "status")])
def test_a_wrong_answer_is_never_timed(tmp_path, monkeypatch, field, value, said):
    real = expected.expected

    def wrong(*args):
        want, n = real(*args)
        want = {**want, field: value}
        if field == "output":
            want["output_sha256"], want["output_len"] = "0" * 64, len(value)
        return want, n
    monkeypatch.setattr(expected, "expected", wrong)
    rf, out = _measure(tmp_path, "bad.json")
    assert sorted(out.failures) == sorted(c.key for c in _configs())
    for why in out.failures.values():
        assert "computes a wrong answer, not timed" in why and said in why
    assert not any(c.key in rf for c in _configs())


def test_the_oracle_or_the_switch_interpreter_says_what_a_program_computes(tmp_path):
    small, n = expected.expected(str(EXAMPLES / "bf" / "hello.bf"), 0, None, 30_000, 60)
    assert small["by"] == "the oracle" and small["output"].startswith("Hello") and n > 0
    big, _ = expected.expected("transitions:m=1,j=64,i=64,n=20000", 0, None, 30_000, 60)
    assert big["by"].startswith("the switch interpreter")     # past the oracle's budget
    left = tmp_path / "left.bf"
    left.write_text("+<")
    with pytest.raises(RunError, match="out of bounds"):
        expected.expected(str(left), 0, None, 30_000, 60)
