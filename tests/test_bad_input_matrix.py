"""The bad-input matrix: every row an input and the exact outcome of the CLI.

Each row runs `python -m shimlab.cli ...` in a fresh process and expects one
line on stderr starting "shimlab: " and containing the row's text, the row's
exit status, no traceback, and no file left behind that was not there before.
A row may set environment variables (a prototype stencil directory).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from conftest import interpreter_configs
from shimlab.bench.results import ResultFile, RunSamples

NESTED = 10**6


def _results_file(path) -> bytes:
    rf = ResultFile(path, environment={"hostname": "matrix"})
    rf.add("k", {"workload": "k"}, [RunSamples(cycles=[3, 4, 5], ns=[1, 2, 3])])
    rf.save()
    return path.read_bytes()


def _slbc(*code, **more) -> str:
    return json.dumps({"code": [list(c) for c in code], **more})


@dataclass
class Row:
    id: str
    argv: list[str]                     # {d} is the row's directory, {cc} a switch compiler
    files: dict = field(default_factory=dict)   # name -> text, bytes or fn(path) -> bytes
    needles: tuple[str, ...] = ()       # all in the one error line
    status: int = 1
    stdout: bytes | None = None         # exact, when given
    skip: str | None = None
    env: dict = field(default_factory=dict)     # {d} is the row's directory


ROWS = [
    Row("unbalanced-open", ["run", "{d}/u.bf"], {"u.bf": "+[>+"},
        ("u.bf:1:2: unbalanced '[' (no matching ']')",)),
    Row("unbalanced-close", ["run", "{d}/u.bf"], {"u.bf": "+\n+]"},
        ("u.bf:2:2: unbalanced ']' (no '[' before it)",)),
    # 10**6 nested loops: no recursion anywhere, so it just runs (the cell
    # is 0: the outermost loop is skipped) ...
    Row("nested-1e6-loops", ["run", "{d}/deep.bf", "--mode", "switch"],
        {"deep.bf": "[" * NESTED + "]" * NESTED}, status=0, stdout=b""),
    # ... and one bracket short is the same clear error as a short program
    Row("nested-1e6-unbalanced", ["run", "{d}/deep.bf", "--mode", "switch"],
        {"deep.bf": "[" * NESTED + "]" * (NESTED - 1)},
        ("deep.bf:1:1: unbalanced '[' (no matching ']')",)),
    Row("minipy-nested-too-deep", ["run", "{d}/deep.py"],
        {"deep.py": "x = " + "1 + " * 100_000 + "1\n"}, ("deep.py:1:1:", "nesting depth")),
    Row("tape-out-of-bounds", ["run", "{d}/oob.bf", "--mode", "goto"], {"oob.bf": "++.<."},
        ("oob.bf:1:4: runtime error at pc 2: tape head moved out of bounds (to cell -1)",),
        stdout=b"\x02"),     # the output before the fault is kept
    Row("unknown-opcode-name", ["run", "{d}/b.slbc"],
        {"b.slbc": _slbc(("FROB", 1), ("HALT", 0))}, ("b.slbc: pc 0: unknown instruction 'FROB'",)),
    Row("unknown-opcode-number", ["run", "{d}/b.slbc"],
        {"b.slbc": _slbc((99, 0), ("HALT", 0))},
        ("b.slbc: pc 0: invalid bytecode: opcode 99 out of range",)),
    Row("jump-past-the-code", ["run", "{d}/j.slbc"],
        {"j.slbc": _slbc(("JUMP", 100), ("HALT", 0))},
        ("j.slbc: pc 0: invalid bytecode: JUMP: forward jump to 100 outside 1..1",)),
    Row("jump-before-the-code", ["run", "{d}/j.slbc"],
        {"j.slbc": _slbc(("NOP", 0), ("LOOP", -5), ("HALT", 0))},
        ("j.slbc: pc 1: invalid bytecode: LOOP: backward jump to -4 outside 0..1",)),
    Row("operand-stack-overflow", ["run", "{d}/s.slbc"],
        {"s.slbc": _slbc(*[("LOAD_INT", 1)] * 5000, *[("POP", 0)] * 5000, ("HALT", 0))},
        ("s.slbc: pc 4096: invalid bytecode: stack deeper than 4096",)),
    Row("call-stack-overflow", ["run", "{d}/r.py", "--mode", "tailcall"],
        {"r.py": "def f(n):\n    return f(n + 1)\n\nprint(f(0))\n"},
        ("r.py:2:", "call stack overflow (recursion too deep)")),
    Row("not-json-bytecode", ["run", "{d}/t.slbc"], {"t.slbc": '{"code": [["HALT", 0]'},
        ("t.slbc:1:", "not valid JSON")),
    Row("results-file-not-json", ["compare", "{d}/bad.json", "{d}/good.json"],
        {"bad.json": "{\"benchmarks\": [", "good.json": _results_file},
        ("bad.json: not a readable pyperf results file",)),
    Row("results-file-truncated", ["compare", "{d}/cut.json", "{d}/good.json"],
        {"cut.json": lambda p: _results_file(p)[:150], "good.json": _results_file},
        ("cut.json: not a readable pyperf results file",)),
    Row("results-file-binary", ["compare", "{d}/good.json", "{d}/bin.json"],
        {"bin.json": bytes(range(256)), "good.json": _results_file},
        ("bin.json: not a readable pyperf results file",)),
    Row("missing-compiler", ["run", "{d}/h.bf", "--cc", "clang-99"], {"h.bf": "+."},
        ("clang-99", "apt-get install")),
    Row("output-under-proc", ["bench", "dispatch", "--quick", "--workload", "{d}/h.bf", "--cc",
                              "{cc}", "--mode", "switch", "-o", "/proc/x/y.json"],
        {"h.bf": "+."}, ("/proc/x/y.json: cannot write the results file there",)),
    Row("output-under-a-file", ["bench", "dispatch", "--quick", "--workload", "{d}/h.bf", "--cc",
                                "{cc}", "--mode", "switch", "-o", "{d}/h.bf/y.json"],
        {"h.bf": "+."}, ("h.bf/y.json: cannot write the results file there:",
                         "h.bf is not a directory")),
    Row("output-dir-read-only", ["bench", "dispatch", "--quick", "--workload", "{d}/h.bf",
                                 "--cc", "{cc}", "--mode", "switch", "-o", "{d}/ro/y.json"],
        {"h.bf": "+.", "ro/": None}, ("ro/y.json: cannot write the results file there",
                                      "Permission denied"),
        skip="root writes into a mode-555 directory" if os.geteuid() == 0 else None),
    Row("endless-loop-timeout", ["run", "{d}/e.bf", "--mode", "goto", "--timeout", "1"],
        {"e.bf": "+[]"}, ("e.bf did not finish within the 1 s timeout; stopped it",), status=3),
    Row("endless-loop-timeout-oracle", ["run", "{d}/e.bf", "--mode", "reference",
                                        "--timeout", "1"],
        {"e.bf": "+[]"}, ("the reference interpreter running", "within the 1 s timeout"),
        status=3),
    Row("timeout-not-positive", ["run", "{d}/e.bf", "--timeout", "0"], {"e.bf": "+[]"},
        ("--timeout 0: needs a positive number of seconds",)),
    # a prototype stencil with a hole the JIT never fills for an instruction
    Row("stencil-unpatched-hole",
        ["run", "{d}/loop.bf", "--mode", "jit-direct", "--jit-threshold", "1",
         "--stencil", "CELL_ADD=CELL_ADD:holey"],
        {"loop.bf": "+++[->+<]", "proto/": "",
         "proto/holey.py": "from peachpy.x86_64 import MOV, eax, al, ADD, byte\n"
                           "from peachpy_stencils.asm import stencil\n"
                           "@stencil('CELL_ADD:holey')\n"
                           "def holey(a, r):\n"
                           "    a(MOV(eax, a.hole('oparg')), ADD(byte[r.head], al))\n"
                           "    a.jmp_hole('handler')\n"},
        ("hole handler", "left unpatched"), env={"SHIMLAB_STENCILS": "{d}/proto"}),
]


def _write_files(d, files):
    for name, content in files.items():
        p = d / name
        if name.endswith("/"):
            p.mkdir()
            if content is None:         # None: read-only; "": an ordinary directory
                p.chmod(0o555)
            continue
        if callable(content):
            data = content(p)
        else:
            data = content.encode() if isinstance(content, str) else content
        p.write_bytes(data)


def _switch_cc() -> str:
    ccs = [cc for mode, cc in interpreter_configs() if mode == "switch"]
    if not ccs:
        pytest.skip("no compiler here builds the switch interpreter")
    return ccs[0]


def _listing(d):
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input(row, tmp_path):
    if row.skip:
        pytest.skip(row.skip)
    _write_files(tmp_path, row.files)
    before = _listing(tmp_path)
    argv = [a.replace("{d}", str(tmp_path)) for a in row.argv]
    # resolved only for the rows that name one, so the rest run without a compiler
    argv = [_switch_cc() if a == "{cc}" else a for a in argv]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
           **{k: v.replace("{d}", str(tmp_path)) for k, v in row.env.items()}}
    r = subprocess.run([sys.executable, "-m", "shimlab.cli", *argv], capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=300, env=env)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == row.status, err
    assert "Traceback" not in err, err
    if row.status == 0:
        assert err == "", err
    else:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("shimlab: "), err
        for needle in row.needles:
            assert needle in lines[0], err
    if row.stdout is not None:
        assert r.stdout == row.stdout
    assert _listing(tmp_path) == before          # no partial file, no temp file
    assert not os.path.exists("/proc/x")
