"""The one instruction table of the shimlab VM.

Every instruction is defined here once: its operand kind, stack effect,
control flow, C body (written with the shape macros of csrc/vm.h) and Python
semantics.  interp/generate.py generates every C interpreter from this table and
oracle.py drives the Python oracle from it, so the two cannot drift apart.
"""
from __future__ import annotations

import enum
import re
from collections.abc import Callable

from .record import Frozen

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


CELL_OFFSET_MAX = (1 << 23) - 1     # the packed operands' cell offset is signed 24-bit


def pack_cell(offset: int, value: int) -> int:
    """The operand of CELL_ADD_AT, CELL_SET_AT and CELL_MULADD."""
    if not -CELL_OFFSET_MAX - 1 <= offset <= CELL_OFFSET_MAX:
        raise ValueError(f"cell offset {offset} does not fit 24 bits")
    return (offset << 8) | (value & 0xFF)


MOVE_JUMP_MAX = 0xFF               # the fused move-and-test's displacement is one byte


def pack_move_jump(move: int, disp: int) -> int:
    """The operand of MOVE_JUMP_IF_CELL_ZERO (disp > 0) and MOVE_LOOP_IF_CELL (disp <= 0)."""
    if not -CELL_OFFSET_MAX - 1 <= move <= CELL_OFFSET_MAX:
        raise ValueError(f"move {move} does not fit 24 bits")
    if not abs(disp) <= MOVE_JUMP_MAX:
        raise ValueError(f"jump {disp} does not fit a byte")
    return (move << 8) | abs(disp)


def pack_add2(off_a: int, byte_a: int, off_b: int, byte_b: int) -> int:
    """The operand of CELL_ADD2_AT: two (signed 8-bit offset, byte) pairs,
    a in the high half, b in the low."""
    for off in (off_a, off_b):
        if not -128 <= off <= 127:
            raise ValueError(f"cell offset {off} does not fit 8 bits")
    x = ((off_a & 0xFF) << 24) | ((byte_a & 0xFF) << 16) | ((off_b & 0xFF) << 8) | (byte_b & 0xFF)
    return x - (1 << 32) if x >> 31 else x


def unpack_add2(arg: int) -> tuple[int, int, int, int]:
    """(offset a, byte a, offset b, byte b) of a CELL_ADD2_AT operand."""
    off_b = (arg >> 8) & 0xFF
    return arg >> 24, (arg >> 16) & 0xFF, off_b - 256 if off_b > 127 else off_b, arg & 0xFF


AT_JUMP_MAX = 0xFFFFFF            # a test at an offset jumps by the low 24 bits
AT_OFFSET_MAX = 127               # and its cell offset is the signed top byte


def pack_at_jump(offset: int, disp: int) -> int:
    """The operand of JUMP_IF_CELL_ZERO_AT (disp > 0) and LOOP_IF_CELL_AT
    (disp <= 0): the cell's offset from the head in the top byte (signed),
    the jump's distance in the low 24 bits."""
    if not -AT_OFFSET_MAX - 1 <= offset <= AT_OFFSET_MAX:
        raise ValueError(f"cell offset {offset} does not fit 8 bits")
    if not abs(disp) <= AT_JUMP_MAX:
        raise ValueError(f"jump {disp} does not fit 24 bits")
    return _signed32(((offset & 0xFF) << 24) | abs(disp))


def pack_move_at(counter: int, target: int, factor: int, target2: int | None = None) -> int:
    """The operand of CELL_MULADD_AT and CELL_MOVE_AT (counter, target and
    factor a byte each, top first) and of CELL_MOVE2_AT (counter, target,
    target2, factor)."""
    offs = (counter, target) + (() if target2 is None else (target2,))
    for off in offs:
        if not -AT_OFFSET_MAX - 1 <= off <= AT_OFFSET_MAX:
            raise ValueError(f"cell offset {off} does not fit 8 bits")
    x = ((counter & 0xFF) << 24) | ((target & 0xFF) << 16)
    x |= (factor & 0xFF) << 8 if target2 is None else ((target2 & 0xFF) << 8) | (factor & 0xFF)
    return _signed32(x)


def unpack_move_at(name: str, arg: int) -> tuple[int, int, int | None, int]:
    """(counter, target, target2 or None, factor) of a CELL_MULADD_AT,
    CELL_MOVE_AT or CELL_MOVE2_AT operand."""
    c, t = arg >> 24, _sbyte(arg >> 16)
    if name == "CELL_MOVE2_AT":      # (by name: the table is defined below)
        return c, t, _sbyte(arg >> 8), arg & 0xFF
    return c, t, None, (arg >> 8) & 0xFF


def _sbyte(x: int) -> int:
    x &= 0xFF
    return x - 256 if x > 127 else x


def _signed32(x: int) -> int:
    return x - (1 << 32) if x >> 31 else x


