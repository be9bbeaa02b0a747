"""Stencils of the trace optimizer for stack code (jit/fuse.py): an
instruction's operands come straight from where they are, not through the
operand stack, and its result stays in a register.

Operand kinds, one letter each: s the memory stack's top (popped), l a local
([fp + local]), i an immediate, r the cached top of stack (TOS, the first
register the preserve_none argument list has left after the contract).  A
stencil `opt:ADD:li` adds an immediate to a local into TOS; `opt:cmp:rl`
compares and `opt:leave-if:l` leaves the trace on its flags.  Scratch is
rax and rcx; rdx is TOS, so no stencil here uses it for anything else.
"""
from peachpy.x86_64 import (ADD, AND, CMP, CQO, DEC, IDIV, IMUL, MOV, MOVZX, OR, SAR, SHL,
                            SUB, TEST, XOR, al, cl, ecx, edx, qword, rax, rcx, rdx)
from peachpy.x86_64 import SETE, SETG, SETGE, SETL, SETLE, SETNE

from .asm import stencil

TOS = rdx
LEFT = "slir"                  # the left operand's kinds
RIGHT = "lir"                  # the right one's (a stack operand has all below it on the stack)
PAIRS = [a + b for a in LEFT for b in RIGHT if a + b not in ("ii", "rr")]
CC = {"LT": "l", "LE": "le", "EQ": "e", "NE": "ne", "GT": "g", "GE": "ge"}
_SETCC = {"l": SETL, "le": SETLE, "e": SETE, "ne": SETNE, "g": SETG, "ge": SETGE}
_NEGATE = {"l": "ge", "le": "g", "e": "ne", "ne": "e", "g": "le", "ge": "l"}
ARITH = {"ADD": ADD, "SUB": SUB, "AND": AND, "OR": OR, "XOR": XOR}


def _right(a, r, kind):
    """The right operand as an x86 source operand."""
    if kind == "l":
        return qword[r.fp + a.hole("local2")]
    if kind == "i":
        return a.hole("oparg2")
    return TOS


def _left_into_rax(a, r, kind):
    if kind == "s":
        a(MOV(rax, qword[r.sp - 8]), SUB(r.sp, 8))
    elif kind == "l":
        a(MOV(rax, qword[r.fp + a.hole("local")]))
    elif kind == "i":
        a(MOV(rax, a.hole("oparg")))
    else:
        a(MOV(rax, TOS))


def _binop(op, pair):
    def emit(a, r):
        _left_into_rax(a, r, pair[0])
        src = _right(a, r, pair[1])
        if op == "MUL":
            a(IMUL(rax, rax, src) if isinstance(src, int) else IMUL(rax, src))
        else:
            a(ARITH[op](rax, src))
        a(MOV(TOS, rax))
    return emit


def _compare(pair):
    def emit(a, r):
        _left_into_rax(a, r, pair[0])
        a(CMP(rax, _right(a, r, pair[1])))
    return emit


for _pair in PAIRS:
    for _op in list(ARITH) + ["MUL"]:
        stencil(f"opt:{_op}:{_pair}", f"TOS = left {_op} right ({_pair})")(_binop(_op, _pair))
    stencil(f"opt:cmp:{_pair}", f"flags = compare left with right ({_pair})")(_compare(_pair))


def _setcc(cc):
    def emit(a, r):
        a(_SETCC[cc](al), MOVZX(edx, al))
    return emit


def _leave_if(cc):
    def emit(a, r):
        a.jcc_hole(cc, "branch")
    return emit


for _cc in _SETCC:
    stencil(f"opt:set:{_cc}", f"TOS = 1 if the compare said {_cc}, else 0")(_setcc(_cc))
    stencil(f"opt:leave-if:{_cc}", f"leave the trace if the compare said {_cc}")(_leave_if(_cc))


# Shifts, floor division and modulo by an immediate the optimizer has
# checked (a shift count 0..63, a divisor > 0), so they cannot fail.
def _by_imm(op, left):
    def emit(a, r):
        _left_into_rax(a, r, left)
        a(MOV(ecx, a.hole("oparg2")))
        if op == "LSHIFT":
            a(SHL(rax, cl))
        elif op == "RSHIFT":
            a(SAR(rax, cl))
        else:
            a(CQO(), IDIV(rcx))            # rax quotient, rdx remainder (truncated)
            a(TEST(rdx, rdx))
            a.jcc("ns", "done")
            # a negative remainder: floor means one less, and a remainder + divisor
            a(DEC(rax) if op == "FLOORDIV" else ADD(rdx, rcx))
            a.label("done")
            if op == "MOD":
                return
        a(MOV(TOS, rax))
    return emit


for _op in ("LSHIFT", "RSHIFT", "FLOORDIV", "MOD"):
    for _left in "slr":
        stencil(f"opt:{_op}:{_left}i", f"TOS = left {_op} a checked immediate")(_by_imm(_op, _left))


@stencil("opt:store:r")
def store_r(a, r):
    a(MOV(qword[r.fp + a.hole("local")], TOS))


@stencil("opt:store:i")
def store_i(a, r):
    a(MOV(qword[r.fp + a.hole("local")], a.hole("oparg2")))


@stencil("opt:store:l")
def store_l(a, r):
    a(MOV(rax, qword[r.fp + a.hole("local2")]), MOV(qword[r.fp + a.hole("local")], rax))


@stencil("opt:push:r")
def push_r(a, r):
    a(MOV(qword[r.sp], TOS), ADD(r.sp, 8))


@stencil("opt:push:l")
def push_l(a, r):
    a(MOV(rax, qword[r.fp + a.hole("local2")]), MOV(qword[r.sp], rax), ADD(r.sp, 8))


@stencil("opt:push:i")
def push_i(a, r):
    a(MOV(qword[r.sp], a.hole("oparg2")), ADD(r.sp, 8))


# the compare-and-branch fusion's other half: a JUMP_IF_* on a value in TOS
@stencil("opt:test:r")
def test_r(a, r):
    a(TEST(TOS, TOS))


del _NEGATE
