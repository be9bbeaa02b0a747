"""The trace optimizer, between trace.py and compile.py: from a trace's VM
instructions to the pieces (stencil + hole values) that compile.py lays out.

Level 0 is one stencil per instruction, every instruction boundary a full VM
state: what `bench transitions` measures crossings with.  Level 1 keeps BF's
head virtual: MOVE emits nothing, later tape stencils address [head + d], the
head register catches up only where the interpreter or a jump can see it
(exits carry d; labels, back-edges, scans and I/O materialize it), and one
check per stretch proves the stretch's whole range of cells on the tape,
deopting to the stretch's first instruction (where the interpreter then
finds any error exactly) before anything in it ran.  Level 2 also fuses
minipy's stack traffic (jit/fuse.py), constant operands folded into the
stencils (`x + 1`, `x < 100`) and constant expressions folded away.  Level 3
also keeps a loop trace's hottest locals in registers (jit/reglocals.py).

With K cached values (--cache K, a crossing that carries them: `Cache`) a
trace is entered with the interpreter's top K stack values in registers;
they stay there (the bottom of the virtual stack, jit/fuse.py) until a
stencil writes their register or needs the memory stack, and an exit that
still finds them there leaves without a reload (`Piece.kept`).
"""
from __future__ import annotations

from functools import lru_cache, partial
from itertools import accumulate

from .. import isa
from ..record import field, record
from .defaults import LEVELS     # there, so the CLI shows them without loading the JIT
from .fuse import TAKES, VirtualStack
from .reglocals import keep_locals
from .trace import Trace, TraceOp


@record(slots=True)         # made two or three times per instruction: kept small
class Piece:
    stencil: str
    values: dict
    op: TraceOp | None = None    # the instruction it belongs to (exits, labels, symbols)
    d: int = 0                   # the virtual head here: the interpreter's head is head + d
    counted: bool = True         # op's count was taken before this piece (a deopt takes it back)
    kept: bool = False           # --cache K: its exits leave with the K values in registers


@record
class Cache:
    """A trace entered with K cached values in registers (c0, the top, first),
    and what the optimizer asks of a stencil by name: the registers it writes
    (None: any) and whether it can leave the trace."""
    registers: tuple
    writes: object
    leaves: object


@record
class Lowered:
    pieces: list[Piece] = field(default_factory=list)
    labels: dict[int, int] = field(default_factory=dict)   # pc -> piece where d = 0, a jump target
    folded: dict[str, int] = field(default_factory=dict)   # what the optimizer did, for --stats
    starts: list[int] = field(default_factory=list)        # per trace instruction: its first piece
    end_kept: bool = False       # --cache K: the end exit finds the K values in registers
    before: object = None        # called with each piece before it is added (--cache K)

    def add(self, *pieces: Piece) -> None:
        """Appends pieces that run as one: a compare and the setcc or jcc that
        reads its flags.  `before` sees them all first, so whatever it emits
        (a spill, whose `add sp, 8` writes the flags) goes before the first."""
        if self.before is not None:
            for piece in pieces:
                self.before(piece)
        self.pieces.extend(pieces)

    def note(self, what: str, n: int = 1) -> None:
        self.folded[what] = self.folded.get(what, 0) + n


@record(frozen=True)
class Frames:
    """What a CALL's stencil needs of the program and the VM: each function's
    (nargs, nlocals, max_stack), and the K pad slots each frame has under
    --cache K (whether or not the trace is entered with the K values in
    registers: jit-shim's are spilled, but the frames have them)."""
    funcs: tuple = ()
    pads: int = 0


def operand_values(t: TraceOp, consts: list[int], frames: Frames | None = None) -> dict:
    """The hole values of an instruction's own stencil."""
    values = {"oparg": t.arg, "local": 8 * t.arg, "continue": "next",
              "cell": t.arg >> 8, "byte": t.arg & 0xFF}
    if t.name == "LOAD_CONST":
        values["const"] = consts[t.arg]
    elif t.name == "CALL":
        nargs, nlocals, max_stack = frames.funcs[t.arg]
        values.update(args=-8 * nargs, zeros=nlocals - nargs,
                      frame_top=8 * (nlocals + max_stack - nargs),
                      frame_sp=8 * (nlocals - nargs + frames.pads), pads=8 * frames.pads,
                      ret_ip=t.ret_pc)
    elif t.name == "RETURN":
        values["ret_ip"] = t.ret_pc
    return values


