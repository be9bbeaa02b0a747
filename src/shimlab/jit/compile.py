"""Copy-and-patch: lays a trace's stencils end to end, adds its exit stubs,
and patches every hole.  The trace body is the same bytes in every JIT
mode; only the exit stubs (fixed-size slots after the body) differ."""
from __future__ import annotations

import re
import struct
from bisect import bisect_right
from dataclasses import dataclass, field

from .. import isa, modes
from ..abi import contract
from ..errors import ShimlabError
from . import optimize
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
    head: int = 0            # the trace's virtual head there: the head register catches up
    kept: bool = False       # --cache K: leaves with the K values in registers, not spilled


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
    opt: int = 0                         # the trace optimizer's level (jit/optimize.py)
    cache: int = 0                       # the interpreter's cached values: exits reload them
    heat: int | None = None              # side exits: address of this trace's heat counters
    blocks: int | None = None            # --stats: address of this trace's block counters
    rec_table: int = 0                   # side exits: the recorder's dispatch table
    traces_at: dict = field(default_factory=dict)   # pc -> entry of a trace there: exits jump in


@dataclass
class Compiled:
    code: bytes
    body_size: int
    slot_size: int
    exits: list[Exit]
    symbols: list[tuple[int, int, str]]   # (offset, size, name) for the perf map
    patch_at: list[int] = field(default_factory=list)   # per exit: where a link's jmp goes
    linked: list[bool] = field(default_factory=list)    # per exit: jumps to a trace already
    folded: dict = field(default_factory=dict)          # what the optimizer did (--stats)
    entry_tally: int = 0                                # bytes of the entry tally (--stats)
    block_ops: list[int] = field(default_factory=list)  # --stats: instructions per block
    retakes: list[bool] = field(default_factory=list)   # per exit: re-runs an instruction counted as run
    entry_stub: int = 0                                 # bytes of the entry trampoline (jit-trampoline)


def _to_handler(ctx: Context, ex: Exit) -> bool:
    """Does this exit jump straight to the C handler of the original instruction?

    jit-direct-handler's exits all do.  In the other direct modes a deopt
    exit does too: through the table it could land on ENTER_JIT (a deopt at a
    loop header, or where a trace was installed later), enter the trace again,
    deopt again, forever.  (jit-shim's ENTER_JIT runs the original instruction.)"""
    how = modes.get(ctx.mode).exits_to_handler
    return how == "all" or (ex.deopt and how == "deopt")


def _hot_exit(ctx: Context) -> str:
    mode = modes.get(ctx.mode)
    if mode.exit_stencil.startswith("exit:shim"):
        return "opt:hot-exit:shim"
    if mode.trace_order:     # it moves every register back, the K values too
        return "opt:hot-exit:trampoline" + (":count" if ctx.count else "") + (
            f":k{ctx.cache}" if ctx.cache else "")
    return "opt:hot-exit:count" if ctx.count else "opt:hot-exit"


def _reloads(ctx: Context, ex: Exit) -> list[str]:
    """With linking on (side exits have heat) and K cached values: an exit
    whose trace spilled them reloads them first, into the registers a trace
    is entered with them in, so that whatever follows (a jump into another
    trace, the recorder, the interpreter) finds them there, as it would
    after a :kK:keep exit.  jit-shim's traces are entered with them spilled:
    nothing to reload."""
    if not ctx.cache or ex.kept or ctx.heat is None or modes.get(ctx.mode).entry_spills:
        return []
    regs = contract.trace_cache_registers(ctx.cache, modes.get(ctx.mode).trace_order)
    return [f"opt:pop:reg:{r}" for r in regs]         # c0, the top, first


def _stubs(mode: modes.Mode) -> set[str]:
    """The stencils of a mode's crossings that a trace in another register
    order takes from the interpreter's artifact (less their :kK suffix): they
    are written against both orders (jitstubs/trampoline.py)."""
    return {mode.entry_stencil, mode.exit_stencil, mode.count_exit_stencil,
            mode.handler_exit_stencil, mode.handler_exit_stencil + ":far",
            "opt:hot-exit:trampoline", "opt:hot-exit:trampoline:count"}


