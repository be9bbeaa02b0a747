"""Programs for the shimlab VM: code units, constants, functions, source map.

Front ends build a Program through an Assembler (symbolic labels resolved to
the relative displacements the VM uses); `disassemble` prints one for humans.
"""
from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Sequence

from . import isa
from .isa import Operand
from .record import Record, factory


class Function(Record):
    name: str
    entry: int          # index of the first instruction
    nargs: int
    nlocals: int        # including the arguments
    local_names: list[str] = factory(list)
    max_stack: int = 0  # filled in by the verifier


class Program(Record):
    """Function 0 is the entry point; its code ends in HALT, others in RETURN."""
    name: str
    code: list[tuple[int, int]]              # (opcode, operand)
    consts: list[int] = factory(list)
    functions: list[Function] = factory(list)
    # per instruction: the source position it came from, for error messages
    positions: list[tuple[int, int]] = factory(list)
    language: str = "bytecode"
    verified: bool = False

    def position(self, pc: int) -> tuple[int, int] | None:
        if 0 <= pc < len(self.positions):
            return self.positions[pc]
        return None

    def function_at(self, pc: int) -> Function | None:
        best = None
        for f in self.functions:
            if f.entry <= pc and (best is None or f.entry > best.entry):
                best = f
        return best


class SourcePositions(Sequence):
    """(line, column) per instruction, computed when asked from the source
    offset of each instruction: 8 bytes an instruction instead of a tuple,
    which is what keeps a front end's memory linear and small on big sources."""

    def __init__(self, source: str):
        self.offsets = array("q")
        self._lines = array("q", [0])
        find, at = source.find, source.find("\n")
        while at >= 0:
            self._lines.append(at + 1)
            at = find("\n", at + 1)

    def append(self, offset: int) -> None:
        self.offsets.append(offset)

    def to_bytes(self) -> tuple[bytes, bytes]:
        """The offsets and line starts, for from_bytes (a kept program)."""
        return self.offsets.tobytes(), self._lines.tobytes()

    @classmethod
    def from_bytes(cls, offsets: bytes, lines: bytes) -> SourcePositions:
        self = cls.__new__(cls)
        self.offsets, self._lines = array("q", offsets), array("q", lines)
        return self

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, pc):
        if isinstance(pc, slice):
            return [self[i] for i in range(*pc.indices(len(self)))]
        return self.line_col(self.offsets[pc])

    def line_col(self, offset: int) -> tuple[int, int]:
        if offset < 0:
            return (0, 0)
        line = bisect_right(self._lines, offset)
        return line, offset - self._lines[line - 1] + 1


class Label:
    __slots__ = ("pc",)

    def __init__(self):
        self.pc: int | None = None


class Assembler:
    """Collects instructions with symbolic jump targets, then resolves them."""

    def __init__(self, name: str, language: str):
        self.program = Program(name=name, code=[], language=language)
        self._fixups: list[tuple[int, Label]] = []
        self._const_index: dict[int, int] = {}
        self.position = (0, 0)

    @property
    def pc(self) -> int:
        return len(self.program.code)

    def emit(self, name: str, arg: int | Label = 0) -> int:
        pc = self.pc
        if isinstance(arg, Label):
            self._fixups.append((pc, arg))
            arg = 0
        self.program.code.append((isa.opcode(name), arg))
        self.program.positions.append(self.position)
        return pc

    def label(self) -> Label:
        return Label()

    def bind(self, label: Label) -> None:
        label.pc = self.pc

    def load_int(self, value: int) -> None:
        """Small ints ride in the operand; larger ones go to the constant pool."""
        value = isa.wrap64(value)
        if isa.INT32_MIN <= value <= isa.INT32_MAX:
            self.emit("LOAD_INT", value)
        else:
            if value not in self._const_index:
                self._const_index[value] = len(self.program.consts)
                self.program.consts.append(value)
            self.emit("LOAD_CONST", self._const_index[value])

    def finish(self) -> Program:
        for pc, label in self._fixups:
            if label.pc is None:
                raise AssertionError("unbound label")
            op, _ = self.program.code[pc]
            self.program.code[pc] = (op, label.pc - pc)
        self._fixups.clear()
        return self.program


