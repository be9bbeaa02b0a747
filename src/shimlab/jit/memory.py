"""Executable memory for traces, W^X (through csrc/jitmem.c).

Each trace gets its own mapping: filled while read-write, then made
read-execute, never both.  If the kernel refuses to make memory executable
(PR_SET_MDWE), later traces use two views of one memfd instead; if that is
refused too, the JIT fails with an error that says so.
"""
from __future__ import annotations

import errno
import os

from ..errors import ShimlabError

PAGE = os.sysconf("SC_PAGE_SIZE")


class MemoryError_(ShimlabError):
    pass


class CodeMemory:
    def __init__(self, lib, ffi, near: int):
        self.lib, self.ffi = lib, ffi
        self.dual = False              # switched on when mprotect to exec is refused
        self.hint = max((near & ~(PAGE - 1)) - (64 << 20), PAGE)   # below the interpreter
        self.mappings: list[tuple[int, int]] = []
        self.bytes = 0

    def place(self, size: int, fill) -> int:
        """Maps size bytes, writes fill(address) there, seals; returns the address."""
        size = -(-size // PAGE) * PAGE
        for attempt in ("as configured", "dual"):
            rw, rx = self.ffi.new("void **"), self.ffi.new("void **")
            self.hint -= size
            err = self.lib.sl_jit_map(size, self.ffi.cast("void *", self.hint), int(self.dual),
                                      rw, rx)
            if err:
                raise MemoryError_(f"cannot map JIT memory: {os.strerror(err)}")
            rx_addr = int(self.ffi.cast("uintptr_t", rx[0]))
            code = fill(rx_addr)
            self.ffi.memmove(rw[0], code, len(code))
            err = self.lib.sl_jit_seal(rw[0], rx[0], size)
            if not err:
                self.mappings.append((rx_addr, size))
                self.bytes += size
                return rx_addr
            self.lib.sl_jit_unmap(rx[0], size)
            if self.dual or err not in (errno.EACCES, errno.EPERM):
                raise MemoryError_(f"cannot make JIT memory executable: {os.strerror(err)}")
            self.dual = True           # MDWE: fill a writable view, run an executable one
        raise MemoryError_("cannot make JIT memory executable (both ways refused)")

    def release(self) -> None:
        for addr, size in self.mappings:
            self.lib.sl_jit_unmap(self.ffi.cast("void *", addr), size)
        self.mappings.clear()
