"""Checks bytecode before any interpreter runs it.

Opcodes in range, operands in range for their kind, jumps inside their
function and in their declared direction, no falling off a function's end,
and a stack depth that is consistent at every merge point, never negative,
bounded, 1 at RETURN and 0 at HALT.  Fills in Function.max_stack.
"""
from __future__ import annotations

from .. import isa
from ..bytecode import Program
from ..errors import VerifyError
from ..isa import Flow, Operand

MAX_STACK_DEPTH = 4096


def _fail(program: Program, pc: int | None, msg: str) -> VerifyError:
    where = program.name
    if pc is not None:
        where += f": pc {pc}"
        pos = program.position(pc)
        if pos and pos[0]:
            where += f" (line {pos[0]})"
    return VerifyError(f"{where}: invalid bytecode: {msg}")


def verify(program: Program) -> Program:
    code, funcs = program.code, program.functions
    if not code:
        raise _fail(program, None, "no instructions")
    if not funcs:
        raise _fail(program, None, "no entry function")
    entries = [f.entry for f in funcs]
    if entries[0] != 0 or entries != sorted(set(entries)) or entries[-1] >= len(code):
        raise _fail(program, None, "function entries must start at 0, increase and lie in the code")
    for f in funcs:
        if not (0 <= f.nargs <= f.nlocals <= MAX_STACK_DEPTH):
            raise _fail(program, f.entry, f"function {f.name}: bad nargs/nlocals")
    if funcs[0].nargs:
        raise _fail(program, 0, "the entry function takes no arguments")
    for i, f in enumerate(funcs):
        end = entries[i + 1] if i + 1 < len(funcs) else len(code)
        _check_operands(program, i, f.entry, end)
        f.max_stack = _stack_depths(program, i, f.entry, end)
    program.verified = True
    return program


# Per-opcode facts as flat lists: the depth walk below visits every
# instruction once, and a program of 10**6 nested BF loops must verify in
# seconds.
_POPS = [ins.pops for ins in isa.INSTRUCTIONS]
_PUSHES = [ins.pushes for ins in isa.INSTRUCTIONS]
_FALLS = [isa.falls_through(ins) for ins in isa.INSTRUCTIONS]
# True for a plain displacement, "packed" for the fused move-and-test (isa.jump_disp)
_JUMPS = [("packed" if ins.operand in isa.PACKED_MOVE_JUMP | isa.PACKED_AT_JUMP else True)
          if isa.is_jump(ins) else False for ins in isa.INSTRUCTIONS]
_FLOWS = [ins.flow for ins in isa.INSTRUCTIONS]
# no operand to range-check and ordinary flow: the common case
_PLAIN = [ins.operand in (Operand.NONE, Operand.IMM) and ins.flow is Flow.NEXT
          for ins in isa.INSTRUCTIONS]


