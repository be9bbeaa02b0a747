"""Copy-and-patch: lays a trace's stencils end to end, adds its exit stubs,
and patches every hole.  The trace body is the same bytes in every JIT
mode whose traces run in the interpreter's register order; only the exit
stubs (fixed-size slots after the body) differ.  jit-trampoline's traces are
built for another order (modes.py trace_order), from that order's stencils,
behind an entry stub of their own.

A trace is laid out once (compile_trace with size_only: pieces, offsets,
exits, its size) and then patched where memory was found for it (place).
What patching needs of a stencil (its holes, how each is filled) is worked
out once per stencil (_shape), on its first use: a program uses a few dozen
of the ~600 stencils."""
from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from bisect import bisect_left, bisect_right
from functools import lru_cache

from .. import modes
from ..abi import contract
from ..errors import ShimlabError
from ..record import field, record
from . import optimize
from . import stencil_store
from .trace import Trace

SLOT_ALIGN = 8
INT3 = 0xCC


class CompileError(ShimlabError):
    pass


@record(frozen=True)
class Exit:
    pc: int                  # bytecode instruction to resume at
    uncount: int | None      # count builds: opcode whose count a deopt takes back
    deopt: bool = False      # resumes AT an instruction the trace did not finish
    head: int = 0            # the trace's virtual head there: the head register catches up
    kept: bool = False       # --cache K: leaves with the K values in registers, not spilled


@record
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
    source: str = "peachpy"              # instruction stencils: "peachpy" or "clang" (clang_stencils.py)
    cc: str | None = None                # the compiler of clang stencils (the interpreter's)
    opt: int = 0                         # the trace optimizer's level (jit/optimize.py)
    cache: int = 0                       # the interpreter's cached values: exits reload them
    tape_len: int | None = None          # the VM's tape (bounds checks against a constant)
    heat: int | None = None              # side exits: address of this trace's heat counters
    blocks: int | None = None            # --stats: address of this trace's block counters
    rec_table: int = 0                   # side exits: the recorder's dispatch table
    traces_at: dict = field(default_factory=dict)   # pc -> entry of a trace there: exits jump in
    funcs: list = field(default_factory=list)       # per function: (nargs, nlocals, max_stack)
    # the stencils, loaded by the first step of a trace's compile that needs
    # them (lower, then the layout): one merge of ~600 names, not one a step
    _stencils: dict | None = field(default=None, init=False, repr=False, compare=False)


@record
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
    layout: object = field(default=None, repr=False, compare=False)   # what place() patches from
    slot_at: list = field(default_factory=list)         # each exit slot's offset after the body


def _to_handler(ctx: Context, ex: Exit) -> bool:
    """Does this exit jump straight to the C handler of the original instruction?

    jit-direct-handler's exits all do.  In the other direct modes a deopt
    exit does too: through the table it could land on ENTER_JIT (a deopt at a
    loop header, or where a trace was installed later), enter the trace again,
    deopt again, forever.  (jit-shim's ENTER_JIT runs the original instruction.)"""
    how = modes.get(ctx.mode).exits_to_handler
    return how == "all" or (ex.deopt and how == "deopt")


def _hot_exit(ctx: Context) -> str:
    """A hot exit's part in its slot: its heat, and (but in the trampoline's
    orders) a jump or call to the path it takes once hot, which the trace's
    slots share (_shared_exit)."""
    mode = modes.get(ctx.mode)
    if mode.shim:
        return "opt:hot-exit:pre:call"
    if mode.trace_order:     # it moves every register back, the K values too
        return "opt:hot-exit:trampoline" + (":count" if ctx.count else "") + (
            f":k{ctx.cache}" if ctx.cache else "")
    return "opt:hot-exit:pre"


