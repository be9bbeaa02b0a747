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
MAX_FDS = 256            # memfds kept open to patch dual-mapped traces (one a trace)
UNPATCHABLE = -2
_MASK64 = (1 << 64) - 1


class MemoryError_(ShimlabError):
    pass


class CodeMemory:
    def __init__(self, lib, ffi, near: int, seed: int | None = None):
        self.lib, self.ffi = lib, ffi
        # Each trace starts at a random cache line of its first page: traces all
        # at page offset 0 would share the low address bits branch predictors
        # index by, and alias in them (one layout per process, as for the VM).
        # (A xorshift of its own: the random module is ~0.7 ms of a JIT run's start.)
        self._state = (seed if seed is not None else
                       int.from_bytes(os.urandom(8), "little")) & _MASK64 or 1
        self.dual = False              # switched on when mprotect to exec is refused
        self.hint = max((near & ~(PAGE - 1)) - (64 << 20), PAGE)   # below the interpreter
        self.mappings: list[tuple[int, int]] = []      # (address, size) of each trace's code
        self._fds: dict[int, int] = {}                  # address -> its memfd (dual), or -1
        self.bytes = 0
        # sl_jit_map's out-parameters, made once (read right after each call)
        self._out = (ffi.new("void **"), ffi.new("void **"), ffi.new("int *"))

    def place(self, size: int, fill) -> int:
        """Maps size bytes, writes fill(address) there, seals; returns the address."""
        offset = self._next() % (PAGE // 64) * 64
        size = -(-(size + offset) // PAGE) * PAGE
        for attempt in ("as configured", "dual"):
            out_rw, out_rx, out_fd = self._out
            self.hint -= size
            err = self.lib.sl_jit_map(size, self.ffi.cast("void *", self.hint), int(self.dual),
                                      out_rw, out_rx, out_fd)
            if err:
                raise MemoryError_(f"cannot map JIT memory: {os.strerror(err)}")
            rw, rx, fd = out_rw[0], out_rx[0], out_fd[0]
            rx_addr = int(self.ffi.cast("uintptr_t", rx))
            code = fill(rx_addr + offset)
            # int3 around the code, the code at its offset
            self.ffi.memmove(rw, b"\xCC" * offset + code + b"\xCC" * (size - offset - len(code)),
                             size)
            err = self.lib.sl_jit_seal(rw, rx, size)
            if not err:
                self.mappings.append((rx_addr, size))
                if fd >= 0 and sum(1 for f in self._fds.values() if f >= 0) >= MAX_FDS:
                    os.close(fd)       # past this many, dual-mapped traces stay unpatched
                    fd = UNPATCHABLE
                self._fds[rx_addr] = fd
                self.bytes += size
                return rx_addr + offset
            self.lib.sl_jit_unmap(rx, size, fd)
            if self.dual or err not in (errno.EACCES, errno.EPERM):
                raise MemoryError_(f"cannot make JIT memory executable: {os.strerror(err)}")
            self.dual = True           # MDWE: fill a writable view, run an executable one
        raise MemoryError_("cannot make JIT memory executable (both ways refused)")

    def _next(self) -> int:
        """The next number of the xorshift64* sequence the seed starts."""
        x = self._state
        x ^= x >> 12
        x ^= (x << 25) & _MASK64
        x ^= x >> 27
        self._state = x
        return ((x * 0x2545F4914F6CDD1D) & _MASK64) >> 32

    def patch(self, at: int, data: bytes) -> None:
        """Rewrites sealed code at address `at` (W^X kept: see sl_jit_patch)."""
        for addr, size in self.mappings:
            if addr <= at and at + len(data) <= addr + size:
                if self._fds[addr] == UNPATCHABLE:
                    raise MemoryError_("this trace's memfd is closed: it cannot be patched")
                err = self.lib.sl_jit_patch(self.ffi.cast("void *", addr), size, self._fds[addr],
                                            self.ffi.cast("void *", at), data, len(data))
                if err:
                    raise MemoryError_(f"cannot patch JIT code: {os.strerror(err)}")
                return
        raise MemoryError_(f"no JIT mapping holds address {at:#x}")

    def release(self) -> None:
        for addr, size in self.mappings:
            self.lib.sl_jit_unmap(self.ffi.cast("void *", addr), size,
                                  max(self._fds.pop(addr, -1), -1))
        self.mappings.clear()
        self.bytes = 0
