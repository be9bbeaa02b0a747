"""Big .slbc files (issue 17) are parsed a chunk of instructions at a time
into shared tuples, never as one JSON tree: the same program and the same
errors as the whole document parsed by json, in a few bytes per source byte."""
from __future__ import annotations

import json

import pytest

from shimlab.errors import FrontendError
from shimlab.frontend import slbc


def _big(n, tail='["HALT", 0]', extra=""):
    body = ", ".join(f'["LOAD_INT", {i % 5000}], ["POP", 0]' for i in range(n))
    return '{"code": [' + body + ", " + tail + "]" + extra + "}"


def test_a_big_file_parses_in_chunks_to_the_same_program():
    text = _big(60_000, extra=', "consts": [5, 6], "functions": [{"name": "m", "entry": 0}]')
    assert len(text) > slbc._CHUNK
    fast = slbc._fast(text, "big.slbc")
    whole = slbc.from_dict(json.loads(text), "big.slbc")
    assert fast is not None
    assert (fast.code, fast.consts, fast.functions) == (whole.code, whole.consts,
                                                        whole.functions)
    # identical instructions are one shared tuple: memory a few bytes per source byte
    assert fast.code[2] is fast.code[2 + 2 * 5000]


@pytest.mark.parametrize("change,needle", [
    (lambda t: t.replace('"POP"', '"PIP"', 1), "pc 1: unknown instruction 'PIP'"),
    (lambda t: t.replace('["POP", 0]', '["POP", [0]]', 1), "pc 1: operand must be an integer"),
    (lambda t: t.replace('["POP", 0]', '["POP", 0, 1]', 1), "pc 1: an instruction is"),
    (lambda t: t[:-3], "not valid JSON"),
    (lambda t: t.replace('["POP", 0]', '["P]OP", 0]', 1), "unknown instruction 'P]OP'"),
])
def test_errors_in_a_big_file_are_the_whole_document_errors(change, needle):
    with pytest.raises(FrontendError, match=needle.replace("[", r"\[")):
        slbc.compile_source(change(_big(60_000)), "big.slbc")


def test_a_second_code_key_wins_as_in_json():
    text = _big(60_000)[:-1] + ', "code": [["HALT", 0]]}'
    assert slbc.compile_source(text, "big.slbc").code == [(slbc.isa.OPCODE["HALT"], 0)]


def test_running_out_of_memory_is_a_one_line_error(monkeypatch):
    def exhausted(source, filename):
        raise MemoryError
    monkeypatch.setattr(slbc, "_fast", exhausted)
    with pytest.raises(FrontendError, match=r"^big\.slbc: out of memory reading 12 bytes"):
        slbc.compile_source('{"code": []}', "big.slbc")


def test_the_cli_turns_any_memory_error_into_one_line(monkeypatch, capsys, tmp_path):
    from shimlab import cli
    from shimlab.frontend import minipy
    path = tmp_path / "p.py"
    path.write_text("print(1)\n")

    def exhausted(source, filename):
        raise MemoryError      # as if past the front end's own checks
    monkeypatch.setattr(minipy, "_compile", exhausted)
    assert cli.main(["dis", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("shimlab: out of memory") and "\n" not in err
