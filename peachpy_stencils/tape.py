"""Stencils for the BF tape: cells under a bounds-checked head, input, output.

A head move out of bounds, output with the buffer full, or input with the
buffer empty before its end, deopts: the interpreter re-runs the instruction
and reports the error, writes out the output or reads the next chunk of input.  Fields of sl_vm are addressed from the vm register with offsets read
from vm.h.
"""
from peachpy.x86_64 import (ADD, CMP, INC, LEA, MOV, MOVZX, SUB, byte, dl, dword, edx, eax, al,
                            qword, rax, rcx)

from .asm import addend, low32, stencil, vm_offset


@stencil("CELL_ADD")
def cell_add(a, r):
    a(MOV(eax, low32(a.hole("oparg"))), ADD(byte[r.head], al))


@stencil("CELL_ZERO")
def cell_zero(a, r):
    a(MOV(byte[r.head], 0))


@stencil("MOVE")
def move(a, r):
    """head += n, deopt unless 0 <= new position < tape_len"""
    a(LEA(rax, [r.head + addend(a.hole("oparg"))]), MOV(rcx, rax), SUB(rcx, qword[r.vm + vm_offset("tape")]),
      CMP(rcx, qword[r.vm + vm_offset("tape_len")]))
    a.jcc_hole("ae", "deopt")
    a(MOV(r.head, rax))


def _output(load_byte):
    def emit(a, r):
        a(MOV(rax, qword[r.vm + vm_offset("out_len")]), CMP(rax, qword[r.vm + vm_offset("out_cap")]))
        a.jcc_hole("ae", "deopt")
        load_byte(a, r)
        a(MOV(rcx, qword[r.vm + vm_offset("out")]), MOV(byte[rcx + rax * 1], dl), INC(rax),
          MOV(qword[r.vm + vm_offset("out_len")], rax))
    return emit


# a full buffer (or, under --max-output, the limit) deopts: the interpreter
# writes it out, grows it or stops the run
stencil("CELL_OUT", "output the current cell; deopt when the buffer is full")(
    _output(lambda a, r: a(MOVZX(edx, byte[r.head]))))
stencil("PRINT_BYTE", "output the byte ARG; deopt when the buffer is full")(
    _output(lambda a, r: a(MOV(edx, low32(a.hole("oparg"))))))


@stencil("CELL_IN")
def cell_in(a, r):
    """read a byte into the cell; unchanged at end of input; deopt when the
    buffer is empty before the end (the interpreter reads the next chunk)"""
    a(MOV(rax, qword[r.vm + vm_offset("in_pos")]), CMP(rax, qword[r.vm + vm_offset("in_len")]))
    a.jcc("l", "read")
    a(CMP(dword[r.vm + vm_offset("in_eof")], 0))
    a.jcc_hole("e", "deopt")
    a.jmp("done")
    a.label("read")
    a(MOV(rcx, qword[r.vm + vm_offset("in")]), MOVZX(edx, byte[rcx + rax * 1]), MOV(byte[r.head], dl),
      INC(rax), MOV(qword[r.vm + vm_offset("in_pos")], rax))
    a.label("done")
