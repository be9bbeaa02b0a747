"""Stencils of the BF idiom instructions (--bf-opt 1): cells at an offset from
the head, a multiply loop's step, a scan, two adds in one and the move fused
into a loop test.  Each checks its cell against the tape and deopts when it
is outside, so the interpreter reports the error; a deopt changes nothing (a
scan moves the head only once it has found its cell, CELL_ADD2_AT checks
both cells before it adds to either).
"""
from peachpy.x86_64 import (ADD, CDQE, CMOVB, CMP, IMUL, LEA, MOV, MOVZX, ROR, SAR, SHL, SUB, TEST, al,
                            byte, dl, eax, edx, qword, r8, rax, rcx)

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
