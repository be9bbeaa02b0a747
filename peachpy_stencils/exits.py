"""Exit stubs (one per crossing) and the counting stencils of count builds.

Every exit first sets ip to the bytecode instruction to resume at; then:
  exit:shim                 stores sp, fp and head in the vm and returns ip to the shim
  exit:direct               jumps through the dispatch table, like any handler
  exit:direct-handler       jumps straight to the handler of the known instruction
In a trace these stubs are the only code that differs between the JIT modes
whose traces run in the interpreter's register order (six of the seven; the
exit slots of jit-trampoline, whose traces run in another, are in
trampoline.py).  How each mode enters a trace is csrc/crossing.h's.
With K cached values each has a :k<K> variant that reloads them (below).
"""
from peachpy.x86_64 import ADD, DEC, INC, JMP, MOV, MOVSXD, RET, SUB, dword, qword, r10, rax, rcx

from shimlab.abi.contract import CACHE

from .asm import stencil, vm_offset


@stencil("exit:shim")
def exit_shim(a, r):
    # fp too: a trace that called or returned (frames.py) left another frame
    a(MOV(r.ip, a.hole("resume_ip")), MOV(qword[r.vm + vm_offset("sp")], r.sp),
      MOV(qword[r.vm + vm_offset("fp")], r.fp),
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


# -- with K cached values (--cache K) --------------------------------------------
# A trace that spilled the K cached values (jit/fuse.py) leaves through the
# :kK variant, which first reloads them into the registers the handlers take
# them in (abi/contract.py CACHE: c0, the top of the stack, from sp - 8, and
# so on); one that kept them in place leaves through :kK:keep.  exit:shim
# returns to ENTER_JIT, which reloads them in C; its :keep variant (jit-shim-args,
# whose traces are entered with the values in registers) spills them first,
# since a C return carries one value.

def _reload(a, r, k):
    from peachpy import x86_64
    for j, name in enumerate(CACHE[:k]):
        a(MOV(getattr(x86_64, name), qword[r.sp - 8 * (j + 1)]))
    a(SUB(r.sp, 8 * k))


def _spill(a, r, k):
    """The inverse of _reload: c0, the top, ends at sp - 8."""
    from peachpy import x86_64
    for j, name in enumerate(CACHE[:k]):
        a(MOV(qword[r.sp + 8 * (k - 1 - j)], getattr(x86_64, name)))
    a(ADD(r.sp, 8 * k))


def _cached_exits(k):
    @stencil(f"exit:shim:k{k}", f"exit:shim with {k} cached value(s): ENTER_JIT reloads them in C")
    def shim(a, r):
        exit_shim(a, r)

    @stencil(f"exit:shim:k{k}:keep",
             f"exit:shim with {k} cached value(s) in their registers: it spills them")
    def shim_keep(a, r):
        _spill(a, r, k)
        exit_shim(a, r)

    @stencil(f"exit:direct:k{k}", f"exit:direct that reloads {k} cached value(s) first")
    def direct(a, r):
        a(MOV(r.ip, a.hole("resume_ip")))
        _reload(a, r, k)
        a(MOVSXD(rax, dword[r.ip]), JMP(qword[r.table + rax * 8]))

    @stencil(f"exit:direct:count:k{k}", f"exit:direct:count that reloads {k} cached value(s)")
    def direct_count(a, r):
        # counts first: rcx is a cached value's register from K = 2 on
        a(MOV(r.ip, a.hole("resume_ip")), MOVSXD(rax, dword[r.ip]),
          MOV(rcx, qword[r.vm + vm_offset("counts")]), INC(qword[rcx + rax * 8]))
        _reload(a, r, k)
        a(JMP(qword[r.table + rax * 8]))

    @stencil(f"exit:direct-handler:k{k}", f"exit:direct-handler that reloads {k} cached value(s)")
    def direct_handler(a, r):
        a(MOV(r.ip, a.hole("resume_ip")))
        _reload(a, r, k)
        a.jmp_hole("handler")

    @stencil(f"exit:direct-handler:far:k{k}",
             f"exit:direct-handler:far that reloads {k} cached value(s)")
    def direct_handler_far(a, r):
        a(MOV(r.ip, a.hole("resume_ip")))
        _reload(a, r, k)
        a(MOV(rax, a.hole("handler_abs")), JMP(rax))


    # :keep: the exit leaves with the K values still in the registers the
    # trace was entered with (jit/fuse.py), which are the handlers' own
    @stencil(f"exit:direct:k{k}:keep", f"exit:direct with {k} cached value(s) in their registers")
    def direct_keep(a, r):
        exit_direct(a, r)

    @stencil(f"exit:direct:count:k{k}:keep",
             f"exit:direct:count with {k} cached value(s) in their registers")
    def direct_count_keep(a, r):
        # r10: rcx is a cached value's register from K = 2 on
        a(MOV(r.ip, a.hole("resume_ip")), MOVSXD(rax, dword[r.ip]),
          MOV(r10, qword[r.vm + vm_offset("counts")]), INC(qword[r10 + rax * 8]),
          JMP(qword[r.table + rax * 8]))

    @stencil(f"exit:direct-handler:k{k}:keep",
             f"exit:direct-handler with {k} cached value(s) in their registers")
    def direct_handler_keep(a, r):
        exit_direct_handler(a, r)

    @stencil(f"exit:direct-handler:far:k{k}:keep",
             f"exit:direct-handler:far with {k} cached value(s) in their registers")
    def direct_handler_far_keep(a, r):
        exit_direct_handler_far(a, r)


# K = 1..5 (interp/generate.py CACHE_MAX): up to rax, the stubs' scratch register
for _k in range(1, CACHE.index("rax") + 1):
    _cached_exits(_k)