def load_stencils(ctx: Context) -> dict:
    """The stencils a trace of ctx's mode is made of: the interpreter's order's,
    or, for a mode whose traces run in another order (jit-trampoline), that
    order's, with the crossing stubs of the interpreter's."""
    mode = modes.get(ctx.mode)
    if not mode.trace_order:
        return stencil_store.load(ctx.state, ctx.source, ctx.cc)
    if ctx.source != "peachpy":
        raise CompileError(f"{ctx.mode}: its traces run in another register order than the "
                           f"interpreter's, which {ctx.source}-built stencils cannot; use peachpy")
    st = dict(stencil_store.load(contract.trace_state(ctx.state, mode.trace_order)))
    stubs, names = stencil_store.load(ctx.state), _stubs(mode)
    st.update({n: s for n, s in stubs.items() if re.sub(r":k\d+(:keep)?$", "", n) in names})
    return st


def _exit_parts(ctx: Context, ex: Exit, far: bool = False, linked: bool = False) -> list[str]:
    """The stencils of one exit; far: the trace is mapped out of rel32 reach of
    the interpreter's handlers (ASan's memory layout does that); linked: it
    jumps into another trace (a side exit linked, or a trace where it resumes).
    A linked slot keeps its first part (the head) and a jump where the rest was."""
    reloads = _reloads(ctx, ex)
    parts = (["opt:head"] if ex.head else []) + reloads
    if linked:                 # into another trace: no crossing
        return parts + ["opt:link"]
    if ctx.tallies is not None:
        parts.append("tally")
    if ctx.heat is not None and not ex.deopt:
        parts.append(_hot_exit(ctx))
    if ctx.count and ex.uncount is not None:
        parts.append("uncount")
    # an interpreter with K cached values: the exit stub's :kK variant reloads
    # them, its :kK:keep variant finds them in their registers
    kept = ex.kept or bool(reloads)
    k = (f":k{ctx.cache}" + (":keep" if kept else "")) if ctx.cache else ""
    mode = modes.get(ctx.mode)
    if _to_handler(ctx, ex):
        if ctx.count:
            parts.append("count")
        return parts + [mode.handler_exit_stencil + (":far" if far else "") + k]
    return parts + [(mode.count_exit_stencil if ctx.count else mode.exit_stencil) + k]


def slot_size(st: dict, count: bool, stats: bool, virtual_head: bool = False,
              cache: int = 0, hot: bool = False, order: str = "") -> int:
    """One slot size for all modes whose traces run in the same register order
    (`order`, modes.py trace_order), so the body's bytes do not depend on the
    mode (plain traces keep the size they had before the optimizer)."""
    # what decides it: the flags and the sizes of the stencils an exit is made of
    key = (count, stats, virtual_head, cache, hot, order,
           tuple((n, len(st[n].code)) for n in _slot_names(st)))
    if key not in _SLOT_SIZES:
        _SLOT_SIZES[key] = _slot_size(st, count, stats, virtual_head, cache, hot, order)
    return _SLOT_SIZES[key]


_SLOT_SIZES: dict = {}
_SLOT_NAMES: dict = {}    # (len(st), its tally stencil) -> (that stencil, the slot parts' names)


def _slot_names(st: dict) -> tuple:
    """The names of st's stencils an exit slot can be made of, walked once
    per stencil set rather than per compile (~500 names: it once took a
    third of a compile).  Only the standard artifact has such names (a
    prototype is named after an instruction), and a set of stencils
    loaded is told by its size and its tally stencil object (kept, so its
    id is not reused)."""
    tally = st.get("tally")
    key = (len(st), id(tally))
    hit = _SLOT_NAMES.get(key)
    if hit is None or hit[0] is not tally:
        hit = _SLOT_NAMES[key] = (tally, tuple(n for n in st if n.startswith(_SLOT_PARTS)))
    return hit[1]
_SLOT_PARTS = ("exit:", "opt:head", "opt:hot-exit", "opt:link", "tally", "count", "uncount")


