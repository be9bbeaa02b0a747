"""Stencils for the BF tape: cells under a bounds-checked head, input, output.

A head move out of bounds, or output with the buffer full, deopts: the
interpreter re-runs the instruction and reports the error or grows the
buffer.  Fields of sl_vm are addressed from the vm register with offsets read
from vm.h.
"""
from peachpy.x86_64 import (ADD, CMP, INC, LEA, MOV, MOVZX, SUB, byte, dl, edx, eax, al, qword,
                            rax, rcx)

from .asm import HEAD, VM, addend, low32, stencil, vm_offset


@stencil("CELL_ADD")
def cell_add(a):
    a(MOV(eax, low32(a.hole("oparg"))), ADD(byte[HEAD], al))


@stencil("CELL_ZERO")
def cell_zero(a):
    a(MOV(byte[HEAD], 0))


@stencil("MOVE")
def move(a):
    """head += n, deopt unless 0 <= new position < tape_len"""
    a(LEA(rax, [HEAD + addend(a.hole("oparg"))]), MOV(rcx, rax), SUB(rcx, qword[VM + vm_offset("tape")]),
      CMP(rcx, qword[VM + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")
    a(MOV(HEAD, rax))


def _output(load_byte):
    def emit(a):
        a(MOV(rax, qword[VM + vm_offset("out_len")]), CMP(rax, qword[VM + vm_offset("out_cap")]))
        a.jcc_hole("ae", "deopt")
        load_byte(a)
        a(MOV(rcx, qword[VM + vm_offset("out")]), MOV(byte[rcx + rax * 1], dl), INC(rax),
          MOV(qword[VM + vm_offset("out_len")], rax))
    return emit


stencil("CELL_OUT", "output the current cell; deopt when the buffer is full")(
    _output(lambda a: a(MOVZX(edx, byte[HEAD]))))
stencil("PRINT_BYTE", "output the byte ARG; deopt when the buffer is full")(
    _output(lambda a: a(MOV(edx, low32(a.hole("oparg"))))))


@stencil("CELL_IN")
def cell_in(a):
    """read a byte into the cell; unchanged at end of input"""
    a(MOV(rax, qword[VM + vm_offset("in_pos")]), CMP(rax, qword[VM + vm_offset("in_len")]))
    a.jcc("ge", "done")
    a(MOV(rcx, qword[VM + vm_offset("in")]), MOVZX(edx, byte[rcx + rax * 1]), MOV(byte[HEAD], dl),
      INC(rax), MOV(qword[VM + vm_offset("in_pos")], rax))
    a.label("done")
