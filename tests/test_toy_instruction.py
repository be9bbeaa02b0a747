"""isa.py is the one table: a toy instruction added there (and its stencil in
a peachpy_stencils/ family) reaches every generated file and every table derived
from it, and runs on the C, asm and JIT interpreters as the oracle says.

The toy goes into a copy of the tree (src/, csrc/, peachpy_stencils/, the tests' program strategies),
never into this checkout; everything is asked of that copy in child processes.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Appended to isa.py before its derived tables: one stack binop with a
# stencil, one instruction left to C (no stencil), as a newcomer adds them.
TOY_ISA = '''
_binop("TOY_MAX", "a > b ? a : b", _py_simple(max), "the larger of a and b")
_def("TOY_DROP2", Operand.NONE, 2, 0, Flow.NEXT, "(void)POP(); (void)POP();", "drop two",
     lambda s, arg: (s.pop(), s.pop(), None)[2], no_stencil="toy: left to its C handler")

'''
TOY_STENCIL = '''

from peachpy.x86_64 import CMOVL


@stencil("TOY_MAX")
def toy_max(a, r):
    a(MOV(rax, qword[r.sp - 8]), MOV(rcx, qword[r.sp - 16]), CMP(rcx, rax), CMOVL(rcx, rax),
      MOV(qword[r.sp - 16], rcx), SUB(r.sp, 8))
'''

# A loop the JIT traces (TOY_MAX inside it), then TOY_DROP2 after it.
PROGRAM = {
    "code": [["LOAD_INT", 0], ["STORE_LOCAL", 0],
             ["LOAD_LOCAL", 0], ["LOAD_INT", 3], ["TOY_MAX", 0], ["PRINT", 32],
             ["LOAD_LOCAL", 0], ["LOAD_INT", 1], ["ADD", 0], ["DUP", 0], ["STORE_LOCAL", 0],
             ["LOAD_INT", 8], ["LT", 0], ["JUMP_IF_FALSE", 2], ["LOOP", -12],
             ["LOAD_INT", 1], ["LOAD_INT", 2], ["TOY_DROP2", 0], ["PRINT_BYTE", 10],
             ["HALT", 0]],
    "functions": [{"name": "main", "entry": 0, "nargs": 0, "nlocals": 1}]}
EXPECTED = "3 3 3 3 4 5 6 7 \n"

CHECKS = r'''
import sys
from pathlib import Path
root = Path(sys.argv[1])
import shimlab
assert Path(shimlab.__file__).is_relative_to(root), shimlab.__file__
from shimlab import isa
from shimlab.interp import asm_handlers, generate
from shimlab.jit import clang_stencils, trace
from shimlab.bench import stencil_timing
from shimlab.frontend.verify import verify
from shimlab.bytecode import Assembler, Function
from shimlab.errors import ShimlabError
import strategies

assert generate.stale_files() == [], generate.stale_files()
gen = root / "csrc" / "generated"
assert "SL_OP_TOY_MAX" in (gen / "opcodes.h").read_text()
for f in sorted(gen.glob("cases_*.c")):
    text = f.read_text()
    assert "TOY_MAX" in text and "TOY_DROP2" in text, f.name
assert "TOY_MAX" in trace.TRACEABLE and "TOY_DROP2" not in trace.TRACEABLE
assert asm_handlers.C_HANDLERS["TOY_DROP2"] == "toy: left to its C handler"
assert "TOY_MAX" not in asm_handlers.C_HANDLERS
text = asm_handlers.render()
assert "\nsl_asm_TOY_MAX:" in text and "    .quad sl_op_TOY_DROP2" in text
assert "\nsl_asm_TOY_DROP2:" not in text
names = clang_stencils.source()[1]
assert "TOY_MAX" in names and "TOY_DROP2" not in names
assert "TOY_MAX" in isa.BINOPS and "TOY_MAX" in strategies._BINOPS
assert "TOY_MAX" in stencil_timing.instructions()
a = Assembler("underflow", "bytecode")
a.emit("LOAD_INT", 1)
a.emit("TOY_MAX")
a.emit("HALT")
prog = a.finish()
prog.functions = [Function("main", 0, 0, 0, [], 8)]
try:
    verify(prog)
except ShimlabError as e:
    assert "TOY_MAX" in str(e) and "stack" in str(e), e
else:
    raise AssertionError("verify took TOY_MAX on a stack of one")
print("ok")
'''


@pytest.fixture(scope="module")
def toy_tree(tmp_path_factory):
    tree = tmp_path_factory.mktemp("toy")
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for d in ("src", "csrc", "peachpy_stencils"):
        shutil.copytree(ROOT / d, tree / d, ignore=skip)
    (tree / "tests").mkdir()
    for name in ("strategies.py", "minipy_gen.py"):
        shutil.copy(ROOT / "tests" / name, tree / "tests")
    isa_py = tree / "src" / "shimlab" / "isa.py"
    text = isa_py.read_text()
    anchor = "PACKED_CELL = "
    assert anchor in text
    isa_py.write_text(text.replace(anchor, TOY_ISA + anchor, 1))
    with open(tree / "peachpy_stencils" / "arith.py", "a") as f:
        f.write(TOY_STENCIL)
    (tree / "toy.slbc").write_text(json.dumps(PROGRAM))
    return tree


def _run(tree, *args, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "src"), str(tree),
                                                      str(tree / "tests")]),
               SHIMLAB_BUILD_DIR=str(tree / "build"))
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_the_copy_is_stale_until_regenerated(toy_tree):
    r = _run(toy_tree, "-m", "shimlab.interp.generate", "--check")
    assert r.returncode != 0 and "opcodes.h" in r.stdout + r.stderr


def test_every_table_and_generated_file_picks_the_toy_up(toy_tree):
    r = _run(toy_tree, "-m", "shimlab.interp.generate")
    assert r.returncode == 0, r.stderr
    r = _run(toy_tree, "-c", CHECKS, str(toy_tree))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


@pytest.mark.parametrize("mode", ["reference", "tailcall", "asm", "jit-direct"])
def test_the_toy_runs_on_every_kind_of_interpreter(toy_tree, mode):
    r = _run(toy_tree, "-m", "shimlab.interp.generate")
    assert r.returncode == 0, r.stderr
    extra = ["--jit-threshold", "1", "--stats"] if mode.startswith("jit") else []
    r = _run(toy_tree, "-m", "shimlab.cli", "run", "toy.slbc", "--mode", mode, *extra)
    assert r.returncode == 0, r.stderr
    assert r.stdout == EXPECTED
    if extra:     # the loop with TOY_MAX in it was traced, not left to the interpreter
        assert "traces" in r.stderr, r.stderr
