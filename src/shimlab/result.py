"""What a run of any execution mode is given and gives back: the limits it
runs under and its Result.  The native loader passes the limits to C
(sl_vm's tape_len, stack_size, max_depth) and fills a Result from sl_vm; the
oracle enforces the same limits and returns the same Result, so the two are
compared field by field.
"""
from __future__ import annotations

from .bytecode import Program
from .isa import Error
from .record import Record, factory

# The limits every execution mode shares.
STACK_SIZE = 1 << 18
MAX_DEPTH = 10_000
TAPE_LEN = 30_000


class Result(Record):
    output: bytes
    status: Error
    err_pc: int = -1
    err_value: int = 0
    tape: bytes = b""
    head: int = 0
    counts: list[int] = factory(list)
    locals: list[int] = factory(list)   # the entry function's, at the end

    @property
    def instructions(self) -> int:
        return sum(self.counts)

    def plain(self) -> tuple:
        """The fields as plain values (marshal writes them: isolate.py), which
        from_plain makes a Result of again."""
        return (self.output, int(self.status), self.err_pc, self.err_value, self.tape,
                self.head, list(self.counts), list(self.locals))

    @classmethod
    def from_plain(cls, values: tuple) -> "Result":
        output, status, *rest = values
        return cls(output, Error(status), *rest)


def describe_error(program: Program, result: Result) -> str:
    """One line naming where and why a run failed (any mode, the oracle included)."""
    msg = result.status.message
    if result.status is Error.TAPE_BOUNDS:
        msg += f" (to cell {result.err_value})"
    pos = program.position(result.err_pc)
    where = f"{program.name}:{pos[0]}:{pos[1]}" if pos and pos[0] else program.name
    return f"{where}: runtime error at pc {result.err_pc}: {msg}"