def wrap64(x: int) -> int:
    """Two's-complement wrap: VM integers are int64 and overflow wraps."""
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


class Operand(enum.Enum):
    NONE = "none"        # operand unused (0)
    IMM = "imm"          # signed 32-bit immediate
    CONST = "const"      # index into the program's int64 constant pool
    LOCAL = "local"      # index of a local slot in the current frame
    FORWARD = "forward"  # relative displacement to a later instruction (> 0)
    BACKWARD = "backward"  # relative displacement to an earlier-or-same instruction (<= 0)
    FUNC = "func"        # index into the program's function table
    # BF's fused move-and-test (--bf-opt 1): a signed 24-bit move above an
    # 8-bit jump displacement (pack_move_jump); FORWARD_MOVE jumps by the low
    # byte (> 0), BACKWARD_MOVE by minus the low byte (<= 0)
    FORWARD_MOVE = "forward_move"
    BACKWARD_MOVE = "backward_move"
    # BF's test at an offset (--bf-opt 1): a signed 8-bit cell offset above a
    # 24-bit jump distance (pack_at_jump); FORWARD_AT jumps forward by it,
    # BACKWARD_AT back
    FORWARD_AT = "forward_at"
    BACKWARD_AT = "backward_at"


class Flow(enum.Enum):
    NEXT = "next"          # falls through to ip + 1
    JUMP = "jump"          # always jumps forward
    BRANCH = "branch"      # forward jump or fall through
    BACKEDGE = "backedge"  # loop back-edge (the JIT's hook), always taken
    BACKEDGE_BRANCH = "backedge_branch"  # loop back-edge taken or not
    CALL = "call"
    RETURN = "return"
    HALT = "halt"


class Error(enum.IntEnum):
    """Run-time errors a program can raise; status 0 is a clean halt."""
    OK = 0
    ZERO_DIVISION = 1
    NEGATIVE_SHIFT = 2
    TAPE_BOUNDS = 3
    STACK_OVERFLOW = 4
    OUT_OF_MEMORY = 5
    BAD_OPCODE = 6

    @property
    def message(self) -> str:
        return _ERROR_TEXT[self]


_ERROR_TEXT = {
    Error.OK: "no error",
    Error.ZERO_DIVISION: "integer division or modulo by zero",
    Error.NEGATIVE_SHIFT: "negative shift count",
    Error.TAPE_BOUNDS: "tape head moved out of bounds",
    Error.STACK_OVERFLOW: "call stack overflow (recursion too deep)",
    Error.OUT_OF_MEMORY: "out of memory for the output buffer",
    Error.BAD_OPCODE: "invalid opcode reached the interpreter",
}


class VMError(Exception):
    """A run-time error raised by the Python oracle (mirrors a C status)."""

    def __init__(self, error: Error, pc: int):
        super().__init__(error.message)
        self.error = error
        self.pc = pc


class Instr(Frozen):
    name: str
    operand: Operand
    pops: int | None   # None: depends on the callee (CALL)
    pushes: int
    flow: Flow
    c: str                # C body; the generator adds the fall-through dispatch
    doc: str
    # Python semantics: fn(state, arg) -> next pc or None to fall through.
    py: Callable
    # Why it has no stencil, when it has none ("" when it has one, in a
    # peachpy_stencils/ family): the JIT ends a trace at it, and the asm interpreter
    # runs its C tail-call handler instead of a PeachPy one.
    no_stencil: str = ""
    # How an IMM operand packs several fields ("" when it is one number):
    # "cell" (pack_cell), "add2" (pack_add2), "move_at" and "move2_at"
    # (pack_move_at, one target or two), "copy_at" (pack_move_at's counter,
    # target and spare), "move_pair" (pack_move_pair), "walk" (pack_walk: a
    # body's operand and a stride).  Jumps with packed
    # operands have operand kinds of their own instead.
    packing: str = ""
    # How a trace runs through an instruction that has no stencil of its own
    # ("" when a trace ends at it): a stencil of the JIT's that is no handler
    # (the asm interpreter and clang-built stencils keep the C one), after
    # which the trace goes on where the instruction went (CALL, RETURN:
    # peachpy_stencils/frames.py).
    in_trace: str = ""

    @property
    def has_stencil(self) -> bool:
        return not self.no_stencil

    @property
    def traceable(self) -> bool:
        return self.has_stencil or bool(self.in_trace)


