"""Stencils registered at run time (shimlab.jit.stencil_store.register): what a
notebook prototypes without writing into peachpy_stencils/.  They must be found by
the oracle test and by the JIT, refuse to shadow built stencils, and go away
when unregistered; a JIT stencil override must keep inner loops intact."""
from __future__ import annotations

import json
import re
import signal

import pytest

from conftest import EXAMPLES, interpreter_configs
from shimlab import isolate, oracle, vm
from shimlab.interp import build
from shimlab.frontend import load_program
from shimlab import stencil_check
from shimlab.jit import stencil_store
from shimlab.stencil import StencilError

JIT_CC = sorted({cc for mode, cc in interpreter_configs() if mode == "tailcall"})
needs_jit = pytest.mark.skipif(not JIT_CC, reason="no compiler here builds the JIT modes")


def _assemble(name, variant):
    from peachpy_stencils.asm import assemble
    from peachpy.x86_64 import ADD, MOV, dword, qword, rax

    def via_rax(a, r):
        a(MOV(rax, a.hole("oparg")), MOV(qword[r.sp], rax), ADD(r.sp, 8))

    def dword_only(a, r):            # wrong for negative operands
        a(MOV(dword[r.sp], a.hole("oparg")), ADD(r.sp, 8))
    return assemble(name, {"rax": via_rax, "dword": dword_only}[variant])


def test_register_adds_and_unregister_removes():
    s = stencil_store.register(_assemble("LOAD_INT:test-rax", "rax"))
    try:
        assert stencil_store.load()["LOAD_INT:test-rax"] is s
        assert "hole oparg" in s.disassembly             # disassembled on registration
        assert "LOAD_INT" in stencil_store.load()             # the built ones are still there
    finally:
        stencil_store.unregister(s.name)
    assert "LOAD_INT:test-rax" not in stencil_store.load()


def test_extra_stencils_lasts_for_the_block_only():
    s = _assemble("LOAD_INT:test-block", "rax")
    with stencil_store.extra_stencils({s.name: s}) as got:
        assert set(got) == {s.name} and s.name in stencil_store.load()
    assert s.name not in stencil_store.load()
    with pytest.raises(StencilError, match="key"):
        with stencil_store.extra_stencils({"LOAD_INT:other": s}):
            pass


@pytest.mark.parametrize("name, why", [("LOOP:close", "already"), ("LOAD_INT_MINE", "INSTRUCTION"),
                                       ("NOSUCH:x", "INSTRUCTION")])
def test_register_refuses_bad_names(name, why):
    from shimlab.stencil import Stencil
    s = _assemble("LOAD_INT:tmp", "rax")
    renamed = Stencil(name, s.code, s.holes, s.doc)
    with pytest.raises(StencilError, match=why):
        stencil_store.register(renamed)
    assert stencil_store.load()["LOAD_INT"].code != s.code     # the built one was not replaced


def test_register_wants_a_stencil():
    with pytest.raises(StencilError, match="shimlab.stencil.Stencil"):
        stencil_store.register(b"\x90")


@needs_jit
def test_the_oracle_test_passes_a_good_prototype_and_catches_a_broken_one():
    with stencil_store.extra_stencils([_assemble("LOAD_INT:test-rax", "rax"),
                                  _assemble("LOAD_INT:test-dword", "dword")]):
        # a forked child, as `shimlab stencils test` runs it: it inherits the registration
        good = isolate.call("good", stencil_check.run_stencil, "LOAD_INT:test-rax", 40, 0, JIT_CC[0])
        bad = isolate.call("bad", stencil_check.run_stencil, "LOAD_INT:test-dword", 40, 0,
                           JIT_CC[0])
    assert good == []
    assert bad and "stack is" in bad[0]


def _run_bounded(b, program, jit):
    signal.alarm(60)                 # a wrong back-edge loops forever: fail, do not hang
    with vm.Loaded(b, program, b"", jit=jit) as loaded:
        return loaded.run().output


