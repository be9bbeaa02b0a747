"""BF to shimlab bytecode, in one pass of a regular expression over the source.

Level 0 (--bf-opt 0) is the folding every serious BF interpreter does, and
the instruction stream dispatch studies use: runs of + and - become one
CELL_ADD, runs of < and > one MOVE, [-] and [+] CELL_ZERO; '[' is a forward
JUMP_IF_CELL_ZERO, ']' the LOOP_IF_CELL back-edge.  Level 1 adds cell
offsets and the loop idioms (Optimizing, below); level 2 also runs each loop of
one instruction at offsets and a move as one walk (Optimizing.walks: the
interpreters' level; a trace ends at a walk, so the JIT's default stays 1).
Time and memory are linear in the source: instructions are shared tuples and
positions 8-byte offsets.
"""
from __future__ import annotations

from array import array

from .. import isa
from ..bytecode import Function, Program, SourcePositions
from ..errors import FrontendError
from ..lazy_pattern import LazyPattern

COMMANDS = set("+-<>[].,")
LEVELS = (0, 1, 2)
DEFAULT_LEVEL = 1          # what `run` and `bench programs` use; the API's default is 0
LEVELS_HELP = ("0 the plain folded instruction stream (dispatch studies), 1 cell offsets "
               "and loop idioms as VM instructions, 2 also each loop of one instruction at "
               "offsets and a move as one walk (the interpreters' level: a trace ends at a "
               "walk)")
_NOT_CMD = r"[^-+<>\[\].,]*"
# A run of + and - (or < and >) may have comments inside it; [-] and [+] too.
_TOKEN = LazyPattern(rf"(?P<add>[-+](?:{_NOT_CMD}[-+])*)"
                    rf"|(?P<move>[<>](?:{_NOT_CMD}[<>])*)"
                    rf"|(?P<clear>\[{_NOT_CMD}[-+]{_NOT_CMD}\])"
                    r"|(?P<cmd>[\[\].,])")

_OP = isa.OPCODE
CELL_ADD, MOVE, CELL_ZERO = _OP["CELL_ADD"], _OP["MOVE"], _OP["CELL_ZERO"]
OPEN, CLOSE = _OP["JUMP_IF_CELL_ZERO"], _OP["LOOP_IF_CELL"]


class Emitter:
    """Level 0: each folded command is an instruction as it comes."""

    def __init__(self, filename: str, positions: SourcePositions):
        self.filename, self.positions = filename, positions
        self.code: list[tuple[int, int]] = []
        self.open_loops: list[tuple[int, int]] = []    # (pc of the '[', its source offset)
        self._shared: dict[tuple[int, int], tuple[int, int]] = {}
        # bound once: emit runs once per instruction of sources of many MB
        self._share, self._put = self._shared.setdefault, self.code.append
        self._at = positions.offsets.append

    def emit(self, op: int, arg: int, at: int) -> None:
        key = (op, arg)
        self._put(self._share(key, key))
        self._at(at)

    def unemit(self) -> None:
        self.code.pop()
        self.positions.offsets.pop()

    def error(self, at: int, what: str) -> FrontendError:
        line, col = self.positions.line_col(at)
        return FrontendError(f"{self.filename}:{line}:{col}: {what}")

    def add(self, n: int, at: int) -> None:
        if n:
            self.emit(CELL_ADD, n - 256 if n > 127 else n, at)

    def move(self, n: int, at: int) -> None:
        if -isa.INT32_MAX <= n <= isa.INT32_MAX:
            if n:
                self.emit(MOVE, n, at)
            return
        while n:                                    # a run of more than 2**31 moves
            step = max(-isa.INT32_MAX, min(isa.INT32_MAX, n))
            self.emit(MOVE, step, at)
            n -= step

    def clear(self, at: int) -> None:
        self.emit(CELL_ZERO, 0, at)

    def open(self, at: int) -> None:
        self.open_loops.append((len(self.code), at))
        self.emit(OPEN, 0, at)                      # patched at the matching ']'

    def close(self, at: int) -> None:
        if not self.open_loops:
            raise self.error(at, "unbalanced ']' (no '[' before it)")
        open_pc, _ = self.open_loops.pop()
        pc = len(self.code)
        self.emit(CLOSE, open_pc + 1 - pc, at)     # back to the first instruction of the body
        key = (OPEN, pc + 1 - open_pc)                  # forward past the ']'
        self.code[open_pc] = self._share(key, key)

    def simple(self, op: int, at: int) -> None:
        self.emit(op, 0, at)

    def finish(self, at: int) -> None:
        if self.open_loops:
            raise self.error(self.open_loops[-1][1], "unbalanced '[' (no matching ']')")
        self.emit(_OP["HALT"], 0, at)


