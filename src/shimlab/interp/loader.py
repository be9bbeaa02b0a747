"""Loads a built interpreter into this process and runs programs on it (cffi).

The JIT is not imported here: a JIT build's Loaded takes `hooks`, a factory
the caller passes (shimlab.vm passes the JIT runtime's), and calls it back
when the VM is prepared, when a recording is ready and when the run ends.
"""
from __future__ import annotations

from array import array
from collections.abc import Callable
from functools import lru_cache
from itertools import chain

from .. import isa, modes
from ..abi import vmh
from ..abi.vmh import ffi
from ..bytecode import Program
from ..errors import RunError
from ..isa import Error
from ..result import MAX_DEPTH, STACK_SIZE, TAPE_LEN, Result
from .build import Build

SL_JIT_RECORDED = vmh.constant("SL_JIT_RECORDED")      # a recording is ready for the JIT
# jit-table's per-trace opcodes after ENTER_JIT
TABLE_SLOTS = vmh.constant("SL_JIT_TABLE_SLOTS")


class Hooks:
    """What a JIT does at the VM's turning points (jit/runtime.py's Jit); a
    description only (typing.Protocol costs start-up time to import)."""
    def prepared(self) -> None: ...
    def recorded(self) -> None: ...
    def check(self) -> None: ...
    def close(self) -> None: ...

@lru_cache(maxsize=None)
def library(path: str):
    try:
        return ffi().dlopen(path)
    except OSError as e:
        if "__asan" in str(e) or "__ubsan" in str(e):
            # a sanitizer build (SHIMLAB_SANITIZE=1) in a process without the runtime
            raise RunError(f"{path} is a sanitizer build and needs its compiler's runtime "
                           f"preloaded: run under `python -m shimlab.sanitize --cc CC --`"
                           ) from None
        raise RunError(f"cannot load {path}: {e}") from None