@needs_jit
@pytest.mark.parametrize("mode", ["jit-shim", "jit-direct"])
def test_the_jit_uses_a_prototype_and_keeps_inner_loops(mode):
    """nested_loops.py has traces that hold inner loops; an override once
    dropped their back-edge target and the program never ended."""
    program = load_program(str(EXAMPLES / "minipy" / "nested_loops.py"))
    b = build.build(mode, JIT_CC[0])
    with stencil_store.extra_stencils([_assemble("LOAD_INT:test-rax", "rax")]):
        for threshold in (1, 64):
            out = isolate.call("override", _run_bounded, b, program,
                               {"stencils": {"LOAD_INT": "LOAD_INT:test-rax"},
                                "threshold": threshold})
            assert out == oracle.run(program).output


# ---- prototype modules from files ($SHIMLAB_STENCILS, peachpy_stencils/'s other files) ------------

@pytest.fixture
def proto(monkeypatch, tmp_path):
    """A $SHIMLAB_STENCILS folder; write(stem, text) adds a module to it."""
    folder = tmp_path / "stencils"
    folder.mkdir()
    monkeypatch.setenv("SHIMLAB_STENCILS", str(folder))
    stencil_store.load.cache_clear()

    def write(stem, text):
        (folder / f"{stem}.py").write_text(text)
        stencil_store.load.cache_clear()
        return folder / f"{stem}.py"
    yield write
    stencil_store.load.cache_clear()


GOOD = ("from peachpy.x86_64 import ADD, MOV, qword, rax\n"
        "from {imp} import stencil\n\n"
        "@stencil('DUP:{variant}', 'a prototype')\n"
        "def dup(a, r):\n"
        "    a(MOV(rax, qword[r.sp - 8]), MOV(qword[r.sp], rax), ADD(r.sp, 8))\n")


@pytest.mark.parametrize("imp", ["peachpy_stencils.asm", ".asm"])
def test_a_prototype_module_imports_asm_either_way(proto, imp):
    path = proto("mine", GOOD.format(imp=imp, variant="mine"))
    st = stencil_store.load()
    assert st["DUP:mine"].code == st["DUP"].code
    assert stencil_store.origin("DUP:mine") == f"{path}:4"
    assert stencil_store.problems() == []
    assert "DUP:mine" not in stencil_store.standard()


def test_prototypes_never_enter_the_standard_registry(proto):
    from peachpy_stencils import asm, build
    proto("mine", GOOD.format(imp="peachpy_stencils.asm", variant="mine"))
    assert "DUP:mine" in stencil_store.load()
    assert "DUP:mine" not in asm.REGISTRY and "DUP:mine" not in build.load_families()


@pytest.mark.parametrize("text, name, where", [
    ("from peachpy_stencils.asm import stencil\nnope\n", None, ":2: NameError: name 'nope'"),
    ("def broken(:\n", None, ":1: SyntaxError"),
    (GOOD.format(imp="peachpy_stencils.asm", variant="x").replace("rax)", "rbx)"), "DUP:x",
     ":6: stencil DUP:x: NameError: name 'rbx' is not defined"),
    (GOOD.format(imp="peachpy_stencils.asm", variant="x").replace("qword[r.sp], rax",
                                                          "qword[r.sp], a.hole('nope')"),
     "DUP:x", ":6: stencil DUP:x: unknown hole kind 'nope'"),
    ("from peachpy_stencils.asm import stencil\n@stencil('DUP')\ndef f(a, r):\n    pass\n", "DUP",
     ":2: stencil DUP: peachpy_stencils/ has a stencil of this name already"),
    ("from peachpy_stencils.asm import stencil\n@stencil('FOO:x')\ndef f(a, r):\n    pass\n", "FOO:x",
     ":2: stencil FOO:x: name it INSTRUCTION:variant"),
])
def test_a_broken_prototype_is_one_line_with_file_line_and_stencil(proto, text, name, where):
    path = proto("bad", text)
    proto("good", GOOD.format(imp="peachpy_stencils.asm", variant="good"))
    st = stencil_store.load()                  # the broken module does not break loading
    assert "DUP:good" in st and "LOAD_INT" in st
    problems = stencil_store.problems()
    assert len(problems) == 1 and problems[0].startswith(f"{path}{where.split(':')[0]}:"), \
        problems
    assert where in problems[0], problems
    assert "\n" not in problems[0]
    if name and name != "DUP":
        with pytest.raises(StencilError, match=re.escape(where)):
            stencil_store.lookup(name)
        assert name not in st


