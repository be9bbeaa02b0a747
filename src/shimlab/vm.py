"""Runs programs on any built interpreter, the JIT modes included.

interp/loader.py loads a build and runs it; for a JIT mode this module hands
it the JIT runtime as its hooks, and with `streams` the input and output
fds the VM reads and writes as the program runs (progio.py).  Everything
that runs programs (the CLI, benchmark workers, tests, notebooks) comes
through here.
"""
from __future__ import annotations

from . import modes
from .abi import vmh
from .bytecode import Program
from .interp import loader
from .interp.build import Build
from .progio import OutputLimit, Streams, read_error, write_error
from .result import Result


class Loaded(loader.Loaded):
    """A program placed in a prepared VM of one build, ready to run many
    times; `jit` holds the JIT's options for a JIT mode (jit/runtime.py's Jit)."""

    def __init__(self, build: Build, program: Program, input: bytes = b"", *,
                 jit: dict | None = None, streams: Streams | None = None, **limits):
        hooks = None
        if modes.is_jit(build.mode):
            # imported here: a run of an interpreter mode never loads the JIT
            from .jit.runtime import Jit
            options = dict(jit or {})
            hooks = lambda loaded: Jit(loaded, **options)   # noqa: E731
        super().__init__(build, program, input, hooks=hooks, **limits)
        if streams is not None:
            v = self.vm
            if streams.in_fd is not None:       # read on past `input`, a chunk at a time
                v.in_fd, v.in_stream = streams.in_fd, 1
            if streams.out_fd is not None:      # written out as it fills, and at every stop
                v.out_fd, v.out_stream = streams.out_fd, 1
            v.out_max = streams.max_output or 0

    def run(self) -> Result:
        result = super().run()
        self.check_io()
        return result

    def check_io(self) -> None:
        """A run that stopped for its input or output raises its one-line
        error (the output up to there is written already)."""
        why = self.vm.io_error
        if why == vmh.constant("SL_IO_LIMIT"):
            raise OutputLimit(int(self.vm.out_max))
        if why == vmh.constant("SL_IO_WRITE"):
            raise write_error(int(self.vm.io_errno))
        if why == vmh.constant("SL_IO_READ"):
            raise read_error(int(self.vm.io_errno))

    def bench_relocating(self, samples: int, seed: int, warmup: int = 1
                         ) -> tuple[list[int], list[int]]:
        """Cycles and ns of `samples` runs, each in a layout of its own: the VM
        moved (code, stack, tape) and every installed trace re-placed, then
        `warmup` runs there before the measured one.  sl_bench draws a layout
        per run in C, but cannot move code that traces point into."""
        if self.jit is None:
            return self.bench(warmup, samples)
        cycles, ns = [], []
        for _ in range(samples):
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF or 1
            self.jit.relocate(seed)
            for _ in range(warmup):
                self.run_checked()
            self.run_checked()
            cycles.append(self.cycles)
            ns.append(self.ns)
        return cycles, ns


def run(build: Build, program: Program, input: bytes = b"", **limits) -> Result:
    with Loaded(build, program, input, **limits) as loaded:
        return loaded.run()
