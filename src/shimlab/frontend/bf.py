"""BF to shimlab bytecode, in one pass of a regular expression over the source.

Level 0 (--bf-opt 0) is the folding every serious BF interpreter does, and
the instruction stream dispatch studies use: runs of + and - become one
CELL_ADD, runs of < and > one MOVE, [-] and [+] CELL_ZERO; '[' is a forward
JUMP_IF_CELL_ZERO, ']' the LOOP_IF_CELL back-edge.  Level 1 adds cell
offsets and the loop idioms (Optimizing, below).  Time and memory are linear in
the source: instructions are shared tuples and positions 8-byte offsets.
"""
from __future__ import annotations

import re
from array import array

from .. import isa
from ..bytecode import Function, Program, SourcePositions
from ..errors import FrontendError

COMMANDS = set("+-<>[].,")
LEVELS = (0, 1)
DEFAULT_LEVEL = 1          # what `run` and `bench programs` use; the API's default is 0
_NOT_CMD = r"[^-+<>\[\].,]*"
# A run of + and - (or < and >) may have comments inside it; [-] and [+] too.
_TOKEN = re.compile(rf"(?P<add>[-+](?:{_NOT_CMD}[-+])*)"
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
# Cells at an offset from a head that moves only at loop boundaries and I/O,
# and the loop idioms as instructions of their own.  Between two such points
# the commands go into a block (offset -> add or set), emitted as CELL_ADD_AT
# / CELL_SET_AT and one MOVE.  At ']' a loop whose body is one block becomes
# an idiom: a body that only moves is SCAN; a body that moves nowhere and
# steps its counter by -1 or +1 adds factor * counter to each other cell it
# touches (CELL_MULADD, exact on 8-bit cells) and clears the counter.  A last
# pass (Optimizing.fuse) puts each remaining MOVE into the loop test after it
# and pairs up adds at offsets.

CELL_ADD_AT, CELL_SET_AT = isa.OPCODE["CELL_ADD_AT"], isa.OPCODE["CELL_SET_AT"]
CELL_MULADD, SCAN = isa.OPCODE["CELL_MULADD"], isa.OPCODE["SCAN"]
MOVE_OPEN, MOVE_CLOSE = isa.OPCODE["MOVE_JUMP_IF_CELL_ZERO"], isa.OPCODE["MOVE_LOOP_IF_CELL"]
CELL_ADD2_AT = isa.OPCODE["CELL_ADD2_AT"]
_JUMPS = (OPEN, CLOSE)          # the jumps level 1 emits before its last pass (pc + arg)
_ADDS = (CELL_ADD, CELL_ADD_AT)


def _add_pair(op: int, arg: int) -> tuple[int, int]:
    """(offset, byte) of a CELL_ADD or CELL_ADD_AT."""
    return (0, arg & 0xFF) if op == CELL_ADD else (arg >> 8, arg & 0xFF)


# A block's offsets stay well inside the packed operand's 24 bits.
_FAR = isa.CELL_OFFSET_MAX // 2


class Optimizing(Emitter):
    def __init__(self, filename, positions):
        super().__init__(filename, positions)
        self.block: dict[int, list] = {}     # offset -> [kind "add"|"set", byte, source offset]
        self.d = 0                           # the virtual head, from the real one
        self.d_at = -1                       # source offset of the last move
        self.fresh = False                   # the block is all of the innermost loop's body so far

    def add(self, n, at):
        entry = self.block.get(self.d)
        if entry is None:
            self.block[self.d] = ["add", n, at]
        else:
            entry[1] = (entry[1] + n) & 0xFF

    def clear(self, at):
        entry = self.block.get(self.d)
        if entry is None:
            self.block[self.d] = ["set", 0, at]
        else:
            entry[0], entry[1] = "set", 0

    def move(self, n, at):
        self.d += n
        self.d_at = at
        if abs(self.d) > _FAR:
            self.flush()

    def flush(self):
        """Emit the block and move the head to the virtual one."""
        for off, (kind, v, at) in self.block.items():
            if kind == "add":
                if v == 0:
                    continue
                if off == 0:
                    self.emit(CELL_ADD, v - 256 if v > 127 else v, at)
                else:
                    self.emit(CELL_ADD_AT, isa.pack_cell(off, v), at)
            elif off == 0 and v == 0:
                self.emit(CELL_ZERO, 0, at)
            else:
                self.emit(CELL_SET_AT, isa.pack_cell(off, v), at)
        self.block.clear()
        Emitter.move(self, self.d, self.d_at)
        self.d = 0
        self.fresh = False

    def open(self, at):
        self.flush()
        super().open(at)
        self.fresh = True

    def close(self, at):
        if self.fresh and self.open_loops and self._idiom():
            self.fresh = False
            return
        self.flush()
        super().close(at)

    def _idiom(self) -> bool:
        open_pc, open_at = self.open_loops[-1]
        body, d = self.block, self.d
        if d and not body:
            self.open_loops.pop()
            self.unemit()
            self.emit(SCAN, d, open_at)
        elif d == 0 and self._counter_step() is not None:
            step = self._counter_step()
            self.open_loops.pop()
            self.unemit()
            for off, (_, v, at) in body.items():
                factor = v if step == 0xFF else -v & 0xFF
                if off and factor:
                    self.emit(CELL_MULADD, isa.pack_cell(off, factor), at)
            self.emit(CELL_ZERO, 0, open_at)
        else:
            return False
        body.clear()
        self.d = 0
        return True

    def _counter_step(self):
        """-1 or +1 (as a byte) when the body is a multiply loop's, else None."""
        counter = self.block.get(0)
        if counter is None or counter[0] != "add" or counter[1] not in (1, 0xFF):
            return None
        if any(kind != "add" for kind, _, _ in self.block.values()):
            return None
        return counter[1]

    def simple(self, op, at):
        self.flush()
        super().simple(op, at)

    def finish(self, at):
        self.flush()
        super().finish(at)
        self.fuse()

    def fuse(self) -> None:
        """The last pass: a MOVE and the loop test after it become one
        MOVE_JUMP_IF_CELL_ZERO or MOVE_LOOP_IF_CELL (the jump one byte), and
        two adds in a row at offsets within a signed byte one CELL_ADD2_AT;
        never across a jump target.  Jumps are then displaced anew (fusing
        only shortens them, so a jump that fitted a byte before still does)."""
        code, offs = self.code, self.positions.offsets
        n = len(code)
        targets = bytearray(n + 1)
        for pc, (op, arg) in enumerate(code):
            if op in _JUMPS:
                targets[pc + arg] = 1
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
            new.append(code[i])
            new_offs.append(offs[i])
            i += 1
        newpc[n] = len(new)
        for pc, old_target in zip(jump_pcs, jump_targets):
            op, arg = new[pc]
            disp = newpc[old_target] - pc
            if op == MOVE_OPEN or op == MOVE_CLOSE:
                key = (op, isa.pack_move_jump(arg, disp))
            else:
                key = (op, disp)
            new[pc] = share(key, key)
        code[:] = new
        offs[:] = new_offs


def compile_source(source: str, filename: str = "<bf>", opt: int = 0) -> Program:
    if opt not in LEVELS:
        raise FrontendError(f"--bf-opt {opt}: choose one of {', '.join(map(str, LEVELS))}")
    positions = SourcePositions(source)
    out = (Optimizing if opt else Emitter)(filename, positions)
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