def test_two_modules_defining_one_name_are_both_refused(proto):
    a = proto("a", GOOD.format(imp="peachpy_stencils.asm", variant="twice"))
    b = proto("b", GOOD.format(imp=".asm", variant="twice"))
    assert "DUP:twice" not in stencil_store.load()
    with pytest.raises(StencilError, match=f"{a} and {b} both define it"):
        stencil_store.lookup("DUP:twice")


def test_a_module_is_built_again_when_it_changes_and_its_cache_pruned(proto):
    path = proto("mine", GOOD.format(imp="peachpy_stencils.asm", variant="v1"))
    assert "DUP:v1" in stencil_store.load()
    proto("mine", GOOD.format(imp="peachpy_stencils.asm", variant="v2"))
    st = stencil_store.load()
    assert "DUP:v2" in st and "DUP:v1" not in st
    cache = stencil_store._prototype_cache(path, dict(stencil_store.contract.STATE))
    assert json.loads(cache.read_text())["module"] == str(path)
    path.unlink()
    other = proto("other", GOOD.format(imp="peachpy_stencils.asm", variant="o"))
    assert "DUP:o" in stencil_store.load() and other.exists()
    assert not cache.exists(), "the cache of a module that is gone was kept"


def test_register_refuses_the_name_of_a_file_prototype(proto):
    path = proto("mine", GOOD.format(imp="peachpy_stencils.asm", variant="mine"))
    with pytest.raises(StencilError, match=f"comes from {re.escape(str(path))}:4 already"):
        stencil_store.register(_assemble("DUP:mine", "rax"))


@pytest.mark.parametrize("overrides, message", [
    ({"CELL_ADD": "LOAD_INT"}, "LOAD_INT implements LOAD_INT, not CELL_ADD"),
    ({"NOSUCH": "LOAD_INT"}, "'NOSUCH' is not a VM instruction"),
    ({"JUMP_IF_FALSE": "JUMP_IF_FALSE:taken"}, "name the one to replace"),
    ({"HALT": "LOAD_INT"}, "the JIT has no stencil for HALT"),
    ({"LOAD_INT": "LOAD_INT:nope"}, "no stencil named 'LOAD_INT:nope'"),
    ({"LOAD_INT": "LOAD_CONST"}, "LOAD_CONST implements LOAD_CONST"),
])
def test_check_overrides_refuses_what_the_jit_cannot_use(overrides, message):
    with pytest.raises(StencilError, match=re.escape(message)):
        stencil_store.check_overrides(overrides)


def test_check_overrides_refuses_a_hole_the_jit_leaves_unfilled():
    from peachpy_stencils.asm import assemble

    def with_branch(a, r):
        a.jcc_hole("e", "branch")
    s = assemble("CELL_ADD:branchy", with_branch)
    with stencil_store.extra_stencils([s]):
        with pytest.raises(StencilError, match="hole branch of CELL_ADD:branchy would be "
                                               "left unpatched"):
            stencil_store.check_overrides({"CELL_ADD": "CELL_ADD:branchy"})
        # a conditional jump's stencil has a branch hole: a prototype of it may too
        t = assemble("JUMP_IF_CELL_ZERO:taken:mine", with_branch)
        with stencil_store.extra_stencils([t]):
            assert stencil_store.check_overrides({"JUMP_IF_CELL_ZERO:taken": t.name})
            assert stencil_store.replaces(t.name) == "JUMP_IF_CELL_ZERO:taken"


