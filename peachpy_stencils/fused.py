"""Stencils of the trace optimizer for stack code (jit/fuse.py): an
instruction's operands come straight from where they are, not through the
operand stack, and its result stays in a register.

Operand kinds, one letter each: s the memory stack's top (popped), l a local
([fp + local]), i an immediate, r the cached top of stack (TOS, the first
register the preserve_none argument list has left after the contract), and
x, y, z a local kept in rbx, r9, r10 (level 3, jit/reglocals.py).  A
stencil `opt:ADD:li` adds an immediate to a local into TOS; `opt:cmp:rl`
compares and `opt:leave-if:l` leaves the trace on its flags.  Scratch is
rax and rcx; rdx is TOS, so no stencil here uses it for anything else.

The locals' registers are ones no contract can hold VM state in: rbx is no
preserve_none argument register, and contract.STENCIL_SCRATCH reserves r9
and r10.  preserve_none callers keep nothing in them across a trace (the
callee preserves only rsp and rbp), and no instruction stencil touches
them.  A local in one is written through (`opt:keep:x:r` sets rbx and
[fp + local]), so the frame is exact at every exit.
"""
from peachpy.x86_64 import (ADD, AND, CMP, CQO, DEC, IDIV, IMUL, MOV, MOVZX, MUL, OR, SAR, SHL,
                            SHR, SUB, TEST, XOR, al, cl, ecx, edx, qword, r8, r9, r10, rax, rbx,
                            rcx, rdx)
from peachpy.x86_64 import SETE, SETG, SETGE, SETL, SETLE, SETNE

from .asm import stencil

TOS = rdx
REGS = {"x": rbx, "y": r9, "z": r10}   # locals kept in registers (jit/reglocals.py)
LEFT = "slir" + "".join(REGS)  # the left operand's kinds
RIGHT = "lir" + "".join(REGS)  # the right one's (a stack operand has all below it on the stack)
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
    if kind in REGS:
        return REGS[kind]
    return TOS


def _load(a, r, kind, dest, local="local", oparg="oparg"):
    """dest = an operand of `kind`: s popped off the stack, l a local, i the
    immediate, a register-kept local, else the cached top of stack (TOS)."""
    if kind == "s":
        a(MOV(dest, qword[r.sp - 8]), SUB(r.sp, 8))
    elif kind == "l":
        a(MOV(dest, qword[r.fp + a.hole(local)]))
    elif kind == "i":
        a(MOV(dest, a.hole(oparg)))
    elif kind in REGS:
        if REGS[kind] is not dest:
            a(MOV(dest, REGS[kind]))
    else:
        a(MOV(dest, TOS))


def _left_into_rax(a, r, kind):
    _load(a, r, kind, rax)


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
    for _left in "slr" + "".join(REGS):
        stencil(f"opt:{_op}:{_left}i", f"TOS = left {_op} a checked immediate")(_by_imm(_op, _left))


# Floor division and modulo by a constant d >= 2 without a divide: with t the
# sign of a (0 or -1), u = a ^ t is below 2**63 and floor(a / d) = (u // d) ^ t;
# u // d is the high half of u * m shifted right by s, with the reciprocal
# m < 2**64 and s that jit/fuse.py's magic() makes exact for every such u
# (the dividend has 63 bits: Granlund and Montgomery's condition).
# Holes: const m, oparg s, oparg2 d (modulo: a - q * d).  Scratch: rax, rcx, r8.
def _by_magic(op, left):
    def emit(a, r):
        _left_into_rax(a, r, left)
        a(MOV(r8, rax), CQO(), XOR(rax, rdx), MOV(rdx, a.hole("const")), MUL(rdx),
          MOV(ecx, a.hole("oparg")), SHR(rdx, cl), MOV(rax, r8), SAR(rax, 63), XOR(rdx, rax))
        if op == "MOD":
            a(IMUL(rdx, rdx, a.hole("oparg2")), SUB(r8, rdx), MOV(TOS, r8))
    return emit


for _op in ("FLOORDIV", "MOD"):
    for _left in "slr" + "".join(REGS):
        stencil(f"opt:{_op}:{_left}m", f"TOS = left {_op} a constant, by its reciprocal")(
            _by_magic(_op, _left))


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


# -- locals kept in registers (level 3): loaded at the trace's entry, read
# from the register, written through to the frame ------------------------

def _reg_local(k, reg):
    @stencil(f"opt:load:{k}", f"{reg} = a local (the trace's entry)")
    def load(a, r):
        a(MOV(reg, qword[r.fp + a.hole("local")]))

    @stencil(f"opt:push:{k}", f"push the local kept in {reg}")
    def push(a, r):
        a(MOV(qword[r.sp], reg), ADD(r.sp, 8))

    @stencil(f"opt:store:{k}", f"a local in memory = the local kept in {reg}")
    def store(a, r):
        a(MOV(qword[r.fp + a.hole("local")], reg))

    def keep(src):
        def emit(a, r):
            _load(a, r, src, reg, "local2", "oparg2")
            a(MOV(qword[r.fp + a.hole("local")], reg))
        return emit

    for src in "slir" + "".join(REGS):
        stencil(f"opt:keep:{k}:{src}",
                f"the local kept in {reg} = {src}, written through to the frame")(keep(src))


for _k, _reg in REGS.items():
    _reg_local(_k, _reg)


# the compare-and-branch fusion's other half: a JUMP_IF_* on a value in TOS
@stencil("opt:test:r")
def test_r(a, r):
    a(TEST(TOS, TOS))


del _NEGATE
