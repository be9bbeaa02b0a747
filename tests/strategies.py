"""Hypothesis strategies for the differential tests and scripts/fuzz.py.

Three kinds of program: BF source, minipy source (tests/minipy_gen.py: the
programs CPython runs the same way), and raw bytecode built
with the Assembler that passes the verifier and ends by construction (loops
count down a local no other statement writes, BF loops add an odd step to
their cell, calls only go to later functions, the one recursive function is
stopped by the call-depth limit) while still reaching the run-time errors:
division by zero, negative shifts, tape bounds, call-stack overflow.
"""
from __future__ import annotations

from hypothesis import strategies as st

import minipy_gen
from shimlab import isa
from shimlab.bytecode import Assembler, Function, Program

# ---- BF ----------------------------------------------------------------------


@st.composite
def bf_idiom_loops(draw, depth=0):
    """The loop shapes the front end turns into idioms (--bf-opt 1): a move
    or multiply loop (counter step -1 or +1, targets at offsets, the counter
    stepped first or last), a loop whose body returns the head (its tests at
    an offset), an if (the body clears the counter at its end), and a walk
    (--bf-opt 2: a body of one instruction at an offset, then a stride)."""
    shape = draw(st.sampled_from(["move", "balanced", "if", "walk"]))
    if shape == "walk":
        off, stride = draw(st.integers(-3, 3)), draw(st.integers(-5, 5).filter(bool))
        go, back = (">" if off > 0 else "<") * abs(off), ("<" if off > 0 else ">") * abs(off)
        body = draw(st.sampled_from(["[-]", "[-]+++", "+", "--", "[->+<]", "[->>+<<]>>[-<<+>>]<<",
                                     "[->+>+<<]>>[-<<+>>]<<"]))
        return "[" + go + body + back + (">" if stride > 0 else "<") * abs(stride) + "]"
    if shape == "move":
        offs = draw(st.lists(st.integers(-4, 4).filter(bool), min_size=0, max_size=3,
                             unique=True))
        step = draw(st.sampled_from("-+"))
        body, here = [], 0
        for off in offs:
            body.append((">" if off > here else "<") * abs(off - here))
            body.append(draw(st.sampled_from("+-")) * draw(st.integers(1, 3)))
            here = off
        body.append((">" if 0 > here else "<") * abs(here))
        inner = "".join(body)
        return "[" + (step + inner if draw(st.booleans()) else inner + step) + "]"
    inner = draw(bf_programs(depth + 1)) if depth < 2 else "+"
    off = draw(st.integers(-3, 3))
    go = (">" if off > 0 else "<") * abs(off)
    back = ("<" if off > 0 else ">") * abs(off)
    if shape == "if":                     # at most once: the counter cleared last
        return "[" + go + inner.replace("[", "").replace("]", "") + back + "[-]]"
    # balanced: the inner part's own moves undone, the counter stepped by an odd step
    moves = inner.count(">") - inner.count("<")
    fix = ("<" if moves > 0 else ">") * abs(moves)
    return "[" + go + inner + fix + back + draw(st.sampled_from(["-", "+", "---"])) + "]"


@st.composite
def bf_programs(draw, depth=0):
    parts = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from("+-<>.,[I" if depth < 3 else "+-<>.,"))
        if kind == "I":
            parts.append(draw(bf_idiom_loops(depth)))
        elif kind == "[":
            parts.append("[" + draw(bf_programs(depth + 1)) + "]")
        elif kind in "+-<>":
            parts.append(kind * draw(st.integers(1, 300 if kind in "+-" else 3)))
        else:
            parts.append(kind)
    return "".join(parts)


# ---- minipy ------------------------------------------------------------------

def minipy_programs():
    """minipy source that CPython runs the same way (tests/minipy_gen.py)."""
    return minipy_gen.programs()


# ---- raw bytecode --------------------------------------------------------------

# Immediates: mostly small (so divisors and shift counts are often 0 or
# negative), sometimes the edges of int32, sometimes anything.
imm32 = st.one_of(st.integers(-3, 8), st.sampled_from([isa.INT32_MIN, isa.INT32_MAX, -1, 63, 64,
                                                       127, 128, 255, 256]),
                  st.integers(isa.INT32_MIN, isa.INT32_MAX))
int64 = st.one_of(st.sampled_from([isa.INT64_MIN, isa.INT64_MAX, 1 << 32, -(1 << 40)]),
                  st.integers(isa.INT64_MIN, isa.INT64_MAX))
# Tape moves: mostly a step right (the head starts at cell 0), sometimes left
# or far (out of bounds).
moves = st.one_of(st.integers(1, 3), st.integers(-2, 3),
                  st.sampled_from([-40_000, 29_999, 30_000, isa.INT32_MAX]))

