"""`shimlab stencils test`: each stencil run alone from random VM states and
held to the Python oracle.

A stencil is compiled into a one-instruction trace (or a tiny loop for the
stencils that close one), entered through the jit-shim shim with the
contract registers set from the VM, and left through its exit stub; the VM
state it leaves (stack, locals, tape, head, output, input position, resume
pc) must be what the oracle computes.  A stencil may instead leave through
its deopt exit, resuming AT its own instruction with nothing changed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from . import isa, vm as vm_mod
from .abi import contract
from .abi.vmh import ffi
from .bytecode import Function, Program
from .interp import build
from .isa import VMError
from .jit import compile as jit_compile
from .jit import stencil_store
from .jit.trace import Trace, TraceOp
from .oracle import State, step

NSTACK, NLOCALS, TAPE = 6, 4, 64
OP = isa.OPCODE


@dataclass
class Case:
    code: list[tuple[int, int]]   # the snippet: runs from pc 0
    ops: list[TraceOp]            # the trace over it
    closed: bool
    end_pc: int | None


def _arg_for(name: str, rng: random.Random) -> int:
    ins = isa.BY_NAME[name]
    if ins.operand is isa.Operand.LOCAL:
        return rng.randrange(NLOCALS)
    if ins.operand is isa.Operand.CONST:
        return rng.randrange(3)
    if ins.operand is isa.Operand.FORWARD:
        return rng.choice([2, 3])
    if name in ("MOVE", "SCAN"):
        return rng.choice([-3, -1, 1, 2, 40, -40])
    if ins.packing == "add2":
        return isa.pack_add2(rng.choice([-3, 0, 1, 40, -128]), rng.randrange(256),
                             rng.choice([-1, 0, 2, 127, -40]), rng.randrange(256))
    if ins.packing in ("move_at", "move2_at"):
        offs = [-3, -1, 0, 1, 2, 40, -40, 127, -128]
        c, t, t2 = rng.sample(offs, 3)      # the targets are never the counter (verify)
        return isa.pack_move_at(c, t, rng.choice([0, 1, 3, 255]),
                                t2 if ins.packing == "move2_at" else None)
    if ins.packing == "move_pair":
        offs = [-3, -1, 0, 1, 2, 40, -40, 127, -128]
        c1, t1 = rng.sample(offs, 2)
        c2, t2 = rng.sample(offs, 2)
        return isa.pack_move_pair(c1, t1, c2, t2)
    if ins.packing == "copy_at":
        a, t, u = rng.sample([-3, -1, 0, 1, 2, 40, -40, 127, -128], 3)
        return isa.pack_move_at(a, t, 0, u)
    if name in ("PRINT_BYTE", "CELL_ADD"):
        return rng.choice([0, 1, 65, 255, -7, 300])
    return rng.choice([0, 1, -1, 7, -100000, 1 << 30])


def case_for(stencil: str, rng: random.Random) -> Case:
    """A snippet and trace that exercise `stencil`, with random operands."""
    name, _, variant = stencil.partition(":")
    halt = (OP["HALT"], 0)
    if variant in ("close", "inner"):
        # a loop back to pc 0: closing the trace, or as an inner loop (then
        # the trace goes on past it, here straight into its end exit)
        loop_pc = 0 if variant == "inner" else None
        if name == "LOOP_IF_CELL":     # count the cell down to zero
            code = [(OP["CELL_ADD"], -1), (OP["LOOP_IF_CELL"], -1), halt]
            ops = [TraceOp(0, OP["CELL_ADD"], -1, "CELL_ADD"),
                   TraceOp(1, OP["LOOP_IF_CELL"], -1, stencil, 2, loop_pc)]
            end = 2
        elif name == "MOVE_LOOP_IF_CELL":    # the same, moving by 0
            arg = isa.pack_move_jump(0, -1)
            code = [(OP["CELL_ADD"], -1), (OP[name], arg), halt]
            ops = [TraceOp(0, OP["CELL_ADD"], -1, "CELL_ADD"),
                   TraceOp(1, OP[name], arg, stencil, 2, loop_pc)]
            end = 2
        elif name == "LOOP_IF_CELL_AT":      # the cell at an offset counted down
            off = rng.choice([-3, -1, 0, 2])      # run_stencil keeps head + off on the tape
            arg, dec = isa.pack_at_jump(off, -1), isa.pack_cell(off, 255)
            code = [(OP["CELL_ADD_AT"], dec), (OP[name], arg), halt]
            ops = [TraceOp(0, OP["CELL_ADD_AT"], dec, "CELL_ADD_AT"),
                   TraceOp(1, OP[name], arg, stencil, 2, loop_pc)]
            end = 2
        else:                          # while cell: cell -= 1
            code = [(OP["JUMP_IF_CELL_ZERO"], 3), (OP["CELL_ADD"], -1), (OP["LOOP"], -2), halt]
            ops = [TraceOp(0, OP["JUMP_IF_CELL_ZERO"], 3, "JUMP_IF_CELL_ZERO:fallthrough", 3),
                   TraceOp(1, OP["CELL_ADD"], -1, "CELL_ADD"),
                   TraceOp(2, OP["LOOP"], -2, stencil, None, loop_pc)]
            end = 3
        return Case(code, ops, variant == "close", None if variant == "close" else end)
    if name == "LOOP_IF_CELL":         # fallthrough: leaves backward when the cell is non-zero
        code = [halt, halt, (OP["LOOP_IF_CELL"], -2), halt]
        if variant == "taken":         # the trace goes on at the loop's header (pc 0, its end)
            return Case(code, [TraceOp(2, OP["LOOP_IF_CELL"], -2, stencil, 3)], False, 0)
        return Case(code, [TraceOp(2, OP["LOOP_IF_CELL"], -2, stencil, 0)], False, 3)
    if name == "MOVE_LOOP_IF_CELL":    # as LOOP_IF_CELL, after a move
        arg = isa.pack_move_jump(rng.choice([-3, -1, 1, 2, 40, -40]), -2)
        code = [halt, halt, (OP[name], arg), halt]
        if variant == "taken":
            return Case(code, [TraceOp(2, OP[name], arg, stencil, 3)], False, 0)
        return Case(code, [TraceOp(2, OP[name], arg, stencil, 0)], False, 3)
    if name == "LOOP_IF_CELL_AT":      # as LOOP_IF_CELL, at an offset
        arg = isa.pack_at_jump(rng.choice([-3, -1, 0, 1, 2, 40, -40]), -2)
        code = [halt, halt, (OP[name], arg), halt]
        if variant == "taken":
            return Case(code, [TraceOp(2, OP[name], arg, stencil, 3)], False, 0)
        return Case(code, [TraceOp(2, OP[name], arg, stencil, 0)], False, 3)
    if name == "JUMP_IF_CELL_ZERO_AT":
        disp = rng.choice([2, 3])
        arg = isa.pack_at_jump(rng.choice([-3, -1, 0, 1, 2, 40, -40]), disp)
        code = [(OP[name], arg)] + [halt] * 4
        return Case(code, [TraceOp(0, OP[name], arg, stencil, 1 if variant == "taken" else disp)],
                    False, disp if variant == "taken" else 1)
    if name == "MOVE_JUMP_IF_CELL_ZERO":
        disp = rng.choice([2, 3])
        arg = isa.pack_move_jump(rng.choice([-3, -1, 1, 2, 40, -40]), disp)
        code = [(OP[name], arg)] + [halt] * 4
        return Case(code, [TraceOp(0, OP[name], arg, stencil, 1 if variant == "taken" else disp)],
                    False, disp if variant == "taken" else 1)
    if name == "LOOP":                 # taken: the trace goes on at the loop's header
        code = [halt, halt, (OP["LOOP"], -2), halt]
        return Case(code, [TraceOp(2, OP["LOOP"], -2, stencil)], False, 0)
    arg = _arg_for(name, rng)
    code = [(OP[name], arg)] + [halt] * 4
    exit_pc = None
    if variant:
        exit_pc = 1 if variant == "taken" else arg
    return Case(code, [TraceOp(0, OP[name], arg, stencil, exit_pc)], False,
                arg if variant == "taken" or name == "JUMP" else 1)


def _random_state(rng: random.Random):
    values = [0, 1, -1, 2, 3, -3, 63, 64, 65, isa.INT64_MIN, isa.INT64_MAX, 12345678901]
    stack = [rng.choice(values) if rng.random() < 0.5 else rng.randrange(-99, 99)
             for _ in range(NLOCALS + NSTACK)]
    if rng.random() < 0.3:      # equal operands: LT and LE differ only there
        stack[-1] = stack[-2]
    tape = bytearray(rng.choice([0, 0, 1, 2, 5, 255, rng.randrange(256)]) for _ in range(TAPE))
    head = rng.randrange(TAPE)
    inp = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3])))
    return stack, tape, head, inp


def _oracle(case: Case, consts, stack, tape, head, inp, exits: set[int]):
    prog = Program("stencil", case.code, consts, [Function("main", 0, 0, NLOCALS, [], 16)])
    s = State(prog, inp, len(tape), 1 << 10, 4)
    s.stack, s.tape, s.head, s.pc = list(stack), bytearray(tape), head, case.ops[0].pc
    for _ in range(10_000):
        op, arg = case.code[s.pc]
        try:
            step(s, op, arg)
        except VMError:
            return None                    # the JIT must have deopted
        if s.pc in exits or s.pc not in {t.pc for t in case.ops}:
            break
    return s


_NOT_RUN = ("exit:", "entry:", "count", "uncount", "tally", "opt:")


def run_stencil(name: str, trials: int = 40, seed: int = 0, cc: str | None = None,
                source: str = "peachpy") -> list[str]:
    """Failures (empty when the stencil agrees with the oracle on every trial)."""
    b = build.build("jit-shim", cc)
    state = contract.state_of(b.compiler.name)
    st = stencil_store.load(state, source, b.compiler.name)
    # a missing or broken prototype: one line naming its file, line and stencil
    stencil_store.lookup(name, state, source, b.compiler.name)
    base = isa.BY_NAME.get(name.split(":")[0])
    if name.startswith(_NOT_RUN) or name == "JUMP:to" or (base is not None and base.in_trace):
        # exercised by every other stencil's trace (exit), count builds, the
        # optimizer's traces (opt:, whose operands the optimizer proves in
        # bounds), and traces through calls (CALL, RETURN: a frame and a
        # callee, which this one-function program has not; tests/test_jit_calls.py)
        return []
    f = ffi()
    rng = random.Random(seed)
    failures = []
    consts = [7, isa.INT64_MIN, -5]
    for trial in range(trials):
        case = case_for(name, rng)
        stack, tape, head, inp = _random_state(rng)
        if any(t.loop_pc is not None or t.stencil.endswith(":close") for t in case.ops):
            off = 0
            if case.ops[-1].name == "LOOP_IF_CELL_AT":    # its cell on the tape too
                head, off = rng.randrange(3, TAPE - 3), case.ops[-1].arg >> 24
            tape[head + off] = rng.randrange(0, 6)
        prog = Program("stencil", case.code, consts,
                       [Function("main", 0, 0, NLOCALS, [], NSTACK + 4)], verified=True)
        with vm_mod.Loaded(b, prog, inp, tape_len=TAPE, stack_size=64) as loaded:
            v = loaded.vm
            v.ip = v.code + case.ops[0].pc
            for i, x in enumerate(stack):
                v.stack[i] = x
            v.fp, v.sp = v.stack, v.stack + len(stack)
            for i, x in enumerate(tape):
                v.tape[i] = x
            v.head = v.tape + head
            code_addr = int(f.cast("uintptr_t", v.code))
            trace = Trace(case.ops[0].pc, case.ops, case.closed, case.end_pc)
            ctx = jit_compile.Context("jit-shim", code_addr, consts, case.code, state=state,
                                      source=source, cc=b.compiler.name)
            compiled = []

            def fill(addr):
                compiled.append(jit_compile.compile_trace(trace, ctx, addr))
                return compiled[-1].code
            addr = loaded.jit.memory.place(len(jit_compile.compile_trace(trace, ctx, None).code),
                                           fill)
            ip = loaded.lib.sl_jit_run_trace(v, f.cast("void *", addr))
            pc = (int(f.cast("uintptr_t", ip)) - code_addr) // 8
            got = {"pc": pc, "stack": [int(v.stack[i]) for i in
                                       range((int(f.cast("uintptr_t", v.sp)) -
                                              int(f.cast("uintptr_t", v.stack))) // 8)],
                   "tape": bytes(f.buffer(v.tape, TAPE)),
                   "head": int(f.cast("uintptr_t", v.head)) - int(f.cast("uintptr_t", v.tape)),
                   "out": bytes(f.buffer(v.out, v.out_len)), "in_pos": int(v.in_pos)}
        # where the oracle stops: the trace's exits; in a loop, not the deopt
        # of an instruction in it, which the oracle runs through (and the
        # cases never take: their loops stay on the tape)
        exits = {e.pc for e in compiled[-1].exits
                 if not (e.deopt and (case.closed or any(t.loop_pc is not None
                                                         for t in case.ops)))}
        deopted = pc == case.ops[-1].pc and not case.closed and \
            any(h.kind == "deopt" for h in st[name].holes)
        if deopted:
            want = {"pc": pc, "stack": stack, "tape": bytes(tape), "head": head, "out": b"",
                    "in_pos": 0}
        else:
            s = _oracle(case, consts, stack, tape, head, inp, exits)
            if s is None:
                failures.append(f"trial {trial}: the oracle raises an error but the stencil "
                                f"did not deopt (state {stack}, head {head})")
                continue
            want = {"pc": s.pc, "stack": s.stack, "tape": bytes(s.tape), "head": s.head,
                    "out": bytes(s.out), "in_pos": s.in_pos}
        for k in want:
            if want[k] != got[k]:
                failures.append(f"trial {trial} ({_tested(case)}): "
                                f"{_difference(k, got[k], want[k])}")
                break
    return failures


def _tested(case: Case) -> str:
    """The instruction under test, in words: its code unit is (opcode, operand),
    which a report once showed bare, as '(7, 1073741824)'."""
    op, arg = case.code[case.ops[-1].pc]
    return f"{isa.INSTRUCTIONS[op].name} with operand {arg}"


def _difference(key: str, got, want) -> str:
    """What differs: the first differing cell of the tape or byte of the
    output; the whole of anything else (a stack is read whole, top last)."""
    what = {"pc": "resume pc", "stack": "stack", "tape": "tape", "head": "tape head",
            "out": "output", "in_pos": "input position"}[key]
    if key in ("tape", "out"):
        n = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), None)
        if n is not None:
            return (f"{what} {'cell' if key == 'tape' else 'byte'} {n} is {got[n]}, the "
                    f"oracle says {want[n]}")
    return f"{what} is {_short(got)}, the oracle says {_short(want)}"


def _short(v) -> str:
    r = repr(v)
    return r if len(r) < 120 else r[:117] + "..."
