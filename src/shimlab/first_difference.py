"""A run held to the Python oracle (`run --check`, `bench programs --stencil`):
the first way two results of the same program differ, said in one line.

Output first (what a user sees), then how the run ended, then the state it
left: the tape and head, the entry function's locals, the opcode counts."""
from __future__ import annotations

from . import isa
from .bytecode import Program
from .result import Result, describe_error


def _byte(b: int) -> str:
    shown = chr(b) if 32 <= b < 127 else None
    return f"{b:#04x}" + (f" {shown!r}" if shown else "")


def _ending(program: Program, r: Result) -> str:
    return "finished normally" if not r.status else describe_error(program, r)


def first_difference(program: Program, got: Result, want: Result,
                     what: str = "this run", against: str = "the oracle") -> str | None:
    """None when `got` agrees with `want` (`against`'s result, by default
    the oracle's); else one line naming the first difference, e.g. 'output
    byte 12 is 0x41 'A' in this run, 0x42 'B' from the oracle'."""
    a, b = got.output, want.output
    if a != b:
        n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
        if n is not None:
            return (f"output byte {n} is {_byte(a[n])} in {what}, {_byte(b[n])} from "
                    f"{against}" + (f" (the {n} bytes before it agree)" if n else ""))
        return (f"output is {len(a)} bytes in {what}, {len(b)} from {against} (the first "
                f"{min(len(a), len(b))} agree)")
    if (got.status, got.err_pc, got.err_value) != (want.status, want.err_pc, want.err_value):
        return f"{what} {_ending(program, got)}; {against} {_ending(program, want)}"
    if got.tape and want.tape and got.tape != want.tape:
        n = next((i for i in range(min(len(got.tape), len(want.tape)))
                  if got.tape[i] != want.tape[i]), min(len(got.tape), len(want.tape)))
        if n < min(len(got.tape), len(want.tape)):
            return (f"tape cell {n} is {got.tape[n]} after {what}, {want.tape[n]} after "
                    f"{against}")
        return f"the tape is {len(got.tape)} cells in {what}, {len(want.tape)} in {against}"
    if got.tape and want.tape and got.head != want.head:
        return f"the tape head ends at cell {got.head} in {what}, {want.head} in {against}"
    if got.locals and want.locals and got.locals != want.locals:
        i = next(i for i, (x, y) in enumerate(zip(got.locals, want.locals)) if x != y)
        fn = program.functions[0]
        name = fn.local_names[i] if i < len(fn.local_names) else None
        label = f"local {i}" + (f" ({name})" if name else "")
        return f"{label} of {fn.name} ends as {got.locals[i]} in {what}, {want.locals[i]} in " \
               f"{against}"
    if got.counts and want.counts and got.counts != want.counts:
        i = next(i for i, (x, y) in enumerate(zip(got.counts, want.counts)) if x != y)
        return (f"{isa.INSTRUCTIONS[i].name} ran {got.counts[i]} times in {what}, "
                f"{want.counts[i]} in {against}")
    return None
