"""Stencils for constants, locals and the operand stack.

sp (r.sp: r13 in clang's preserve_none order, derived per compiler by
abi/contract.py) points at the next free slot, so the top of stack is [sp - 8].
"""
from peachpy.x86_64 import ADD, MOV, SUB, qword, rax

from .asm import stencil


@stencil("NOP")
def nop(a, r):
    """nothing: the trace simply goes on"""


@stencil("LOAD_INT")
def load_int(a, r):
    a(MOV(qword[r.sp], a.hole("oparg")), ADD(r.sp, 8))


@stencil("LOAD_CONST")
def load_const(a, r):
    a(MOV(rax, a.hole("const")), MOV(qword[r.sp], rax), ADD(r.sp, 8))


@stencil("LOAD_LOCAL")
def load_local(a, r):
    a(MOV(rax, qword[r.fp + a.hole("local")]), MOV(qword[r.sp], rax), ADD(r.sp, 8))


@stencil("STORE_LOCAL")
def store_local(a, r):
    a(MOV(rax, qword[r.sp - 8]), SUB(r.sp, 8), MOV(qword[r.fp + a.hole("local")], rax))


@stencil("POP")
def pop(a, r):
    a(SUB(r.sp, 8))


@stencil("DUP")
def dup(a, r):
    a(MOV(rax, qword[r.sp - 8]), MOV(qword[r.sp], rax), ADD(r.sp, 8))
