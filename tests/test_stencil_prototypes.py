"""Stencils registered at run time (shimlab.jit.stencils.register): what a
notebook prototypes without writing into jitstubs/.  They must be found by
the oracle test and by the JIT, refuse to shadow built stencils, and go away
when unregistered; a JIT stencil override must keep inner loops intact."""
from __future__ import annotations

import signal

import pytest

from conftest import EXAMPLES, interpreter_configs
from shimlab import isolate, reference, vm
from shimlab.interp import build
from shimlab.frontend import load_program
from shimlab import stenciltest
from shimlab.jit import stencils
from shimlab.stencil import StencilError

JIT_CC = sorted({cc for mode, cc in interpreter_configs() if mode == "tailcall"})
needs_jit = pytest.mark.skipif(not JIT_CC, reason="no compiler here builds the JIT modes")


def _assemble(name, variant):
    from jitstubs.asm import assemble
    from peachpy.x86_64 import ADD, MOV, dword, qword, rax

    def via_rax(a, r):
        a(MOV(rax, a.hole("oparg")), MOV(qword[r.sp], rax), ADD(r.sp, 8))

    def dword_only(a, r):            # wrong for negative operands
        a(MOV(dword[r.sp], a.hole("oparg")), ADD(r.sp, 8))
    return assemble(name, {"rax": via_rax, "dword": dword_only}[variant])


def test_register_adds_and_unregister_removes():
    s = stencils.register(_assemble("LOAD_INT:test-rax", "rax"))
    try:
        assert stencils.load()["LOAD_INT:test-rax"] is s
        assert "hole oparg" in s.disassembly             # disassembled on registration
        assert "LOAD_INT" in stencils.load()             # the built ones are still there
    finally:
        stencils.unregister(s.name)
    assert "LOAD_INT:test-rax" not in stencils.load()


def test_extra_stencils_lasts_for_the_block_only():
    s = _assemble("LOAD_INT:test-block", "rax")
    with stencils.extra_stencils({s.name: s}) as got:
        assert set(got) == {s.name} and s.name in stencils.load()
    assert s.name not in stencils.load()
    with pytest.raises(StencilError, match="key"):
        with stencils.extra_stencils({"LOAD_INT:other": s}):
            pass


@pytest.mark.parametrize("name, why", [("LOOP:close", "already"), ("LOAD_INT_MINE", "INSTRUCTION"),
                                       ("NOSUCH:x", "INSTRUCTION")])
def test_register_refuses_bad_names(name, why):
    from shimlab.stencil import Stencil
    s = _assemble("LOAD_INT:tmp", "rax")
    renamed = Stencil(name, s.code, s.holes, s.doc)
    with pytest.raises(StencilError, match=why):
        stencils.register(renamed)
    assert stencils.load()["LOAD_INT"].code != s.code     # the built one was not replaced


def test_register_wants_a_stencil():
    with pytest.raises(StencilError, match="shimlab.stencil.Stencil"):
        stencils.register(b"\x90")


@needs_jit
def test_the_oracle_test_passes_a_good_prototype_and_catches_a_broken_one():
    with stencils.extra_stencils([_assemble("LOAD_INT:test-rax", "rax"),
                                  _assemble("LOAD_INT:test-dword", "dword")]):
        # a forked child, as `shimlab stencils test` runs it: it inherits the registration
        good = isolate.call("good", stenciltest.run_stencil, "LOAD_INT:test-rax", 40, 0, JIT_CC[0])
        bad = isolate.call("bad", stenciltest.run_stencil, "LOAD_INT:test-dword", 40, 0,
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
    with stencils.extra_stencils([_assemble("LOAD_INT:test-rax", "rax")]):
        for threshold in (1, 64):
            out = isolate.call("override", _run_bounded, b, program,
                               {"stencils": {"LOAD_INT": "LOAD_INT:test-rax"},
                                "threshold": threshold})
            assert out == reference.run(program).output
