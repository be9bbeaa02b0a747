"""Stencils for arithmetic and comparisons on int64 with Python's semantics.

A case the fast path does not handle (division by zero or by -1, a negative
shift) leaves through the `deopt` exit before touching the stack, and the
interpreter runs the instruction itself, so errors and rare cases stay exact.
Results are stored relative to the old sp and sp moves last, so no load or
store waits for the sp update (the stack pointer is a dependency chain that
runs through every instruction).
"""
from peachpy.x86_64 import (ADD, AND, CMOVA, CMOVAE, CMP, CQO, IDIV, IMUL, LEA, MOV, NEG, NOT,
                            OR, SAR, SETE, SETG, SETGE, SETL, SETLE, SETNE, SHL, SUB, TEST, XOR,
                            cl, ecx, edx, qword, r8, rax, rcx, rdx)

from .asm import stencil


def _binop_in_place(op):
    def emit(a, r):
        a(MOV(rax, qword[r.sp - 8]), op(qword[r.sp - 16], rax), SUB(r.sp, 8))
    return emit


for _name, _op in (("ADD", ADD), ("SUB", SUB), ("AND", AND), ("OR", OR), ("XOR", XOR)):
    stencil(_name, f"a {_name.lower()} b, in place on the stack")(_binop_in_place(_op))


@stencil("MUL")
def mul(a, r):
    a(MOV(rax, qword[r.sp - 16]), IMUL(rax, qword[r.sp - 8]), MOV(qword[r.sp - 16], rax), SUB(r.sp, 8))


def _divide(result_reg):
    def emit(a, r):
        # b in {0, -1} deopts: zero raises, and INT64_MIN // -1 would trap in idiv
        a(MOV(rcx, qword[r.sp - 8]), LEA(rdx, [rcx + 1]), CMP(rdx, 1))
        a.jcc_hole("be", "deopt")
        a(MOV(rax, qword[r.sp - 16]), CQO(), IDIV(rcx))
        # floor: when the remainder is non-zero and its sign differs from b's,
        # the quotient goes down by one and the remainder up by b
        a(TEST(rdx, rdx)).jcc("e", "done")
        a(MOV(r8, rdx), XOR(r8, rcx)).jcc("ns", "done")
        a(SUB(rax, 1), ADD(rdx, rcx))
        a.label("done")
        a(MOV(qword[r.sp - 16], result_reg), SUB(r.sp, 8))
    return emit


stencil("FLOORDIV", "a // b, floor division")(_divide(rax))
stencil("MOD", "a % b, the sign of b")(_divide(rdx))


@stencil("LSHIFT")
def lshift(a, r):
    """a << b; b >= 64 gives 0, b < 0 deopts"""
    a(MOV(rcx, qword[r.sp - 8]), TEST(rcx, rcx))
    a.jcc_hole("s", "deopt")
    a(MOV(rax, qword[r.sp - 16]), SHL(rax, cl), XOR(edx, edx), CMP(rcx, 64), CMOVAE(rax, rdx),
      MOV(qword[r.sp - 16], rax), SUB(r.sp, 8))


@stencil("RSHIFT")
def rshift(a, r):
    """a >> b, arithmetic; b is clamped to 63, b < 0 deopts"""
    a(MOV(rcx, qword[r.sp - 8]), TEST(rcx, rcx))
    a.jcc_hole("s", "deopt")
    a(MOV(edx, 63), CMP(rcx, 63), CMOVA(rcx, rdx), MOV(rax, qword[r.sp - 16]), SAR(rax, cl),
      MOV(qword[r.sp - 16], rax), SUB(r.sp, 8))


@stencil("NEG")
def neg(a, r):
    a(NEG(qword[r.sp - 8]))


@stencil("INVERT")
def invert(a, r):
    a(NOT(qword[r.sp - 8]))


@stencil("NOT")
def not_(a, r):
    a(XOR(ecx, ecx), CMP(qword[r.sp - 8], 0), SETE(cl), MOV(qword[r.sp - 8], rcx))


def _compare(setcc):
    def emit(a, r):
        a(MOV(rax, qword[r.sp - 8]), XOR(ecx, ecx), CMP(qword[r.sp - 16], rax),
          setcc(cl), MOV(qword[r.sp - 16], rcx), SUB(r.sp, 8))
    return emit


for _name, _set in (("LT", SETL), ("LE", SETLE), ("EQ", SETE), ("NE", SETNE), ("GT", SETG),
                    ("GE", SETGE)):
    stencil(_name, f"a {_name.lower()} b as 0 or 1")(_compare(_set))
