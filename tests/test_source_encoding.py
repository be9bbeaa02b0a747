"""Source encodings: a minipy file is read as CPython reads a .py file (PEP 263
declarations on line 1 or 2, a UTF-8 byte-order mark), and what CPython
refuses is refused with one line that names the declaration.  "binary data"
stays for files that are not text."""
from __future__ import annotations

import subprocess
import sys

import pytest

from shimlab import oracle
from shimlab.errors import FrontendError
from shimlab.frontend import encoding, load_program
from test_bad_input import one_line_error, shimlab

LATIN1_COMMENT = b"# caf\xe9 cr\xe8me\n"
PROGRAM = b"print(6 * 7)\n"

# files CPython runs: minipy must run them and print the same
RUNS = {
    "latin-1 on line 1": b"# -*- coding: latin-1 -*-\n" + LATIN1_COMMENT + PROGRAM,
    "on line 2 after a #! line": b"#!/usr/bin/env python3\n# vim: set fileencoding=latin-1 :\n"
                                 + LATIN1_COMMENT + PROGRAM,
    "on line 2 after a blank line": b"\n# coding=iso-8859-15\n" + LATIN1_COMMENT + PROGRAM,
    "crlf lines": b"# coding: latin-1\r\n# caf\xe9\r\nprint(6 * 7)\r\n",
    "a BOM and utf-8 declared": b"\xef\xbb\xbf# coding: utf-8\n# caf\xc3\xa9\n" + PROGRAM,
    "a BOM and no declaration": b"\xef\xbb\xbf# caf\xc3\xa9\n" + PROGRAM,
    "cp1252 in a docstring": b"# coding: cp1252\n\"\"\"\x93quoted\x94\"\"\"\n" + PROGRAM,
}

# files CPython refuses: (bytes, what minipy's one line must say)
REFUSED = {
    "declared on line 3": (b"#!/x\n\n# coding: latin-1\n" + LATIN1_COMMENT + PROGRAM,
                           [":4: byte 0xe9", "no encoding declared"]),
    "line 2 after code": (b"x = 1\n# coding: latin-1\n" + LATIN1_COMMENT + PROGRAM,
                          [":3: byte 0xe9", "no encoding declared"]),
    "no declaration": (LATIN1_COMMENT + PROGRAM, [":1: byte 0xe9 at offset 5 is not UTF-8"]),
    "unknown encoding": (b"# -*- coding: klingon -*-\n" + PROGRAM,
                         [":1: the encoding declaration '# -*- coding: klingon -*-'",
                          "unknown encoding 'klingon'"]),
    "not a text encoding": (b"# coding: rot13\n" + PROGRAM, ["'rot13', which is not a text"]),
    "bytes the encoding lacks": (b"# coding: ascii\n" + LATIN1_COMMENT + PROGRAM,
                                 ["'# coding: ascii'", "0xe9 at offset 21 (line 2) is not ascii"]),
    "a BOM and latin-1 declared": (b"\xef\xbb\xbf# coding: latin-1\n" + PROGRAM,
                                   ["'latin-1'", "UTF-8 byte-order mark"]),
}


def cpython(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", str(path)], capture_output=True, timeout=60)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_file_cpython_runs_runs_the_same(tmp_path, name):
    path = tmp_path / "p.py"
    path.write_bytes(RUNS[name])
    want = cpython(path)
    assert want.returncode == 0, want.stderr
    assert oracle.run(load_program(path)).output == want.stdout == b"42\n"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_file_cpython_refuses_is_refused_with_the_reason(tmp_path, name):
    data, needles = REFUSED[name]
    path = tmp_path / "p.py"
    path.write_bytes(data)
    assert b"SyntaxError" in cpython(path).stderr
    with pytest.raises(FrontendError) as info:
        load_program(path)
    message = str(info.value)
    assert message.startswith(f"{path}:") and "\n" not in message
    assert "binary" not in message
    for needle in needles:
        assert needle in message, message


def test_the_command_line_says_it_in_one_line(tmp_path):
    path = tmp_path / "k.py"
    path.write_bytes(REFUSED["unknown encoding"][0])
    one_line_error(shimlab("run", str(path)), "unknown encoding 'klingon'")
    path.write_bytes(RUNS["latin-1 on line 1"])
    r = shimlab("run", str(path))
    assert r.returncode == 0 and r.stdout == b"42\n", r.stderr


@pytest.mark.parametrize("data", [b"print(1)\x00\n", bytes(range(1, 256)) * 4,
                                  b"\xff\xfe" + "print(1)\n".encode("utf-16-le"),
                                  b"# coding: latin-1\n\x00"],
                         ids=["nul", "every byte", "utf-16", "declared but nul"])
def test_binary_files_are_still_binary_data(tmp_path, data):
    path = tmp_path / "b.py"
    path.write_bytes(data)
    with pytest.raises(FrontendError, match="binary data, not a program"):
        load_program(path)


def test_only_minipy_reads_a_declaration(tmp_path):
    # BF and bytecode files are UTF-8: a declaration there is a comment like any other
    path = tmp_path / "p.bf"
    path.write_bytes(b"# coding: latin-1\n" + LATIN1_COMMENT + b"+.")
    with pytest.raises(FrontendError, match=r"p\.bf:2: byte 0xe9 at offset 23 is not UTF-8$"):
        load_program(path)


def test_the_declaration_is_found_as_cpython_finds_it():
    assert encoding.declaration(b"# -*- coding: latin-1 -*-\n") == \
        (1, "latin-1", "# -*- coding: latin-1 -*-")
    assert encoding.declaration(b"  \t# vim:fileencoding=utf-8\n") == \
        (1, "utf-8", "  \t# vim:fileencoding=utf-8")
    assert encoding.declaration(b"#!/bin/python\n#coding=cp1252\nx = 1\n")[:2] == (2, "cp1252")
    assert encoding.declaration(b"x = 1  # coding: latin-1\n") is None     # not a comment line
    assert encoding.declaration(b"x = 1\n# coding: latin-1\n") is None      # line 1 is code
    assert encoding.declaration(b"\n\n# coding: latin-1\n") is None         # line 3
    assert encoding.declaration(b"# coding latin-1\n") is None              # no : or =
    assert encoding.declaration(b"# no newline at all") is None