class Loaded:
    """A program placed in a prepared VM of one build, ready to run many times."""

    def __init__(self, build: Build, program: Program, input: bytes = b"", *,
                 tape_len: int = TAPE_LEN, stack_size: int = STACK_SIZE,
                 max_depth: int = MAX_DEPTH, layout_seed: int = 0,
                 hooks: Callable[["Loaded"], Hooks] | None = None):
        if not program.verified:
            raise RunError(f"{program.name}: program was not verified")
        f = ffi()
        self.build, self.program = build, program
        self.lib = library(build.so)
        keep = self._keep = []
        vm = self.vm = f.new("sl_vm *")
        code = f.new("sl_instr[]", len(program.code))
        # sl_instr is two int32s, op then arg: the array's bytes in one copy
        # (a field set through cffi per instruction took ~1 us each)
        f.memmove(code, array("i", chain.from_iterable(program.code)), 8 * len(program.code))
        consts = f.new("int64_t[]", program.consts or [0])
        funcs = f.new("sl_func[]", len(program.functions))
        for i, fn in enumerate(program.functions):
            funcs[i].entry, funcs[i].nargs = fn.entry, fn.nargs
            funcs[i].nlocals, funcs[i].max_stack = fn.nlocals, fn.max_stack
        inbuf = f.new("uint8_t[]", input or b"\0")
        # JIT builds also count ENTER_JIT and jit-table's per-trace opcodes
        counts = f.new("uint64_t[]", isa.NUM_OPCODES + 1 + TABLE_SLOTS)
        keep += [code, consts, funcs, inbuf, counts]
        vm.code, vm.ncode = code, len(program.code)
        vm.consts, vm.nconsts = consts, len(program.consts)
        vm.funcs, vm.nfuncs = funcs, len(program.functions)
        setattr(vm, "in", inbuf)   # a C field named like a Python keyword
        vm.in_len = len(input)
        # a --cache K interpreter keeps K pad slots in every frame (interp/generate.py):
        # room for them on top, which its overflow check takes back out
        vm.stack_size = stack_size + build.cache * (max_depth + 1)
        vm.tape_len, vm.max_depth = tape_len, max_depth
        vm.counts = counts
        vm.layout_seed = layout_seed
        bad = self.lib.sl_check_code(vm)
        if bad:
            raise RunError(f"{program.name}: the C interpreter refused instruction {bad - 1}")
        if hooks is None and modes.is_jit(build.mode):
            raise RunError(f"a {build.mode} build runs only with its JIT: load it through "
                           f"shimlab.vm, which passes the JIT's hooks")
        self.jit = hooks(self) if hooks is not None else None
        if self.lib.sl_prepare(vm):
            self.lib.sl_release(vm)
            raise RunError("out of memory preparing the VM")
        if self.jit is not None:
            self.jit.prepared()

    def close(self) -> None:
        if self.vm is not None:
            self.lib.sl_release(self.vm)
            self.vm = None
            if self.jit is not None:
                self.jit.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def run(self) -> Result:
        f, vm = ffi(), self.vm
        for i in range(isa.NUM_OPCODES):
            vm.counts[i] = 0
        status = self.run_status()
        return Result(
            output=bytes(f.buffer(vm.out, vm.out_len)),
            status=Error(status), err_pc=vm.err_pc if status else -1,
            err_value=vm.err_value if status else 0,
            tape=bytes(f.buffer(vm.tape, vm.tape_len)),
            head=int(f.cast("intptr_t", vm.head)) - int(f.cast("intptr_t", vm.tape)),
            # main's frame is at the bottom of the stack whatever depth the run ended at
            locals=[int(vm.stack[i]) for i in range(self.program.functions[0].nlocals)],
            counts=[int(vm.counts[i]) for i in range(isa.NUM_OPCODES)] if self.build.count else [])

    def run_status(self) -> int:
        """One run (sl_run), with the JIT compiling whatever it recorded on the way."""
        status = self.lib.sl_run(self.vm)
        while status == SL_JIT_RECORDED and self.jit is not None:
            self.jit.recorded()
            status = self.lib.sl_resume(self.vm)
        if self.jit is not None:
            self.jit.check()
        return status

    def run_checked(self) -> None:
        """One run (sl_run) that must succeed: a run-time error is a RunError."""
        status = self.run_status()
        if status:
            raise RunError(f"{self.program.name}: {Error(status).message}")

    @property
    def cycles(self) -> int:
        return int(self.vm.cycles)

    @property
    def ns(self) -> int:
        return int(self.vm.ns)

    def bench(self, warmup: int, samples: int) -> tuple[list[int], list[int]]:
        """Runs warmup + samples times inside C; returns cycles and ns per sample."""
        f = ffi()
        cyc = f.new("uint64_t[]", samples)
        ns = f.new("int64_t[]", samples)
        status = self.lib.sl_bench(self.vm, warmup, samples, cyc, ns)
        while status == SL_JIT_RECORDED and self.jit is not None:
            # a loop got hot during the bench: compile, finish that run, and
            # measure again from the start (so no sample holds a compile)
            self.jit.recorded()
            status = self.lib.sl_resume(self.vm)
            while status == SL_JIT_RECORDED:
                self.jit.recorded()
                status = self.lib.sl_resume(self.vm)
            if not status:
                status = self.lib.sl_bench(self.vm, warmup, samples, cyc, ns)
        if self.jit is not None:
            self.jit.check()
        if status:
            raise RunError(f"{self.program.name}: {Error(status).message}")
        return [int(c) for c in cyc], [int(n) for n in ns]


def run(build: Build, program: Program, input: bytes = b"", **limits) -> Result:
    with Loaded(build, program, input, **limits) as loaded:
        return loaded.run()


def handler_addresses(build: Build) -> list[int]:
    """Start address of each opcode's handler (absolute, in this process)."""
    lib = library(build.so)
    vm = ffi().new("sl_vm *")     # code == NULL asks sl_interpret for the addresses
    lib.sl_interpret(vm)
    f = ffi()
    return [int(f.cast("uintptr_t", lib.sl_handler_addrs[i])) for i in range(isa.NUM_OPCODES)]
