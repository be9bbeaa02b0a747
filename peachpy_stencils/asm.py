"""A stencil assembler: PeachPy encodes the instructions, this adds labels and holes.

PeachPy encodes single instructions well but has no labels outside a
Function (whose ABI prologue a stencil must not have), so jumps are encoded
here.  A hole is emitted as a placeholder value that cannot occur by
accident; shimlab.stencil.find_holes finds each one and checks it occurs
exactly once.  A stencil function takes the Asm and the contract registers
(`Regs`), so one body serves every register assignment.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Callable

from shimlab.abi import vmh
from shimlab.abi.contract import STATE as DEFAULT_STATE
from shimlab.stencil import (HOLE_WIDTH, PLACEHOLDER, REL32, AsmError, Hole, Stencil,
                             StencilError, find_holes)

__all__ = ["Asm", "AsmError", "Regs", "stencil", "assemble", "low32", "addend", "vm_offset",
           "Hole", "Stencil", "HOLE_WIDTH", "PLACEHOLDER", "REL32", "REGISTRY"]

CC = {"o": 0, "no": 1, "b": 2, "ae": 3, "e": 4, "z": 4, "ne": 5, "nz": 5, "be": 6, "a": 7,
      "s": 8, "ns": 9, "l": 0xC, "ge": 0xD, "le": 0xE, "g": 0xF}


@dataclass
class Asm:
    """Collects encoded bytes, local labels and the holes a stencil declares."""
    parts: list = field(default_factory=list)   # bytes or ("jcc"/"jmp", cc, label)
    labels: dict = field(default_factory=dict)
    declared: list = field(default_factory=list)

    # -- instructions ---------------------------------------------------
    def __call__(self, *instructions) -> "Asm":
        for ins in instructions:
            self.parts.append(bytes(ins.encode()))
        return self

    @staticmethod
    def _rel32_kind(kind: str) -> None:
        if kind not in REL32:
            raise AsmError(f"hole {kind!r} is not a jump target (those are {', '.join(REL32)})")

    def raw(self, data: bytes) -> "Asm":
        self.parts.append(bytes(data))
        return self

    def hole(self, kind: str) -> int:
        """The placeholder to encode where the hole `kind` goes."""
        if kind not in HOLE_WIDTH:
            raise AsmError(f"unknown hole kind {kind!r}")
        self.declared.append(kind)
        return PLACEHOLDER[kind]

    # -- jumps to holes (rel32, patched by the JIT) -----------------------
    def jcc_hole(self, cc: str, kind: str) -> "Asm":
        self._rel32_kind(kind)
        if cc not in CC:
            raise AsmError(f"unknown condition {cc!r}")
        self.declared.append(kind)
        return self.raw(bytes([0x0F, 0x80 | CC[cc]]) + struct.pack("<I", PLACEHOLDER[kind]))

    def call_hole(self, kind: str) -> "Asm":
        self._rel32_kind(kind)
        self.declared.append(kind)
        return self.raw(b"\xE8" + struct.pack("<I", PLACEHOLDER[kind]))

    def jmp_hole(self, kind: str) -> "Asm":
        self._rel32_kind(kind)
        self.declared.append(kind)
        return self.raw(b"\xE9" + struct.pack("<I", PLACEHOLDER[kind]))

    # -- local jumps (rel8 inside the stencil) ----------------------------
    def label(self, name: str) -> "Asm":
        if name in self.labels:
            raise AsmError(f"label {name} defined twice")
        self.labels[name] = len(self.parts)
        self.parts.append(b"")
        return self

    def jcc(self, cc: str, label: str) -> "Asm":
        self.parts.append(("jcc", CC[cc], label))
        return self

    def jmp(self, label: str) -> "Asm":
        self.parts.append(("jmp", None, label))
        return self

    def assemble(self) -> bytes:
        # every local jump is a 2-byte rel8; positions are known in one pass
        pos, at = 0, []
        for p in self.parts:
            at.append(pos)
            pos += 2 if isinstance(p, tuple) else len(p)
        out = bytearray()
        for i, p in enumerate(self.parts):
            if isinstance(p, tuple):
                kind, cc, label = p
                if label not in self.labels:
                    raise AsmError(f"jump to undefined label {label}")
                rel = at[self.labels[label]] - (at[i] + 2)
                if not -128 <= rel <= 127:
                    raise AsmError(f"jump to {label} is too far for rel8 ({rel})")
                out += bytes([0xEB if kind == "jmp" else 0x70 | cc, rel & 0xFF])
            else:
                out += p
        return bytes(out)


# -- the registry ----------------------------------------------------------

REGISTRY: dict[str, tuple[Callable[[Asm, "Regs"], None], str]] = {}


@dataclass(frozen=True)
class Regs:
    """The contract registers as PeachPy registers: what a stencil function
    writes its body against (its second argument)."""
    ip: object
    sp: object
    fp: object
    head: object
    vm: object
    table: object

    @classmethod
    def of(cls, state: dict[str, str] | None = None) -> "Regs":
        from peachpy import x86_64
        state = state or DEFAULT_STATE
        return cls(*(getattr(x86_64, state[k]) for k in ("ip", "sp", "fp", "head", "vm",
                                                         "table")))


def stencil(name: str, doc: str = ""):
    """Registers fn(asm, regs) as the stencil `name` (an opcode, or opcode:variant)."""
    def deco(fn):
        if name in REGISTRY:
            raise AsmError(f"stencil {name} registered twice")
        REGISTRY[name] = (fn, doc or (fn.__doc__ or "").strip())
        return fn
    return deco


def assemble(name: str, fn: Callable[[Asm, Regs], None], doc: str = "",
             regs: Regs | None = None) -> Stencil:
    """Runs fn against `regs` (default: the documented contract) and checks its holes."""
    a = Asm()
    try:
        fn(a, regs or Regs.of())
        code = a.assemble()
    except StencilError as e:
        raise AsmError(f"stencil {name}: {e}") from None
    try:
        holes = find_holes(name, code, a.declared)
    except StencilError as e:
        raise AsmError(str(e)) from None
    return Stencil(name, code, holes, doc)


# An operand a hole stands for is an immediate in a JIT stencil but a register
# in the asm interpreter (which reads it from ip->arg): these keep one
# stencil body valid for both.
def low32(value):
    """The operand as a 32-bit source (an immediate, or the register's low half)."""
    return value if isinstance(value, int) else value.as_dword


def addend(value):
    """The operand as the second term of an address ([base + addend(x)])."""
    return value if isinstance(value, int) else value * 1


vm_offset = vmh.vm_offset     # byte offset of a field of sl_vm (read from vm.h)