def _slot_size(st, count, stats, virtual_head, cache, hot, order) -> int:
    worst = 0
    for mode in modes.JIT:
        if modes.get(mode).trace_order != order:
            continue
        ctx = Context(mode, 0, [], [], count=count, tallies=0 if stats else None, cache=cache,
                      heat=0 if hot else None)
        kept = (False, True) if cache and not modes.get(mode).entry_spills else (False,)
        for deopt in (False, True):
            for far in (False, True):
                for keep in kept:
                    parts = _exit_parts(ctx, Exit(0, 0, deopt, head=int(virtual_head), kept=keep),
                                        far)
                    worst = max(worst, sum(len(st[p].code) for p in parts))
    return -(-worst // SLOT_ALIGN) * SLOT_ALIGN


def _count_blocks(lowered, st: dict, blocks: int) -> list[int]:
    """--stats: a tally at the start of every block of the body (a label, or
    after a piece that can leave), so the instructions a trace ran are the
    sum of each block's count times its instructions; returns those counts.
    Rewrites lowered's pieces, labels and starts in place."""
    if not lowered.pieces:     # every instruction folded away: one block, its tally
        lowered.pieces = [optimize.Piece("tally", {"tally": blocks})]
        lowered.labels = {pc: 0 for pc in lowered.labels}
        return [len(lowered.starts)]
    leaves = {"deopt", "branch", "loop"}
    bounds = {0} | set(lowered.labels.values()) | {
        i + 1 for i, p in enumerate(lowered.pieces) if leaves & {h.kind for h in st[p.stencil].holes}}
    bounds = sorted(b for b in bounds if b < len(lowered.pieces))
    moved, pieces, index = {}, [], {b: k for k, b in enumerate(bounds)}
    for i, p in enumerate(lowered.pieces):
        if i in index:
            pieces.append(optimize.Piece("tally", {"tally": blocks + 8 * index[i]}))
        moved[i] = len(pieces)
        pieces.append(p)
    moved[len(lowered.pieces)] = len(pieces)
    ops = [0] * len(bounds)
    for start in lowered.starts:
        ops[max(0, bisect_right(bounds, start) - 1)] += 1
    # a jump to a label lands on its block's tally
    lowered.labels = {pc: moved[i] - (1 if i in index else 0) for pc, i in lowered.labels.items()}
    lowered.pieces = pieces
    return ops


def _lower(trace: Trace, ctx: Context, st: dict):
    """The optimizer's pieces for `trace` (and --stats's block counts), made
    once for the two compiles of a trace (its size, then its code in place)."""
    key = (ctx.opt, ctx.count, ctx.blocks)
    cached = getattr(trace, "_lowered", None)
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    lowered = optimize.lower(trace, ctx.consts, ctx.opt, ctx.count,
                             registers=ctx.source == "peachpy", cache=cache_for(ctx, st))
    for p in lowered.pieces:
        if p.stencil not in st:
            where = f" (pc {p.op.pc})" if p.op is not None else ""
            raise CompileError(f"no stencil {p.stencil}{where}")
    block_ops = _count_blocks(lowered, st, ctx.blocks) if ctx.blocks is not None else []
    trace._lowered = (key, lowered, block_ops)
    return lowered, block_ops


def cache_for(ctx: Context, st: dict | None = None) -> "optimize.Cache | None":
    """What the optimizer needs to keep a trace's entry values in registers:
    None when the trace is entered with them spilled (K = 0, or jit-shim)."""
    st = load_stencils(ctx) if st is None else st
    mode = modes.get(ctx.mode)
    if not ctx.cache or mode.entry_spills:
        return None
    regs = contract.trace_cache_registers(ctx.cache, mode.trace_order)
    return optimize.Cache(regs, lambda name: stencil_store.writes(st[name]),
                          lambda name: bool(_LEAVES & {h.kind for h in st[name].holes}))
_LEAVES = {"deopt", "branch", "loop"}


def lower(trace: Trace, ctx: Context) -> None:
    """Runs the optimizer for `trace` now (compile_trace reuses its pieces):
    so the optimizer's time can be told from copy-and-patch's."""
    _lower(trace, ctx, load_stencils(ctx))


def _reaches(slot_at: int, target: int, slot: int) -> bool:
    """Whether a rel32 field anywhere in the slot at `slot_at` reaches `target`."""
    return -(1 << 31) < target - (slot_at + slot) and target - slot_at < (1 << 31)


def compile_trace(trace: Trace, ctx: Context, base: int | None,
                  size_only: bool = False) -> Compiled:
    """Machine code for `trace` when it will run at address `base` (None: only
    its size is wanted); size_only: no code (zeros), no holes patched, only
    the sizes and exits (what placing a trace needs, at half the cost)."""
    if not modes.is_jit(ctx.mode):
        raise CompileError(f"not a JIT mode: {ctx.mode}")
    mode = modes.get(ctx.mode)
    st = load_stencils(ctx)
    # pass 1: the optimizer's pieces, and where each label (a jump target
    # with the head materialized) starts
    lowered, block_ops = _lower(trace, ctx, st)
    pieces = lowered.pieces
    if ctx.tallies is not None:
        pieces = [optimize.Piece("tally", {"tally": ctx.tallies})] + pieces
    # jit-trampoline: ENTER_JIT lands in the entry trampoline, which falls into
    # the trace (and its entry tally); a trace that links here jumps past it
    entry = mode.entry_stencil + (f":k{ctx.cache}" if ctx.cache else "")
    if mode.entry_stencil:
        pieces = [optimize.Piece(entry, {})] + pieces
    offsets, pos = [], 0
    for p in pieces:
        offsets.append(pos)
        pos += len(st[p.stencil].code)
    body = pos
    offsets.append(body)    # a label after the last piece: a stretch whose work folded away
    first = (1 if ctx.tallies is not None else 0) + (1 if mode.entry_stencil else 0)
    at_pc = {pc: offsets[i + first] for pc, i in lowered.labels.items()}
    # pass 2: exits, one slot each; the end exit first, so the body falls into it
    exits: dict[Exit, int] = {}
    retakes: dict[Exit, bool] = {}
    if not trace.closed:
        exits[Exit(trace.end_pc, None, kept=lowered.end_kept)] = 0
    for p in pieces:
        t, values = p.op, p.values
        if t is None:
            continue
        kinds = {h.kind for h in st[p.stencil].holes}
        if "loop" in kinds:
            target = t.loop_pc if t.loop_pc is not None else trace.start
            if target not in at_pc or p.d:
                raise CompileError(f"pc {t.pc}: loop target {target} is not a label of the trace")
            values["loop"] = ("at", at_pc[target])
        if "deopt" in kinds:    # never linked: the interpreter must run this instruction
            ex = Exit(t.pc, t.op if ctx.count and p.counted else None, deopt=True, head=p.d,
                      kept=p.kept)
            values["deopt"] = ("exit", exits.setdefault(ex, len(exits)))
            retakes[ex] = p.counted
        if "branch" in kinds:
            if t.exit_pc in at_pc and not p.d:
                values["branch"] = ("at", at_pc[t.exit_pc])
            else:
                values["branch"] = ("exit", exits.setdefault(
                    Exit(t.exit_pc, None, head=p.d, kept=p.kept), len(exits)))
    slot = slot_size(st, ctx.count, ctx.tallies is not None, ctx.opt > 0, cache=ctx.cache,
                     hot=ctx.heat is not None, order=mode.trace_order)
    total = body + slot * len(exits)
    if size_only:
        return Compiled(bytes(total), body, slot, list(exits), [])
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
            elif h.kind == "link":          # reach checked by _reaches before linking
                v = 0 if base is None else v - (base + field_at + 4)
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
    for p, at in zip(pieces, offsets):
        t = p.op
        patch(st[p.stencil], at, p.values, p.stencil if t is None else f"{t.name}@pc{t.pc}")
        if t is not None:
            symbols.append((at, len(st[p.stencil].code), f"{p.stencil}@pc{t.pc}"))
    patch_at, linked_to = [0] * len(exits), [False] * len(exits)
    for ex, idx in exits.items():
        at = body + slot * idx
        out[at:at + slot] = bytes([INT3]) * slot
        values = {"resume_ip": ctx.code_addr + 8 * ex.pc, "cell": ex.head,
                  "heat": (ctx.heat or 0) + 8 * idx, "rec_table": ctx.rec_table}
        # a link's jmp goes after the head's catch-up and the reloads
        patch_at[idx] = at + sum(len(st[p].code) for p in
                                 (["opt:head"] if ex.head else []) + _reloads(ctx, ex))
        link = None if ex.deopt else ctx.traces_at.get(ex.pc)
        if link is not None and base is not None and not _reaches(base + at, link, slot):
            link = None     # (a sanitizer's allocator can map traces far apart) it crosses
        if link is not None:
            linked_to[idx] = True
            for part in _exit_parts(ctx, ex, linked=True):
                patch(st[part], at, {**values, "link": link}, f"exit to pc {ex.pc}")
                at += len(st[part].code)
            symbols.append((body + slot * idx, slot, f"link->pc{ex.pc}"))
            continue
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
    return Compiled(bytes(out), body, slot, list(exits), symbols, patch_at, linked_to,
                    lowered.folded, len(st["tally"].code) if ctx.tallies is not None else 0,
                    block_ops, [retakes.get(ex, False) for ex in exits],
                    len(st[entry].code) if mode.entry_stencil else 0)
