"""The stencil model: a stencil's bytes, its holes, and what each hole kind means.

Every producer (the PeachPy stencils in peachpy_stencils/, the compiler-built ones in
jit/clang_stencils.py) makes these records and every consumer (the JIT's patcher,
the asm interpreter, the stencil tools) reads them; none imports a producer.
"""
from __future__ import annotations

from .record import record

from .errors import ShimlabError


class StencilError(ShimlabError):
    pass


class AsmError(StencilError):
    """A stencil that does not assemble (peachpy_stencils.asm's error; declared
    here so that peachpy_stencils.build's errors derive from it without
    importing the assembler, which a JIT run loading the artifact never needs)."""


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
    "cell": 4,         # byte offset of a tape cell from the head register, disp32
    "cell2": 4,        # a second cell's offset (a multiply's counter, a range's top), disp32
    "byte": 4,         # a cell value (0..255), imm32
    "local2": 4,       # a second local's byte offset from fp (a fused instruction's right operand)
    "oparg2": 4,       # a second immediate (a fused instruction's right operand), imm32
    "heat": 8,         # absolute address of a side exit's countdown to recording a trace
    "rec_table": 8,    # absolute address of the recorder's dispatch table
    "link": 4,         # rel32 to another trace's entry (a linked exit)
    "shared": 4,       # rel32 to exit code the trace's exit slots share (its hot exits' path)
    # a call's frame (CALL, RETURN in traces: peachpy_stencils/frames.py)
    "ret_ip": 8,       # absolute address of a call's return point (patched from its pc)
    "args": 4,         # byte offset from sp down to the callee's frame (-8 * nargs), disp32
    "zeros": 4,        # the callee's locals that are not arguments, zeroed, imm32
    "frame_top": 4,    # bytes from sp to the callee's frame's end (locals + stack - args), disp32
    "frame_sp": 4,     # bytes from sp to the callee's sp (locals - args + K pads), disp32
    "pads": 4,         # bytes of the K pad slots a frame has under --cache K (8 * K), imm32
}
REL32 = ("deopt", "branch", "loop", "handler", "continue", "link", "shared")

# Placeholders: a fixed prefix no real operand of a small stencil takes, then
# a distinct low byte per kind.  imm32 placeholders are positive and above
# every displacement a stencil uses; imm64 ones have a non-canonical top.
_P32 = 0x5EC0DE00
_P64 = 0x5EC0DE5EC0DE5E00
PLACEHOLDER = {kind: (_P64 if w == 8 else _P32) | (i + 1) for i, (kind, w) in
               enumerate(HOLE_WIDTH.items())}

@record(frozen=True)
class Hole:
    offset: int
    width: int
    kind: str


@record(frozen=True)
class Stencil:
    name: str
    code: bytes
    holes: tuple[Hole, ...]
    doc: str
    disassembly: str = ""
    # it reads the flags before it sets them, so the piece before it must be
    # the compare they come from (None: not worked out; jit/stencils.flags_in)
    flags_in: bool | None = None

    def to_json(self) -> dict:
        return {"name": self.name, "code": self.code.hex(), "doc": self.doc,
                "holes": [[h.offset, h.width, h.kind] for h in self.holes],
                "disassembly": self.disassembly, "flags_in": self.flags_in}

    @classmethod
    def from_json(cls, d: dict) -> "Stencil":
        return cls(d["name"], bytes.fromhex(d["code"]),
                   tuple(Hole(*h) for h in d["holes"]), d.get("doc", ""),
                   d.get("disassembly", ""), d.get("flags_in"))


def find_holes(name: str, code: bytes, declared: list[str]) -> tuple[Hole, ...]:
    """Every declared hole's placeholder exactly once; nothing undeclared."""
    holes = []
    for kind in HOLE_WIDTH:
        width = HOLE_WIDTH[kind]
        pattern = PLACEHOLDER[kind].to_bytes(width, "little")
        found = [i for i in range(len(code) - width + 1) if code[i:i + width] == pattern]
        want = declared.count(kind)
        if want > 1:
            raise StencilError(f"stencil {name}: hole {kind} declared {want} times (one per stencil)")
        if len(found) != want:
            raise StencilError(f"stencil {name}: hole {kind} declared {want} time(s) but its "
                           f"placeholder occurs {len(found)} time(s) in the code")
        holes += [Hole(i, width, kind) for i in found]
    return tuple(sorted(holes, key=lambda h: h.offset))


def disassemble(code: bytes, holes=()) -> str:
    """Raw stencil bytes as a listing (capstone, Intel syntax), hole bytes marked."""
    if not code:
        return "    (empty: emits no code)\n"
    from . import disasm        # capstone loads only when a listing is made

    def marks(i) -> str | None:
        found = [f"{h.kind}@{h.offset}" for h in holes if i.addr <= h.offset < i.end]
        return f"hole {', '.join(found)}" if found else None
    return disasm.listing(disasm.disassemble(code), marks)