def lower(trace: Trace, consts: list[int], level: int, count: bool,
          registers: bool = True, cache: Cache | None = None,
          tape_len: int | None = None, frames: Frames | None = None) -> Lowered:
    """registers: every instruction stencil is one whose registers level 3
    knows (PeachPy's; False for clang-built ones); cache: the trace is entered
    with cached values in registers; tape_len: the VM's tape, when known (a
    bounds check is then one compare with an immediate); frames: what its
    CALLs need (Frames)."""
    if level not in LEVELS:
        raise ValueError(f"optimizer level {level}: choose one of {LEVELS}")
    ops = list(trace.ops)
    out = Lowered()
    if level == 0:
        for reg in reversed(cache.registers if cache else ()):   # plain stencils: memory only
            out.pieces.append(Piece(f"opt:push:reg:{reg}", {}))
        for t in ops:
            if not t.frame:          # (a pc is a label in the start frame only: trace.py)
                out.labels.setdefault(t.pc, len(out.pieces))
            if not t.synthetic:      # (RETURN:to: no instruction of the program)
                out.starts.append(len(out.pieces))
                _count(out, count, t)
            out.pieces.append(Piece(t.stencil, operand_values(t, consts, frames), t))
        return out
    head = _VirtualHead(trace, ops, consts, count, out, fuse_stack=level >= 2, cache=cache,
                        tape_len=tape_len, frames=frames)
    head.run()
    if head.disturbed:    # a back-edge could not bring the cached values back: spill at the start
        out = Lowered()
        head = _VirtualHead(trace, ops, consts, count, out, fuse_stack=level >= 2, cache=cache,
                            tape_len=tape_len, keep_start=False, frames=frames)
        head.run()
    if tape_len is not None and not any(_overridden(t.stencil) for t in ops):
        if not _one_check(out, tape_len):
            _merge_checks(out, tape_len, head.label_pcs)
    # (the locals' registers are cached values' too, from K = 3 or 4 on: a
    # trace that keeps cached values keeps no locals)
    if level >= 3 and registers and cache is None and not any(_overridden(t.stencil) for t in ops):
        keep_locals(trace, out, Piece)
    return out


def _one_check(out: Lowered, tape_len: int) -> bool:
    """When the head register stays where the trace's first check found it
    until the last check (nothing moves it in between: every stretch's
    offsets are from the same head), the first check covers every stretch's
    cells and the others go.  A deopt there resumes at the first stretch, as
    any of its own would (the interpreter then finds an error exactly, or
    runs on and the trace is entered again)."""
    checks = [i for i, p in enumerate(out.pieces) if p.stencil == "opt:check:len"]
    if len(checks) < 2 or any(p.stencil == "opt:head" or p.stencil.startswith(("SCAN", "MOVE"))
                              for p in out.pieces[checks[0]:checks[-1]]):
        return False
    lo = min(out.pieces[i].values["cell"] for i in checks)
    hi = max(out.pieces[i].values["hi"] for i in checks)
    _widen(out.pieces[checks[0]], lo, hi, tape_len)
    _drop(out, set(checks[1:]))
    out.note("bounds checks hoisted", len(checks) - 1)
    return True


def _widen(check: Piece, lo: int, hi: int, tape_len: int) -> None:
    check.values = {**check.values, "cell": lo, "hi": hi, "oparg": max(tape_len - (hi - lo), 0)}


# pieces that neither move the head register nor jump back: a check before
# them still holds after them (_merge_checks); a forward branch's target is a
# label, where the merging starts over
_HEAD_KEPT = frozenset({"count", "opt:zero", "opt:set", "opt:add", "opt:copy", "opt:copyadd",
                        "opt:muladd", "opt:guard-zero", "opt:guard-nonzero",
                        "JUMP_IF_CELL_ZERO:fallthrough", "JUMP_IF_CELL_ZERO:taken",
                        "JUMP_IF_CELL_ZERO_AT:fallthrough", "JUMP_IF_CELL_ZERO_AT:taken",
                        "LOOP_IF_CELL:fallthrough", "LOOP_IF_CELL_AT:fallthrough"})


