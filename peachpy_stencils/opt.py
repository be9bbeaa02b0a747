"""Stencils of the trace optimizer (jit/optimize.py) for BF: the head stays
put in its register over a stretch of the trace and each cell is addressed
at its offset from it ([head + cell]); one check proves the stretch's whole
range of cells inside the tape, so these stencils check nothing themselves.
Not instructions of their own: `stencils test` leaves them to the optimizer's
differential tests.
"""
from peachpy.x86_64 import (ADD, CMOVB, CMP, DEC, IMUL, INC, JMP, LEA, MOV, MOVSXD, MOVZX, POP, PUSH, RET,
                            SUB, al,
                            byte, dword, eax, qword, r10, rax, rcx)

from .asm import stencil, vm_offset


@stencil("opt:add")
def add(a, r):
    a(MOV(eax, a.hole("byte")), ADD(byte[r.head + a.hole("cell")], al))


@stencil("opt:set")
def set_(a, r):
    a(MOV(eax, a.hole("byte")), MOV(byte[r.head + a.hole("cell")], al))


@stencil("opt:zero")
def zero(a, r):
    a(MOV(byte[r.head + a.hole("cell")], 0))


@stencil("opt:muladd")
def muladd(a, r):
    """cell += byte * cell2 (a multiply loop's target and counter)"""
    a(MOVZX(eax, byte[r.head + a.hole("cell2")]), IMUL(eax, eax, a.hole("byte")),
      ADD(byte[r.head + a.hole("cell")], al))


@stencil("opt:copy")
def copy(a, r):
    """cell = cell2 (a move loop's target known to be 0)"""
    a(MOVZX(eax, byte[r.head + a.hole("cell2")]), MOV(byte[r.head + a.hole("cell")], al))


@stencil("opt:copyadd")
def copyadd(a, r):
    """cell += cell2 (a multiply loop's factor 1)"""
    a(MOVZX(eax, byte[r.head + a.hole("cell2")]), ADD(byte[r.head + a.hole("cell")], al))


def _check(a, r, keep_rcx=False):
    # rax and rcx only: rdx may hold a cached stack value (peachpy_stencils/fused.py)
    a(MOV(rax, r.head), SUB(rax, qword[r.vm + vm_offset("tape")]),
      LEA(rcx, [rax + a.hole("cell")]), ADD(rax, a.hole("cell2")),
      CMP(rcx, rax), CMOVB(rcx, rax), CMP(rcx, qword[r.vm + vm_offset("tape_len")]))
    if keep_rcx:
        a(POP(rcx))                 # flags stay: pop does not change them
    a.jcc_hole("ae", "deopt")


@stencil("opt:check")
def check(a, r):
    """deopt unless head + cell .. head + cell2 (cell <= cell2) are all on the tape"""
    _check(a, r)


@stencil("opt:check:len")
def check_len(a, r):
    """deopt unless head + cell .. head + cell + span are all on the tape, with
    oparg = the tape's length less the span (known when the trace is made):
    one unsigned compare"""
    a(LEA(rax, [r.head + a.hole("cell")]), SUB(rax, qword[r.vm + vm_offset("tape")]),
      CMP(rax, a.hole("oparg")))
    a.jcc_hole("ae", "deopt")


@stencil("opt:check:rcx")
def check_rcx(a, r):
    """opt:check for a trace that keeps a cached value in rcx (--cache K): rcx
    is saved on the machine stack around the check"""
    a(PUSH(rcx))
    _check(a, r, keep_rcx=True)


@stencil("opt:head")
def head(a, r):
    """the head register catches up with the trace's virtual head"""
    a(LEA(r.head, [r.head + a.hole("cell")]))


def _guard(cc):
    def emit(a, r):
        a(CMP(byte[r.head + a.hole("cell")], 0))
        a.jcc_hole(cc, "branch")
    return emit


stencil("opt:guard-zero", "leave if the cell is zero")(_guard("e"))


@stencil("opt:loop-close")
def loop_close(a, r):
    """back to the trace's start while the cell is non-zero, else leave past the loop"""
    a(CMP(byte[r.head + a.hole("cell")], 0))
    a.jcc_hole("ne", "loop")
    a.jmp_hole("branch")


@stencil("opt:loop-inner")
def loop_inner(a, r):
    """an inner loop's back-edge while the cell is non-zero"""
    a(CMP(byte[r.head + a.hole("cell")], 0))
    a.jcc_hole("ne", "loop")