def test_parse_overrides_says_which_spec_is_wrong():
    with pytest.raises(StencilError, match=r"^--stencil CELL_ADD: expected OP=NAME"):
        stencil_store.parse_overrides(["CELL_ADD"])
    with pytest.raises(StencilError, match="LOAD_INT is replaced twice"):
        stencil_store.parse_overrides(["LOAD_INT=LOAD_INT", "LOAD_INT=LOAD_INT"])
    assert stencil_store.parse_overrides([" LOAD_INT = LOAD_INT "]) == {"LOAD_INT": "LOAD_INT"}


# ---- the stencil tester's report -----------------------------------------------------------

@needs_jit
def test_a_failure_names_the_instruction_and_its_operand_in_words():
    """The tag was '(7, 1073741824)': the code unit (opcode, operand) bare."""
    with stencil_store.extra_stencils([_assemble("LOAD_INT:test-dword", "dword")]):
        bad = isolate.call("bad", stencil_check.run_stencil, "LOAD_INT:test-dword", 40, 0,
                           JIT_CC[0])
    assert bad
    for line in bad:
        assert re.match(r"trial \d+ \(LOAD_INT with operand -?\d+\): stack is \[", line), line


def test_a_differing_tape_names_its_first_differing_cell():
    assert stencil_check._difference("tape", b"\x00\x01\x02", b"\x00\x01\x03") == \
        "tape cell 2 is 2, the oracle says 3"
    assert stencil_check._difference("out", b"AB", b"AC") == "output byte 1 is 66, the oracle " \
        "says 67"
    assert stencil_check._difference("head", 3, 4) == "tape head is 3, the oracle says 4"


# ---- the first difference from the oracle (run --check) ------------------------------------

def _result(**kw):
    from shimlab.isa import Error
    base = dict(output=b"abc", status=Error.OK, tape=b"\x00" * 4, head=0, locals=[1, 2])
    return oracle.Result(**{**base, **kw})


def test_first_difference_names_the_first_way_two_runs_differ():
    from shimlab.first_difference import first_difference
    from shimlab.bytecode import Function, Program
    from shimlab.isa import Error
    prog = Program("p.py", [], [], [Function("main", 0, 0, 2, ["i", "s"])])
    diff = first_difference
    assert diff(prog, _result(), _result()) is None
    assert diff(prog, _result(output=b"abd"), _result(), "jit-direct") == \
        "output byte 2 is 0x64 'd' in jit-direct, 0x63 'c' from the oracle (the 2 bytes " \
        "before it agree)"
    assert diff(prog, _result(output=b"\x01"), _result(output=b"\x02")) == \
        "output byte 0 is 0x01 in this run, 0x02 from the oracle"
    assert diff(prog, _result(output=b"ab"), _result()) == \
        "output is 2 bytes in this run, 3 from the oracle (the first 2 agree)"
    got = _result(status=Error.TAPE_BOUNDS, err_pc=3, err_value=-1)
    assert diff(prog, got, _result()).startswith(
        "this run p.py: runtime error at pc 3: tape head moved out of bounds (to cell -1); "
        "the oracle finished normally")
    assert diff(prog, _result(tape=b"\x00\x00\x05\x00"), _result()) == \
        "tape cell 2 is 5 after this run, 0 after the oracle"
    assert diff(prog, _result(head=2), _result()) == \
        "the tape head ends at cell 2 in this run, 0 in the oracle"
    assert diff(prog, _result(locals=[1, 7]), _result(), against="tailcall") == \
        "local 1 (s) of main ends as 7 in this run, 2 in tailcall"
