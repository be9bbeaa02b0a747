"""From a recording (the pcs the interpreter ran from a hot loop header) to
a trace: which stencil each instruction gets, where each guard leaves, and
how the trace ends (back to its start, or out to the interpreter)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import isa
from ..isa import Flow

# Instructions that have stencils (variants aside); everything else ends a trace.
TRACEABLE = frozenset({
    "NOP", "LOAD_INT", "LOAD_CONST", "LOAD_LOCAL", "STORE_LOCAL", "POP", "DUP",
    "ADD", "SUB", "MUL", "FLOORDIV", "MOD", "LSHIFT", "RSHIFT", "AND", "OR", "XOR",
    "LT", "LE", "EQ", "NE", "GT", "GE", "NEG", "INVERT", "NOT",
    "JUMP", "JUMP_IF_FALSE", "JUMP_IF_TRUE", "LOOP",
    "CELL_ADD", "CELL_ZERO", "MOVE", "CELL_OUT", "CELL_IN", "PRINT_BYTE",
    "JUMP_IF_CELL_ZERO", "LOOP_IF_CELL"})


@dataclass(frozen=True)
class TraceOp:
    pc: int
    op: int
    arg: int
    stencil: str
    exit_pc: int | None = None     # where its guard leaves to (branch), if it has one

    @property
    def name(self) -> str:
        return isa.INSTRUCTIONS[self.op].name


@dataclass
class Trace:
    start: int
    ops: list[TraceOp] = field(default_factory=list)
    closed: bool = True             # ends by jumping back to its start
    end_pc: int | None = None       # otherwise: the exit at the end resumes here
    why_end: str = "loop closed"
    retry: bool = False             # it left the loop: worth recording again first


class Decline(Exception):
    """The recording does not make a trace worth compiling (the reason says why)."""

    def __init__(self, reason: str, retry: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


def from_recording(code: list[tuple[int, int]], rec: list[int], stop_pc: int,
                   full: bool, stop_op: int | None = None) -> Trace:
    """code: the program's (op, arg); stop_op: the opcode now at stop_pc, which
    is ENTER_JIT when the path ran into another trace."""
    if full:
        raise Decline(f"longer than {len(rec)} instructions")
    if not rec:
        raise Decline(f"the loop starts with {isa.INSTRUCTIONS[code[stop_pc][0]].name}, "
                      "which has no stencil")
    if stop_op == isa.NUM_OPCODES and stop_pc == rec[0]:
        raise Decline("the loop already has a trace")
    start = rec[0]
    trace = Trace(start)
    for i, pc in enumerate(rec):
        nxt = rec[i + 1] if i + 1 < len(rec) else stop_pc
        op, arg = code[pc]
        ins = isa.INSTRUCTIONS[op]
        if ins.flow in (Flow.BACKEDGE, Flow.BACKEDGE_BRANCH):
            target = pc + arg
            if nxt == start and target == start and i == len(rec) - 1:
                trace.ops.append(TraceOp(pc, op, arg, f"{ins.name}:close",
                                         pc + 1 if ins.flow is Flow.BACKEDGE_BRANCH else None))
                return trace
            if ins.flow is Flow.BACKEDGE_BRANCH and nxt == pc + 1:
                trace.ops.append(TraceOp(pc, op, arg, f"{ins.name}:fallthrough", target))
                continue
            # a jump back to somewhere else: an inner loop, or out of this one
            if i == 0:
                raise Decline("the path left the loop at once", retry=True)
            return _ends(trace, pc, "a back-edge to another loop", retry=True)
        if ins.flow is Flow.BRANCH:
            taken = nxt == pc + arg
            trace.ops.append(TraceOp(pc, op, arg,
                                     f"{ins.name}:{'taken' if taken else 'fallthrough'}",
                                     pc + 1 if taken else pc + arg))
        else:
            trace.ops.append(TraceOp(pc, op, arg, ins.name))
    if stop_op == isa.NUM_OPCODES:
        why = f"runs into the trace at pc {stop_pc}"
    else:
        why = f"{isa.INSTRUCTIONS[code[stop_pc][0]].name} has no stencil"
    return _ends(trace, stop_pc, why)


def _ends(trace: Trace, pc: int, why: str, retry: bool = False) -> Trace:
    trace.closed, trace.end_pc, trace.why_end = False, pc, why
    trace.retry = retry
    return trace