# --- level 1 ----------------------------------------------------------------
# The head as an offset: the commands between two loop boundaries go into a
# block (offset -> add or set), emitted as CELL_ADD_AT / CELL_SET_AT at their
# offsets from a head that does not move; a loop's tests are at an offset
# too (JUMP_IF_CELL_ZERO_AT, LOOP_IF_CELL_AT), so the head moves only where
# a loop's body moves it (a MOVE of its net movement before the back-edge),
# for a scan, and for I/O.  At ']':
#   * a body that only moves is SCAN;
#   * a body that moves nowhere and steps its counter by -1 or +1 is a
#     multiply loop: CELL_MOVE_AT / CELL_MOVE2_AT / CELL_MULADD_AT (exact on
#     8-bit cells), or, when the counter's value is known, plain adds;
#   * a body after which the tested cell is known to be zero runs at most
#     once: an if, without a back-edge.
# Cell values are known where the program set them (all zero at its start,
# the tested cell after a loop): an add to a known cell is a set, a set to
# its own value is dropped, and a loop whose cell is known zero is dead code.
# A last pass (Optimizing.fuse) puts each remaining MOVE into the loop test
# after it and pairs up adds at offsets.

CELL_ADD_AT, CELL_SET_AT = isa.OPCODE["CELL_ADD_AT"], isa.OPCODE["CELL_SET_AT"]
CELL_MULADD, SCAN = isa.OPCODE["CELL_MULADD"], isa.OPCODE["SCAN"]
MOVE_OPEN, MOVE_CLOSE = isa.OPCODE["MOVE_JUMP_IF_CELL_ZERO"], isa.OPCODE["MOVE_LOOP_IF_CELL"]
_WALK_OF = {isa.OPCODE[body]: isa.OPCODE[walk] for walk, (body, _) in isa.WALKS.items()}
CELL_ADD2_AT = isa.OPCODE["CELL_ADD2_AT"]
OPEN_AT, CLOSE_AT = isa.OPCODE["JUMP_IF_CELL_ZERO_AT"], isa.OPCODE["LOOP_IF_CELL_AT"]
MULADD_AT, MOVE_AT, MOVE2_AT = (isa.OPCODE["CELL_MULADD_AT"], isa.OPCODE["CELL_MOVE_AT"],
                                isa.OPCODE["CELL_MOVE2_AT"])
COPY_AT, MOVE_PAIR_AT = isa.OPCODE["CELL_COPY_AT"], isa.OPCODE["CELL_MOVE_PAIR_AT"]


def _copy_pair(arg: int, arg2: int) -> int | None:
    """The CELL_COPY_AT operand of a CELL_MOVE2_AT (factor 1) and the
    CELL_MOVE_AT after it that moves one of its targets back (factor 1),
    else None."""
    a, t1, t2, f = isa.unpack_move_at("CELL_MOVE2_AT", arg)
    c, back, _, g = isa.unpack_move_at("CELL_MOVE_AT", arg2)
    if f != 1 or g != 1 or back != a or c not in (t1, t2):
        return None
    return isa.pack_move_at(a, t2 if c == t1 else t1, 0, c)
