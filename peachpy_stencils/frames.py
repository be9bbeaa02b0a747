"""Stencils for calls and returns inside a trace: the frame work of vm.h's
CALL_FUNCTION and RETURN_VALUE (and of their --cache K forms, which
interp/generate.py writes), after which the trace goes on in the callee or
in the caller, whose pcs jit/trace.py laid after them.

They are the JIT's alone (isa.Instr.in_trace): the interpreters keep the C
handlers, since a handler would have to dispatch to wherever the call went.
A trace runs them with the operand stack in memory, as at every optimizer
level's CALL and RETURN the optimizer flushed it; under --cache K that
includes the K cached values, so a frame's K pad slots (which the
interpreter keeps in its registers) are memory slots here, and the callee's
sp starts K slots higher: an exit inside the callee that reloads K values
then leaves exactly the interpreter's sp.
"""
from peachpy.x86_64 import (ADD, CMOVLE, CMP, DEC, IMUL, INC, LEA, MOV, SHL, SUB, TEST, XOR,
                            dword, eax, ecx, edx, qword, r8, rax, rcx, rdx)

from .asm import stencil, vm_offset

_FRAME = 16          # sizeof(sl_frame): ret_ip, fp


@stencil("CALL")
def call(a, r):
    """CALL_FUNCTION of a static callee: the overflow check (else a deopt: the
    interpreter raises it), the non-argument locals zeroed, ret_ip and fp
    saved in vm->frames[depth], depth + 1, the callee's fp and sp"""
    # One check for both of the C's conditions, which fail alike: when depth
    # >= max_depth the limit becomes 0, so any frame is past it.  The limit
    # is stack_end less the pads of the frames still to come (K = 0: none).
    a(MOV(eax, dword[r.vm + vm_offset("depth")]),
      MOV(edx, dword[r.vm + vm_offset("max_depth")]),
      SUB(edx, eax),
      IMUL(rcx, rdx, a.hole("pads")),
      MOV(r8, qword[r.vm + vm_offset("stack_end")]),
      SUB(r8, rcx),
      XOR(ecx, ecx),
      TEST(edx, edx),
      CMOVLE(r8, rcx),
      LEA(rcx, [r.sp + a.hole("frame_top")]),
      CMP(rcx, r8))
    a.jcc_hole("a", "deopt")
    # the locals past the arguments start at sp (the arguments end there)
    a(MOV(ecx, a.hole("zeros")), TEST(ecx, ecx)).jcc("e", "framed")
    a(XOR(edx, edx))
    a.label("zero")
    a(MOV(qword[r.sp + rcx * 8 - 8], rdx), DEC(ecx)).jcc("ne", "zero")
    a.label("framed")
    # (eax, the depth, is not negative: rax is its zero extension)
    a(SHL(rax, 4), ADD(rax, qword[r.vm + vm_offset("frames")]),
      MOV(rdx, a.hole("ret_ip")), MOV(qword[rax], rdx), MOV(qword[rax + 8], r.fp),
      INC(dword[r.vm + vm_offset("depth")]),
      LEA(r.fp, [r.sp + a.hole("args")]),
      LEA(r.sp, [r.sp + a.hole("frame_sp")]))


def _return(a, r):
    """rcx: &vm->frames[depth - 1]"""
    a(MOV(rax, qword[r.sp - 8]),
      DEC(dword[r.vm + vm_offset("depth")]),
      MOV(r.sp, r.fp),
      MOV(r.fp, qword[rcx + 8]),
      MOV(qword[r.sp], rax),
      ADD(r.sp, 8))


def _frame(a, r):
    a(MOV(eax, dword[r.vm + vm_offset("depth")]), DEC(eax), SHL(rax, 4),
      MOV(rcx, qword[r.vm + vm_offset("frames")]), ADD(rcx, rax))


@stencil("RETURN")
def ret(a, r):
    """RETURN_VALUE from a frame whose CALL is in the trace: the return point
    is known"""
    _frame(a, r)
    _return(a, r)


@stencil("RETURN:out")
def ret_out(a, r):
    """RETURN_VALUE from a frame the trace did not make, to one of its
    function's return points: the RETURN:to pieces after it leave for the
    others, and the trace goes on at the recorded one"""
    _frame(a, r)
    _return(a, r)


@stencil("RETURN:to")
def ret_to(a, r):
    """after RETURN:out: leaves for the return point ret_ip (a side exit
    there) when the frame just left returned to it"""
    a(MOV(eax, dword[r.vm + vm_offset("depth")]), SHL(rax, 4),
      ADD(rax, qword[r.vm + vm_offset("frames")]),
      MOV(rdx, a.hole("ret_ip")), CMP(qword[rax], rdx))
    a.jcc_hole("e", "branch")


@stencil("RETURN:guard")
def ret_guard(a, r):
    """RETURN_VALUE from a frame the trace did not make: it goes on at the
    recorded return point if the frame returns there, else deopts before
    anything changed (the interpreter returns)"""
    _frame(a, r)
    a(MOV(rdx, a.hole("ret_ip")), CMP(qword[rcx], rdx))
    a.jcc_hole("ne", "deopt")
    _return(a, r)
