"""The floors beside the crossing costs: machine code that repeats one
primitive, timed in the same run and the same way.

  jump       a chain of direct jumps (each to the next instruction)
  indirect   a predicted indirect jump through a table (each to the next)
  call-ret   a call and its return
  call-save6 a call to a function that saves and restores the six
             callee-saved registers (rbx, rbp, r12-r15): what a C shim adds

Each floor is a function f(n) looping n times over U copies of the
primitive; the cost of one copy is the difference between U = U_HI and
U = U_LO, divided by (U_HI - U_LO) * n, so the loop itself cancels out.
"""
from __future__ import annotations

import struct

from ..errors import ShimlabError

FLOORS = ("jump", "indirect", "call-ret", "call-save6")
U_LO, U_HI = 1, 17
N = 100_000
# machine instructions per copy (exact: the code is straight-line)
INSTRUCTIONS = {"jump": 1, "indirect": 1, "call-ret": 2, "call-save6": 14}
SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")


def code(kind: str, copies: int, base: int) -> bytes:
    """f(n) for floor `kind` with `copies` copies per iteration, run at `base`."""
    from peachpy import x86_64 as X
    if kind not in FLOORS:
        raise ShimlabError(f"unknown floor {kind!r} (choose from {', '.join(FLOORS)})")
    out = bytearray()
    table_fix = None
    if kind == "indirect":
        table_fix = len(out) + 2          # movabs rsi, imm64: the table's address
        out += bytes(X.MOV(X.rsi, 0x1122334455667788).encode())
    loop = len(out)
    element_ends, call_fixes = [], []
    for k in range(copies):
        if kind == "jump":
            # jmp over padding to the next copy: one taken jump per 16 bytes, as
            # in real code (a dense chain of 2-byte jumps measures the BTB instead)
            out += b"\xEB\x0E" + b"\xCC" * 14
        elif kind == "indirect":
            out += bytes(X.JMP(X.qword[X.rsi + 8 * k + 0x100]).encode())  # disp32 for all k
            out += b"\xCC" * (16 - 6)                            # skipped: the table says where
        else:
            call_fixes.append(len(out) + 1)
            out += b"\xE8\x00\x00\x00\x00"                      # call callee
        element_ends.append(len(out))
    out += bytes(X.DEC(X.rdi).encode())
    out += b"\x0F\x85" + struct.pack("<i", loop - (len(out) + 6))  # jnz loop
    out += b"\xC3"
    callee = len(out)
    if kind == "call-save6":
        for r in SAVED:
            out += bytes(X.PUSH(getattr(X, r)).encode())
        for r in reversed(SAVED):
            out += bytes(X.POP(getattr(X, r)).encode())
    out += b"\xC3"
    for at in call_fixes:
        struct.pack_into("<i", out, at, callee - (at + 4))
    if table_fix is not None:
        while len(out) % 8:
            out += b"\xCC"
        table = len(out)
        struct.pack_into("<q", out, table_fix, base + table - 0x100)
        for end in element_ends:
            out += struct.pack("<Q", base + end)
    return bytes(out)


def measure(lib, ffi, memory, kind: str, samples: int, warmup: int) -> list[int]:
    """Per sample: cycles(U_HI) - cycles(U_LO) for N iterations."""
    fns = {}
    for copies in (U_LO, U_HI):
        size = len(code(kind, copies, 0))
        addr = memory.place(size, lambda base, c=copies: code(kind, c, base))
        fns[copies] = ffi.cast("void *", addr)
    out = []
    for i in range(warmup + samples):
        lo = lib.sl_time_code(fns[U_LO], N)
        hi = lib.sl_time_code(fns[U_HI], N)
        if i >= warmup:
            out.append(max(int(hi) - int(lo), 1))
    return out


def elements_per_sample() -> int:
    return (U_HI - U_LO) * N