_JUMPS = (OPEN, CLOSE)          # the jumps level 1 emits before its last pass (pc + arg)
_AT_JUMPS = (OPEN_AT, CLOSE_AT)  # and at an offset (pc + isa.jump_disp)
_ADDS = (CELL_ADD, CELL_ADD_AT)
_NEAR = isa.AT_OFFSET_MAX        # offsets a test or a move loop at an offset can take
_UNKNOWN = -1                    # a known-values entry: not known (where the rest are 0)


def _add_pair(op: int, arg: int) -> tuple[int, int]:
    """(offset, byte) of a CELL_ADD or CELL_ADD_AT."""
    return (0, arg & 0xFF) if op == CELL_ADD else (arg >> 8, arg & 0xFF)


# A block's offsets stay well inside the packed operand's 24 bits.
_FAR = isa.CELL_OFFSET_MAX // 2


def balanced_loops(source: str) -> bytearray:
    """For each loop of the source, in the order of its '[': 1 when its body
    (inner loops included) returns the head to where it started, so that its
    tests can stay at an offset; 0 when each run of it moves the head (a walk
    or a scan: the head is brought to its cell before it, as the interpreter
    then tests the head's own cell), does I/O in its own body (which needs
    the head there anyway), or the source is unbalanced."""
    # stack: [index in out, net move, no I/O so far, inner loops all return the head]
    out, stack = bytearray(), []
    for m in _TOKEN.finditer(source):
        kind, text = m.lastgroup, m.group()
        if kind == "move" and stack:
            stack[-1][1] += text.count(">") - text.count("<")
        elif text == "[":
            stack.append([len(out), 0, True, True])
            out.append(0)
        elif text in ".," and stack:
            stack[-1][2] = False
        elif text == "]" and stack:
            k, net, quiet, inner = stack.pop()
            out[k] = quiet and inner and net == 0
            if stack and (net or not inner):     # (an inner loop with I/O may still return it)
                stack[-1][3] = False
    return out


class _Loop:
    __slots__ = ("open_pc", "at", "d0", "fresh", "known", "zero")

    def __init__(self, open_pc, at, d0, known, zero):
        self.open_pc, self.at, self.d0, self.fresh = open_pc, at, d0, True
        self.known, self.zero = known, zero      # what was known before the loop