# every stack operation of these shapes in isa.py, so a new one is tested too
_BINOPS = list(isa.BINOPS)
_UNOPS = list(isa.UNOPS)
MAX_LOOP_NEST = 2     # counted loops inside counted loops
MAX_BLOCK_DEPTH = 3   # ifs and loops inside each other
MAX_COUNT = 6         # iterations of a counted loop


class _Gen:
    """Emits one program with the Assembler, every statement stack-neutral."""

    def __init__(self, draw, nfuncs: int):
        self.draw = draw
        self.asm = Assembler("fuzz.slbc", "bytecode")
        self.consts = draw(st.lists(int64, max_size=3, unique=True))
        self.asm.program.consts = list(self.consts)
        # function 0 is main; 1..nfuncs ordinary; the last one recursive
        self.nargs = [0] + [draw(st.integers(0, 2)) for _ in range(nfuncs)] + [1]
        self.ndata = [max(a, draw(st.integers(1, 3))) for a in self.nargs]
        self.rec = len(self.nargs) - 1

    # -- expressions: push exactly one value
    def expr(self, f: int, depth: int = 0) -> None:
        d, asm = self.draw, self.asm
        kind = d(st.integers(0, 9)) if depth < 3 else d(st.integers(0, 2))
        if kind == 0:
            asm.emit("LOAD_INT", d(imm32))
        elif kind == 1 and self.consts:
            asm.emit("LOAD_CONST", d(st.integers(0, len(self.consts) - 1)))
        elif kind <= 2:
            # data locals and loop counters may both be read
            asm.emit("LOAD_LOCAL", d(st.integers(0, self.ndata[f] + MAX_LOOP_NEST - 1)))
        elif kind == 3:
            self.expr(f, depth + 1)
            asm.emit(d(st.sampled_from(_UNOPS)))
        elif kind == 4:
            self.expr(f, depth + 1)
            asm.emit("DUP")                 # x op x
            asm.emit(d(st.sampled_from(_BINOPS)))
        elif kind == 5 and f + 1 < len(self.nargs):
            callee = d(st.integers(f + 1, len(self.nargs) - 1))
            if callee == self.rec:
                # mostly shallow; sometimes deep enough to overflow the call stack
                asm.emit("LOAD_INT", d(st.sampled_from([0, 1, 2, 3, 5, 7, 10, 20, 30, -1])))
            else:
                for _ in range(self.nargs[callee]):
                    self.expr(f, depth + 1)
            asm.emit("CALL", callee)
        else:
            self.expr(f, depth + 1)
            self.expr(f, depth + 1)
            asm.emit(d(st.sampled_from(_BINOPS)))

    # -- statements: leave the stack as they found it
    def block(self, f: int, loops: list, depth: int, in_bf_loop: bool) -> None:
        for _ in range(self.draw(st.integers(1, 8) if depth == 0 else st.integers(0, 3))):
            self.statement(f, loops, depth, in_bf_loop)

    def statement(self, f: int, loops: list, depth: int, in_bf_loop: bool) -> None:
        d, asm = self.draw, self.asm
        kind = d(st.sampled_from(["assign", "assign", "print", "pop", "byte", "tape", "if", "if",
                                  "loop", "loop", "bfloop", "bfloop", "exit", "break"]))
        if kind == "assign":
            self.expr(f)
            asm.emit("STORE_LOCAL", d(st.integers(0, self.ndata[f] - 1)))
        elif kind == "print":
            self.expr(f)
            asm.emit("PRINT", d(st.sampled_from([10, 32, 44, -1, 300])))
        elif kind == "pop":
            self.expr(f)
            asm.emit("POP")
        elif kind == "byte":
            asm.emit(d(st.sampled_from(["PRINT_BYTE", "NOP"])), d(imm32))
        elif kind == "tape":
            self.tape(f, in_bf_loop)
        elif kind == "if" and depth < MAX_BLOCK_DEPTH:
            other, end = asm.label(), asm.label()
            self.expr(f)
            asm.emit(d(st.sampled_from(["JUMP_IF_FALSE", "JUMP_IF_TRUE"])), other)
            self.block(f, loops, depth + 1, in_bf_loop)
            asm.emit("JUMP", end)
            asm.bind(other)
            self.block(f, loops, depth + 1, in_bf_loop)
            asm.bind(end)
        elif kind == "loop" and depth < MAX_BLOCK_DEPTH and len(loops) < MAX_LOOP_NEST:
            self.counted_loop(f, loops, depth, in_bf_loop)
        elif kind == "bfloop" and depth < MAX_BLOCK_DEPTH and f == 0 and not in_bf_loop:
            self.bf_loop(f, loops, depth)
        elif kind == "exit" and depth > 0:
            # an early HALT or RETURN, inside some block
            if f == 0:
                asm.emit("HALT")
            else:
                self.expr(f)
                asm.emit("RETURN")
        elif kind == "break" and loops:
            top, exit_, counter = loops[-1]
            if d(st.booleans()):
                asm.emit("JUMP", exit_)
            else:                            # continue: count down, back to the test
                self.decrement(counter)
                asm.emit("LOOP", top)
        else:
            asm.emit("NOP")

    def decrement(self, counter: int) -> None:
        for name, arg in (("LOAD_LOCAL", counter), ("LOAD_INT", 1), ("SUB", 0),
                          ("STORE_LOCAL", counter)):
            self.asm.emit(name, arg)

    def counted_loop(self, f: int, loops: list, depth: int, in_bf_loop: bool) -> None:
        # the counter local is reserved for this nesting level: no statement
        # stores to it, so the loop runs at most MAX_COUNT times
        d, asm = self.draw, self.asm
        counter = self.ndata[f] + len(loops)
        top, exit_ = asm.label(), asm.label()
        asm.emit("LOAD_INT", d(st.integers(-1, MAX_COUNT)))
        asm.emit("STORE_LOCAL", counter)
        asm.bind(top)
        asm.emit("LOAD_LOCAL", counter)
        asm.emit("LOAD_INT", 0)
        asm.emit("GT")
        asm.emit("JUMP_IF_FALSE", exit_)
        self.block(f, loops + [(top, exit_, counter)], depth + 1, in_bf_loop)
        self.decrement(counter)
        asm.emit("LOOP", top)
        asm.bind(exit_)

    def bf_loop(self, f: int, loops: list, depth: int) -> None:
        # Ends: inside the body the current cell changes only by the final
        # odd step (tape statements there go to another cell and come back),
        # so it reaches 0 within 256 iterations.
        d, asm = self.draw, self.asm
        body, exit_ = asm.label(), asm.label()
        asm.emit("CELL_ADD", d(st.integers(0, 9)))    # a cell that is often not 0 yet
        asm.emit("JUMP_IF_CELL_ZERO", exit_)
        asm.bind(body)
        self.block(f, loops, depth + 1, in_bf_loop=True)
        asm.emit("CELL_ADD", d(st.sampled_from([1, -1, 3, -5, 127])))
        asm.emit("LOOP_IF_CELL", body)
        asm.bind(exit_)

    def tape(self, f: int, in_bf_loop: bool) -> None:
        d, asm = self.draw, self.asm
        if f != 0:
            asm.emit("CELL_OUT")     # functions read the tape only: BF loops stay bounded
            return
        if in_bf_loop:
            away = d(st.sampled_from([-2, -1, 1, 2, 40_000]))
            asm.emit("MOVE", away)
        for _ in range(d(st.integers(1, 3))):
            op = d(st.sampled_from(["CELL_ADD", "CELL_ZERO", "CELL_OUT", "CELL_IN", "MOVE"]))
            if op == "MOVE" and in_bf_loop:
                op = "CELL_OUT"
            asm.emit(op, d(moves) if op == "MOVE" else d(imm32) if op == "CELL_ADD" else 0)
        if in_bf_loop:
            asm.emit("MOVE", -away)

    def function(self, f: int) -> Function:
        asm = self.asm
        entry = asm.pc
        if f == self.rec:
            # rec(n): 0 if n == 0 else rec(n - 1) + 1; a negative or huge n
            # overflows the call stack
            base = asm.label()
            for name, arg in (("LOAD_LOCAL", 0), ("JUMP_IF_FALSE", base), ("LOAD_LOCAL", 0),
                              ("LOAD_INT", 1), ("SUB", 0), ("CALL", f), ("LOAD_INT", 1),
                              ("ADD", 0), ("RETURN", 0)):
                asm.emit(name, arg)
            asm.bind(base)
            asm.emit("LOAD_INT", 0)
            asm.emit("RETURN")
        else:
            self.block(f, [], 0, in_bf_loop=False)
            if f == 0:
                asm.emit("HALT")
            else:
                self.expr(f)
                asm.emit("RETURN")
        return Function(f"f{f}" if f else "main", entry, self.nargs[f],
                        self.ndata[f] + MAX_LOOP_NEST)


@st.composite
def bytecode_programs(draw) -> Program:
    """A verified-by-construction program (the test still verifies it)."""
    gen = _Gen(draw, draw(st.integers(0, 2)))
    functions = [gen.function(f) for f in range(len(gen.nargs))]
    program = gen.asm.finish()
    program.functions = functions
    return program