def _floordiv(a: int, b: int) -> int:
    return wrap64(a // b)


def _mod(a: int, b: int) -> int:
    return wrap64(a % b)


def _lshift(a: int, b: int) -> int:
    return wrap64(a << b) if b < 64 else 0


def _rshift(a: int, b: int) -> int:
    return a >> min(b, 63)


# --- table -----------------------------------------------------------------

INSTRUCTIONS: list[Instr] = []


def _def(name, operand, pops, pushes, flow, c, doc, py, no_stencil="", packing="", in_trace=""):
    INSTRUCTIONS.append(Instr(name, operand, pops, pushes, flow, c.strip(), doc, py, no_stencil,
                              packing, in_trace))


def _binop(name, c_expr, py_fn, doc, check=""):
    def run(s, arg):
        b = s.pop()
        a = s.pop()
        s.push(py_fn(s, a, b))
    _def(name, Operand.NONE, 2, 1, Flow.NEXT,
         f"int64_t b = POP(); int64_t a = TOP(); {check} SET_TOP({c_expr});", doc, run)


def _checked(fn, cond, error):
    def run(s, a, b):
        if cond(b):
            raise VMError(error, s.pc)
        return fn(a, b)
    return run


def _py_simple(fn):
    return lambda s, a, b: fn(a, b)


_def("NOP", Operand.NONE, 0, 0, Flow.NEXT, "", "do nothing", lambda s, arg: None)
_def("HALT", Operand.NONE, 0, 0, Flow.HALT, "HALT();", "stop the program", lambda s, arg: s.halt(),
     no_stencil="leaves the interpreter: saves the state and returns to C")

# constants, locals, stack
_def("LOAD_INT", Operand.IMM, 0, 1, Flow.NEXT, "PUSH((int64_t)ARG);",
     "push a 32-bit immediate", lambda s, arg: s.push(arg))
_def("LOAD_CONST", Operand.CONST, 0, 1, Flow.NEXT, "PUSH(CONST(ARG));",
     "push a constant from the pool", lambda s, arg: s.push(s.consts[arg]))
_def("LOAD_LOCAL", Operand.LOCAL, 0, 1, Flow.NEXT, "PUSH(LOCAL(ARG));",
     "push a local", lambda s, arg: s.push(s.local(arg)))
_def("STORE_LOCAL", Operand.LOCAL, 1, 0, Flow.NEXT, "LOCAL(ARG) = POP();",
     "pop into a local", lambda s, arg: s.set_local(arg, s.pop()))
_def("POP", Operand.NONE, 1, 0, Flow.NEXT, "(void)POP();", "drop the top of stack",
     lambda s, arg: s.pop())
_def("DUP", Operand.NONE, 1, 2, Flow.NEXT, "int64_t v = TOP(); PUSH(v);",
     "duplicate the top of stack", lambda s, arg: s.push(s.top()))

# arithmetic: int64 that wraps, Python's floor division and modulo
_binop("ADD", "(int64_t)((uint64_t)a + (uint64_t)b)", _py_simple(lambda a, b: wrap64(a + b)), "a + b")
_binop("SUB", "(int64_t)((uint64_t)a - (uint64_t)b)", _py_simple(lambda a, b: wrap64(a - b)), "a - b")
_binop("MUL", "(int64_t)((uint64_t)a * (uint64_t)b)", _py_simple(lambda a, b: wrap64(a * b)), "a * b")
_binop("FLOORDIV", "sl_floordiv(a, b)",
       _checked(_floordiv, lambda b: b == 0, Error.ZERO_DIVISION), "a // b (floor)",
       check="if (b == 0) FAIL(SL_ERR_ZERO_DIVISION);")
_binop("MOD", "sl_mod(a, b)", _checked(_mod, lambda b: b == 0, Error.ZERO_DIVISION),
       "a % b (sign of b)", check="if (b == 0) FAIL(SL_ERR_ZERO_DIVISION);")
_binop("LSHIFT", "sl_lshift(a, b)", _checked(_lshift, lambda b: b < 0, Error.NEGATIVE_SHIFT),
       "a << b (wraps)", check="if (b < 0) FAIL(SL_ERR_NEGATIVE_SHIFT);")
_binop("RSHIFT", "sl_rshift(a, b)", _checked(_rshift, lambda b: b < 0, Error.NEGATIVE_SHIFT),
       "a >> b (arithmetic)", check="if (b < 0) FAIL(SL_ERR_NEGATIVE_SHIFT);")
_binop("AND", "a & b", _py_simple(lambda a, b: a & b), "a & b")
_binop("OR", "a | b", _py_simple(lambda a, b: a | b), "a | b")
_binop("XOR", "a ^ b", _py_simple(lambda a, b: a ^ b), "a ^ b")
_binop("LT", "a < b", _py_simple(lambda a, b: int(a < b)), "a < b (0 or 1)")
_binop("LE", "a <= b", _py_simple(lambda a, b: int(a <= b)), "a <= b (0 or 1)")
_binop("EQ", "a == b", _py_simple(lambda a, b: int(a == b)), "a == b (0 or 1)")
_binop("NE", "a != b", _py_simple(lambda a, b: int(a != b)), "a != b (0 or 1)")
_binop("GT", "a > b", _py_simple(lambda a, b: int(a > b)), "a > b (0 or 1)")
_binop("GE", "a >= b", _py_simple(lambda a, b: int(a >= b)), "a >= b (0 or 1)")
_def("NEG", Operand.NONE, 1, 1, Flow.NEXT, "SET_TOP((int64_t)(0 - (uint64_t)TOP()));", "-a",
     lambda s, arg: s.push(wrap64(-s.pop())))
_def("INVERT", Operand.NONE, 1, 1, Flow.NEXT, "SET_TOP(~TOP());", "~a",
     lambda s, arg: s.push(~s.pop()))
_def("NOT", Operand.NONE, 1, 1, Flow.NEXT, "SET_TOP(TOP() == 0);", "not a (0 or 1)",
     lambda s, arg: s.push(int(s.pop() == 0)))

# control flow; displacements are relative to the instruction itself
_def("JUMP", Operand.FORWARD, 0, 0, Flow.JUMP, "JUMPBY(ARG);", "jump forward",
     lambda s, arg: s.pc + arg)
_def("JUMP_IF_FALSE", Operand.FORWARD, 1, 0, Flow.BRANCH, "if (POP() == 0) JUMPBY(ARG);",
     "pop; jump forward if zero", lambda s, arg: s.pc + arg if s.pop() == 0 else None)
_def("JUMP_IF_TRUE", Operand.FORWARD, 1, 0, Flow.BRANCH, "if (POP() != 0) JUMPBY(ARG);",
     "pop; jump forward if non-zero", lambda s, arg: s.pc + arg if s.pop() != 0 else None)
_def("LOOP", Operand.BACKWARD, 0, 0, Flow.BACKEDGE, "BACKEDGE(ARG);",
     "loop back-edge: jump backward", lambda s, arg: s.pc + arg)
_def("CALL", Operand.FUNC, None, 1, Flow.CALL, "CALL_FUNCTION(ARG);",
     "call a function with its arguments on the stack", lambda s, arg: s.call(arg),
     no_stencil="frame setup with a bounds check and a loop zeroing locals",
     in_trace="the callee is static: the trace goes on at its entry, in the new frame")
_def("RETURN", Operand.NONE, 1, 0, Flow.RETURN, "RETURN_VALUE();",
     "return the top of stack to the caller", lambda s, arg: s.ret(),
     no_stencil="frame teardown through vm->frames",
     in_trace="the trace goes on at the return point: the matching CALL's, or the "
              "recorded one behind a guard on the frame's return address")
_def("PRINT", Operand.IMM, 1, 0, Flow.NEXT, "PRINT_INT(POP(), ARG);",
     "pop and print as decimal, then the byte ARG (space or newline)",
     lambda s, arg: s.print_int(s.pop(), arg),
     no_stencil="decimal formatting (sl_print_int) and output buffer growth")
_def("PRINT_BYTE", Operand.IMM, 0, 0, Flow.NEXT, "OUTPUT((uint8_t)ARG);",
     "print the byte ARG", lambda s, arg: s.output(arg & 0xFF))

# the BF tape: 8-bit wrapping cells under a bounds-checked head
# (unsigned arithmetic: *HEAD + ARG as ints overflows for ARG near INT32_MAX,
# undefined behaviour that UBSan found through raw-bytecode fuzzing)
_def("CELL_ADD", Operand.IMM, 0, 0, Flow.NEXT, "*HEAD = (uint8_t)((uint32_t)*HEAD + (uint32_t)ARG);",
     "add to the current cell", lambda s, arg: s.cell_add(arg))
_def("CELL_ZERO", Operand.NONE, 0, 0, Flow.NEXT, "*HEAD = 0;", "clear the current cell",
     lambda s, arg: s.cell_set(0))
_def("MOVE", Operand.IMM, 0, 0, Flow.NEXT, "MOVE_HEAD(ARG);", "move the tape head",
     lambda s, arg: s.move(arg))
_def("CELL_OUT", Operand.NONE, 0, 0, Flow.NEXT, "OUTPUT(*HEAD);", "output the current cell",
     lambda s, arg: s.output(s.cell()))
_def("CELL_IN", Operand.NONE, 0, 0, Flow.NEXT, "INPUT_TO(HEAD);",
     "read a byte into the current cell; unchanged at end of input",
     lambda s, arg: s.cell_input())
_def("JUMP_IF_CELL_ZERO", Operand.FORWARD, 0, 0, Flow.BRANCH, "if (*HEAD == 0) JUMPBY(ARG);",
     "BF '[': jump forward if the current cell is zero",
     lambda s, arg: s.pc + arg if s.cell() == 0 else None)
_def("LOOP_IF_CELL", Operand.BACKWARD, 0, 0, Flow.BACKEDGE_BRANCH, "if (*HEAD != 0) BACKEDGE(ARG);",
     "BF ']': loop back-edge taken while the current cell is non-zero",
     lambda s, arg: s.pc + arg if s.cell() != 0 else None)

# BF loop idioms and cells at an offset from the head, made by the BF front
# end at --bf-opt 1 (frontend/bf.py).  A packed operand holds a signed
# 24-bit cell offset above a byte: ARG >> 8 is the offset, ARG & 0xFF the value.
_def("CELL_ADD_AT", Operand.IMM, 0, 0, Flow.NEXT,
     "TAPE_AT(p_, ARG >> 8); *p_ = (uint8_t)((uint32_t)*p_ + (uint32_t)ARG);",
     "add the low byte of ARG to the cell at head + (ARG >> 8)",
     lambda s, arg: s.cell_add_at(arg >> 8, arg & 0xFF), packing="cell")
_def("CELL_SET_AT", Operand.IMM, 0, 0, Flow.NEXT,
     "TAPE_AT(p_, ARG >> 8); *p_ = (uint8_t)ARG;",
     "set the cell at head + (ARG >> 8) to the low byte of ARG",
     lambda s, arg: s.cell_set_at(arg >> 8, arg & 0xFF), packing="cell")
_def("CELL_MULADD", Operand.IMM, 0, 0, Flow.NEXT,
     "uint32_t c_ = *HEAD; if (c_) { TAPE_AT(p_, ARG >> 8); "
     "*p_ = (uint8_t)((uint32_t)*p_ + c_ * (uint32_t)ARG); }",
     "a multiply loop's step: add the current cell times the low byte of ARG to the "
     "cell at head + (ARG >> 8) (nothing, no bounds check, when the current cell is 0)",
     lambda s, arg: s.cell_muladd(arg >> 8, arg & 0xFF), packing="cell")
_def("SCAN", Operand.IMM, 0, 0, Flow.NEXT, "while (*HEAD) MOVE_HEAD(ARG);",
     "BF [>] and kin: move the head by ARG until the current cell is zero",
     lambda s, arg: s.scan(arg))

def _add2(s, arg):
    off_a, byte_a, off_b, byte_b = unpack_add2(arg)
    s.cell_add_at(off_a, 0)              # both cells checked (a, then b) before either add
    s.cell_add_at(off_b, 0)
    s.cell_add_at(off_a, byte_a)
    s.cell_add_at(off_b, byte_b)


# Fusions made by the BF front end's last pass at --bf-opt 1: a MOVE with the
# loop test after it (the head moves, bounds-checked like MOVE, then the cell
# there is tested), and two adds at offsets (both cells checked like
# CELL_ADD_AT, a then b, before either add: all or nothing, so a JIT stencil
# that deopts and the interpreter that runs it again agree).
_def("MOVE_JUMP_IF_CELL_ZERO", Operand.FORWARD_MOVE, 0, 0, Flow.BRANCH,
     "MOVE_HEAD(ARG >> 8); if (*HEAD == 0) JUMPBY(ARG & 0xFF);",
     "MOVE by ARG >> 8, then BF '[': jump forward by the low byte if the cell is zero",
     lambda s, arg: (s.move(arg >> 8), s.pc + (arg & 0xFF) if s.cell() == 0 else None)[1])
_def("MOVE_LOOP_IF_CELL", Operand.BACKWARD_MOVE, 0, 0, Flow.BACKEDGE_BRANCH,
     "MOVE_HEAD(ARG >> 8); if (*HEAD != 0) BACKEDGE(-(ARG & 0xFF));",
     "MOVE by ARG >> 8, then BF ']': back by the low byte while the cell is non-zero",
     lambda s, arg: (s.move(arg >> 8), s.pc - (arg & 0xFF) if s.cell() != 0 else None)[1])
_def("CELL_ADD2_AT", Operand.IMM, 0, 0, Flow.NEXT,
     "TAPE_AT(p_, ARG >> 24); TAPE_AT(q_, (int8_t)(ARG >> 8)); "
     "*p_ = (uint8_t)((uint32_t)*p_ + ((uint32_t)ARG >> 16)); "
     "*q_ = (uint8_t)((uint32_t)*q_ + (uint32_t)ARG);",
     "two CELL_ADD_AT in one: add byte 2 of ARG at head + (int8) byte 3, then byte 0 "
     "at head + (int8) byte 1 (both cells checked first)",
     _add2, packing="add2")

# Tests and multiply loops at offsets from the head, made by the BF front
# end at --bf-opt 1 so that the head moves only where a loop's body moves it
# (frontend/bf.py): a test at head + off (the low 24 bits the jump), and a
# multiply loop's step with its counter at an offset too.  CELL_MULADD_AT
# leaves the counter, CELL_MOVE_AT and CELL_MOVE2_AT (one or two targets of
# one factor) clear it.  Like CELL_MULADD, the targets are touched (and
# checked) only when the counter is not 0; the counter is always checked.
_def("JUMP_IF_CELL_ZERO_AT", Operand.FORWARD_AT, 0, 0, Flow.BRANCH,
     "TAPE_AT(p_, ARG >> 24); if (*p_ == 0) JUMPBY(ARG & 0xFFFFFF);",
     "BF '[' at an offset: jump forward by the low 24 bits if the cell at head + "
     "(ARG >> 24) is zero",
     lambda s, arg: s.pc + (arg & 0xFFFFFF) if s.cell_at(arg >> 24) == 0 else None)
_def("LOOP_IF_CELL_AT", Operand.BACKWARD_AT, 0, 0, Flow.BACKEDGE_BRANCH,
     "TAPE_AT(p_, ARG >> 24); if (*p_ != 0) BACKEDGE(-(ARG & 0xFFFFFF));",
     "BF ']' at an offset: back by the low 24 bits while the cell at head + (ARG >> 24) "
     "is non-zero",
     lambda s, arg: s.pc - (arg & 0xFFFFFF) if s.cell_at(arg >> 24) != 0 else None)


def _move_at(clear: bool, two: bool):
    def run(s, arg):
        c, t, t2, f = unpack_move_at("CELL_MOVE2_AT" if two else "", arg)
        v = s.cell_at(c)
        if v:
            s.cell_add_at(t, 0)              # every target checked before any add
            if two:
                s.cell_add_at(t2, 0)
            s.cell_add_at(t, v * f)
            if two:
                s.cell_add_at(t2, v * f)
            if clear:
                s.cell_set_at(c, 0)
    return run


# Without a branch on the counter (its bits are data: a jump on them is
# mispredicted half of the time in programs on binary records): the targets
# get counter * factor, 0 when it is 0, and a target off the tape is an
# error only when the counter is not 0 (else the write goes to the counter
# itself, adding 0).
_OFF = "int64_t {p}pos = (int64_t)(head - vm->tape) + (int8_t)(ARG >> {shift}); "
_MULADD_AT = ("TAPE_AT(c_, ARG >> 24); uint32_t v_ = *c_; uint32_t m_ = v_ * {factor}; "
              + _OFF.format(p="p_", shift=16) + "{two_off}"
              "if ((v_ != 0) & ((uint64_t)p_pos >= (uint64_t)vm->tape_len{two_oob})) "
              "FAIL_WITH(SL_ERR_TAPE_BOUNDS, (uint64_t)p_pos >= (uint64_t)vm->tape_len "
              "? p_pos : {q_pos}); "
              "uint8_t *p_ = (uint64_t)p_pos < (uint64_t)vm->tape_len ? vm->tape + p_pos : c_; "
              "*p_ = (uint8_t)((uint32_t)*p_ + m_); {two_add}{clear}")
_ONE = dict(two_off="", two_oob="", q_pos="p_pos", two_add="")
_TWO = dict(two_off=_OFF.format(p="q_", shift=8),
            two_oob=" | (uint64_t)q_pos >= (uint64_t)vm->tape_len", q_pos="q_pos",
            two_add="uint8_t *q_ = (uint64_t)q_pos < (uint64_t)vm->tape_len ? vm->tape + q_pos "
                    ": c_; *q_ = (uint8_t)((uint32_t)*q_ + m_); ")
_def("CELL_MULADD_AT", Operand.IMM, 0, 0, Flow.NEXT,
     _MULADD_AT.format(factor="(((uint32_t)ARG >> 8) & 0xFF)", clear="", **_ONE),
     "a multiply loop's step at offsets: cell[head + byte 2] += cell[head + byte 3] * "
     "byte 1 (nothing, no check of the target, when that counter is 0)",
     _move_at(False, False), packing="move_at")
_def("CELL_MOVE_AT", Operand.IMM, 0, 0, Flow.NEXT,
     _MULADD_AT.format(factor="(((uint32_t)ARG >> 8) & 0xFF)", clear="*c_ = 0;", **_ONE),
     "a move loop at offsets: CELL_MULADD_AT, then the counter cleared",
     _move_at(True, False), packing="move_at")
_def("CELL_MOVE2_AT", Operand.IMM, 0, 0, Flow.NEXT,
     _MULADD_AT.format(factor="((uint32_t)ARG & 0xFF)", clear="*c_ = 0;", **_TWO),
     "a move loop to two cells at offsets: cell[head + byte 2] and cell[head + byte 1] += "
     "cell[head + byte 3] * byte 0 (both checked first), then that counter cleared",
     _move_at(True, True), packing="move2_at")



def _copy_at(s, arg):
    a, t, u, _ = unpack_move_at("CELL_MOVE2_AT", arg)
    v = s.cell_at(a)
    if v:
        s.cell_add_at(t, 0)
    w = s.cell_at(u)
    if v:
        s.cell_add_at(t, v)
    s.cell_set_at(a, v + w)
    s.cell_set_at(u, 0)


# BF's copy through a spare cell ([->+>+<<]>>[-<<+>>]: a move loop to two
# cells, then one back), made by the front end's last pass from the two:
# t += a, a += u, u = 0 (exact whatever u held: u gets a, a gets u).  Cells
# checked in the order the two loops check them: a, t (only when a is not
# 0), then u.
_def("CELL_COPY_AT", Operand.IMM, 0, 0, Flow.NEXT,
     "TAPE_AT(a_, ARG >> 24); uint32_t v_ = *a_; "
     + _OFF.format(p="t_", shift=16) +
     "if ((v_ != 0) & ((uint64_t)t_pos >= (uint64_t)vm->tape_len)) "
     "FAIL_WITH(SL_ERR_TAPE_BOUNDS, t_pos); "
     "TAPE_AT(u_, (int8_t)(ARG >> 8)); "
     "uint32_t w_ = *u_; int t_in = (uint64_t)t_pos < (uint64_t)vm->tape_len; "
     "uint8_t *t_ = t_in ? vm->tape + t_pos : a_; "
     "*t_ = (uint8_t)((uint32_t)*t_ + (t_in ? v_ : 0)); "
     "*a_ = (uint8_t)(v_ + w_); *u_ = 0;",
     "BF's copy through a spare cell: cell[head + byte 2] += cell[head + byte 3], which "
     "then gets what cell[head + byte 1] held added, and that cell is cleared",
     _copy_at, packing="copy_at")



def unpack_move_pair(arg: int) -> tuple[int, int, int, int]:
    """(counter 1, target 1, counter 2, target 2) of a CELL_MOVE_PAIR_AT operand."""
    return arg >> 24, _sbyte(arg >> 16), _sbyte(arg >> 8), _sbyte(arg)


def pack_move_pair(c1: int, t1: int, c2: int, t2: int) -> int:
    for off in (c1, t1, c2, t2):
        if not -AT_OFFSET_MAX - 1 <= off <= AT_OFFSET_MAX:
            raise ValueError(f"cell offset {off} does not fit 8 bits")
    return _signed32(((c1 & 0xFF) << 24) | ((t1 & 0xFF) << 16) | ((c2 & 0xFF) << 8) | (t2 & 0xFF))


def _move_pair(s, arg):
    c1, t1, c2, t2 = unpack_move_pair(arg)
    for c, t in ((c1, t1), (c2, t2)):
        v = s.cell_at(c)
        if v:
            s.cell_add_at(t, v)
            s.cell_set_at(c, 0)


# Two move loops of factor 1 in a row ([->+<] twice), made by the front end's
# last pass: each as CELL_MOVE_AT, the first before the second.
_MOVE_ONE = ("{{ TAPE_AT(c{n}_, {c}); uint32_t v{n}_ = *c{n}_; " + _OFF.format(p="t{n}_", shift=0)
             .replace("(int8_t)(ARG >> 0)", "{t}") +
             "if ((v{n}_ != 0) & ((uint64_t)t{n}_pos >= (uint64_t)vm->tape_len)) "
             "FAIL_WITH(SL_ERR_TAPE_BOUNDS, t{n}_pos); "
             "uint8_t *t{n}_ = (uint64_t)t{n}_pos < (uint64_t)vm->tape_len ? vm->tape + t{n}_pos "
             ": c{n}_; *t{n}_ = (uint8_t)((uint32_t)*t{n}_ + v{n}_); *c{n}_ = 0; }} ")
_def("CELL_MOVE_PAIR_AT", Operand.IMM, 0, 0, Flow.NEXT,
     _MOVE_ONE.format(n=1, c="ARG >> 24", t="(int8_t)(ARG >> 16)")
     + _MOVE_ONE.format(n=2, c="(int8_t)(ARG >> 8)", t="(int8_t)ARG"),
     "two move loops at offsets, each byte an offset (top first): cell[byte 2] += "
     "cell[byte 3], that cleared; then cell[byte 0] += cell[byte 1], that cleared",
     _move_pair, packing="move_pair")


# Walks (--bf-opt 2): a loop whose body is one instruction at offsets and
# whose back-edge moves the head by a stride (`[->>>>+<<<< >>>>>>>>>>>>>>]`
# on records of 14 cells), run in one dispatch: the body, the move, the
# test, again while the cell is not 0.  Each is made from its body's row of
# this table, C and Python both.  The operand is the body's with the stride
# (signed) in the low byte: the body's operand shifted up a byte ("shift":
# CELL_SET_AT and CELL_ADD_AT, whose offset then fits 16 bits), or as it is
# ("mask": the move and copy loops, whose low byte is 0).  A walk has no
# stencil: a trace ends at it, so the JIT stays at --bf-opt 1, where the
# walk's loop is the trace's own.
WALKS: dict[str, tuple[str, str]] = {}    # walk: (its body, how its operand holds the body's)


def pack_walk(body: str, body_arg: int, stride: int) -> int | None:
    """The operand of the walk of `body` (an instruction's name), or None
    when body_arg or stride does not fit it."""
    how = next((h for b, h in WALKS.values() if b == body), None)
    if how is None or not (-128 <= stride <= 127 and stride != 0):
        return None
    if how == "shift":
        if not -(1 << 23) <= body_arg < 1 << 23:
            return None
        return _signed32(((body_arg << 8) | (stride & 0xFF)) & 0xFFFFFFFF)
    if body_arg & 0xFF:
        return None
    return _signed32((body_arg | (stride & 0xFF)) & 0xFFFFFFFF)


def unpack_walk(name: str, arg: int) -> tuple[str, int, int]:
    """(body's name, body's operand, stride) of a walk's operand."""
    body, how = WALKS[name]
    return body, (arg >> 8 if how == "shift" else arg & ~0xFF), _sbyte(arg)


def _walk(body_name: str, how: str) -> None:
    body = next(ins for ins in INSTRUCTIONS if ins.name == body_name)
    name = "WALK_" + body_name.removeprefix("CELL_")
    WALKS[name] = (body_name, how)
    decode = "ARG >> 8" if how == "shift" else "(int32_t)(ARG & ~0xFF)"
    c = (f"int32_t walk_arg = {decode}; int64_t walk_stride = (int8_t)ARG; "
         "do { " + re.sub(r"\bARG\b", "walk_arg", body.c)
         + " MOVE_HEAD(walk_stride); } while (*HEAD != 0);")

    def run(s, arg):
        _, barg, stride = unpack_walk(name, arg)
        while True:
            body.py(s, barg)
            s.move(stride)
            if s.cell() == 0:
                return None
    _def(name, Operand.IMM, 0, 0, Flow.NEXT, c,
         f"a loop of {body_name} and a move by the low byte (signed), again while the "
         f"cell is not 0 (--bf-opt 2)", run,
         no_stencil="a loop in one instruction: a trace ends at it (the JIT traces "
                    "the loop itself at --bf-opt 1)", packing="walk")


for _body, _how in (("CELL_SET_AT", "shift"), ("CELL_ADD_AT", "shift"),
                    ("CELL_MOVE_AT", "mask"), ("CELL_COPY_AT", "mask")):
    _walk(_body, _how)

PACKED_CELL = frozenset(ins.name for ins in INSTRUCTIONS if ins.packing == "cell")
PACKED_MOVE_AT = frozenset(ins.name for ins in INSTRUCTIONS
                           if ins.packing in ("move_at", "move2_at"))
PACKED_MOVE_JUMP = frozenset({Operand.FORWARD_MOVE, Operand.BACKWARD_MOVE})
PACKED_AT_JUMP = frozenset({Operand.FORWARD_AT, Operand.BACKWARD_AT})

BY_NAME: dict[str, Instr] = {ins.name: ins for ins in INSTRUCTIONS}
OPCODE: dict[str, int] = {ins.name: i for i, ins in enumerate(INSTRUCTIONS)}
NUM_OPCODES = len(INSTRUCTIONS)


# Derived sets: kept by no one by hand.
# Instructions a trace runs through (a stencil, or one of the JIT's own:
# Instr.in_trace); the JIT ends a trace at every other one.
TRACEABLE = frozenset(ins.name for ins in INSTRUCTIONS if ins.traceable)
# Stack arithmetic by its shape: two operands to one result, one to one.
BINOPS = tuple(ins.name for ins in INSTRUCTIONS if ins.operand is Operand.NONE
               and ins.flow is Flow.NEXT and (ins.pops, ins.pushes) == (2, 1))
UNOPS = tuple(ins.name for ins in INSTRUCTIONS if ins.operand is Operand.NONE
              and ins.flow is Flow.NEXT and (ins.pops, ins.pushes) == (1, 1))


def opcode(name: str) -> int:
    return OPCODE[name]


def is_jump(ins: Instr) -> bool:
    return ins.operand in (Operand.FORWARD, Operand.BACKWARD, Operand.FORWARD_MOVE,
                           Operand.BACKWARD_MOVE, Operand.FORWARD_AT, Operand.BACKWARD_AT)


def jump_disp(ins: Instr, arg: int) -> int:
    """How far a jump instruction jumps (its target is pc + this)."""
    if ins.operand is Operand.FORWARD_MOVE:
        return arg & 0xFF
    if ins.operand is Operand.BACKWARD_MOVE:
        return -(arg & 0xFF)
    if ins.operand is Operand.FORWARD_AT:
        return arg & 0xFFFFFF
    if ins.operand is Operand.BACKWARD_AT:
        return -(arg & 0xFFFFFF)
    return arg


def is_backedge(ins: Instr) -> bool:
    return ins.flow in (Flow.BACKEDGE, Flow.BACKEDGE_BRANCH)


def falls_through(ins: Instr) -> bool:
    """Can execution continue at the next instruction (calls return there)?"""
    return ins.flow in (Flow.NEXT, Flow.BRANCH, Flow.BACKEDGE_BRANCH, Flow.CALL)
