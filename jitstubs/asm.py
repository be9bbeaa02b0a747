"""A stencil assembler: PeachPy encodes the instructions, this adds labels and holes.

PeachPy encodes single instructions well but has no labels outside a
Function (whose ABI prologue a stencil must not have), so jumps are encoded
here.  A hole is emitted as a placeholder value that cannot occur by
accident; Stencil.holes() finds each one and checks it occurs exactly once.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Callable

from shimlab import contract

# Hole kinds: what the JIT patches in, and how wide the field is.
HOLE_WIDTH = {
    "oparg": 4,        # the instruction's operand, sign-extended imm32
    "local": 4,        # byte offset of a local from fp (8 * index), disp32
    "const": 8,        # a constant's value, imm64
    "deopt": 4,        # rel32 to the exit that resumes AT this instruction (re-run by the interpreter)
    "branch": 4,       # rel32 to the exit taken when a guard fails (the path not recorded)
    "loop": 4,         # rel32 back to a loop header in the trace (its start, or an inner loop's)
    "resume_ip": 8,    # absolute address of the bytecode instruction to resume at
    "handler": 4,      # rel32 to the C handler of the instruction at the resume point
    "count": 4,        # byte offset of an opcode's counter (8 * opcode), disp32
    "tally": 8,        # absolute address of a trace's entry or exit counter (--stats)
    "continue": 4,     # rel32 to the end of the stencil (compiler-built stencils' early exits)
    "handler_abs": 8,  # absolute address of a C handler (a trace mapped too far for rel32)
}
REL32 = ("deopt", "branch", "loop", "handler", "continue")

# Placeholders: a fixed prefix no real operand of a small stencil takes, then
# a distinct low byte per kind.  imm32 placeholders are positive and above
# every displacement a stencil uses; imm64 ones have a non-canonical top.
_P32 = 0x5EC0DE00
_P64 = 0x5EC0DE5EC0DE5E00
PLACEHOLDER = {kind: (_P64 if w == 8 else _P32) | (i + 1) for i, (kind, w) in
               enumerate(HOLE_WIDTH.items())}

CC = {"o": 0, "no": 1, "b": 2, "ae": 3, "e": 4, "z": 4, "ne": 5, "nz": 5, "be": 6, "a": 7,
      "s": 8, "ns": 9, "l": 0xC, "ge": 0xD, "le": 0xE, "g": 0xF}


class AsmError(Exception):
    pass


@dataclass(frozen=True)
class Hole:
    offset: int
    width: int
    kind: str


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


@dataclass(frozen=True)
class Stencil:
    name: str
    code: bytes
    holes: tuple[Hole, ...]
    doc: str
    disassembly: str = ""

    def to_json(self) -> dict:
        return {"name": self.name, "code": self.code.hex(), "doc": self.doc,
                "holes": [[h.offset, h.width, h.kind] for h in self.holes],
                "disassembly": self.disassembly}

    @classmethod
    def from_json(cls, d: dict) -> "Stencil":
        return cls(d["name"], bytes.fromhex(d["code"]),
                   tuple(Hole(*h) for h in d["holes"]), d.get("doc", ""),
                   d.get("disassembly", ""))


def find_holes(name: str, code: bytes, declared: list[str]) -> tuple[Hole, ...]:
    """Every declared hole's placeholder exactly once; nothing undeclared."""
    holes = []
    for kind in HOLE_WIDTH:
        width = HOLE_WIDTH[kind]
        pattern = PLACEHOLDER[kind].to_bytes(width, "little")
        found = [i for i in range(len(code) - width + 1) if code[i:i + width] == pattern]
        want = declared.count(kind)
        if want > 1:
            raise AsmError(f"stencil {name}: hole {kind} declared {want} times (one per stencil)")
        if len(found) != want:
            raise AsmError(f"stencil {name}: hole {kind} declared {want} time(s) but its "
                           f"placeholder occurs {len(found)} time(s) in the code")
        holes += [Hole(i, width, kind) for i in found]
    return tuple(sorted(holes, key=lambda h: h.offset))


# -- the registry ----------------------------------------------------------

REGISTRY: dict[str, tuple[Callable[[Asm], None], str]] = {}


def stencil(name: str, doc: str = ""):
    """Registers fn(asm) as the stencil `name` (an opcode, or opcode:variant)."""
    def deco(fn):
        if name in REGISTRY:
            raise AsmError(f"stencil {name} registered twice")
        REGISTRY[name] = (fn, doc or (fn.__doc__ or "").strip())
        return fn
    return deco


def assemble(name: str, fn: Callable[[Asm], None], doc: str = "") -> Stencil:
    a = Asm()
    try:
        fn(a)
        code = a.assemble()
    except AsmError as e:
        raise AsmError(f"stencil {name}: {e}") from None
    return Stencil(name, code, find_holes(name, code, a.declared), doc)


# The register contract, as PeachPy registers: shimlab.contract.STATE unless
# use_contract() chose another assignment (a compiler whose preserve_none
# order differs); build.load_families re-imports the stencil modules after it.
def _reg(name):
    from peachpy import x86_64
    return getattr(x86_64, name)


STATE: dict[str, str] = {}
IP = SP = FP = HEAD = VM = TABLE = None


def use_contract(state: dict[str, str]) -> bool:
    """Binds IP, SP, FP, HEAD, VM, TABLE to `state`; True when that changed them."""
    global STATE, IP, SP, FP, HEAD, VM, TABLE
    if state == STATE:
        return False
    STATE = dict(state)
    IP, SP, FP, HEAD, VM, TABLE = (_reg(state[k]) for k in
                                   ("ip", "sp", "fp", "head", "vm", "table"))
    return True


use_contract(contract.STATE)


# An operand a hole stands for is an immediate in a JIT stencil but a register
# in the asm interpreter (which reads it from ip->arg): these keep one
# stencil body valid for both.
def low32(value):
    """The operand as a 32-bit source (an immediate, or the register's low half)."""
    return value if isinstance(value, int) else value.as_dword


def addend(value):
    """The operand as the second term of an address ([base + addend(x)])."""
    return value if isinstance(value, int) else value * 1


def vm_offset(field_name: str) -> int:
    """Byte offset of a field of sl_vm (read from vm.h through cffi)."""
    from shimlab.vm import ffi
    return ffi().offsetof("sl_vm", field_name)