class Optimizing(Emitter):
    def __init__(self, filename, positions, walks: bool = False):
        super().__init__(filename, positions)
        self.make_walks = walks              # level 2
        self.block: dict[int, list] = {}     # offset -> [kind "add"|"set", byte, source offset]
        self.d = 0                           # the virtual head, from the real one
        self.d_at = -1                       # source offset of the last move
        self.loops: list[_Loop] = []
        self.known: dict[int, int] = {}      # offset -> the cell's value, where known
        self.zero = True                     # every cell not in known is 0 (the start)
        self.dead = 0                        # inside a dead loop: its depth
        self.dead_open: list[int] = []       # its open brackets (an unbalanced one is named)
        self.balanced = bytearray()          # balanced_loops(source), set by compile_source
        self.nth = 0                         # loops opened so far

    # -- the commands ----------------------------------------------------------
    def add(self, n, at):
        if self.dead:
            return
        entry = self.block.get(self.d)
        if entry is None:
            self.block[self.d] = ["add", n, at]
        else:
            entry[1] = (entry[1] + n) & 0xFF

    def clear(self, at):
        if self.dead:
            return
        entry = self.block.get(self.d)
        if entry is None:
            self.block[self.d] = ["set", 0, at]
        else:
            entry[0], entry[1] = "set", 0

    def move(self, n, at):
        if self.dead:
            return
        self.d += n
        self.d_at = at
        if abs(self.d) > _FAR:
            self.flush()
            self.materialize()

    def value(self, off: int) -> int | None:
        """The cell at off, where it is known."""
        v = self.known.get(off, 0 if self.zero else None)
        return None if v == _UNKNOWN else v

    def flush(self):
        """Emit the block: a cell's add or set at its offset (the head stays)."""
        known = self.known
        for off, (kind, v, at) in self.block.items():
            was = self.value(off)
            if kind == "add" and was is not None:
                kind, v = "set", (was + v) & 0xFF
            if kind == "add":
                if v == 0:
                    continue
                known.pop(off, None)
                if self.zero:
                    known[off] = _UNKNOWN    # unknown, though the rest is zero
                if off == 0:
                    self.emit(CELL_ADD, v - 256 if v > 127 else v, at)
                else:
                    self.emit(CELL_ADD_AT, isa.pack_cell(off, v), at)
                continue
            if was == v:
                continue
            known[off] = v
            if off == 0 and v == 0:
                self.emit(CELL_ZERO, 0, at)
            else:
                self.emit(CELL_SET_AT, isa.pack_cell(off, v), at)
        self.block.clear()

    def materialize(self):
        """The head moves to the virtual one."""
        d = self.d
        if d:
            Emitter.move(self, d, self.d_at)
            self.known = {off - d: v for off, v in self.known.items()}
            self.d = 0

    def open(self, at):
        balanced = self.nth < len(self.balanced) and self.balanced[self.nth]
        self.nth += 1
        if self.dead:
            self.dead += 1
            self.dead_open.append(at)
            return
        self.flush()
        if self.value(self.d) == 0:         # never entered: dead code
            self.dead = 1
            self.dead_open = [at]           # its '['s, for the error of an unbalanced one
            return
        if abs(self.d) > _NEAR or not balanced:
            self.materialize()
        if self.loops:
            self.loops[-1].fresh = False
        self.loops.append(_Loop(len(self.code), at, self.d, self.known, self.zero))
        self.open_loops.append((len(self.code), at))       # (the error for an unbalanced '[')
        self.emit_test(OPEN_AT if self.d else OPEN, self.d, at)   # patched at the matching ']'
        self.known, self.zero = {}, False    # a body runs many times: nothing known

    def close(self, at):
        if self.dead:
            self.dead -= 1
            self.dead_open.pop()
            return
        if not self.loops:
            raise self.error(at, "unbalanced ']' (no '[' before it)")
        loop = self.loops.pop()
        self.open_loops.pop()
        if loop.fresh and self._idiom(loop):
            return
        self.flush()
        d0 = loop.d0
        once = self.value(self.d) == 0       # the tested cell is zero: no second time round
        if self.d != d0:                     # the body's net move, before the test
            self.d -= d0
            self.materialize()
            self.d = d0
        pc = len(self.code)
        if not once:
            self.emit(CLOSE_AT if d0 else CLOSE, 0, at)
            self._patch(pc, loop.open_pc + 1 - pc, d0)    # back to the first of the body
        self._patch(loop.open_pc, len(self.code) - loop.open_pc, d0)   # forward past the loop
        self.known, self.zero = {d0: 0}, False
        if self.loops:
            self.loops[-1].fresh = False

    def _patch(self, pc: int, disp: int, d0: int) -> None:
        """The jump at pc goes disp instructions (its test at d0)."""
        op = self.code[pc][0]
        if op in _AT_JUMPS:
            if abs(disp) > isa.AT_JUMP_MAX:
                raise self.error(self.positions.offsets[pc], "a loop of more than "
                                 f"{isa.AT_JUMP_MAX} instructions: use --bf-opt 0")
            arg = isa.pack_at_jump(d0, disp)
        else:
            arg = disp
        key = (op, arg)
        self.code[pc] = self._share(key, key)

    def emit_test(self, op: int, d0: int, at: int) -> None:
        self.emit(op, isa.pack_at_jump(d0, 0) if op in _AT_JUMPS else 0, at)

    def _idiom(self, loop: _Loop) -> bool:
        """A body of one block: a scan, or a multiply loop (see above)."""
        body, d, d0 = self.block, self.d, loop.d0
        if d != d0 and not body:
            self._unopen(loop)
            self.d = d0
            self.materialize()
            self.emit(SCAN, d - d0, loop.at)
            self.known, self.zero = {0: 0}, False
            return True
        counter = body.get(d0)
        if d != d0 or counter is None or counter[0] != "add" or counter[1] not in (1, 0xFF) \
                or any(kind != "add" for kind, _, _ in body.values()):
            return False
        step = counter[1]
        targets = [(off, v if step == 0xFF else -v & 0xFF, at) for off, (_, v, at) in body.items()
                   if off != d0 and v]
        self._unopen(loop)
        self.known, self.zero = loop.known, loop.zero
        body.clear()
        k = self.value(d0)
        if k is not None:                    # the counter's value is known: plain adds
            for off, factor, at in targets:
                self.add_at(off, k * factor, at)
            self.block[d0] = ["set", 0, loop.at]
            return True
        for off, _, _ in targets:
            self.known.pop(off, None)
            if self.zero:
                self.known[off] = _UNKNOWN
        self.known[d0] = 0
        near = all(abs(o) <= _NEAR for o in [d0] + [t[0] for t in targets])
        if not targets:
            self.block[d0] = ["set", 0, loop.at]
            self.known.pop(d0)
        elif not near:                        # the old way: a MULADD from the head
            self.materialize()
            for off, factor, at in targets:
                self.emit(CELL_MULADD, isa.pack_cell(off - d0, factor), at)
            self.emit(CELL_ZERO, 0, loop.at)
        elif len(targets) == 2 and targets[0][1] == targets[1][1]:
            (t1, f, at), (t2, _, _) = targets
            self.emit(MOVE2_AT, isa.pack_move_at(d0, t1, f, t2), at)
        else:
            for off, factor, at in targets[:-1]:
                self.emit(MULADD_AT, isa.pack_move_at(d0, off, factor), at)
            off, factor, at = targets[-1]
            self.emit(MOVE_AT, isa.pack_move_at(d0, off, factor), at)
        return True

    def add_at(self, off: int, n: int, at: int) -> None:
        entry = self.block.get(off)
        if entry is None:
            self.block[off] = ["add", n & 0xFF, at]
        else:
            entry[1] = (entry[1] + n) & 0xFF

    def _unopen(self, loop: _Loop) -> None:
        """Takes back the loop's opening test (the last instruction emitted)."""
        assert len(self.code) == loop.open_pc + 1
        self.unemit()

    def simple(self, op, at):
        if self.dead:
            return
        self.flush()
        self.materialize()
        super().simple(op, at)
        if op == _OP["CELL_IN"]:
            self.known.pop(0, None)
            if self.zero:
                self.known[0] = _UNKNOWN
        if self.loops:
            self.loops[-1].fresh = False

    def finish(self, at):
        if self.dead:               # the innermost '[' left open, as the plain emitter says
            raise self.error(self.dead_open[-1], "unbalanced '[' (no matching ']')")
        if self.loops:
            raise self.error(self.loops[-1].at, "unbalanced '[' (no matching ']')")
        self.flush()
        super().finish(at)
        self.fuse()
        if self.make_walks:
            self.walks()

    def fuse(self) -> None:
        """The last pass: a MOVE and the loop test after it become one
        MOVE_JUMP_IF_CELL_ZERO or MOVE_LOOP_IF_CELL (the jump one byte),
        two adds in a row at offsets within a signed byte one CELL_ADD2_AT,
        a copy through a spare cell one CELL_COPY_AT, and two move loops of
        factor 1 in a row one CELL_MOVE_PAIR_AT; never across a jump target.  Jumps are then displaced anew (fusing
        only shortens them, so a jump that fitted a byte before still does)."""
        code, offs = self.code, self.positions.offsets
        n = len(code)
        targets = bytearray(n + 1)
        for pc, (op, arg) in enumerate(code):
            if op in _JUMPS:
                targets[pc + arg] = 1
            elif op in _AT_JUMPS:
                targets[pc + (arg & 0xFFFFFF if op == OPEN_AT else -(arg & 0xFFFFFF))] = 1
        # flat arrays, not lists of ints: 8 bytes an entry, not 40 (an int above
        # 256 is an object of its own), on sources of tens of MB
        new, new_offs = [], array("q")
        jump_pcs, jump_targets = array("q"), array("q")     # new pc, old target
        newpc = array("q", bytes(8 * (n + 1)))
        share = self._share
        i = 0
        while i < n:
            op, arg = code[i]
            newpc[i] = len(new)
            nop = code[i + 1][0] if i + 1 < n else -1
            if op == MOVE and (nop == OPEN or nop == CLOSE) and not targets[i + 1] \
                    and abs(code[i + 1][1]) < isa.MOVE_JUMP_MAX \
                    and -isa.CELL_OFFSET_MAX - 1 <= arg <= isa.CELL_OFFSET_MAX:
                jump_pcs.append(len(new))
                jump_targets.append(i + 1 + code[i + 1][1])
                fused = MOVE_OPEN if nop == OPEN else MOVE_CLOSE
                new.append((fused, arg))                # the jump is filled in below
                new_offs.append(offs[i])
                newpc[i + 1] = newpc[i]
                i += 2
                continue
            if op == MOVE2_AT and nop == MOVE_AT and not targets[i + 1]:
                copy = _copy_pair(arg, code[i + 1][1])
                if copy is not None:
                    key = (COPY_AT, copy)
                    new.append(share(key, key))
                    new_offs.append(offs[i])
                    newpc[i + 1] = newpc[i]
                    i += 2
                    continue
            if op == MOVE_AT and nop == MOVE_AT and not targets[i + 1] \
                    and (arg >> 8) & 0xFF == 1 and (code[i + 1][1] >> 8) & 0xFF == 1:
                c1, t1, _, _ = isa.unpack_move_at("CELL_MOVE_AT", arg)
                c2, t2, _, _ = isa.unpack_move_at("CELL_MOVE_AT", code[i + 1][1])
                key = (MOVE_PAIR_AT, isa.pack_move_pair(c1, t1, c2, t2))
                new.append(share(key, key))
                new_offs.append(offs[i])
                newpc[i + 1] = newpc[i]
                i += 2
                continue
            if op in _ADDS and nop in _ADDS and not targets[i + 1]:
                a, b = _add_pair(op, arg), _add_pair(*code[i + 1])
                if -128 <= a[0] <= 127 and -128 <= b[0] <= 127:
                    key = (CELL_ADD2_AT, isa.pack_add2(*a, *b))
                    new.append(share(key, key))
                    new_offs.append(offs[i])
                    newpc[i + 1] = newpc[i]
                    i += 2
                    continue
            if op in _JUMPS:
                jump_pcs.append(len(new))
                jump_targets.append(i + arg)
            elif op in _AT_JUMPS:
                jump_pcs.append(len(new))
                jump_targets.append(i + (arg & 0xFFFFFF if op == OPEN_AT else -(arg & 0xFFFFFF)))
            new.append(code[i])
            new_offs.append(offs[i])
            i += 1
        newpc[n] = len(new)
        for pc, old_target in zip(jump_pcs, jump_targets):
            op, arg = new[pc]
            disp = newpc[old_target] - pc
            if op == MOVE_OPEN or op == MOVE_CLOSE:
                key = (op, isa.pack_move_jump(arg, disp))
            elif op in _AT_JUMPS:
                key = (op, isa.pack_at_jump(arg >> 24, disp))
            else:
                key = (op, disp)
            new[pc] = share(key, key)
        code[:] = new
        offs[:] = new_offs

    def walks(self) -> None:
        """Level 2's pass, after fuse: a body of one instruction with a walk
        (isa.WALKS) and the MOVE_LOOP_IF_CELL after it that jumps back to
        it become that walk, where nothing else jumps to either and the
        operands fit; jumps are then displaced anew (shorter: they fit)."""
        code, offs = self.code, self.positions.offsets
        n = len(code)
        into = array("q", bytes(8 * (n + 1)))        # jumps to each pc
        for pc, (op, arg) in enumerate(code):
            ins = isa.INSTRUCTIONS[op]
            if isa.is_jump(ins):
                into[pc + isa.jump_disp(ins, arg)] += 1
        new, new_offs, old_pc = [], array("q"), array("q")
        newpc = array("q", bytes(8 * (n + 1)))
        i = 0
        while i < n:
            op, arg = code[i]
            newpc[i] = len(new)
            walk = _WALK_OF.get(op)
            if walk is not None and i + 1 < n and code[i + 1][0] == MOVE_CLOSE \
                    and code[i + 1][1] & 0xFF == 1 and into[i] == 1 and not into[i + 1]:
                packed = isa.pack_walk(isa.INSTRUCTIONS[op].name, arg, code[i + 1][1] >> 8)
                if packed is not None:
                    key = (walk, packed)
                    new.append(self._share(key, key))
                    new_offs.append(offs[i])
                    old_pc.append(i)
                    newpc[i + 1] = len(new)
                    i += 2
                    continue
            new.append(code[i])
            new_offs.append(offs[i])
            old_pc.append(i)
            i += 1
        newpc[n] = len(new)
        for pc, (op, arg) in enumerate(new):
            ins = isa.INSTRUCTIONS[op]
            if isa.is_jump(ins):
                disp = newpc[old_pc[pc] + isa.jump_disp(ins, arg)] - pc
                key = (op, _with_disp(ins, arg, disp))
                new[pc] = self._share(key, key)
        code[:] = new
        offs[:] = new_offs