stencil("opt:guard-nonzero", "leave unless the cell is zero")(_guard("ne"))


# -- side exits: recording from a hot one, and linking it -----------------

def _heat(a, r):
    """Count this exit down; past zero the code below the label runs as before."""
    a(MOV(rax, a.hole("heat")), DEC(qword[rax]))
    a.jcc("nz", "cold")


def record_here(count: bool, move_back=None):
    def emit(a, r):
        """hot: dispatch the resume instruction through the recorder's table,
        which records a trace from there (for the JIT to link this exit to);
        move_back(a, r) first puts every register in the interpreter's order
        (jit-trampoline's traces run in another)"""
        _heat(a, r)
        if move_back is not None:
            move_back(a, r)
        a(MOV(r.ip, a.hole("resume_ip")), MOV(qword[r.vm + vm_offset("rec_start")], r.ip),
          MOV(dword[r.vm + vm_offset("rec_len")], 0), MOV(r.table, a.hole("rec_table")),
          MOVSXD(rax, dword[r.ip]))
        if count:       # r10: rcx can hold a cached value (--cache K)
            a(MOV(r10, qword[r.vm + vm_offset("counts")]), INC(qword[r10 + rax * 8]))
        a(JMP(qword[r.table + rax * 8]))
        a.label("cold")
    return emit


stencil("opt:hot-exit", "a side exit's heat; hot, it records from where it resumes")(
    record_here(False))
stencil("opt:hot-exit:count", "opt:hot-exit that counts the instruction it dispatches")(
    record_here(True))


@stencil("opt:hot-exit:shim")
def hot_exit_shim(a, r):
    """a side exit's heat; hot, it asks the shim's ENTER_JIT to record from the resume pc"""
    _heat(a, r)
    a(MOV(rax, a.hole("resume_ip")), MOV(qword[r.vm + vm_offset("rec_start")], rax),
      MOV(dword[r.vm + vm_offset("rec_len")], -1))
    a.label("cold")


# Shared exit code (from --jit-opt 1): a side exit's slot keeps only its heat
# and the resume pc; the path it takes once hot, the same in every slot but
# for that pc, is in the trace once, after the slots.  (The trampoline's
# orders keep theirs in every slot.)

def _heat_pre(call: bool):
    def emit(a, r):
        """count this exit down; past zero, to the shared hot path with the resume pc in rax"""
        _heat(a, r)
        a(MOV(rax, a.hole("resume_ip")))
        (a.call_hole if call else a.jmp_hole)("shared")
        a.label("cold")
    return emit


stencil("opt:hot-exit:pre", "opt:hot-exit's heat in a slot; its hot path shared")(
    _heat_pre(False))
stencil("opt:hot-exit:pre:call", "opt:hot-exit:shim's heat in a slot; its hot path shared, "
        "returning to the slot")(_heat_pre(True))


def _record_shared(count: bool):
    def emit(a, r):
        """opt:hot-exit's hot path, shared by a trace's slots (the resume pc in rax)"""
        a(MOV(r.ip, rax), MOV(qword[r.vm + vm_offset("rec_start")], r.ip),
          MOV(dword[r.vm + vm_offset("rec_len")], 0), MOV(r.table, a.hole("rec_table")),
          MOVSXD(rax, dword[r.ip]))
        if count:
            a(MOV(r10, qword[r.vm + vm_offset("counts")]), INC(qword[r10 + rax * 8]))
        a(JMP(qword[r.table + rax * 8]))
    return emit


stencil("opt:hot-exit:shared", "opt:hot-exit's hot path, one per trace")(_record_shared(False))
stencil("opt:hot-exit:shared:count", "opt:hot-exit:count's hot path, one per trace")(
    _record_shared(True))


@stencil("opt:hot-exit:shared:shim")
def hot_exit_shared_shim(a, r):
    """opt:hot-exit:shim's hot path, one per trace (the resume pc in rax); back to the slot"""
    a(MOV(qword[r.vm + vm_offset("rec_start")], rax),
      MOV(dword[r.vm + vm_offset("rec_len")], -1), RET())


@stencil("opt:link")
def link(a, r):
    """an exit that jumps into another trace instead of the interpreter"""
    a.jmp_hole("link")
