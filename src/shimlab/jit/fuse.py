"""The trace optimizer's stack machine (level 2): minipy's operand stack kept
virtual inside a trace, so an instruction takes its operands where they are
(a local, an immediate, the cached top of stack in a register) and leaves
its result in that register; the stencils are peachpy_stencils/fused.py's.

Entries are ("s",) on the memory stack, ("l", index), ("i", value) or ("r",)
in TOS, or ("c", register): a value the trace was entered with in that
register (--cache K), below every other virtual entry; memory entries are
always below virtual ones.  The stack is flushed
(every virtual entry pushed, in order) before anything that can leave the
trace or needs memory, so every exit sees the interpreter's exact state.
"""
from __future__ import annotations

from .. import isa

PAIRS = {a + b for a in "slir" for b in "lir"} - {"ii", "rr"}
ARITH = {"ADD", "SUB", "MUL", "AND", "OR", "XOR"}
COMPARE = {"LT": "l", "LE": "le", "EQ": "e", "NE": "ne", "GT": "g", "GE": "ge"}
NEGATE = {"l": "ge", "le": "g", "e": "ne", "ne": "e", "g": "le", "ge": "l"}
BY_IMM = {"LSHIFT": range(0, 64), "RSHIFT": range(0, 64),
          "FLOORDIV": range(1, isa.INT32_MAX + 1), "MOD": range(1, isa.INT32_MAX + 1)}
_FOLD = {"ADD": lambda a, b: a + b, "SUB": lambda a, b: a - b, "MUL": lambda a, b: a * b,
         "AND": lambda a, b: a & b, "OR": lambda a, b: a | b, "XOR": lambda a, b: a ^ b,
         "LT": lambda a, b: int(a < b), "LE": lambda a, b: int(a <= b),
         "EQ": lambda a, b: int(a == b), "NE": lambda a, b: int(a != b),
         "GT": lambda a, b: int(a > b), "GE": lambda a, b: int(a >= b),
         # Python's semantics on int64, as isa.py's; only where they cannot fail
         "FLOORDIV": lambda a, b: a // b, "MOD": lambda a, b: a % b,
         "LSHIFT": lambda a, b: a << b if b < 64 else 0, "RSHIFT": lambda a, b: a >> min(b, 63)}
_FAILS = {"FLOORDIV": lambda b: b == 0, "MOD": lambda b: b == 0,
          "LSHIFT": lambda b: b < 0, "RSHIFT": lambda b: b < 0}
TRANSPARENT = {"NOP", "JUMP"}          # their stencils emit nothing
# the instructions take() can lower (for any other it takes none)
TAKES = frozenset(TRANSPARENT | {"LOAD_LOCAL", "LOAD_INT", "POP", "STORE_LOCAL"} | set(_FOLD)
                  | ARITH | set(BY_IMM) | set(COMPARE))


