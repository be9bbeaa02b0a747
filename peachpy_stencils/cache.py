"""The stencils that move cached values (--cache K) between their registers
and the memory stack inside a trace: a trace is entered with the interpreter's
top K stack values in registers and keeps them there until a stencil needs
the memory stack or a register they are in (jit/fuse.py VirtualStack).
Named by register, so one set serves every register order."""
from peachpy import x86_64
from peachpy.x86_64 import ADD, MOV, SUB, qword

from shimlab.abi.contract import CACHE_REGS

from .asm import stencil


def _variants(name: str) -> None:
    reg = getattr(x86_64, name)

    @stencil(f"opt:push:reg:{name}", f"push the cached value in {name} onto the memory stack")
    def push(a, r):
        a(MOV(qword[r.sp], reg), ADD(r.sp, 8))

    @stencil(f"opt:pop:reg:{name}", f"pop the memory stack's top into {name} (a cached value)")
    def pop(a, r):
        a(MOV(reg, qword[r.sp - 8]), SUB(r.sp, 8))


for _name in CACHE_REGS:
    _variants(_name)
