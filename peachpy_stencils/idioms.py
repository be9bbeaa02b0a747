"""Stencils of the BF idiom instructions (--bf-opt 1): cells at an offset from
the head, a multiply loop's step, a scan, two adds in one and the move fused
into a loop test.  Each checks its cell against the tape and deopts when it
is outside, so the interpreter reports the error; a deopt changes nothing (a
scan moves the head only once it has found its cell, CELL_ADD2_AT checks
both cells before it adds to either).
"""
from peachpy.x86_64 import (ADD, CDQE, CMOVB, CMP, IMUL, LEA, MOV, MOVSXD, MOVZX, NEG, POP, PUSH, ROR,
                            SAR, SHL, SUB, TEST, al, dh, r8b, r8d,
                            byte, dl, eax, edx, qword, r8, rax, rcx, rdx)

from .asm import addend, low32, stencil, vm_offset


def _checked_cell(a, r):
    """rcx = the address of the cell at head + the "cell" operand, checked."""
    a(LEA(rcx, [r.head + addend(a.hole("cell"))]), MOV(rax, rcx),
      SUB(rax, qword[r.vm + vm_offset("tape")]), CMP(rax, qword[r.vm + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")


@stencil("CELL_ADD_AT")
def cell_add_at(a, r):
    """add a byte to the cell at an offset from the head"""
    _checked_cell(a, r)
    a(MOV(eax, low32(a.hole("byte"))), ADD(byte[rcx], al))


@stencil("CELL_SET_AT")
def cell_set_at(a, r):
    """set the cell at an offset from the head"""
    _checked_cell(a, r)
    a(MOV(eax, low32(a.hole("byte"))), MOV(byte[rcx], al))


@stencil("CELL_MULADD")
def cell_muladd(a, r):
    """cell[head + offset] += factor * cell[head]; nothing when the counter is 0"""
    a(MOVZX(edx, byte[r.head]), TEST(edx, edx))
    a.jcc("z", "done")
    _checked_cell(a, r)
    factor = low32(a.hole("byte"))
    a(IMUL(edx, edx, factor) if isinstance(factor, int) else IMUL(edx, factor))
    a(ADD(byte[rcx], dl))
    a.label("done")


@stencil("SCAN")
def scan(a, r):
    """move by the step until the cell is zero; deopt (head unmoved) at the tape's end.
    Each step: the cell's position (rcx less the tape, from r8) under the
    tape's length (rax), both loaded once"""
    step = addend(a.hole("oparg"))
    a(MOV(rcx, r.head), MOV(r8, qword[r.vm + vm_offset("tape")]), NEG(r8),
      MOV(rax, qword[r.vm + vm_offset("tape_len")]))
    a.jmp("test")
    a.label("loop")
    a(LEA(rcx, [rcx + step]), LEA(rdx, [rcx + r8 * 1]), CMP(rdx, rax))
    a.jcc_hole("ae", "deopt")
    a.label("test")
    a(CMP(byte[rcx], 0))
    a.jcc("ne", "loop")
    a(MOV(r.head, rcx))


def _pos(a, r):
    """rax (a signed cell offset) becomes the cell's position on the tape (unchecked)."""
    a(CDQE(), ADD(rax, r.head), SUB(rax, qword[r.vm + vm_offset("tape")]))


@stencil("CELL_ADD2_AT")
def cell_add2_at(a, r):
    """two adds at offsets (operand: offset a, byte a, offset b, byte b, a byte each);
    one check of the farther position on the tape"""
    a(MOV(edx, low32(a.hole("oparg"))))
    a(MOV(eax, edx), SHL(eax, 16), SAR(eax, 24))          # offset b
    _pos(a, r)
    a(MOV(rcx, rax))
    a(MOV(eax, edx), SAR(eax, 24))                        # offset a
    _pos(a, r)
    a(MOV(r8, rax), CMP(r8, rcx), CMOVB(r8, rcx), CMP(r8, qword[r.vm + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")                            # unsigned: either off the tape
    a(ADD(rax, qword[r.vm + vm_offset("tape")]), ADD(rcx, qword[r.vm + vm_offset("tape")]))
    a(ROR(edx, 16), ADD(byte[rax], dl), ROR(edx, 16), ADD(byte[rcx], dl))


def _move(a, r):
    """the head moves by the "cell" operand, or deopts (head unmoved) off the tape"""
    a(LEA(rax, [r.head + addend(a.hole("cell"))]), MOV(rcx, rax),
      SUB(rcx, qword[r.vm + vm_offset("tape")]), CMP(rcx, qword[r.vm + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")
    a(MOV(r.head, rax), CMP(byte[rax], 0))


def _move_guard(cc):
    def emit(a, r):
        _move(a, r)
        a.jcc_hole(cc, "branch")
    return emit


# the move and the loop test in one (MOVE then JUMP_IF_CELL_ZERO or LOOP_IF_CELL)
stencil("MOVE_JUMP_IF_CELL_ZERO:taken", "move; leave unless the cell is zero")(_move_guard("ne"))
stencil("MOVE_JUMP_IF_CELL_ZERO:fallthrough", "move; leave if the cell is zero")(_move_guard("e"))
stencil("MOVE_LOOP_IF_CELL:fallthrough", "move; leave if the cell is non-zero")(_move_guard("ne"))
stencil("MOVE_LOOP_IF_CELL:taken", "move; leave past the loop if the cell is zero")(
    _move_guard("e"))


@stencil("MOVE_LOOP_IF_CELL:close")
def move_loop_close(a, r):
    """move; back to the start while the cell is non-zero, else leave past the loop"""
    _move(a, r)
    a.jcc_hole("ne", "loop")
    a.jmp_hole("branch")


@stencil("MOVE_LOOP_IF_CELL:inner")
def move_loop_inner(a, r):
    """move; an inner loop's back-edge while the cell is non-zero"""
    _move(a, r)
    a.jcc_hole("ne", "loop")


# Tests and move loops at offsets from the head (--bf-opt 1's balanced
# loops): the packed operand is taken apart at run time, so the same bodies
# serve a trace at --jit-opt 0 (an immediate) and the asm interpreter (ip->arg).
# Registers: rax, rcx, rdx and r8 only, as CELL_ADD2_AT.

def _at_pos(a, r, reg):
    """reg (rax or rcx; a signed cell offset in its low half) becomes the
    cell's position on the tape, checked: deopt off the tape."""
    a(MOVSXD(reg, reg.as_dword), ADD(reg, r.head), SUB(reg, qword[r.vm + vm_offset("tape")]),
      CMP(reg, qword[r.vm + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")


def _at_test(a, r):
    """flags: the cell at head + (oparg >> 24) against 0 (checked)"""
    a(MOV(eax, low32(a.hole("oparg"))), SAR(eax, 24))
    _at_pos(a, r, rax)
    a(ADD(rax, qword[r.vm + vm_offset("tape")]), CMP(byte[rax], 0))


def _at_guard(cc):
    def emit(a, r):
        _at_test(a, r)
        a.jcc_hole(cc, "branch")
    return emit


stencil("JUMP_IF_CELL_ZERO_AT:taken", "leave unless the cell at the offset is zero")(
    _at_guard("ne"))
stencil("JUMP_IF_CELL_ZERO_AT:fallthrough", "leave if the cell at the offset is zero")(
    _at_guard("e"))
stencil("LOOP_IF_CELL_AT:fallthrough", "leave if the cell at the offset is non-zero")(
    _at_guard("ne"))
stencil("LOOP_IF_CELL_AT:taken", "leave past the loop if the cell at the offset is zero")(
    _at_guard("e"))


@stencil("LOOP_IF_CELL_AT:close")
def loop_at_close(a, r):
    """back to the start while the cell at the offset is non-zero, else leave past the loop"""
    _at_test(a, r)
    a.jcc_hole("ne", "loop")
    a.jmp_hole("branch")


@stencil("LOOP_IF_CELL_AT:inner")
def loop_at_inner(a, r):
    """an inner loop's back-edge while the cell at the offset is non-zero"""
    _at_test(a, r)
    a.jcc_hole("ne", "loop")


def _offset(a, reg, shl: int) -> None:
    """reg = the signed byte of edx that `shl` bits up puts on top, as an offset."""
    a(MOV(reg.as_dword, edx))
    if shl:
        a(SHL(reg.as_dword, shl))
    a(SAR(reg.as_dword, 24), MOVSXD(reg, reg.as_dword))


def _move_at(two: bool, clear: bool):
    """One check of the farthest of the cells (the targets too, though a
    counter of 0 touches none: such a run deopts and the interpreter does it)."""
    def emit(a, r):
        tape = qword[r.vm + vm_offset("tape")]
        a(MOV(edx, low32(a.hole("oparg"))))
        _offset(a, rax, 0)                                  # the counter's position
        a(ADD(rax, r.head), SUB(rax, tape))
        _offset(a, rcx, 8)                                  # the target's
        a(ADD(rcx, r.head), SUB(rcx, tape), MOV(r8, rcx), CMP(r8, rax), CMOVB(r8, rax))
        if two:                                             # and the farthest of the three
            a(PUSH(rax))
            _offset(a, rax, 16)
            a(ADD(rax, r.head), SUB(rax, tape), CMP(r8, rax), CMOVB(r8, rax), POP(rax))
        a(CMP(r8, qword[r.vm + vm_offset("tape_len")]))
        a.jcc_hole("ae", "deopt")
        a(ADD(rax, tape), MOVZX(r8d, byte[rax]), TEST(r8d, r8d))
        a.jcc("z", "done")
        if clear:
            a(MOV(byte[rax], 0))
        if two:
            # times the factor (the low byte): the other bytes of edx add
            # multiples of 256, which the byte-wide adds drop
            a(IMUL(r8d, edx))
            _offset(a, rax, 16)
            a(ADD(rax, r.head), ADD(byte[rax], r8b))
        else:
            a(MOVZX(eax, dh), IMUL(r8d, eax))
        a(ADD(rcx, tape), ADD(byte[rcx], r8b))
        a.label("done")
    return emit


stencil("CELL_MULADD_AT", "cell[head + t] += cell[head + c] * factor (nothing when that is 0)")(
    _move_at(False, False))
stencil("CELL_MOVE_AT", "CELL_MULADD_AT, then the counter cleared")(_move_at(False, True))
stencil("CELL_MOVE2_AT", "a move loop to two cells at offsets, the counter cleared")(
    _move_at(True, True))


@stencil("CELL_COPY_AT")
def cell_copy_at(a, r):
    """BF's copy through a spare cell: t += a, a += u, u = 0 (operand: a, t, u a
    byte each, top first); one check of the farthest of the three cells"""
    tape = qword[r.vm + vm_offset("tape")]
    a(MOV(edx, low32(a.hole("oparg"))))
    _offset(a, rax, 0)                                      # a
    a(ADD(rax, r.head), SUB(rax, tape))
    _offset(a, rcx, 8)                                      # t
    a(ADD(rcx, r.head), SUB(rcx, tape), MOV(r8, rcx), CMP(r8, rax), CMOVB(r8, rax))
    a(PUSH(rax))
    _offset(a, rax, 16)                                     # u
    a(ADD(rax, r.head), SUB(rax, tape), CMP(r8, rax), CMOVB(r8, rax), POP(rax))
    a(CMP(r8, qword[r.vm + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")
    a(ADD(rax, tape), ADD(rcx, tape), MOVZX(r8d, byte[rax]), ADD(byte[rcx], r8b))   # t += a
    _offset(a, rcx, 16)
    a(ADD(rcx, r.head), ADD(r8b, byte[rcx]), MOV(byte[rax], r8b), MOV(byte[rcx], 0))


@stencil("CELL_MOVE_PAIR_AT")
def cell_move_pair_at(a, r):
    """two move loops of factor 1, one after the other (operand: counter 1,
    target 1, counter 2, target 2, a byte each); one check of the farthest of
    the four cells first"""
    tape = qword[r.vm + vm_offset("tape")]
    a(MOV(edx, low32(a.hole("oparg"))))
    a(MOV(r8d, 0))                                          # the farthest position so far
    for shl in (0, 8, 16, 24):
        _offset(a, rax, shl)
        a(ADD(rax, r.head), SUB(rax, tape), CMP(r8, rax), CMOVB(r8, rax))
    a(CMP(r8, qword[r.vm + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")
    for shl in (0, 16):                                     # counter, then target
        _offset(a, rax, shl)
        _offset(a, rcx, shl + 8)
        a(ADD(rax, r.head), ADD(rcx, r.head), MOVZX(r8d, byte[rax]), MOV(byte[rax], 0),
          ADD(byte[rcx], r8b))