def _merge_checks(out: Lowered, tape_len: int, label_pcs: set) -> None:
    """Stretches one after another that only fall into each other (the later
    one's start no label, nothing between them but cell operations, exits,
    forward branches and head moves by constants): the first one's check
    covers the others' cells, each shifted by how far the head moved, and
    theirs go.  A deopt there resumes at the first stretch, before any of
    them ran, as _one_check's does."""
    joins = {out.labels[pc] for pc in label_pcs if pc in out.labels}
    cover, delta, lo, hi, gone = None, 0, 0, 0, set()
    for i, p in enumerate(out.pieces):
        if i in joins:
            cover = None
        s = p.stencil
        if s == "opt:check:len":
            a, b = delta + p.values["cell"], delta + p.values["hi"]
            if cover is None:
                cover, delta, lo, hi = p, 0, p.values["cell"], p.values["hi"]
            else:
                lo, hi = min(lo, a), max(hi, b)
                _widen(cover, lo, hi, tape_len)
                gone.add(i)
        elif s == "opt:head":
            delta += p.values["cell"]
        elif s not in _HEAD_KEPT:
            cover = None
    if gone:
        _drop(out, gone)
        out.note("bounds checks merged across stretches", len(gone))


def _drop(out: Lowered, gone: set) -> None:
    """Removes the pieces at the indices `gone`, keeping labels and starts."""
    keep = [p for i, p in enumerate(out.pieces) if i not in gone]
    # every index moves down by the pieces removed before it
    shift = list(accumulate(1 if i in gone else 0 for i in range(len(out.pieces) + 1)))

    def moved(i: int) -> int:
        return i - (shift[i - 1] if i else 0)
    out.pieces = keep
    out.labels = {pc: moved(i) for pc, i in out.labels.items()}
    out.starts = [moved(i) for i in out.starts]


_PLAIN_VARIANTS = ("", "taken", "fallthrough", "close", "inner", "to", "guard", "out")


@lru_cache(maxsize=None)
def _overridden(stencil: str) -> bool:
    """A prototype stencil (--stencil) is an instruction's `stencil`: the
    optimizer leaves it as it is, with the VM state it was written for.
    (By the stencil's name, cached: asked several times per instruction.)"""
    return stencil.partition(":")[2] not in _PLAIN_VARIANTS


def _count(out: Lowered, count: bool, t: TraceOp, d: int = 0) -> None:
    if count:
        out.add(Piece("count", {"count": 8 * t.op}, None, d))


# --- level 1: the virtual head --------------------------------------------

_GUARD = {"JUMP_IF_CELL_ZERO:taken": "opt:guard-nonzero",
          "JUMP_IF_CELL_ZERO:fallthrough": "opt:guard-zero",
          "LOOP_IF_CELL:fallthrough": "opt:guard-nonzero",
          "LOOP_IF_CELL:taken": "opt:guard-zero",
          # the BF front end's fused move-and-test: the move folds into d first
          "MOVE_JUMP_IF_CELL_ZERO:taken": "opt:guard-nonzero",
          "MOVE_JUMP_IF_CELL_ZERO:fallthrough": "opt:guard-zero",
          "MOVE_LOOP_IF_CELL:fallthrough": "opt:guard-nonzero",
          "MOVE_LOOP_IF_CELL:taken": "opt:guard-zero",
          # the tests at an offset (--bf-opt 1): the offset adds to d
          "JUMP_IF_CELL_ZERO_AT:taken": "opt:guard-nonzero",
          "JUMP_IF_CELL_ZERO_AT:fallthrough": "opt:guard-zero",
          "LOOP_IF_CELL_AT:fallthrough": "opt:guard-nonzero",
          "LOOP_IF_CELL_AT:taken": "opt:guard-zero"}
# every instruction that reads or moves the head
_ON_TAPE = {ins.name for ins in isa.INSTRUCTIONS if "HEAD" in ins.c or "TAPE_AT" in ins.c}
_MOVE_BRANCHES = ("MOVE_JUMP_IF_CELL_ZERO", "MOVE_LOOP_IF_CELL")   # move by arg >> 8, then test
_AT_BRANCHES = ("JUMP_IF_CELL_ZERO_AT", "LOOP_IF_CELL_AT")     # test the cell at arg >> 24
_CELL_BRANCHES = ("JUMP_IF_CELL_ZERO", "LOOP_IF_CELL") + _MOVE_BRANCHES + _AT_BRANCHES
_CHECKED = {"MOVE", "CELL_ADD_AT", "CELL_SET_AT", "CELL_MULADD", "CELL_ADD2_AT",
            *_MOVE_BRANCHES, *_AT_BRANCHES, *isa.PACKED_MOVE_AT, "CELL_COPY_AT",
            "CELL_MOVE_PAIR_AT"}
_TAPE = {"CELL_ADD", "CELL_ZERO", "MOVE", "CELL_ADD_AT", "CELL_SET_AT", "CELL_MULADD",
         "CELL_ADD2_AT", *_MOVE_BRANCHES}
