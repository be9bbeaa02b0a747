"""The floors beside the crossing costs: machine code that repeats one
primitive, timed in the same run and the same way; CONTAINS says which
floor's primitive holds which other's (tests/test_floors.py checks it).

  jump       a chain of direct jumps, one per 16 bytes
  indirect   a predicted indirect jump through a table, one per 16 bytes
  call-ret   a call and its return, one call per 16 bytes
  call-save6 the same calls to the same place, the callee first saving and
             restoring the six callee-saved registers (rbx, rbp, r12-r15):
             what a C shim adds

Each floor is a function f(n) looping n times over U copies of the
primitive; the cost of one copy is the difference between U = U_HI and
U = U_LO, divided by (U_HI - U_LO) * n, so the loop itself cancels out.
"""
from __future__ import annotations

import statistics
import struct

from ..errors import ShimlabError

FLOORS = ("jump", "indirect", "call-ret", "call-save6")
# floor -> the floors it contains, so it must cost at least as much: an
# indirect jump is a jump whose target is loaded, a call a direct jump that
# also pushes, call-save6 the code of call-ret with the saves added
CONTAINS = {"indirect": ("jump",), "call-ret": ("jump",), "call-save6": ("call-ret",)}
U_LO, U_HI = 1, 17
N = 100_000
# (lo, hi) pairs per sample, each over N // SPLIT iterations: a pair then lasts
# well under a scheduler tick, so a preemption spoils one pair, which the
# median drops, instead of the sample (at N in one go, about 5 ms, a busy
# CPU preempted nearly every U_HI run: +6 cycles a copy, in steps)
SPLIT = 10
# machine instructions per copy (exact: the code is straight-line); the
# calls' 16-byte slots hold an 11-byte NOP after each call, which runs
INSTRUCTIONS = {"jump": 1, "indirect": 1, "call-ret": 3, "call-save6": 15}
SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")
SLOT = 16           # bytes per copy, in every floor
# the 11-byte NOP of GNU as, one instruction (data16 data16 cs nopw 0(%rax,%rax))
NOP11 = b"\x66\x66\x2E\x0F\x1F\x84\x00\x00\x00\x00\x00"
# offset of the callee's ret in its cache line, in both call floors: the
# saves (20 bytes) end there
RET_AT = 20


def _saves() -> bytes:
    from peachpy import x86_64 as X
    out = b"".join(bytes(X.PUSH(getattr(X, r)).encode()) for r in SAVED)
    return out + b"".join(bytes(X.POP(getattr(X, r)).encode()) for r in reversed(SAVED))


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
            out += b"\xEB" + bytes([SLOT - 2]) + b"\xCC" * (SLOT - 2)
        elif kind == "indirect":
            out += bytes(X.JMP(X.qword[X.rsi + 8 * k + 0x100]).encode())  # disp32 for all k
            out += b"\xCC" * (SLOT - 6)                          # skipped: the table says where
        else:
            # one call per 16 bytes, as the jumps and for the same reason: 5-byte
            # calls back to back measured 0.3 cycles a copy more, NOP and all
            call_fixes.append(len(out) + 1)
            out += b"\xE8\x00\x00\x00\x00" + NOP11
        element_ends.append(len(out))
    out += bytes(X.DEC(X.rdi).encode())
    out += b"\x0F\x85" + struct.pack("<i", loop - (len(out) + 6))  # jnz loop
    out += b"\xC3"
    if call_fixes:
        # The callee gets a cache line of its own, its ret at the same address
        # in both call floors: call-save6 is call-ret plus the saves, byte for
        # byte (but the calls' displacement), so no difference of layout can
        # make it the cheaper one.
        out += b"\xCC" * (-len(out) % 64)
        saves = _saves() if kind == "call-save6" else b""
        callee = len(out) + RET_AT - len(saves)
        out += b"\xCC" * (callee - len(out)) + saves + b"\xC3"
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


def place(ffi, memory, kind: str) -> dict:
    """The U_LO and U_HI functions of floor `kind`, in executable memory."""
    fns = {}
    for copies in (U_LO, U_HI):
        size = len(code(kind, copies, 0))
        addr = memory.place(size, lambda base, c=copies: code(kind, c, base))
        fns[copies] = ffi.cast("void *", addr)
    return fns


def sample(lib, fns: dict, n: int = N) -> int:
    """cycles(U_HI) - cycles(U_LO) for n iterations: the median over SPLIT pairs."""
    m = max(n // SPLIT, 1)
    diffs = []
    for _ in range(SPLIT):
        lo = int(lib.sl_time_code(fns[U_LO], m))
        diffs.append(int(lib.sl_time_code(fns[U_HI], m)) - lo)
    return max(round(statistics.median(diffs) * n / m), 1)


def measure(lib, ffi, memory, kind: str, samples: int, warmup: int, n: int = N) -> list[int]:
    """Per sample: cycles(U_HI) - cycles(U_LO) for n iterations."""
    fns = place(ffi, memory, kind)
    out = [sample(lib, fns, n) for _ in range(warmup + samples)]
    return out[warmup:]


def elements_per_sample(n: int = N) -> int:
    return (U_HI - U_LO) * n