def _shared_exit(ctx: Context) -> str | None:
    """The exit code a trace's hot exits share (laid out once, after the
    slots), or None."""
    mode = modes.get(ctx.mode)
    if ctx.heat is None or mode.trace_order:
        return None
    if mode.shim:
        return "opt:hot-exit:shared:shim"
    return "opt:hot-exit:shared:count" if ctx.count else "opt:hot-exit:shared"


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
    are written against both orders (peachpy_stencils/trampoline.py)."""
    return {mode.entry_stencil, mode.exit_stencil, mode.count_exit_stencil,
            mode.handler_exit_stencil, mode.handler_exit_stencil + ":far",
            "opt:hot-exit:trampoline", "opt:hot-exit:trampoline:count"}


def load_stencils(ctx: Context) -> Mapping:
    """The stencils a trace of ctx's mode is made of: the interpreter's order's,
    or, for a mode whose traces run in another order (jit-trampoline), that
    order's, with the crossing stubs of the interpreter's."""
    mode = modes.get(ctx.mode)
    if not mode.trace_order:
        return stencil_store.load(ctx.state, ctx.source, ctx.cc)
    if ctx.source != "peachpy":
        raise CompileError(f"{ctx.mode}: its traces run in another register order than the "
                           f"interpreter's, which {ctx.source}-built stencils cannot; use peachpy")
    stubs, names = stencil_store.load(ctx.state), _stubs(mode)
    return stencil_store.overlay(
        stencil_store.load(contract.trace_state(ctx.state, mode.trace_order)),
        {n: stubs[n] for n in stubs if re.sub(r":k\d+(:keep)?$", "", n) in names})


def _exit_parts(ctx: Context, ex: Exit, far: bool = False, linked: bool = False) -> tuple:
    """The stencils of one exit; far: the trace is mapped out of rel32 reach of
    the interpreter's handlers (ASan's memory layout does that); linked: it
    jumps into another trace (a side exit linked, or a trace where it resumes).
    A linked slot keeps its first part (the head) and a jump where the rest was."""
    return _parts_of(ctx.mode, ctx.tallies is not None, ctx.heat is not None, ctx.cache,
                     bool(ctx.count), bool(ex.head), ex.deopt, ex.kept,
                     ex.uncount is not None, far, linked)


@lru_cache(maxsize=None)
def _parts_of(mode_name: str, stats: bool, hot: bool, cache: int, count: bool, head: bool,
              deopt: bool, kept: bool, uncount: bool, far: bool, linked: bool) -> tuple:
    """_exit_parts by what decides them (every trace's exits are of a few kinds)."""
    ctx = Context(mode_name, 0, [], [], count=count, tallies=0 if stats else None, cache=cache,
                  heat=0 if hot else None)
    ex = Exit(0, 0 if uncount else None, deopt, head=int(head), kept=kept)
    reloads = _reloads(ctx, ex)
    parts = (["opt:head"] if ex.head else []) + reloads
    if linked:                 # into another trace: no crossing
        return tuple(parts + ["opt:link"])
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
        return tuple(parts + [mode.handler_exit_stencil + (":far" if far else "") + k])
    return tuple(parts + [(mode.count_exit_stencil if ctx.count else mode.exit_stencil) + k])


def slot_size(st: dict, count: bool, stats: bool, virtual_head: bool = False,
              cache: int = 0, hot: bool = False, order: str = "",
              kind: tuple | None = None) -> int:
    """One slot size for all modes whose traces run in the same register order
    (`order`, modes.py trace_order), so the body's bytes do not depend on the
    mode (plain traces keep the size they had before the optimizer).  From
    --jit-opt 1 on (virtual_head) a slot is as big as its kind of exit needs,
    kind = (deopt, head): a deopt or a side exit, with or without the head
    to catch up (a kind's size is still every mode's biggest)."""
    flags = (count, stats, virtual_head, cache, hot, order)
    kind = kind if virtual_head else None
    # what decides it: the flags and the sizes of the stencils an exit can be made of
    key = flags + (kind,) + tuple(len(st[n].code) for n in _slot_parts(*flags))
    if key not in _SLOT_SIZES:
        worst = max((sum(len(st[p].code) for p in parts)
                     for deopt, head, parts in _slot_combos(*flags)
                     if kind is None or kind == (deopt, head)), default=0)
        _SLOT_SIZES[key] = -(-worst // SLOT_ALIGN) * SLOT_ALIGN
    return _SLOT_SIZES[key]


_SLOT_SIZES: dict = {}


@lru_cache(maxsize=None)
def _slot_combos(count, stats, virtual_head, cache, hot, order) -> tuple:
    """Every list of stencils an exit can be made of, in any mode whose traces
    run in `order`: a function of the flags alone, so worked out once."""
    combos = set()
    for mode in modes.JIT:
        if modes.get(mode).trace_order != order:
            continue
        ctx = Context(mode, 0, [], [], count=count, tallies=0 if stats else None, cache=cache,
                      heat=0 if hot else None)
        kept = (False, True) if cache and not modes.get(mode).entry_spills else (False,)
        for deopt in (False, True):
            for head in (False, True) if virtual_head else (False,):
                for far in (False, True):
                    for keep in kept:
                        combos.add((deopt, head, tuple(_exit_parts(
                            ctx, Exit(0, 0, deopt, head=int(head), kept=keep), far))))
    return tuple(sorted(combos))


@lru_cache(maxsize=None)
def _slot_parts(*flags) -> tuple:
    """The names of the stencils those lists are made of (their sizes key the slot size)."""
    return tuple(sorted({p for _, _, parts in _slot_combos(*flags) for p in parts}))


def _count_blocks(lowered, st: dict, blocks: int) -> list[int]:
    """--stats: a tally at the start of every block of the body (a label, or
    after a piece that can leave), so the instructions a trace ran are the
    sum of each block's count times its instructions; returns those counts.
    Rewrites lowered's pieces, labels and starts in place."""
    if not lowered.pieces:     # every instruction folded away: one block, its tally
        lowered.pieces = [optimize.Piece("tally", {"tally": blocks})]
        lowered.labels = {pc: 0 for pc in lowered.labels}
        return [len(lowered.starts)]
    old = lowered.pieces
    n = len(old)
    shapes = _shapes_of(st)
    bounds = {0} | set(lowered.labels.values()) | {
        i + 1 for i, p in enumerate(old) if shapes[p.stencil].leaves}
    bounds = sorted(b for b in bounds if b < n)
    pieces = []
    for k, (b, e) in enumerate(zip(bounds, bounds[1:] + [n])):
        pieces.append(optimize.Piece("tally", {"tally": blocks + 8 * k}))
        pieces += old[b:e]
    ops = [0] * len(bounds)
    for start in lowered.starts:
        ops[max(0, bisect_right(bounds, start) - 1)] += 1
    # a jump to a label lands on its block's tally: piece i moves past the
    # tallies of the blocks that start before it
    lowered.labels = {pc: i + bisect_left(bounds, i) for pc, i in lowered.labels.items()}
    lowered.pieces = pieces
    return ops


@record(frozen=True)
class Lowering:
    """The optimizer's result for one trace, as compiling it needs it: its
    pieces (optimize.Lowered) and --stats's VM instructions per block, for
    the options (`key`) it was made with."""
    key: tuple
    lowered: "optimize.Lowered"
    block_ops: list


def _key(ctx: Context) -> tuple:
    return (ctx.opt, ctx.count, ctx.blocks)


def _lower(trace: Trace, ctx: Context, st: dict) -> Lowering:
    """The optimizer's pieces for `trace`, checked against the stencils, and
    --stats's block counts."""
    lowered = optimize.lower(trace, ctx.consts, ctx.opt, ctx.count,
                             registers=ctx.source == "peachpy", cache=cache_for(ctx, st),
                             tape_len=ctx.tape_len,
                             frames=optimize.Frames(tuple(ctx.funcs), ctx.cache))
    before = None
    for p in lowered.pieces:
        if p.stencil not in st:
            raise CompileError(f"no stencil {p.stencil}{_at_pc(p)}")
        if stencil_store.flags_in(st[p.stencil]) and not (
                before is not None and before.stencil.startswith(_FLAG_SETTERS)):
            # the optimizer put something between a compare and its use
            raise CompileError(f"{p.stencil}{_at_pc(p)} reads the flags, but the piece before "
                               f"it is {before.stencil if before else 'none'}, not a compare")
        before = p
    block_ops = _count_blocks(lowered, st, ctx.blocks) if ctx.blocks is not None else []
    return Lowering(_key(ctx), lowered, block_ops)


_FLAG_SETTERS = ("opt:cmp:", "opt:test:")     # the pieces whose flags the next one may read


def _at_pc(p) -> str:
    return f" (pc {p.op.pc})" if p.op is not None else ""


def cache_for(ctx: Context, st: dict | None = None) -> "optimize.Cache | None":
    """What the optimizer needs to keep a trace's entry values in registers:
    None when the trace is entered with them spilled (K = 0, or jit-shim)."""
    st = load_stencils(ctx) if st is None else st
    mode = modes.get(ctx.mode)
    if not ctx.cache or mode.entry_spills:
        return None
    regs = contract.trace_cache_registers(ctx.cache, mode.trace_order)
    return optimize.Cache(regs, lambda name: stencil_store.writes(st[name]),
                          lambda name: _shapes_of(st)[name].leaves)
_LEAVES = {"deopt", "branch", "loop"}


def lower(trace: Trace, ctx: Context) -> Lowering:
    """The optimizer run for `trace` on its own, for compile_trace to take:
    so the optimizer's time can be told from copy-and-patch's."""
    return _lower(trace, ctx, _stencils_of(ctx))


def _stencils_of(ctx: Context) -> dict:
    if ctx._stencils is None:
        ctx._stencils = load_stencils(ctx)
    return ctx._stencils


def prepare(ctx: Context) -> None:
    """Loads the stencils of ctx's kind and works out the exit slots' size
    once, up front, not as any trace's work.  (Each stencil's shape is made
    on its first use, a few microseconds: making all ~600 here cost ~1.7 ms
    of the JIT's start, for the few dozen a program uses.)  A stencil
    missing or broken is left for the first trace that needs it to report,
    as it would without this."""
    try:
        st = load_stencils(ctx)
        slot_size(st, ctx.count, ctx.tallies is not None, ctx.opt > 0, cache=ctx.cache,
                  hot=ctx.heat is not None, order=modes.get(ctx.mode).trace_order)
    except Exception:
        pass


def _reaches(slot_at: int, target: int, slot: int) -> bool:
    """Whether a rel32 field anywhere in the slot at `slot_at` reaches `target`."""
    return -(1 << 31) < target - (slot_at + slot) and target - slot_at < (1 << 31)


def compile_trace(trace: Trace, ctx: Context, base: int | None,
                  size_only: bool = False, lowering: Lowering | None = None) -> Compiled:
    """Machine code for `trace` when it will run at address `base` (None: the
    holes that depend on it hold 0, and an exit links wherever it could);
    size_only: no code yet (zeros), only the sizes and exits (what placing a
    trace needs): place(compiled, base) then patches it there, without
    laying the trace out again; lowering: the optimizer's result (lower),
    if it has run already."""
    c = _lay_out(trace, ctx, lowering)
    if size_only:
        return c
    return place(c, base)


@record
class _Layout:
    """A trace laid out but not patched: what place() patches it from."""
    ctx: Context
    st: dict
    names: list                  # the body's pieces, in order: each one's stencil,
    ops: list                    # its instruction (or None),
    held: list                   # its hole values (in its shape's order: all a layout
                                 # keeps of them)
    shapes: list                 # and its _Shape
    offsets: list                # each piece's offset in the body (and the body's end)
    exits: dict                  # Exit -> its slot index
    retakes: list
    folded: dict                 # what the optimizer did (--stats)
    block_ops: list
    entry_stub: int
    shared: str | None = None    # the exit code the slots share, after them (_shared_exit)
    slot_at: list = field(default_factory=list)   # each exit slot's offset after the body


def _lay_out(trace: Trace, ctx: Context, lowering: Lowering | None) -> Compiled:
    """Passes 1 and 2: the pieces, their offsets, the labels and the exits."""
    if not modes.is_jit(ctx.mode):
        raise CompileError(f"not a JIT mode: {ctx.mode}")
    mode = modes.get(ctx.mode)
    st = _stencils_of(ctx)
    # pass 1: the optimizer's pieces, and where each label (a jump target
    # with the head materialized) starts
    if lowering is None:
        lowering = _lower(trace, ctx, st)
    elif lowering.key != _key(ctx):
        raise CompileError(f"the trace at pc {trace.start} was lowered for other options "
                           f"{lowering.key} than these {_key(ctx)}")
    lowered, block_ops = lowering.lowered, lowering.block_ops
    pieces = lowered.pieces
    if ctx.tallies is not None:
        pieces = [optimize.Piece("tally", {"tally": ctx.tallies})] + pieces
    # jit-trampoline: ENTER_JIT lands in the entry trampoline, which falls into
    # the trace (and its entry tally); a trace that links here jumps past it
    entry = mode.entry_stencil + (f":k{ctx.cache}" if ctx.cache else "")
    if mode.entry_stencil:
        pieces = [optimize.Piece(entry, {})] + pieces
    by_name = _shapes_of(st)
    shapes = [by_name[p.stencil] for p in pieces]
    offsets, pos = [], 0
    for sh in shapes:
        offsets.append(pos)
        pos += sh.size
    body = pos
    offsets.append(body)    # a label after the last piece: a stretch whose work folded away
    first = (1 if ctx.tallies is not None else 0) + (1 if mode.entry_stencil else 0)
    at_pc = {pc: offsets[i + first] for pc, i in lowered.labels.items()}
    # pass 2: exits, one slot each; the end exit first, so the body falls into it
    exits: dict[Exit, int] = {}
    retakes: dict[Exit, bool] = {}
    if not trace.closed:
        exits[Exit(trace.end_pc, None, kept=lowered.end_kept)] = 0
    for p, sh in zip(pieces, shapes):
        t = p.op
        if t is None or not sh.leaves:
            continue
        values, kinds = p.values, sh.kinds
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
            if t.exit_pc in at_pc and not p.d and not t.frame:   # (labels: trace.py)
                values["branch"] = ("at", at_pc[t.exit_pc])
            else:
                values["branch"] = ("exit", exits.setdefault(
                    Exit(t.exit_pc, None, head=p.d, kept=p.kept), len(exits)))
    flags = (ctx.count, ctx.tallies is not None, ctx.opt > 0, ctx.cache, ctx.heat is not None,
             mode.trace_order)
    # each exit's slot: its kind's size (one size for all at --jit-opt 0)
    slot_at = [0]
    for ex in exits:
        kind = (ex.deopt, bool(ex.head))
        size = by_name.slot_sizes.get((flags, kind))
        if size is None:
            size = by_name.slot_sizes[flags, kind] = slot_size(st, *flags, kind=kind)
        slot_at.append(slot_at[-1] + size)
    slot = max((b - a for a, b in zip(slot_at, slot_at[1:])), default=0)
    shared = _shared_exit(ctx) if any(not ex.deopt for ex in exits) else None
    layout = _Layout(ctx, st, [p.stencil for p in pieces], [p.op for p in pieces],
                     [tuple([p.values.get(kind, _UNSET) for kind in sh.order])
                      for p, sh in zip(pieces, shapes)], shapes, offsets,
                     exits, [retakes.get(ex, False) for ex in exits], lowered.folded, block_ops,
                     len(st[entry].code) if mode.entry_stencil else 0, shared, slot_at)
    size = body + slot_at[-1] + (len(st[shared].code) if shared else 0)
    return Compiled(bytes(size), body, slot, list(exits), [], layout=layout, slot_at=slot_at)


# -- a laid-out trace as data (jit/trace_cache.py keeps them between runs) ---------

def plan_of(compiled: Compiled, trace: Trace) -> tuple | None:
    """What place() reads of a laid-out trace (compile_trace's, size_only),
    as plain data that holds no address: each piece's stencil, instruction
    (its index in trace.ops) and hole values, the sizes, the exits and the
    optimizer's tallies.  None when it holds something else (a piece of an
    instruction not in the trace, a hole without a value, a counter of
    --stats it cannot name): then it is not kept."""
    lay = compiled.layout
    ctx = lay.ctx
    index = {id(t): i for i, t in enumerate(trace.ops)}
    at, held = [], []
    for name, op, h in zip(lay.names, lay.ops, lay.held):
        i = -1 if op is None else index.get(id(op))
        if i is None or _UNSET in h:
            return None
        if name == "tally":      # --stats: this run's counters, by where in them
            h = (_counter_of(ctx, h[0]),)
            if h[0] is None:
                return None
        at.append(i)
        held.append(h)
    return (tuple(lay.names), tuple(at), tuple(held), compiled.body_size, compiled.slot_size,
            len(compiled.code),
            tuple((e.pc, e.uncount, e.deopt, e.head, e.kept) for e in lay.exits),
            tuple(lay.retakes), tuple(lay.block_ops), lay.entry_stub, lay.shared,
            tuple(lay.slot_at), dict(lay.folded))


def _counter_of(ctx: Context, address: int) -> tuple | None:
    """A tally piece's counter as (which array, offset): its entry counter,
    or a block's (--stats); None for any other address."""
    if ctx.tallies is not None and address == ctx.tallies:
        return ("entries", 0)
    if ctx.blocks is not None and address >= ctx.blocks:
        return ("blocks", address - ctx.blocks)
    return None


def from_plan(plan: tuple, trace: Trace, ctx: Context) -> Compiled:
    """The laid-out trace a plan (plan_of's) describes, for place() to
    patch with ctx's stencils: what compile_trace(size_only) makes.  A plan
    that does not fit them (a stencil unknown, other holes, other sizes)
    is a CompileError."""
    (names, at, held, body, slot, size, exits, retakes, block_ops, entry_stub, shared,
     slot_at, folded) = plan
    st = _stencils_of(ctx)
    by_name = _shapes_of(st)
    trace_ops = trace.ops
    try:
        shapes = [by_name[name] for name in names]
        ops = [None if i < 0 else trace_ops[i] for i in at]
        held = list(held)
        if list(map(len, held)) != [len(sh.order) for sh in shapes]:
            raise ValueError("its hole values are not its stencils'")
        for k, name in enumerate(names):
            if name == "tally":
                (where, off), = held[k]
                held[k] = ({"entries": ctx.tallies, "blocks": ctx.blocks}[where] + off,)
    except (KeyError, IndexError, TypeError, ValueError) as e:      # (None + offset too)
        raise CompileError(f"trace plan at pc {trace.start}: {type(e).__name__}: {e}") from None
    offsets, pos = [], 0
    for sh in shapes:
        offsets.append(pos)
        pos += sh.size
    offsets.append(pos)
    if pos != body or size != body + slot_at[-1] + (len(st[shared].code) if shared else 0):
        raise CompileError(f"trace plan at pc {trace.start}: its sizes are not its stencils'")
    exits = {Exit(*e): i for i, e in enumerate(exits)}
    layout = _Layout(ctx, st, list(names), ops, held, shapes, offsets, exits, list(retakes),
                     dict(folded), list(block_ops), entry_stub, shared, list(slot_at))
    return Compiled(bytes(size), body, slot, list(exits), [], layout=layout,
                    slot_at=list(slot_at))


_UNSET = object()   # a hole a piece has no value for (place() then says which)


def _values(held: tuple, shape) -> dict:
    return {kind: v for kind, v in zip(shape.order, held) if v is not _UNSET}


@record(frozen=True)
class _Shape:
    """What patching needs of one stencil, worked out once per stencil."""
    code: bytes
    size: int
    holes: tuple        # (offset, kind, how, 64 bits?, its end, the stencil) per hole
    kinds: frozenset    # its holes' kinds
    leaves: bool        # it can leave the trace, or jump in it (deopt, branch, loop)
    plain: tuple        # (offset, index in order) per hole when every hole takes its
                        # value as it is in 32 bits (most pieces of a body), else ()
    order: tuple        # its holes' kinds, each once, in order: how a layout holds a
                        # piece's values (_Layout.held)


# how a hole's value is made (_fill)
_PLAIN, _JUMP, _CONTINUE, _FROM_BASE, _CODE = range(5)
_HOW = {"deopt": _JUMP, "branch": _JUMP, "loop": _JUMP, "shared": _JUMP, "continue": _CONTINUE,
        "link": _FROM_BASE, "handler": _FROM_BASE, "ret_ip": _CODE}
_SHAPES: dict = {}      # id(stencil) -> (the stencil, kept so its id is not reused; its _Shape)


def _shape(stencil) -> _Shape:
    hit = _SHAPES.get(id(stencil))
    if hit is None or hit[0] is not stencil:
        kinds = frozenset(h.kind for h in stencil.holes)
        holes = tuple((h.offset, h.kind, _HOW.get(h.kind, _PLAIN), h.width == 8,
                       len(stencil.code), stencil.name) for h in stencil.holes)
        order = tuple(dict.fromkeys(h.kind for h in stencil.holes))
        plain = tuple((off, order.index(kind)) for off, kind, how, wide, _, _ in holes) \
            if all(how == _PLAIN and not wide for _, _, how, wide, _, _ in holes) else ()
        hit = _SHAPES[id(stencil)] = (stencil, _Shape(stencil.code, len(stencil.code), holes,
                                                      kinds, bool(_LEAVES & kinds), plain,
                                                      order))
    return hit[1]


class _Shapes(dict):
    """name -> _Shape for one dict of stencils, filled as names are asked
    for; slot_sizes: its slot_size by flags.  Kept for the last dict (the
    shared one stencils.load returns, trace after trace), so a trace's
    compile looks a name up here rather than in that dict and in _SHAPES."""

    def __init__(self, st: dict):
        super().__init__()
        self.st, self.slot_sizes, self.slots = st, {}, {}

    def __missing__(self, name: str) -> _Shape:
        shape = self[name] = _shape(self.st[name])
        return shape


_LAST_SHAPES: list = [_Shapes({})]


def _shapes_of(st: dict) -> _Shapes:
    if _LAST_SHAPES[0].st is not st:
        _LAST_SHAPES[0] = _Shapes(st)
    return _LAST_SHAPES[0]


_PACK32 = struct.Struct("<i").pack_into
_PACK64 = struct.Struct("<Q").pack_into
_MASK64 = (1 << 64) - 1


def _fill(out: bytearray, holes: tuple, at: int, values: dict, where,
          body: int, slot_at: list, base: int | None, code_addr: int = 0) -> None:
    """Fills `holes` (a _Shape's, or a slot's: _slot_code) of code copied to
    `at` from `values`; `where` names it in an error (a string, or a
    piece's (stencil, instruction)); code_addr: where code[0] is (a pc's
    address: the layout, like a plan, holds the pc)."""
    for offset, kind, how, wide, end, name in holes:
        if kind not in values:
            raise CompileError(f"stencil {name}: hole {kind.partition('@')[0]} at "
                               f"+{offset} left unpatched ({_where(where)})")
        v = values[kind]
        field_at = at + offset
        if how == _JUMP:
            where_, n = v
            v = (n if where_ == "at" else body + slot_at[n]) - (field_at + 4)
        elif how == _CONTINUE:          # the next stencil, laid right after this one
            v = at + end - (field_at + 4)
        elif how == _CODE:
            v = code_addr + contract.INSTR_SIZE * v
        elif how == _FROM_BASE:         # link: reach checked by _reaches before linking
            v = 0 if base is None else v - (base + field_at + 4)
            if kind == "handler" and not -(1 << 31) <= v < (1 << 31):
                raise CompileError("the trace is mapped more than 2 GiB from the "
                                   "interpreter: jit-direct-handler cannot jump there")
        if wide:                        # any int, wrapped to 64 bits (isa.wrap64's bytes)
            _PACK64(out, field_at, v & _MASK64)
        elif -(1 << 31) <= v < (1 << 31):
            _PACK32(out, field_at, v)
        else:
            raise CompileError(f"stencil {name}: value {v} does not fit hole "
                               f"{kind.partition('@')[0]} ({_where(where)})")


def _where(where) -> str:
    """A piece's name in an error: its instruction and pc (or its stencil);
    where: a string, or a piece's (stencil, instruction)."""
    if isinstance(where, str):
        return where
    stencil, t = where
    return stencil if t is None else f"{t.name}@pc{t.pc}"


def place(compiled: Compiled, base: int | None, symbols: bool = True) -> Compiled:
    """The laid-out trace `compiled` (compile_trace's, size_only) patched to
    run at address `base`: its code, and which exits link to traces;
    symbols: name its pieces and slots (the perf map's), else none."""
    lay = compiled.layout
    ctx, st, body, slot = lay.ctx, lay.st, compiled.body_size, lay.slot_at
    # the body's stencils in one copy, then their holes; the slots after it
    out = bytearray(b"".join([sh.code for sh in lay.shapes]))
    out += bytes(len(compiled.code) - body)
    names = []
    for name, op, held, sh, at in zip(lay.names, lay.ops, lay.held, lay.shapes, lay.offsets):
        if sh.plain:
            try:
                for offset, i in sh.plain:
                    _PACK32(out, at + offset, held[i])
            except struct.error:     # (a value missing or too big) _fill says it in words
                _fill(out, sh.holes, at, _values(held, sh), (name, op), body, slot, base,
                      ctx.code_addr)
        elif sh.holes:
            _fill(out, sh.holes, at, _values(held, sh), (name, op), body, slot, base,
                  ctx.code_addr)
        if symbols and op is not None:
            names.append((at, sh.size, f"{name}@pc{op.pc}"))
    exits = lay.exits
    patch_at, linked_to = [0] * len(exits), [False] * len(exits)
    for ex, idx in exits.items():
        # a link's jmp goes where a linked slot has it: after every part before opt:link
        patch_at[idx] = body + slot[idx] + _slot_code(st, _exit_parts(ctx, ex, linked=True))[2]
        linked_to[idx] = _fill_slot(out, lay, ex, idx, body, slot, base)
        if symbols:
            names.append((body + slot[idx], slot[idx + 1] - slot[idx],
                          f"{'link' if linked_to[idx] else 'exit'}->pc{ex.pc}"))
    if lay.shared:
        at = body + slot[-1]
        _patch_parts(out, lay, (lay.shared,), at, {"rec_table": ctx.rec_table},
                     "shared exit code", body, slot, base)
        if symbols:
            names.append((at, len(st[lay.shared].code), "shared-exit"))
    return Compiled(bytes(out), body, compiled.slot_size, list(exits), names, patch_at, linked_to,
                    lay.folded, len(st["tally"].code) if ctx.tallies is not None else 0,
                    lay.block_ops, list(lay.retakes), lay.entry_stub, layout=lay,
                    slot_at=list(slot))


def _slot_code(st: dict, parts: tuple) -> tuple:
    """An exit slot's parts laid end to end, worked out once per list of
    parts: their code, every hole as a _Shape has it (offset from the
    slot's start; the count part's own count named count@op, as it takes
    another value than uncount's) and where the last part starts."""
    by_name = _shapes_of(st)
    hit = by_name.slots.get(parts)
    if hit is None:
        code, holes, pos, last = [], [], 0, 0
        for part in parts:
            sh = by_name[part]
            code.append(sh.code)
            for offset, kind, how, wide, end, name in sh.holes:
                if part == "count" and kind == "count":
                    kind = "count@op"
                holes.append((pos + offset, kind, how, wide, pos + end, name))
            last, pos = pos, pos + sh.size
        hit = by_name.slots[parts] = (b"".join(code), tuple(holes), last)
    return hit


_INT3S = bytes([INT3]) * 4096


def _fill_slot(out: bytearray, lay: _Layout, ex: Exit, idx: int, body: int, slot_at: list,
               base: int | None) -> bool:
    """Writes exit slot `idx`: a jump into the trace at ex.pc when there is
    one in reach (returns True), else the crossing to the interpreter."""
    ctx = lay.ctx
    at, slot = body + slot_at[idx], slot_at[idx + 1] - slot_at[idx]
    out[at:at + slot] = _INT3S[:slot] if slot <= len(_INT3S) else bytes([INT3]) * slot
    values = {"resume_ip": ctx.code_addr + 8 * ex.pc, "cell": ex.head,
              "heat": (ctx.heat or 0) + 8 * idx, "rec_table": ctx.rec_table,
              "shared": ("at", body + slot_at[-1])}
    link = None if ex.deopt else ctx.traces_at.get(ex.pc)
    if link is not None and base is not None and not _reaches(base + at, link, slot):
        link = None     # (a sanitizer's allocator can map traces far apart) it crosses
    name = f"exit to pc {ex.pc}"
    if link is not None:
        values["link"] = link
        _patch_parts(out, lay, _exit_parts(ctx, ex, linked=True), at, values, name, body,
                     slot_at, base)
        return True
    if ctx.count and ex.uncount is not None:
        values["count"] = 8 * ex.uncount
    if ctx.tallies is not None:
        values["tally"] = ctx.tallies + 8 * (1 + idx)
    far = False
    if _to_handler(ctx, ex):
        values["handler"] = values["handler_abs"] = ctx.handler_addrs[ctx.code[ex.pc][0]]
        # the jmp's rel32 ends 4 bytes into the slot's last part at the latest
        far = base is not None and not -(1 << 31) < values["handler"] - (base + at) < (1 << 31) - 4096
    if ctx.count:
        values["count@op"] = 8 * ctx.code[ex.pc][0]
    _patch_parts(out, lay, _exit_parts(ctx, ex, far), at, values, name, body, slot_at, base)
    return False


def _patch_parts(out, lay: _Layout, parts: tuple, at: int, values: dict, name: str, body: int,
                 slot_at: list, base: int | None) -> None:
    """Parts of an exit slot (or the shared exit code), from `at` on."""
    code, holes, _ = _slot_code(lay.st, parts)
    out[at:at + len(code)] = code
    _fill(out, holes, at, values, name, body, slot_at, base)
