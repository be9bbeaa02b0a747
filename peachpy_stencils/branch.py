"""Stencils for control flow inside a trace.

A trace follows one recorded path: an unconditional forward jump emits
nothing, a conditional branch becomes a guard whose failure leaves through
the `branch` exit (the path not recorded), and the back-edge that closes the
loop jumps to the start of the trace.  Variant names say which way the
recorded path went: `:taken` (it jumped) or `:fallthrough`.
"""
from peachpy.x86_64 import CMP, MOV, SUB, TEST, byte, qword, rax

from .asm import stencil


@stencil("JUMP")
def jump(a, r):
    """nothing: the trace continues at the target"""


def _pop_guard(cc):
    def emit(a, r):
        a(MOV(rax, qword[r.sp - 8]), SUB(r.sp, 8), TEST(rax, rax))
        a.jcc_hole(cc, "branch")
    return emit


# JUMP_IF_FALSE jumps when the value is zero: recorded taken, a non-zero leaves
stencil("JUMP_IF_FALSE:taken", "pop; leave unless zero")(_pop_guard("ne"))
stencil("JUMP_IF_FALSE:fallthrough", "pop; leave if zero")(_pop_guard("e"))
stencil("JUMP_IF_TRUE:taken", "pop; leave if zero")(_pop_guard("e"))
stencil("JUMP_IF_TRUE:fallthrough", "pop; leave unless zero")(_pop_guard("ne"))


def _cell_guard(cc):
    def emit(a, r):
        a(CMP(byte[r.head], 0))
        a.jcc_hole(cc, "branch")
    return emit


stencil("JUMP_IF_CELL_ZERO:taken", "leave unless the cell is zero")(_cell_guard("ne"))
stencil("JUMP_IF_CELL_ZERO:fallthrough", "leave if the cell is zero")(_cell_guard("e"))
stencil("LOOP_IF_CELL:fallthrough", "leave if the cell is non-zero")(_cell_guard("ne"))
# a back-edge the recording took to a loop with a trace of its own: the trace
# goes on there (its end links to that trace), leaving past the loop if not
stencil("LOOP_IF_CELL:taken", "leave past the loop if the cell is zero")(_cell_guard("e"))
stencil("LOOP:taken", "nothing: the trace goes on at the loop's header")(jump)


@stencil("JUMP:to")
def jump_to(a, r):
    """a block's way back into its trace (trace.add_blocks), at a label there"""
    a.jmp_hole("loop")


@stencil("LOOP:close")
def loop_close(a, r):
    """back to the start of the trace"""
    a.jmp_hole("loop")


def _cell_loop(a, r):
    a(CMP(byte[r.head], 0))
    a.jcc_hole("ne", "loop")


@stencil("LOOP_IF_CELL:close")
def loop_if_cell_close(a, r):
    """back to the start while the cell is non-zero, else leave past the loop"""
    _cell_loop(a, r)
    a.jmp_hole("branch")


# an inner loop's back-edge jumps to its header, earlier in the trace (the
# "loop" hole says where); past the loop the trace goes on, so no exit
stencil("LOOP:inner", "an inner loop's back-edge, to its header in this trace")(loop_close)
stencil("LOOP_IF_CELL:inner", "an inner loop's back-edge while the cell is non-zero")(
    _cell_loop)