def format_operand(program: Program, pc: int, ins: isa.Instr, arg: int) -> str:
    kind = ins.operand
    if ins.packing == "cell":
        return f"cell {arg >> 8:+d}, {arg & 0xFF}"
    if ins.packing == "add2":
        off_a, byte_a, off_b, byte_b = isa.unpack_add2(arg)
        return f"cell {off_a:+d}, {byte_a}; cell {off_b:+d}, {byte_b}"
    if kind is Operand.NONE:
        return ""
    if kind in (Operand.FORWARD, Operand.BACKWARD):
        return f"{arg:+d} (to {pc + arg})"
    if kind in isa.PACKED_MOVE_JUMP:
        disp = isa.jump_disp(ins, arg)
        return f"move {arg >> 8:+d}, {disp:+d} (to {pc + disp})"
    if kind in isa.PACKED_AT_JUMP:
        disp = isa.jump_disp(ins, arg)
        return f"cell {arg >> 24:+d}, {disp:+d} (to {pc + disp})"
    if ins.packing == "walk":
        body, body_arg, stride = isa.unpack_walk(ins.name, arg)
        return (format_operand(program, pc, isa.INSTRUCTIONS[isa.OPCODE[body]], body_arg)
                + f"; move {stride:+d}, again while the cell is not 0")
    if ins.packing == "move_pair":
        c1, t1, c2, t2 = isa.unpack_move_pair(arg)
        return f"cell {c1:+d} to {t1:+d}, then {c2:+d} to {t2:+d}"
    if ins.packing == "copy_at":
        a, t, u, _ = isa.unpack_move_at("CELL_MOVE2_AT", arg)
        return f"cell {a:+d} to {t:+d} through {u:+d}"
    if ins.packing in ("move_at", "move2_at"):
        c, t, t2, f = isa.unpack_move_at(ins.name, arg)
        return f"cell {c:+d} times {f} to {t:+d}" + ("" if t2 is None else f" and {t2:+d}")
    if kind is Operand.CONST:
        if 0 <= arg < len(program.consts):
            return f"{arg} ({program.consts[arg]})"
        return f"{arg} (?)"
    if kind is Operand.FUNC:
        if 0 <= arg < len(program.functions):
            return f"{arg} ({program.functions[arg].name})"
        return f"{arg} (?)"
    if kind is Operand.LOCAL:
        f = program.function_at(pc)
        if f and 0 <= arg < len(f.local_names):
            return f"{arg} ({f.local_names[arg]})"
    return str(arg)


def disassemble(program: Program) -> str:
    entries = {f.entry: f for f in program.functions}
    targets = set()
    for pc, (op, arg) in enumerate(program.code):
        if 0 <= op < isa.NUM_OPCODES and isa.is_jump(isa.INSTRUCTIONS[op]):
            targets.add(pc + isa.jump_disp(isa.INSTRUCTIONS[op], arg))
    lines = []
    for pc, (op, arg) in enumerate(program.code):
        if pc in entries:
            f = entries[pc]
            if lines:
                lines.append("")
            lines.append(f"function {f.name}(nargs={f.nargs}, nlocals={f.nlocals}, "
                         f"max_stack={f.max_stack}):")
        ins = isa.INSTRUCTIONS[op] if 0 <= op < isa.NUM_OPCODES else None
        name = ins.name if ins else f"<bad opcode {op}>"
        operand = format_operand(program, pc, ins, arg) if ins else str(arg)
        mark = ">>" if pc in targets else "  "
        pos = program.position(pc)
        where = f"  ; {pos[0]}:{pos[1]}" if pos and pos[0] else ""
        lines.append(f"{mark}{pc:6d}  {name:<18} {operand}{where}".rstrip())
    return "\n".join(lines) + "\n"
