"""Copy-and-patch: lays a trace's stencils end to end, adds its exit stubs,
and patches every hole.  The trace body is the same bytes in every JIT
mode; only the exit stubs (fixed-size slots after the body) differ."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .. import isa
from ..errors import ShimlabError
from . import stencils as stencil_store
from .trace import Trace

EXIT_STENCIL = {"jit-shim": "exit:shim", "jit-direct": "exit:direct",
                "jit-direct-handler": "exit:direct-handler"}
SLOT_ALIGN = 8
INT3 = 0xCC


class CompileError(ShimlabError):
    pass


@dataclass(frozen=True)
class Exit:
    pc: int                  # bytecode instruction to resume at
    uncount: int | None      # count builds: opcode whose count a deopt takes back


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
    loop_offset: int


def _exit_parts(ctx: Context, ex: Exit) -> list[str]:
    parts = []
    if ctx.tallies is not None:
        parts.append("tally")
    if ctx.count and ex.uncount is not None:
        parts.append("uncount")
    if ctx.count and ctx.mode == "jit-direct-handler":
        parts.append("count")
    exit_name = EXIT_STENCIL[ctx.mode]
    if ctx.count and ctx.mode == "jit-direct":
        exit_name = "exit:direct:count"
    return parts + [exit_name]


def slot_size(st: dict, count: bool, stats: bool) -> int:
    """One slot size for all modes, so the body's bytes do not depend on the mode."""
    worst = 0
    for mode in EXIT_STENCIL:
        ctx = Context(mode, 0, [], [], count=count, tallies=0 if stats else None)
        worst = max(worst, sum(len(st[p].code) for p in _exit_parts(ctx, Exit(0, 0))))
    return -(-worst // SLOT_ALIGN) * SLOT_ALIGN


def compile_trace(trace: Trace, ctx: Context, base: int | None) -> Compiled:
    """Machine code for `trace` when it will run at address `base` (None: only
    its size is wanted)."""
    st = stencil_store.load(ctx.state, ctx.source, ctx.cc)
    if ctx.mode not in EXIT_STENCIL:
        raise CompileError(f"not a JIT mode: {ctx.mode}")
    exits: dict[Exit, int] = {}
    if not trace.closed:                       # the end exit comes first: the body falls into it
        exits[Exit(trace.end_pc, None)] = 0
    pieces: list[tuple[str, dict]] = []        # (stencil, values for its holes)
    symbols = []
    if ctx.tallies is not None:
        pieces.append(("tally", {"tally": ctx.tallies}))
    for t in trace.ops:
        if t.stencil not in st:
            raise CompileError(f"no stencil {t.stencil} (pc {t.pc})")
        if ctx.count:
            pieces.append(("count", {"count": 8 * t.op}))
        values = {"oparg": t.arg, "local": 8 * t.arg, "loop": "loop", "continue": "next"}
        if t.name == "LOAD_CONST":
            values["const"] = ctx.consts[t.arg]
        kinds = {h.kind for h in st[t.stencil].holes}
        if "deopt" in kinds:
            values["deopt"] = exits.setdefault(Exit(t.pc, t.op if ctx.count else None),
                                               len(exits))
        if "branch" in kinds:
            values["branch"] = exits.setdefault(Exit(t.exit_pc, None), len(exits))
        pieces.append((t.stencil, values, t))
    slot = slot_size(st, ctx.count, ctx.tallies is not None)
    # pass 1: offsets
    offsets, pos = [], 0
    for p in pieces:
        offsets.append(pos)
        pos += len(st[p[0]].code)
    body = pos
    loop_offset = len(st["tally"].code) if ctx.tallies is not None else 0
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
            if h.kind in ("deopt", "branch"):
                v = body + slot * v - (field_at + 4)
            elif h.kind == "loop":
                v = loop_offset - (field_at + 4)
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

    for p, at in zip(pieces, offsets):
        name = p[2].name + f"@pc{p[2].pc}" if len(p) > 2 else p[0]
        patch(st[p[0]], at, p[1], name)
        if len(p) > 2:
            symbols.append((at, len(st[p[0]].code), f"{p[2].stencil}@pc{p[2].pc}"))
    for ex, idx in exits.items():
        at = body + slot * idx
        out[at:at + slot] = bytes([INT3]) * slot
        values = {"resume_ip": ctx.code_addr + 8 * ex.pc}
        if ctx.count and ex.uncount is not None:
            values["count"] = 8 * ex.uncount
        if ctx.tallies is not None:
            values["tally"] = ctx.tallies + 8 * (1 + idx)
        if ctx.mode == "jit-direct-handler":
            op = ctx.code[ex.pc][0]
            values["handler"] = ctx.handler_addrs[op]
        for part in _exit_parts(ctx, ex):
            v = dict(values)
            if part == "count":
                v["count"] = 8 * ctx.code[ex.pc][0]
            patch(st[part], at, v, f"exit to pc {ex.pc}")
            at += len(st[part].code)
        symbols.append((body + slot * idx, slot, f"exit->pc{ex.pc}"))
    return Compiled(bytes(out), body, slot, list(exits), symbols, loop_offset)