def _check_operands(program: Program, index: int, start: int, end: int) -> None:
    f = program.functions[index]
    code = program.code
    for pc in range(start, end):
        op, arg = code[pc]
        if not (type(op) is int and 0 <= op < isa.NUM_OPCODES):
            raise _fail(program, pc, f"opcode {op!r} out of range 0..{isa.NUM_OPCODES - 1}")
        ins = isa.INSTRUCTIONS[op]
        if not (type(arg) is int and isa.INT32_MIN <= arg <= isa.INT32_MAX):
            raise _fail(program, pc, f"{ins.name}: operand {arg!r} is not a 32-bit integer")
        name, packing, arg_ = ins.name, ins.packing, arg
        if packing == "walk":       # (its body's rules too)
            name, arg_, stride = isa.unpack_walk(ins.name, arg)
            packing = isa.INSTRUCTIONS[isa.OPCODE[name]].packing
            if stride == 0:
                # the head never moves: a walk whose body keeps the cell non-zero
                # would run in one instruction for ever, out of the timeout's reach
                raise _fail(program, pc, f"{ins.name}: a walk by 0 cells")
        if packing in ("move_at", "move2_at"):
            c, t, t2, _ = isa.unpack_move_at(name, arg_)
            if c in (t, t2):
                # no loop adds to its own counter: the modes need not agree there
                raise _fail(program, pc, f"{ins.name}: a target cell ({c:+d}) is the counter")
        if _PLAIN[op] and pc != end - 1:
            continue
        kind = ins.operand
        if kind is Operand.FORWARD and arg > 0 and pc + arg < end and pc != end - 1:
            continue      # a jump in range, not the last instruction: nothing more to check
        if kind is Operand.CONST and not 0 <= arg < len(program.consts):
            raise _fail(program, pc, f"{ins.name}: constant {arg} out of range")
        if kind is Operand.LOCAL and not 0 <= arg < f.nlocals:
            raise _fail(program, pc, f"{ins.name}: local {arg} out of range (function "
                        f"{f.name} has {f.nlocals})")
        if kind is Operand.FUNC and not 1 <= arg < len(program.functions):
            raise _fail(program, pc, f"{ins.name}: function {arg} out of range")
        if kind is Operand.FORWARD and not (arg > 0 and pc + arg < end):
            raise _fail(program, pc, f"{ins.name}: forward jump to {pc + arg} outside "
                        f"{pc + 1}..{end - 1} (function {f.name})")
        if kind is Operand.BACKWARD and not (arg <= 0 and pc + arg >= start):
            raise _fail(program, pc, f"{ins.name}: backward jump to {pc + arg} outside "
                        f"{start}..{pc} (function {f.name})")
        if kind in isa.PACKED_MOVE_JUMP or kind in isa.PACKED_AT_JUMP:
            disp = isa.jump_disp(ins, arg)
            forward = kind in (Operand.FORWARD_MOVE, Operand.FORWARD_AT)
            if forward and not (disp > 0 and pc + disp < end):
                raise _fail(program, pc, f"{ins.name}: forward jump to {pc + disp} outside "
                            f"{pc + 1}..{end - 1} (function {f.name})")
            if not forward and not pc + disp >= start:
                raise _fail(program, pc, f"{ins.name}: backward jump to {pc + disp} outside "
                            f"{start}..{pc} (function {f.name})")
        if ins.flow is Flow.RETURN and index == 0:
            raise _fail(program, pc, "RETURN outside a function")
        if ins.flow is Flow.HALT and index != 0:
            raise _fail(program, pc, f"HALT inside function {f.name}")
        if pc == end - 1 and isa.falls_through(ins):
            raise _fail(program, pc, f"execution falls off the end of function {f.name}")


def _stack_depths(program: Program, index: int, start: int, end: int) -> int:
    """Depth of the operand stack above the locals, for each reachable pc.

    Straight-line code is walked in place (the work list holds only jump
    targets), which halves the time on big programs."""
    code, funcs = program.code, program.functions
    depth: list[int | None] = [None] * (end - start)   # by pc - start
    depth[0] = 0
    work = [start]
    deepest = 0
    pops_of, pushes_of, falls, jumps, flows = _POPS, _PUSHES, _FALLS, _JUMPS, _FLOWS
    ret, halt = Flow.RETURN, Flow.HALT
    while work:
        pc = work.pop()
        d = depth[pc - start]
        while True:
            op, arg = code[pc]
            pops = pops_of[op]
            if pops is None:            # CALL: the callee's argument count
                pops = funcs[arg].nargs
            if d < pops:
                raise _fail(program, pc, f"{isa.INSTRUCTIONS[op].name} pops {pops} from a "
                            f"stack of depth {d}")
            after = d - pops + pushes_of[op]
            if after > deepest or d > deepest:
                deepest = max(after, d)
                if deepest > MAX_STACK_DEPTH:
                    raise _fail(program, pc, f"stack deeper than {MAX_STACK_DEPTH}")
            flow = flows[op]
            if flow is ret and d != 1:
                raise _fail(program, pc, f"RETURN with stack depth {d} (must be 1)")
            if flow is halt and d != 0:
                raise _fail(program, pc, f"HALT with stack depth {d} (must be 0)")
            if jumps[op]:
                _merge(program, depth, work, start, pc,
                       pc + (arg if jumps[op] is True else isa.jump_disp(isa.INSTRUCTIONS[op], arg)),
                       after)
            if not falls[op]:
                break
            known = depth[pc + 1 - start]
            if known is None:           # first visit: go straight on
                pc, d = pc + 1, after
                depth[pc - start] = d
                continue
            if known != after:
                raise _fail(program, pc + 1, f"stack depth {known} or {after} depending on "
                            f"the path (from pc {pc})")
            break
    return deepest


def _merge(program, depth, work, start, pc, succ, after) -> None:
    """Record depth `after` at succ, or check it against the one recorded."""
    known = depth[succ - start]
    if known is None:
        depth[succ - start] = after
        work.append(succ)
    elif known != after:
        raise _fail(program, succ, f"stack depth {known} or {after} depending on "
                    f"the path (from pc {pc})")
