"""The asm interpreter's build: PeachPy handlers for all but the listed C fallbacks,
and a clear error (never a silent fallback) for an instruction without a body.
(That it runs every program like the oracle is in test_modes.py.)"""
from __future__ import annotations

import re

import pytest

from shimlab import isa
from shimlab.interp import asm_handlers as asm_interp
from shimlab.abi import contract
from shimlab.errors import BuildError


def test_every_instruction_has_a_peachpy_handler_or_is_listed_as_c():
    text = asm_interp.render()
    assert set(asm_interp.C_HANDLERS) <= set(isa.BY_NAME)
    table = re.search(r"sl_asm_table:\n((?:    \.quad \w+\n)+)", text).group(1).split()
    table = [t for t in table if t != ".quad"]
    assert len(table) == isa.NUM_OPCODES
    for ins, entry in zip(isa.INSTRUCTIONS, table):
        want = "sl_op_" if ins.name in asm_interp.C_HANDLERS else "sl_asm_"
        assert entry == want + ins.name
        assert (f"\nsl_asm_{ins.name}:" in text) == (ins.name not in asm_interp.C_HANDLERS)


def test_count_builds_count_in_every_dispatch():
    plain, counted = asm_interp.render(), asm_interp.render(count=True)
    assert len(counted) > len(plain)


def _without(monkeypatch, name):
    real = asm_interp.load_families

    def fake():
        return {k: v for k, v in real().items() if k.split(":")[0] != name}
    monkeypatch.setattr(asm_interp, "load_families", fake)


def test_a_missing_body_is_a_build_error_naming_the_instruction(monkeypatch):
    _without(monkeypatch, "MOVE")
    with pytest.raises(BuildError, match="MOVE has no stencil.*C_HANDLERS"):
        asm_interp.render()


def test_an_unlisted_call_is_a_build_error(monkeypatch):
    monkeypatch.delitem(asm_interp.C_HANDLERS, "CALL")
    with pytest.raises(BuildError, match="CALL"):
        asm_interp.render()


def test_handlers_follow_the_contract_they_are_rendered_for():
    fake = contract.state_for(("r15", "r14", "r11", "r12", "rsi", "rdi"))
    assert asm_interp.render(fake) != asm_interp.render(contract.STATE)
    assert asm_interp.render(contract.STATE) == asm_interp.render()