# instructions that never touch the operand stack: cached values stay in
# registers across them (unless a stencil writes one's register)
_OFF_STACK = _ON_TAPE | set(_CELL_BRANCHES) | {"NOP", "JUMP"}


class _VirtualHead:
    def __init__(self, trace: Trace, ops: list[TraceOp], consts, count: bool, out: Lowered,
                 fuse_stack: bool = False, cache: Cache | None = None, keep_start: bool = True,
                 tape_len: int | None = None, frames: Frames | None = None):
        self.trace, self.ops, self.consts, self.count, self.out = trace, ops, consts, count, out
        self.frames = frames
        self.tape_len = tape_len
        self.stack, self.fuse, self.cache = None, fuse_stack, cache
        if fuse_stack or cache:
            self.stack = VirtualStack(out, Piece, partial(_count, out, count))
        # (only the start frame's pcs are labels, and only its guards jump to
        # them: trace.py)
        pcs = {t.pc for t in ops if not t.frame}
        jumped = {t.loop_pc for t in ops if t.loop_pc is not None}
        jumped |= {t.exit_pc for t in ops if t.exit_pc in pcs and not t.frame}
        self.label_pcs = {trace.start} | jumped
        # the labels something jumps to: the stack is in memory there.  With
        # cached values (keep_start) the start is instead where the trace was
        # entered, the values in their registers, and every jump back to it
        # must find them there still, or the trace is lowered again with the
        # start a label like the others (disturbed)
        self.targets = self.label_pcs
        self.keep_start = bool(cache) and keep_start
        self.disturbed = False
        if cache:
            self.targets = jumped | ({trace.start} if trace.closed else set())
            if self.keep_start:
                self.targets = self.targets - {trace.start}
            self.stack.enter(cache.registers)
            out.before = self._before
        self.d = 0
        self.known: dict[int, int] = {}      # cell (from the head register) -> its value

    def _before(self, p: Piece) -> None:
        """--cache K: a cached value moves to memory before a stencil writes its
        register; a piece that can leave finds them all where the trace was
        entered with them (kept) or everything spilled (its exit reloads)."""
        if p.stencil.startswith("opt:push:"):
            return                        # the spills' own pieces
        stack = self.stack
        stack.spill_written(self.cache.writes(p.stencil), p.d)
        if self.cache.leaves(p.stencil):
            t, start = p.op, self.trace.start
            back = t is not None and not t.frame and self.keep_start and (
                t.exit_pc == start or t.loop_pc == start or
                (t.loop_pc is None and t.stencil.endswith(":close")))
            if back:
                self.disturbed |= stack.entries != stack.entry
            elif t is not None and (t.exit_pc in self.targets or t.loop_pc is not None or
                                    t.stencil.endswith(":close")):
                stack.flush(p.d)
            p.kept = stack.settle(p.d)

    def _materializes(self, t: TraceOp) -> bool:
        """The head register must be the interpreter's before t runs: t is a
        jump target, jumps to one, moves the head itself or does I/O.  A fused
        move-and-test materializes after its move instead (_after_move)."""
        if t.name in _MOVE_BRANCHES and not _overridden(t.stencil):
            return t.pc in self.label_pcs
        return (t.pc in self.label_pcs or t.loop_pc is not None or t.stencil.endswith(":close")
                or _overridden(t.stencil)
                or (t.name in _CELL_BRANCHES and t.exit_pc in self.label_pcs)
                or t.name in ("SCAN", "CELL_IN", "CELL_OUT"))

    def _after_move(self, t: TraceOp) -> bool:
        """t is a fused move-and-test that needs the head the interpreter's
        after its move: its move ends a stretch (whose check covers it), and
        its test is the plain instruction's stencil."""
        return (t.name in _MOVE_BRANCHES and not _overridden(t.stencil)
                and (t.loop_pc is not None or t.stencil.endswith(":close")
                     or t.exit_pc in self.label_pcs))

    def run(self) -> None:
        ops = self.ops
        # a stretch: from a materialization point to the next (each op's
        # flags worked out once: they depend only on it and the labels)
        starts = [self._materializes(t) for t in ops]
        ends = [t.name == "SCAN" or self._after_move(t) for t in ops]
        i, n = 0, len(ops)
        while i < n:
            j = i + 1
            while j < n and not starts[j] and not ends[j - 1]:
                j += 1
            self.stretch(ops[i:j])
            i = j
        if self.cache:
            self.out.end_kept = self.stack.settle(self.d)
        else:
            self.flush_stack()
        self.materialize()           # the end exit (or nothing: a closed trace jumped back)

    def flush_stack(self) -> None:
        if self.stack is not None:
            self.stack.flush(self.d)

    def materialize(self) -> None:
        if self.d:
            self.out.add(Piece("opt:head", {"cell": self.d}, None, self.d))
            self.out.note("head materialized")
            self.known = {off - self.d: v for off, v in self.known.items()}
            self.d = 0

    def stretch(self, ops: list[TraceOp]) -> None:
        if ops[0].pc in self.targets:
            self.flush_stack()       # a jump may arrive here: the stack as the interpreter has it
        self.materialize()
        if ops[0].pc in self.label_pcs:
            self.known = {}          # a jump may arrive here: nothing known
        out = self.out
        if not ops[0].frame:
            out.labels.setdefault(ops[0].pc, len(out.pieces))
        cells, d, checked = [], 0, 0
        for t in ops:
            name = t.name
            if name not in _CHECKED:
                continue
            checked += 1
            if name == "MOVE":
                d += t.arg
                cells.append(d)
            elif name in _MOVE_BRANCHES:
                d += t.arg >> 8
                cells.append(d)
            elif name == "CELL_ADD2_AT":
                off_a, _, off_b, _ = isa.unpack_add2(t.arg)
                cells += [d + off_a, d + off_b]
            elif name in _AT_BRANCHES:
                cells.append(d + (t.arg >> 24))
            elif name == "CELL_MOVE_PAIR_AT":
                cells += [d + x for x in isa.unpack_move_pair(t.arg)]
            elif name in isa.PACKED_MOVE_AT or name == "CELL_COPY_AT":
                c, tg, tg2, _ = isa.unpack_move_at(
                    "CELL_MOVE2_AT" if name == "CELL_COPY_AT" else name, t.arg)
                cells += [d + c, d + tg] + ([] if tg2 is None else [d + tg2])
            else:                    # CELL_ADD_AT, CELL_SET_AT, CELL_MULADD
                cells.append(d + (t.arg >> 8))
        if cells:
            if not self.cache:       # (with one, _before settles the stack)
                self.flush_stack()   # its deopt resumes with the interpreter's stack
            # (a cached value in rcx: the check that saves it)
            lo, hi = min(cells), max(cells)
            if self.tape_len is not None:     # one compare: the tape's length is known
                out.add(Piece("opt:check:len", {"cell": lo, "hi": hi,
                                                "oparg": max(self.tape_len - (hi - lo), 0)},
                              ops[0], 0, counted=False))
            else:
                check = "opt:check:rcx" if self.cache and ("c", "rcx") in self.stack.entries \
                    else "opt:check"
                out.add(Piece(check, {"cell": lo, "cell2": hi}, ops[0], 0, counted=False))
            out.note("bounds checks hoisted", checked - 1)
        stack, fuse, cache, starts = self.stack, self.fuse, self.cache, out.starts
        k = 0
        while k < len(ops):
            t = ops[k]
            plain = not _overridden(t.stencil)
            if fuse and plain and t.name in TAKES and not t.synthetic:
                at = len(out.pieces)
                taken = stack.take(ops, k, self.d)
                if taken:
                    starts += [at] * taken
                    k += taken
                    continue
            if stack is not None and (not cache or not plain or t.name not in _OFF_STACK
                                      or t.synthetic):     # (a block's jump back: to a label)
                stack.flush(self.d)
            if not t.synthetic:
                starts.append(len(out.pieces))
            self.one(t, plain)
            k += 1

    def one(self, t: TraceOp, plain: bool) -> None:
        """Lowers t (plain: no prototype stands in for it) at the virtual head."""
        out, d = self.out, self.d
        if not t.synthetic:
            _count(out, self.count, t, d)
        name, arg = t.name, t.arg
        if not plain:
            out.add(Piece(t.stencil, operand_values(t, self.consts, self.frames), t, d))
        elif name == "MOVE":
            self.d += arg
            out.note("moves folded")
        elif name == "CELL_ADD":
            self.add(d, arg & 0xFF, t)
        elif name == "CELL_ZERO":
            self.set(d, 0, t)
        elif name == "CELL_ADD_AT":
            self.add(d + (arg >> 8), arg & 0xFF, t)
        elif name == "CELL_SET_AT":
            self.set(d + (arg >> 8), arg & 0xFF, t)
        elif name == "CELL_MULADD":
            self.muladd(d + (arg >> 8), d, arg & 0xFF, t)
        elif name == "CELL_ADD2_AT":
            off_a, byte_a, off_b, byte_b = isa.unpack_add2(arg)
            self.add(d + off_a, byte_a, t)
            self.add(d + off_b, byte_b, t)
        elif name in isa.PACKED_MOVE_AT:
            c, tg, tg2, factor = isa.unpack_move_at(name, arg)
            for target in (tg,) if tg2 is None else (tg, tg2):
                self.muladd(d + target, d + c, factor, t)
            if name != "CELL_MULADD_AT":
                self.set(d + c, 0, t)
        elif name == "CELL_MOVE_PAIR_AT":
            c1, t1, c2, t2 = isa.unpack_move_pair(arg)
            for c, tg in ((c1, t1), (c2, t2)):
                self.muladd(d + tg, d + c, 1, t)
                self.set(d + c, 0, t)
        elif name == "CELL_COPY_AT":             # the two move loops it was made of
            a, tg, u, _ = isa.unpack_move_at("CELL_MOVE2_AT", arg)
            self.muladd(d + tg, d + a, 1, t)
            self.muladd(d + u, d + a, 1, t)
            self.set(d + a, 0, t)
            self.muladd(d + a, d + u, 1, t)
            self.set(d + u, 0, t)
        elif self._after_move(t):
            self.d += arg >> 8
            out.note("moves folded")
            self.materialize()
            out.add(Piece(t.stencil.replace("MOVE_", "", 1),
                                    operand_values(t, self.consts, self.frames), t, 0))
        elif name in _AT_BRANCHES and t.stencil.endswith((":close", ":inner")):
            # (a loop's back-edge: the head is materialized, d is 0)
            out.add(Piece("opt:loop-close" if t.stencil.endswith(":close") else "opt:loop-inner",
                          {"cell": arg >> 24}, t, d))
            self.known = {arg >> 24: 0}          # (past an inner loop: its cell is 0)
        elif t.stencil in _GUARD and (t.exit_pc not in self.label_pcs or not d):
            if name in _MOVE_BRANCHES:
                self.d = d = d + (arg >> 8)
                out.note("moves folded")
            cell = d + (arg >> 24) if name in _AT_BRANCHES else d
            guard, v = _GUARD[t.stencil], self.known.get(cell)
            if v is not None and (v == 0) == (guard == "opt:guard-nonzero"):
                out.note("guards on known cells dropped")     # it never leaves
            else:
                out.add(Piece(guard, {"cell": cell}, t, d))
            if guard == "opt:guard-nonzero":     # (it left unless the cell is 0)
                self.known[cell] = 0
        else:
            if d and name in _ON_TAPE:
                raise AssertionError(f"optimizer: {t.stencil} at pc {t.pc} would see a stale head")
            out.add(Piece(t.stencil, operand_values(t, self.consts, self.frames), t, d))
            self.known = {}
            if t.stencil.endswith(":inner") and name in _CELL_BRANCHES:
                self.known[0] = 0

    # -- cells with values known in a stretch: adds become sets, a set of the
    # value a cell has and a multiply by a counter known 0 go, a copy into a
    # cell known 0 stores instead of adding (no load of the cell, none of the
    # store it would wait for), a guard on a known cell goes.  Memory is
    # always written: every exit finds the tape exact.
    def add(self, cell: int, v: int, t: TraceOp) -> None:
        k = self.known.get(cell)
        if k is not None:
            self.set(cell, (k + v) & 0xFF, t)
        elif v:
            self.out.add(Piece("opt:add", {"cell": cell, "byte": v}, t, self.d))

    def set(self, cell: int, v: int, t: TraceOp) -> None:
        if self.known.get(cell) == v:
            self.out.note("stores of known values dropped")
            return
        self.out.add(Piece("opt:set" if v else "opt:zero", {"cell": cell, "byte": v}, t, self.d))
        self.known[cell] = v

    def muladd(self, target: int, counter: int, factor: int, t: TraceOp) -> None:
        kc = self.known.get(counter)
        if kc is not None or not factor:
            self.add(target, (kc or 0) * factor, t)
            return
        known_zero = self.known.pop(target, None) == 0
        stencil = ("opt:copy" if known_zero else "opt:copyadd") if factor == 1 else "opt:muladd"
        self.out.add(Piece(stencil, {"cell": target, "cell2": counter, "byte": factor}, t, self.d))
