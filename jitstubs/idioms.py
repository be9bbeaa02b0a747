"""Stencils of the BF idiom instructions (--bf-opt 1): cells at an offset from
the head, a multiply loop's step and a scan.  Each checks its cell against the
tape and deopts when it is outside, so the interpreter reports the error; a
deopt changes nothing (a scan moves the head only once it has found its cell).
"""
from peachpy.x86_64 import (ADD, CMP, IMUL, LEA, MOV, MOVZX, SUB, TEST, al, byte, dl, eax, edx,
                            qword, rax, rcx)

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
    """move by the step until the cell is zero; deopt (head unmoved) at the tape's end"""
    step = addend(a.hole("oparg"))
    a(MOV(rcx, r.head))
    a.label("loop")
    a(CMP(byte[rcx], 0))
    a.jcc("e", "done")
    a(LEA(rcx, [rcx + step]), MOV(rax, rcx), SUB(rax, qword[r.vm + vm_offset("tape")]),
      CMP(rax, qword[r.vm + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")
    a.jmp("loop")
    a.label("done")
    a(MOV(r.head, rcx))
