"""Stencils for constants, locals and the operand stack.

sp (r13) points at the next free slot, so the top of stack is [sp - 8].
"""
from peachpy.x86_64 import ADD, MOV, SUB, qword, rax

from .asm import FP, SP, stencil


@stencil("NOP")
def nop(a):
    """nothing: the trace simply goes on"""


@stencil("LOAD_INT")
def load_int(a):
    a(MOV(qword[SP], a.hole("oparg")), ADD(SP, 8))


@stencil("LOAD_CONST")
def load_const(a):
    a(MOV(rax, a.hole("const")), MOV(qword[SP], rax), ADD(SP, 8))


@stencil("LOAD_LOCAL")
def load_local(a):
    a(MOV(rax, qword[FP + a.hole("local")]), MOV(qword[SP], rax), ADD(SP, 8))


@stencil("STORE_LOCAL")
def store_local(a):
    a(MOV(rax, qword[SP - 8]), SUB(SP, 8), MOV(qword[FP + a.hole("local")], rax))


@stencil("POP")
def pop(a):
    a(SUB(SP, 8))


@stencil("DUP")
def dup(a):
    a(MOV(rax, qword[SP - 8]), MOV(qword[SP], rax), ADD(SP, 8))
