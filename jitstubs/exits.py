"""Exit stubs (one per crossing) and the counting stencils of count builds.

Every exit first sets ip to the bytecode instruction to resume at; then:
  exit:shim                 stores sp and head in the vm and returns ip to the shim
  exit:direct               jumps through the dispatch table, like any handler
  exit:direct-handler       jumps straight to the handler of the known instruction
These stubs are the only code that differs between the three JIT modes.
"""
from peachpy.x86_64 import DEC, INC, JMP, MOV, MOVSXD, RET, dword, qword, rax, rcx

from .asm import stencil, vm_offset


@stencil("exit:shim")
def exit_shim(a, r):
    a(MOV(r.ip, a.hole("resume_ip")), MOV(qword[r.vm + vm_offset("sp")], r.sp),
      MOV(qword[r.vm + vm_offset("head")], r.head), MOV(rax, r.ip), RET())


@stencil("exit:direct")
def exit_direct(a, r):
    a(MOV(r.ip, a.hole("resume_ip")), MOVSXD(rax, dword[r.ip]), JMP(qword[r.table + rax * 8]))


@stencil("exit:direct:count")
def exit_direct_count(a, r):
    """exit:direct that also counts the instruction it dispatches (count builds)"""
    a(MOV(r.ip, a.hole("resume_ip")), MOVSXD(rax, dword[r.ip]),
      MOV(rcx, qword[r.vm + vm_offset("counts")]), INC(qword[rcx + rax * 8]),
      JMP(qword[r.table + rax * 8]))


@stencil("exit:direct-handler")
def exit_direct_handler(a, r):
    a(MOV(r.ip, a.hole("resume_ip")))
    a.jmp_hole("handler")


@stencil("exit:direct-handler:far")
def exit_direct_handler_far(a, r):
    """exit:direct-handler for a trace mapped more than 2 GiB from the interpreter
    (an indirect jump, but to one fixed target)"""
    a(MOV(r.ip, a.hole("resume_ip")), MOV(rax, a.hole("handler_abs")), JMP(rax))


@stencil("count")
def count(a, r):
    """one more execution of an opcode (count builds)"""
    a(MOV(rax, qword[r.vm + vm_offset("counts")]), INC(qword[rax + a.hole("count")]))


@stencil("uncount")
def uncount(a, r):
    """a deopt exit takes back the count of the instruction it did not run"""
    a(MOV(rax, qword[r.vm + vm_offset("counts")]), DEC(qword[rax + a.hole("count")]))


@stencil("tally")
def tally(a, r):
    """one more entry into, or exit from, a trace (--stats only)"""
    a(MOV(rax, a.hole("tally")), INC(qword[rax]))
