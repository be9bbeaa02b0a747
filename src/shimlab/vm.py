"""Runs programs on a compiled interpreter through cffi.

The cffi declarations are read from csrc/vm.h (between cdef-begin and
cdef-end), so the Python view of the VM state cannot drift from the C one.
"""
from __future__ import annotations

import re
from functools import lru_cache

import cffi

from . import isa, reference
from . import build as build_mod
from .build import CSRC, Build
from .bytecode import Program
from .errors import RunError
from .isa import Error
from .reference import Result

SL_JIT_RECORDED = 100     # vm.h: a recording is ready for the JIT

# jit-table's per-trace opcodes after ENTER_JIT (SL_JIT_TABLE_SLOTS in csrc/jit_interp.h)
TABLE_SLOTS = 4096

_FUNCTIONS = """
int sl_prepare(sl_vm *vm);
void sl_release(sl_vm *vm);
int sl_reset(sl_vm *vm);
int sl_check_code(const sl_vm *vm);
int sl_run(sl_vm *vm);
int sl_resume(sl_vm *vm);
int sl_interpret(sl_vm *vm);
int sl_bench(sl_vm *vm, int32_t warmup, int32_t samples, uint64_t *cycles, int64_t *ns);
uint64_t sl_tsc_now(void);
int64_t sl_clock_ns(void);
extern const void *sl_handler_addrs[];
extern const char *const sl_variant;
int sl_jit_map(size_t size, void *hint, int dual, void **rw, void **rx);
int sl_jit_seal(void *rw, void *rx, size_t size);
int sl_jit_unmap(void *p, size_t size);
const sl_instr *sl_jit_run_trace(sl_vm *vm, void *trace);
uint64_t sl_time_code(void *fn, uint64_t n);
extern const void *sl_jit_enter_handler;
"""


@lru_cache(maxsize=None)
def ffi() -> cffi.FFI:
    text = (CSRC / "vm.h").read_text()
    m = re.search(r"/\* cdef-begin.*?\*/(.*)/\* cdef-end \*/", text, re.S)
    decls = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    f = cffi.FFI()
    f.cdef(decls + _FUNCTIONS)
    return f


@lru_cache(maxsize=None)
def _lib(path: str):
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
                 tape_len: int = reference.TAPE_LEN, stack_size: int = reference.STACK_SIZE,
                 max_depth: int = reference.MAX_DEPTH, layout_seed: int = 0,
                 jit: dict | None = None):
        if not program.verified:
            raise RunError(f"{program.name}: program was not verified")
        f = ffi()
        self.build, self.program = build, program
        self.lib = _lib(str(build.path))
        keep = self._keep = []
        vm = self.vm = f.new("sl_vm *")
        code = f.new("sl_instr[]", len(program.code))
        for i, (op, arg) in enumerate(program.code):
            code[i].op, code[i].arg = op, arg
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
        vm.stack_size, vm.tape_len, vm.max_depth = stack_size, tape_len, max_depth
        vm.counts = counts
        vm.layout_seed = layout_seed
        bad = self.lib.sl_check_code(vm)
        if bad:
            raise RunError(f"{program.name}: the C interpreter refused instruction {bad - 1}")
        self.jit = None
        if build_mod.is_jit(build.mode):
            from .jit.runtime import Jit
            self.jit = Jit(self, **(jit or {}))
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
    lib = _lib(str(build.path))
    vm = ffi().new("sl_vm *")     # code == NULL asks sl_interpret for the addresses
    lib.sl_interpret(vm)
    f = ffi()
    return [int(f.cast("uintptr_t", lib.sl_handler_addrs[i])) for i in range(isa.NUM_OPCODES)]


def describe_error(program: Program, result: Result) -> str:
    msg = result.status.message
    if result.status is Error.TAPE_BOUNDS:
        msg += f" (to cell {result.err_value})"
    pos = program.position(result.err_pc)
    where = f"{program.name}:{pos[0]}:{pos[1]}" if pos and pos[0] else program.name
    return f"{where}: runtime error at pc {result.err_pc}: {msg}"