def _with_disp(ins: isa.Instr, arg: int, disp: int) -> int:
    """A jump's operand with another displacement, its other fields kept."""
    if ins.operand in isa.PACKED_MOVE_JUMP:
        return isa.pack_move_jump(arg >> 8, disp)
    if ins.operand in isa.PACKED_AT_JUMP:
        return isa.pack_at_jump(arg >> 24, disp)
    return disp


def compile_source(source: str, filename: str = "<bf>", opt: int = 0) -> Program:
    if opt not in LEVELS:
        raise FrontendError(f"--bf-opt {opt}: choose one of {', '.join(map(str, LEVELS))}")
    positions = SourcePositions(source)
    out = Optimizing(filename, positions, walks=opt >= 2) if opt else Emitter(filename, positions)
    if opt:
        out.balanced = balanced_loops(source)
    simple = {".": _OP["CELL_OUT"], ",": _OP["CELL_IN"]}
    add, move, clear, open_, close = out.add, out.move, out.clear, out.open, out.close
    last = -1
    for m in _TOKEN.finditer(source):
        kind, at, text = m.lastgroup, m.start(), m.group()
        last = at
        if kind == "add":
            n = (1 if text == "+" else 255) if len(text) == 1 else \
                (text.count("+") - text.count("-")) % 256
            add(n, at)
        elif kind == "move":
            move((1 if text == ">" else -1) if len(text) == 1 else
                 text.count(">") - text.count("<"), at)
        elif kind == "clear":
            clear(at)
        elif text == "[":
            open_(at)
        elif text == "]":
            close(at)
        else:
            out.simple(simple[text], at)
    out.finish(last)
    return Program(name=filename, code=out.code, positions=positions, language="bf",
                   functions=[Function("<bf>", 0, 0, 0)])