def magic(d: int) -> tuple[int, int]:
    """For a divisor 2 <= d < 2**31: (m, s) with u // d == (u * m >> 64) >> s
    for every 0 <= u < 2**63 (peachpy_stencils/fused.py's opt:FLOORDIV:*m).  With
    l = ceil(log2 d), s = l - 1 and m = ceil(2**(63 + l) / d): m * d exceeds
    2**(63 + l) by less than d <= 2**l, the bound that makes a 63-bit
    dividend exact, and m < 2**64."""
    l = (d - 1).bit_length()
    m = -(-(1 << (63 + l)) // d)
    assert 2 <= d and m < 1 << 64
    return m, l - 1


def leave_cc(guard: str, cc: str) -> str:
    """When a JUMP_IF_* guard on a compare with condition cc leaves the trace."""
    name, _, variant = guard.partition(":")
    leave_when_true = (name == "JUMP_IF_FALSE") == (variant == "taken")
    return cc if leave_when_true else NEGATE[cc]


class VirtualStack:
    def __init__(self, lowered, piece, count_piece):
        self.out, self.piece, self.count_piece = lowered, piece, count_piece
        self.entries: list[tuple] = []
        self.entry: list[tuple] = []      # the entries the trace was entered with (enter)

    # -- emitting ------------------------------------------------------------
    def emit(self, stencil: str, values: dict, t=None, d: int = 0) -> None:
        self.out.add(self.piece(stencil, values, t, d))

    def emit_compare(self, pair: str, a: tuple, b: tuple, t, then: str, t2, d: int) -> None:
        """A compare and the piece that reads its flags (opt:set or
        opt:leave-if), added as one so nothing lands between them."""
        self.out.add(self.piece(f"opt:cmp:{pair}", {**self._operand_values(a, True),
                                                    **self._operand_values(b, False)}, t, d),
                     self.piece(then, {}, t2, d))

    # -- cached values (--cache K) --------------------------------------------
    def enter(self, registers) -> None:
        """The trace is entered with the stack's top values in `registers`, the top first."""
        self.entry = [("c", reg) for reg in reversed(registers)]
        self.entries = list(self.entry)

    def spill_written(self, written, d: int) -> None:
        """Cached values in registers `written` (None: all) go to memory,
        with every entry below them."""
        top = max((k for k, e in enumerate(self.entries)
                   if e[0] == "c" and (written is None or e[1] in written)), default=None)
        if top is not None:
            self.flush(d, keep=len(self.entries) - top - 1)

    def settle(self, d: int) -> bool:
        """Before the trace can leave: True if the cached values are all still
        where the trace was entered with them (and nothing else virtual), else
        everything goes to memory (the exit reloads them)."""
        if self.entries == self.entry:
            return True
        self.flush(d)
        return False

    def _operand_values(self, e: tuple, left: bool) -> dict:
        if e[0] == "l":
            return {"local" if left else "local2": 8 * e[1]}
        if e[0] == "i":
            return {"oparg" if left else "oparg2": e[1]}
        return {}

    def flush(self, d: int = 0, keep: int = 0) -> None:
        """Push every virtual entry but the top `keep`, bottom first."""
        entries = self.entries
        end = len(entries) - keep
        for k in range(end):
            e = entries[k]
            if e[0] == "s":
                continue
            name = f"opt:push:reg:{e[1]}" if e[0] == "c" else f"opt:push:{e[0]}"
            self.emit(name, self._operand_values(e, left=False), None, d)
            entries[k] = ("s",)
            self.out.note("stack values spilled")

    def _free_tos(self, d: int) -> None:
        """TOS is about to take a new value: an entry still in it goes to memory."""
        if any(e[0] == "r" for e in self.entries):
            self.flush(d)

    # -- the instructions ----------------------------------------------------
    def take(self, ops: list, k: int, d: int) -> int:
        """Lower ops[k] (and the guard after it, for a compare) if it is stack
        code this can do; returns how many instructions it took (0: none)."""
        t = ops[k]
        name, e = t.name, self.entries
        if name in TRANSPARENT:
            self.count_piece(t, d)
            self.emit(t.stencil, {}, t, d)
            return 1
        if name == "LOAD_LOCAL":
            return self._push(t, d, ("l", t.arg))
        if name == "LOAD_INT":
            return self._push(t, d, ("i", t.arg))
        if name == "POP" and e and e[-1][0] != "s":
            self.count_piece(t, d)
            e.pop()
            self.out.note("stack operations fused")
            return 1
        if name == "STORE_LOCAL" and e and e[-1][0] not in "sc":
            return self._store(t, d)
        if len(e) < 2:
            return 0
        a, b = e[-2], e[-1]
        pair = a[0] + b[0]
        if name in _FOLD and a[0] == b[0] == "i":
            if name in _FAILS and _FAILS[name](b[1]):
                return 0            # the interpreter's error, from the plain stencil's deopt
            value = isa.wrap64(_FOLD[name](a[1], b[1]))
            if isa.INT32_MIN <= value <= isa.INT32_MAX:
                self.count_piece(t, d)
                e[-2:] = [("i", value)]
                self.out.note("constants folded")
                return 1
            return 0
        if name in ARITH and pair in PAIRS:
            return self._binop(t, d, f"opt:{name}:{pair}", a, b)
        if name in BY_IMM and b[0] == "i" and b[1] in BY_IMM[name] and a[0] in "slr":
            if name in ("FLOORDIV", "MOD") and b[1] >= 2:
                m, shift = magic(b[1])
                return self._binop(t, d, f"opt:{name}:{a[0]}m", a, b,
                                   {"const": m, "oparg": shift})
            return self._binop(t, d, f"opt:{name}:{a[0]}i", a, b)
        if name in COMPARE and pair in PAIRS:
            nxt = ops[k + 1] if k + 1 < len(ops) else None
            if nxt is not None and nxt.name in ("JUMP_IF_FALSE", "JUMP_IF_TRUE") and \
                    nxt.stencil.partition(":")[2] in ("taken", "fallthrough"):
                return self._compare_branch(t, nxt, d, pair, a, b)
            self.count_piece(t, d)
            del e[-2:]
            self._free_tos(d)
            self.emit_compare(pair, a, b, t, f"opt:set:{COMPARE[name]}", t, d)
            e.append(("r",))
            self.out.note("stack operations fused")
            return 1
        return 0

    def _push(self, t, d, entry) -> int:
        self.count_piece(t, d)
        self.entries.append(entry)
        return 1

    def _store(self, t, d) -> int:
        e = self.entries
        top = e.pop()
        if any(x == ("l", t.arg) for x in e):
            self.flush(d)             # they must read the local before it changes
        self.count_piece(t, d)
        values = {"local": 8 * t.arg}
        if top[0] == "l":
            values["local2"] = 8 * top[1]
        elif top[0] == "i":
            values["oparg2"] = top[1]
        self.emit(f"opt:store:{top[0]}", values, t, d)
        self.out.note("stack operations fused")
        return 1

    def _binop(self, t, d, stencil, a, b, extra=None) -> int:
        e = self.entries
        self.count_piece(t, d)
        del e[-2:]
        if "r" not in (a[0], b[0]):
            self._free_tos(d)
        self.emit(stencil, {**self._operand_values(a, True), **self._operand_values(b, False),
                            **(extra or {})}, t, d)
        e.append(("r",))
        self.out.note("stack operations fused")
        return 1

    def _compare_branch(self, t, guard, d, pair, a, b) -> int:
        e = self.entries
        self.count_piece(t, d)
        self.count_piece(guard, d)
        del e[-2:]
        self.flush(d)                 # the guard's exit sees the interpreter's stack
        self.emit_compare(pair, a, b, t, f"opt:leave-if:{leave_cc(guard.stencil, COMPARE[t.name])}",
                          guard, d)
        self.out.note("compare-and-branch fused")
        return 2
