"""The trace optimizer's level 3: minipy's hottest locals kept in registers
across a loop trace (a pass over level 2's pieces, peachpy_stencils/fused.py's
kinds x, y, z: rbx, r9, r10).

A loop trace (closed, or with an inner loop) loads up to three locals into
registers at its entry, before the label its back-edge jumps to, so one
load serves every iteration; in the body every read of such a local takes
the register and every store sets the register *and* the frame slot
(write-through: `opt:keep:x:r` is `mov rbx, rdx; mov [fp + local], rbx`).

Why write-through rather than spilling at the exits: the frame in memory is
then the interpreter's at every instruction boundary, so no exit, deopt,
linked jump into another trace or hot-exit recording needs code of its own,
the fixed-size exit slots keep their size, and a count build's per-opcode
counts stay what level 2 makes them.  What a local in memory costs in a
loop is the load on the loop-carried chain (`j += 1`: load, add, store,
and the next iteration's load waits for the store to forward, some 5
cycles here); a register takes that load off the chain, while the store
beside it stays off the chain.  Anything that could see the frame leaves
the trace (PRINT has no stencil), and a trace entered again (its loop, a
side trace linked back into it) reloads at its entry.  In a trace that
runs through calls (trace.py) only the start frame's locals are kept: a
local's index names another slot in each frame, so a callee's reads and
writes stay in memory, and the registers stay right across the call (the
frame stencils and the callee's touch neither them nor the start frame's
slots), as they do across an exit, being written through.

Why a level of its own rather than part of level 2: `bench programs` and
the differential tests run every level, so what registers add over the
fused stack code is read off by itself, and level 2 stays for comparison.

The pass runs only where it knows every stencil's registers: PeachPy
instruction stencils (clang-built ones may use any register) and no
prototype in place of a standard stencil (--stencil).  Elsewhere level 3's
pieces are level 2's.
"""
from __future__ import annotations

from .fuse import ARITH, BY_IMM

REGISTERS = "xyz"        # peachpy_stencils/fused.py REGS: rbx, r9, r10
_TWO = ARITH | {"MUL", "cmp"} | set(BY_IMM)       # opt:OP:pair stencils


def _refs(p) -> tuple[list[int], int | None]:
    """The locals piece p reads and the one it writes (None: no write)."""
    name, v = p.stencil, p.values
    if name == "LOAD_LOCAL":
        return [v["local"] // 8], None
    if name == "STORE_LOCAL":
        return [], v["local"] // 8
    if not name.startswith("opt:"):
        return [], None              # an instruction stencil that does not touch the frame
    parts = name.split(":")
    if len(parts) != 3:
        return [], None
    kind, operands = parts[1], parts[2]
    if kind == "store":
        return ([v["local2"] // 8] if operands == "l" else []), v["local"] // 8
    if kind == "push":
        return ([v["local2"] // 8] if operands == "l" else []), None
    if kind in _TWO and len(operands) == 2:
        reads = [v["local"] // 8] if operands[0] == "l" else []
        if operands[1] == "l":
            reads.append(v["local2"] // 8)
        return reads, None
    return [], None


def choose(pieces) -> list[int]:
    """The locals worth a register: read in the trace and used at least
    twice, those also stored (a loop-carried chain) first, then the most used."""
    reads: dict[int, int] = {}
    writes: dict[int, int] = {}
    for p in pieces:
        r, w = _refs(p)
        for n in r:
            reads[n] = reads.get(n, 0) + 1
        if w is not None:
            writes[w] = writes.get(w, 0) + 1
    ranked = sorted((n for n in reads if reads[n] + writes.get(n, 0) >= 2),
                    key=lambda n: (n not in writes, -(reads[n] + writes.get(n, 0)), n))
    return ranked[:len(REGISTERS)]


def _start_frame(pieces) -> list:
    """The pieces that run in the trace's start frame (trace.py TraceOp.frame).
    A piece without an instruction (a flush's push, a count) runs in the
    frame of the next piece that has one: a flush goes just before the
    instruction that needed it, a CALL or RETURN included."""
    out, frame = [], None
    for p in reversed(pieces):
        if p.op is not None:
            frame = p.op.frame
        elif frame is None:          # after the last instruction: its frame (nothing
            # virtual outlives a CALL or RETURN, flushed before it: no local after one)
            frame = next((q.op.frame for q in reversed(pieces) if q.op is not None), 0)
        if not frame:
            out.append(p)
    return out[::-1]


def keep_locals(trace, lowered, piece) -> None:
    """Rewrites level 2's pieces in place (piece: optimize.Piece)."""
    if not (trace.closed or any(t.loop_pc is not None for t in trace.ops)):
        return                       # no loop in it: one pass, nothing to keep
    if not any(t.name in ("LOAD_LOCAL", "STORE_LOCAL") for t in trace.ops):
        return                       # BF, or no locals
    # only the start frame's pieces: in a callee's a local's index names a
    # slot of that frame (the registers are the start frame's; nothing a
    # callee runs writes them, nor the start frame's slots)
    mine = _start_frame(lowered.pieces)
    chosen = choose(mine)
    if not chosen:
        return
    reg = dict(zip(chosen, REGISTERS))
    for p in mine:
        name, v = p.stencil, p.values
        if name == "LOAD_LOCAL" and v["local"] // 8 in reg:
            p.stencil = f"opt:push:{reg[v['local'] // 8]}"
        elif name == "STORE_LOCAL" and v["local"] // 8 in reg:
            p.stencil = f"opt:keep:{reg[v['local'] // 8]}:s"
        elif name.startswith("opt:") and name.count(":") == 2:
            _, kind, operands = name.split(":")
            if kind == "store":
                src = operands
                if src == "l" and v["local2"] // 8 in reg:
                    src = reg[v["local2"] // 8]
                dest = v["local"] // 8
                if dest in reg:
                    p.stencil = f"opt:keep:{reg[dest]}:{src}"
                elif src != operands:
                    p.stencil = f"opt:store:{src}"
            elif kind == "push" and operands == "l" and v["local2"] // 8 in reg:
                p.stencil = f"opt:push:{reg[v['local2'] // 8]}"
            elif kind in _TWO and len(operands) == 2:
                left, right = operands
                if left == "l" and v["local"] // 8 in reg:
                    left = reg[v["local"] // 8]
                if right == "l" and v["local2"] // 8 in reg:
                    right = reg[v["local2"] // 8]
                p.stencil = f"opt:{kind}:{left}{right}"
    # the loads, before every label: the back-edge and inner jumps skip them
    loads = [piece(f"opt:load:{k}", {"local": 8 * n}) for n, k in reg.items()]
    lowered.pieces[:0] = loads
    lowered.labels = {pc: i + len(loads) for pc, i in lowered.labels.items()}
    lowered.starts = [i + len(loads) for i in lowered.starts]
    lowered.note("locals in registers", len(loads))
