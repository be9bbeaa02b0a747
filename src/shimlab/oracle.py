"""The Python oracle: runs a Program with the semantics written in isa.py.

Slow and obviously correct; the tests hold every C interpreter to it,
including where and how a program fails (status, pc, tape, output).
"""
from __future__ import annotations

from . import isa
from .bytecode import Program
from .isa import Error, VMError
from .progio import Reader, Streams, Writer
from .result import MAX_DEPTH, STACK_SIZE, TAPE_LEN, Result, describe_error

__all__ = ["State", "run", "step", "Result", "describe_error", "MAX_DEPTH", "STACK_SIZE",
           "TAPE_LEN"]

class State:
    """The VM state isa.py's Python semantics run on (public: the stencil
    tester starts one from a random state and steps it)."""

    def __init__(self, program: Program, input: bytes, tape_len: int, stack_size: int,
                 max_depth: int, streams: Streams | None = None):
        self.consts = program.consts
        self.functions = program.functions
        self.stack: list[int] = [0] * program.functions[0].nlocals
        self.fp = 0
        self.frames: list[tuple[int, int]] = []
        self.tape = bytearray(tape_len)
        self.head = 0
        # input past `input` comes from streams.in_fd a chunk at a time;
        # output goes to streams.out_fd whenever a chunk is buffered
        streams = streams or Streams()
        self.input = input
        self.in_pos = 0
        self.reader = Reader(streams.in_fd) if streams.in_fd is not None else None
        self.writer = Writer(streams.out_fd, streams.max_output)
        self.out = self.writer.buf
        self.pc = program.functions[0].entry
        self.halted = False
        self.stack_size = stack_size
        self.max_depth = max_depth
        self.err_value = 0

    # -- the operations isa.py's Python semantics are written with
    def push(self, v: int) -> None:
        self.stack.append(v)

    def pop(self) -> int:
        return self.stack.pop()

    def top(self) -> int:
        return self.stack[-1]

    def local(self, i: int) -> int:
        return self.stack[self.fp + i]

    def set_local(self, i: int, v: int) -> None:
        self.stack[self.fp + i] = v

    def halt(self) -> None:
        self.halted = True

    def call(self, index: int) -> int:
        fn = self.functions[index]
        new_fp = len(self.stack) - fn.nargs
        if (len(self.frames) >= self.max_depth
                or new_fp + fn.nlocals + fn.max_stack > self.stack_size):
            self.err_value = len(self.frames)
            raise VMError(Error.STACK_OVERFLOW, self.pc)
        self.stack.extend([0] * (fn.nlocals - fn.nargs))
        self.frames.append((self.pc + 1, self.fp))
        self.fp = new_fp
        return fn.entry

    def ret(self) -> int:
        value = self.stack.pop()
        ret_pc, old_fp = self.frames.pop()
        del self.stack[self.fp:]
        self.fp = old_fp
        self.stack.append(value)
        return ret_pc

    def output(self, b: int) -> None:
        if len(self.out) >= self.writer.cap:
            self.writer.room(1)
        self.out.append(b)

    def print_int(self, v: int, sep: int) -> None:
        text = str(v).encode() + bytes([sep & 0xFF])
        if len(self.out) + len(text) > self.writer.cap:
            self.writer.room(len(text))
        self.out += text

    def cell(self) -> int:
        return self.tape[self.head]

    def cell_set(self, v: int) -> None:
        self.tape[self.head] = v & 0xFF

    def cell_add(self, n: int) -> None:
        self.tape[self.head] = (self.tape[self.head] + n) & 0xFF

    def move(self, n: int) -> None:
        pos = self.head + n
        if not 0 <= pos < len(self.tape):
            self.err_value = pos
            raise VMError(Error.TAPE_BOUNDS, self.pc)
        self.head = pos

    def _at(self, off: int) -> int:
        pos = self.head + off
        if not 0 <= pos < len(self.tape):
            self.err_value = pos
            raise VMError(Error.TAPE_BOUNDS, self.pc)
        return pos

    def cell_add_at(self, off: int, n: int) -> None:
        pos = self._at(off)
        self.tape[pos] = (self.tape[pos] + n) & 0xFF

    def cell_at(self, off: int) -> int:
        return self.tape[self._at(off)]

    def cell_set_at(self, off: int, v: int) -> None:
        self.tape[self._at(off)] = v & 0xFF

    def cell_muladd(self, off: int, factor: int) -> None:
        c = self.tape[self.head]
        if c:
            pos = self._at(off)
            self.tape[pos] = (self.tape[pos] + c * factor) & 0xFF

    def scan(self, step: int) -> None:
        while self.tape[self.head]:
            self.move(step)

    def cell_input(self) -> None:
        if self.in_pos >= len(self.input) and self.reader is not None:
            self.input, self.in_pos = self.reader.read(), 0
        if self.in_pos < len(self.input):
            self.tape[self.head] = self.input[self.in_pos]
            self.in_pos += 1


_SEMANTICS = [ins.py for ins in isa.INSTRUCTIONS]
# only control flow returns a next pc; other semantics may return anything
_MOVES_PC = [isa.is_jump(ins) or ins.flow in (isa.Flow.CALL, isa.Flow.RETURN)
             for ins in isa.INSTRUCTIONS]


def step(s: State, op: int, arg: int) -> None:
    """Runs instruction (op, arg) at s.pc and moves s.pc on (not after HALT);
    a run-time error raises isa.VMError."""
    nxt = _SEMANTICS[op](s, arg)
    if not s.halted:
        s.pc = nxt if _MOVES_PC[op] and nxt is not None else s.pc + 1


def run(program: Program, input: bytes = b"", *, tape_len: int = TAPE_LEN,
        stack_size: int = STACK_SIZE, max_depth: int = MAX_DEPTH,
        max_steps: int | None = None, streams: Streams | None = None) -> Result:
    """Run a verified program; max_steps bounds runaway programs in tests.
    With `streams`, input is read and output written as the program runs
    (Result.output then holds nothing)."""
    s = State(program, input, tape_len, stack_size, max_depth, streams)
    counts = [0] * isa.NUM_OPCODES
    code = program.code
    status, err_pc, steps = Error.OK, -1, 0
    try:
        while not s.halted:
            op, arg = code[s.pc]
            counts[op] += 1
            steps += 1
            if max_steps is not None and steps > max_steps:
                raise TimeoutError(f"program ran more than {max_steps} steps")
            step(s, op, arg)
    except VMError as e:
        status, err_pc = e.error, e.pc
    finally:
        s.writer.flush()        # on every way out: what was output is not lost
    return Result(output=bytes(s.out), status=status, err_pc=err_pc,
                  err_value=s.err_value if status else 0,
                  tape=bytes(s.tape), head=s.head, counts=counts,
                  locals=s.stack[:program.functions[0].nlocals])
