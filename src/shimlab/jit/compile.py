"""Copy-and-patch: lays a trace's stencils end to end, adds its exit stubs,
and patches every hole.  The trace body is the same bytes in every JIT
mode; only the exit stubs (fixed-size slots after the body) differ."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .. import isa, modes
from ..errors import ShimlabError
from . import stencils as stencil_store
from .trace import Trace

SLOT_ALIGN = 8
INT3 = 0xCC


class CompileError(ShimlabError):
    pass


@dataclass(frozen=True)
class Exit:
    pc: int                  # bytecode instruction to resume at
    uncount: int | None      # count builds: opcode whose count a deopt takes back
    deopt: bool = False      # resumes AT an instruction the trace did not finish


@dataclass
class Context:
    """What patching needs to know about the VM and the process."""
    mode: str
    code_addr: int                       # address of code[0]
    consts: list[int]
    code: list[tuple[int, int]]          # the program's (op, arg), unpatched
    handler_addrs: list[int] = field(default_factory=list)   # jit-direct-handler
    count: bool = False                  # a count build: keep per-opcode counts exact
    tallies: int | None = None           # --stats: address of this trace's counters
    state: dict | None = None            # the interpreter's register contract (None: the static one)
    source: str = "peachpy"              # instruction stencils: "peachpy" or "clang" (cstencils.py)
    cc: str | None = None                # the compiler of clang stencils (the interpreter's)


@dataclass
class Compiled:
    code: bytes
    body_size: int
    slot_size: int
    exits: list[Exit]
    symbols: list[tuple[int, int, str]]   # (offset, size, name) for the perf map


def _to_handler(ctx: Context, ex: Exit) -> bool:
    """Does this exit jump straight to the C handler of the original instruction?

    jit-direct-handler's exits all do.  In the other direct modes a deopt
    exit does too: through the table it could land on ENTER_JIT (a deopt at a
    loop header, or where a trace was installed later), enter the trace again,
    deopt again, forever.  (jit-shim's ENTER_JIT runs the original instruction.)"""
    how = modes.get(ctx.mode).exits_to_handler
    return how == "all" or (ex.deopt and how == "deopt")


def _exit_parts(ctx: Context, ex: Exit, far: bool = False) -> list[str]:
    """The stencils of one exit; far: the trace is mapped out of rel32 reach of
    the interpreter's handlers (ASan's memory layout does that)."""
    parts = []
    if ctx.tallies is not None:
        parts.append("tally")
    if ctx.count and ex.uncount is not None:
        parts.append("uncount")
    if _to_handler(ctx, ex):
        if ctx.count:
            parts.append("count")
        return parts + ["exit:direct-handler:far" if far else "exit:direct-handler"]
    mode = modes.get(ctx.mode)
    return parts + [mode.count_exit_stencil if ctx.count else mode.exit_stencil]


def slot_size(st: dict, count: bool, stats: bool) -> int:
    """One slot size for all modes, so the body's bytes do not depend on the mode."""
    worst = 0
    for mode in modes.JIT:
        ctx = Context(mode, 0, [], [], count=count, tallies=0 if stats else None)
        for deopt in (False, True):
            for far in (False, True):
                parts = _exit_parts(ctx, Exit(0, 0, deopt), far)
                worst = max(worst, sum(len(st[p].code) for p in parts))
    return -(-worst // SLOT_ALIGN) * SLOT_ALIGN


def compile_trace(trace: Trace, ctx: Context, base: int | None) -> Compiled:
    """Machine code for `trace` when it will run at address `base` (None: only
    its size is wanted)."""
    st = stencil_store.load(ctx.state, ctx.source, ctx.cc)
    if not modes.is_jit(ctx.mode):
        raise CompileError(f"not a JIT mode: {ctx.mode}")
    # pass 1: the body's pieces and where each instruction starts.  Every
    # instruction boundary in a trace is a consistent VM state (stencils keep
    # nothing in registers across instructions), so a guard whose target is
    # an instruction of this trace jumps there instead of leaving it.
    pieces: list[tuple] = []                   # (stencil, values, trace op or None)
    if ctx.tallies is not None:
        pieces.append(("tally", {"tally": ctx.tallies}, None))
    first_piece: dict[int, int] = {}           # pc -> index of its first piece
    for t in trace.ops:
        if t.stencil not in st:
            raise CompileError(f"no stencil {t.stencil} (pc {t.pc})")
        first_piece.setdefault(t.pc, len(pieces))
        if ctx.count:
            pieces.append(("count", {"count": 8 * t.op}, None))
        values = {"oparg": t.arg, "local": 8 * t.arg, "continue": "next"}
        if t.name == "LOAD_CONST":
            values["const"] = ctx.consts[t.arg]
        pieces.append((t.stencil, values, t))
    offsets, pos = [], 0
    for p in pieces:
        offsets.append(pos)
        pos += len(st[p[0]].code)
    body = pos
    at_pc = {pc: offsets[i] for pc, i in first_piece.items()}
    # pass 2: exits, one slot each; the end exit first, so the body falls into it
    exits: dict[Exit, int] = {}
    if not trace.closed:
        exits[Exit(trace.end_pc, None)] = 0
    for name, values, t in pieces:
        if t is None:
            continue
        kinds = {h.kind for h in st[name].holes}
        if "loop" in kinds:
            target = t.loop_pc if t.loop_pc is not None else trace.start
            if target not in at_pc:
                raise CompileError(f"pc {t.pc}: loop target {target} is not in the trace")
            values["loop"] = ("at", at_pc[target])
        if "deopt" in kinds:    # never linked: the interpreter must run this instruction
            values["deopt"] = ("exit", exits.setdefault(
                Exit(t.pc, t.op if ctx.count else None, deopt=True), len(exits)))
        if "branch" in kinds:
            if t.exit_pc in at_pc:
                values["branch"] = ("at", at_pc[t.exit_pc])
            else:
                values["branch"] = ("exit", exits.setdefault(Exit(t.exit_pc, None), len(exits)))
    slot = slot_size(st, ctx.count, ctx.tallies is not None)
    total = body + slot * len(exits)
    out = bytearray(total)

    def patch(stencil, at: int, values: dict, name: str) -> None:
        out[at:at + len(stencil.code)] = stencil.code
        for h in stencil.holes:
            if h.kind not in values:
                raise CompileError(f"stencil {stencil.name}: hole {h.kind} at +{h.offset} "
                                   f"left unpatched ({name})")
            v = values[h.kind]
            field_at = at + h.offset
            if h.kind in ("deopt", "branch", "loop"):
                where, n = v
                v = (n if where == "at" else body + slot * n) - (field_at + 4)
            elif h.kind == "continue":         # the next stencil, laid right after this one
                v = at + len(stencil.code) - (field_at + 4)
            elif h.kind == "handler":
                v = 0 if base is None else v - (base + field_at + 4)
                if not -(1 << 31) <= v < (1 << 31):
                    raise CompileError("the trace is mapped more than 2 GiB from the "
                                       "interpreter: jit-direct-handler cannot jump there")
            fmt = "<q" if h.width == 8 else "<i"
            if h.width == 8:
                v = isa.wrap64(v)
            elif not -(1 << 31) <= v < (1 << 31):
                raise CompileError(f"stencil {stencil.name}: value {v} does not fit hole "
                                   f"{h.kind} ({name})")
            struct.pack_into(fmt, out, field_at, v)

    symbols = []
    for (name, values, t), at in zip(pieces, offsets):
        patch(st[name], at, values, name if t is None else f"{t.name}@pc{t.pc}")
        if t is not None:
            symbols.append((at, len(st[name].code), f"{t.stencil}@pc{t.pc}"))
    for ex, idx in exits.items():
        at = body + slot * idx
        out[at:at + slot] = bytes([INT3]) * slot
        values = {"resume_ip": ctx.code_addr + 8 * ex.pc}
        if ctx.count and ex.uncount is not None:
            values["count"] = 8 * ex.uncount
        if ctx.tallies is not None:
            values["tally"] = ctx.tallies + 8 * (1 + idx)
        far = False
        if _to_handler(ctx, ex):
            values["handler"] = values["handler_abs"] = ctx.handler_addrs[ctx.code[ex.pc][0]]
            # the jmp's rel32 ends 4 bytes into the slot's last part at the latest
            far = base is not None and not -(1 << 31) < values["handler"] - (base + at) < (1 << 31) - 4096
        for part in _exit_parts(ctx, ex, far):
            v = dict(values)
            if part == "count":
                v["count"] = 8 * ctx.code[ex.pc][0]
            patch(st[part], at, v, f"exit to pc {ex.pc}")
            at += len(st[part].code)
        symbols.append((body + slot * idx, slot, f"exit->pc{ex.pc}"))
    return Compiled(bytes(out), body, slot, list(exits), symbols)
