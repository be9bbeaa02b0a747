"""The register contract read from each compiler, and stencils that follow it."""
from __future__ import annotations

import re

import pytest


from shimlab import toolchain
from shimlab.abi import contract
from shimlab.abi.contract import parse

PRESERVE_NONE = [cc.name for cc in toolchain.find_compilers() if cc.supports("preserve_none")]


@pytest.mark.skipif(not PRESERVE_NONE, reason="no compiler here has preserve_none")
@pytest.mark.parametrize("cc", PRESERVE_NONE)
def test_derived_order_is_the_documented_one(cc):
    assert contract.derive(cc) == contract.PRESERVE_NONE_ARGS
    assert contract.state_of(cc) == contract.STATE


_REGNUM = {r: n for n, r in enumerate(("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"))}


def _store(reg: str) -> bytes:
    """mov qword ptr [rip + 0], reg (the displacement at byte 3, where a relocation goes)."""
    n = _REGNUM[reg]
    return bytes([0x48 | (n >> 3) << 2, 0x89, (n & 7) << 3 | 5, 0, 0, 0, 0])


def test_parse_reads_registers_by_relocation_not_position():
    from shimlab import disasm
    stores = list(reversed(list(enumerate(contract.PRESERVE_NONE_ARGS))))
    code = b"".join(_store(reg) for _, reg in stores)
    relocs = {7 * k + 3: f"sl_probe_arg{n}" for k, (n, _) in enumerate(stores)}
    assert parse(disasm.disassemble(code), relocs) == contract.PRESERVE_NONE_ARGS
    with pytest.raises(contract.ContractError, match="argument"):
        parse(disasm.disassemble(code[7:], 7), relocs)


def test_a_contract_on_the_stencils_scratch_registers_is_refused():
    c_order = ("rdi", "rsi", "rdx", "rcx", "r8", "r9", "r12", "r13", "r14", "r15", "r11", "rax")
    with pytest.raises(contract.ContractError, match="fp in rdx"):
        contract.state_for(c_order)


def _rename(text: str, mapping: dict[str, str]) -> str:
    regs = sorted(mapping, key=len, reverse=True)
    return re.sub(r"\b(" + "|".join(regs) + r")\b", lambda m: mapping[m.group(1)], text)


def _text(listing: str) -> str:
    """The instructions alone: no addresses, bytes, jump targets, hole offsets, or the +0x0
    that r13 and rbp-based addresses need in their encoding."""
    listing = re.sub(r"^\s*[0-9a-f]+:\s+([0-9a-f]{2} )+\s*", "", listing, flags=re.M)
    listing = re.sub(r"^(j\w+\s+)0x[0-9a-f]+", r"\1<target>", listing, flags=re.M)
    return re.sub(r"@\d+", "", listing.replace("+0x0]", "]"))


def test_another_order_yields_the_same_stencils_in_other_registers():
    """Every stencil built for a permuted order is the default one with the
    state registers renamed (compared on the disassembly)."""
    from peachpy_stencils import build
    fake_order = ("r15", "r14", "r11", "r12", "rsi", "rdi", "r13")
    fake = contract.state_for(fake_order)
    assert fake != contract.STATE
    default = build.build_all(contract.STATE)["stencils"]
    other = build.build_all(fake)["stencils"]
    rename = {contract.STATE[k]: fake[k] for k in contract.STATE}
    assert set(default) == set(other)
    changed = 0
    for name, d in default.items():
        if "trampoline" in name:
            # a parallel move between two orders: which moves chain and which
            # cycle depends on the order itself, so it is no renamed copy
            # (test_trampoline runs each one and checks where every value lands)
            continue
        want = _rename(_text(d["disassembly"]), rename)
        got = _text(other[name]["disassembly"])
        assert got == want, name
        changed += d["code"] != other[name]["code"]
    assert changed > len(default) // 2
