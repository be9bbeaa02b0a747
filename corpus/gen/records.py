"""A BF-generating compiler for wide binary numbers: the numbers live one bit
per record in an array of records on the tape, and every operation walks
the array with the head moving a record per iteration (the style of the
big generated BF number crunchers: loops whose head moves, nested ifs that
run at most once, sentinels and scans back to the array's start).

Layout: record r (0 .. width + 1) starts at cell base + r * stride; each
field is a cell at a fixed offset in every record.  Records 1 .. width hold
bits 0 .. width - 1 (least significant first) and have their marker field
set to 1; records 0 and width + 1 are sentinels (marker 0), so a walk up
`[ body >>>>... ]` stops at record width + 1 and a scan down `[<<<<...]`
stops at record 0.  Numbers are width-bit two's complement.

Outside the array the program is structured code on fixed cells
(bfgen.BF: the generator knows the head there).  A walk starts at a record
whose position is known statically and ends on a sentinel, so the head is
known again after it; inside a walk only the current record's cells (and
its neighbours', at +-stride) are touched, never a global temp.

Every operation has a Python twin in Model, which computes what the BF
computes bit for bit; the make_*.py scripts check the program's output
against the model's.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "bf" / "gen"))
from bfgen import BF  # noqa: E402


class Records(BF):
    """BF with a record array of `width`-bit numbers at `base` (after the
    globals); `fields` names the fields, marker first.  T, U and C are the
    scratch fields every operation needs (temp, temp, carry)."""

    def __init__(self, width: int, fields: list[str], globals_: int = 40):
        super().__init__(first_free=0)
        assert fields[0] == "M" and {"T", "U", "C"} <= set(fields)
        self.width = width
        self.fields = {name: i for i, name in enumerate(fields)}
        self.stride = len(fields)
        self.base = globals_
        self.globals_ = globals_
        self._last = self.base + (width + 2) * self.stride - 1

    # ------------------------------------------------------------ addresses
    def rec(self, r: int, field: str = "M") -> int:
        return self.base + r * self.stride + self.fields[field]

    def f(self, field: str, delta: int = 0) -> int:
        """A field of the walk's current record (delta records away): the
        walk body is generated as if the current record were record 1."""
        return self.rec(1 + delta, field)

    @contextmanager
    def temps(self, n: int):
        """Global scratch cells, which must stay below the array."""
        with super().temps(n) as cells:
            assert max(cells if n > 1 else (cells,)) < self.base, "out of global cells"
            yield cells

    # ------------------------------------------------------------ set-up
    def init_markers(self) -> None:
        for r in range(1, self.width + 1):
            self.inc(self.rec(r))

    # ------------------------------------------------------------ walks
    @contextmanager
    def walk_up(self):
        """for each record 1 .. width, least significant first: body (on the
        current record, self.f(...)); ends on record width + 1."""
        self.at(self.rec(1))
        self.emit("[")
        yield
        self.at(self.rec(2))
        self.emit("]")
        self.pos = self.rec(self.width + 1)

    @contextmanager
    def walk_down(self):
        """for each record width .. 1, most significant first; ends on record 0."""
        self.at(self.rec(self.width))
        self.emit("[")
        self.pos = self.rec(1)              # the body is generated relative to record 1
        yield
        self.at(self.rec(0))
        self.emit("]")
        self.pos = self.rec(0)

    def scan_down(self) -> None:
        """From the sentinel above the array back to record 0 by a scan over
        the markers (the head is on record width + 1)."""
        assert self.pos == self.rec(self.width + 1)
        self.emit("<" * self.stride + "[" + "<" * self.stride + "]")
        self.pos = self.rec(0)

    # ------------------------------------------------------------ record-local helpers
    def _move(self, src: int, *dsts: int, sign: int = 1) -> None:
        with self.loop(src):
            self.dec(src)
            for d in dsts:
                self.add(d, sign)

    def _decode(self, t: int, bit: int, carry_next: int) -> None:
        """t holds 0..3 (bit is 0): bit = t & 1, carry_next += t >> 1, t = 0,
        by loops nested three deep that each run at most once."""
        with self.loop(t):
            self.dec(t)
            self.inc(bit)
            with self.loop(t):
                self.dec(t)
                self.dec(bit)
                self.inc(carry_next)
                with self.loop(t):
                    self.dec(t)
                    self.inc(bit)

    # ------------------------------------------------------------ operations
    def clear_field(self, field: str) -> None:
        with self.walk_up():
            self.at(self.f(field))
            self.emit("[-]")
        self.scan_down()

    def copy_field(self, src: str, dst: str) -> None:
        """dst += src bitwise (dst zero first: a copy)."""
        with self.walk_up():
            self._move(self.f(src), self.f(dst), self.f("T"))
            self._move(self.f("T"), self.f(src))
        self.scan_down()

    def move_field(self, src: str, dst: str) -> None:
        """dst = src (dst zero first), src cleared."""
        with self.walk_up():
            self._move(self.f(src), self.f(dst))
        self.scan_down()

    def add_field(self, dst: str, src: str, subtract: bool = False) -> None:
        """dst += src (or dst -= src), width bits, src kept."""
        if subtract:
            self.inc(self.rec(1, "C"))       # dst + ~src + 1
        with self.walk_up():
            t, u, c = self.f("T"), self.f("U"), self.f("C")
            if subtract:
                self.inc(t)                  # t = 1 - src
                self._move(self.f(src), u)
                with self.loop(u):
                    self.dec(u)
                    self.dec(t)
                    self.inc(self.f(src))
            else:
                self._move(self.f(src), t, u)
                self._move(u, self.f(src))
            self._move(c, t)
            self._move(self.f(dst), t)
            self._decode(t, self.f(dst), self.f("C", 1))
        self.at(self.rec(self.width + 1, "C"))   # the carry out of the top bit
        self.emit("[-]")
        self.at(self.rec(self.width + 1))
        self.scan_down()

    def negate(self, field: str) -> None:
        """field = -field (two's complement)."""
        self.inc(self.rec(1, "C"))
        with self.walk_up():
            t, c, x = self.f("T"), self.f("C"), self.f(field)
            self.inc(t)
            self._move(x, t, sign=-1)        # t = 1 - x
            self._move(c, t)
            self._decode(t, x, self.f("C", 1))
        self.at(self.rec(self.width + 1, "C"))
        self.emit("[-]")
        self.at(self.rec(self.width + 1))
        self.scan_down()

    def shift_right(self, field: str) -> None:
        """field >>= 1 (logical: the top bit becomes 0)."""
        self.clear(self.rec(1, field))
        with self.walk_up():
            self._move(self.f(field, 1), self.f(field))
        self.scan_down()

    def shift_left(self, field: str) -> None:
        """field <<= 1 (the top bit is lost)."""
        with self.walk_down():
            self._move(self.f(field), self.f(field, 1))
        self.clear(self.rec(self.width + 1, field))

    def set_const(self, field: str, value: int) -> None:
        """field = value (field zero first), by static code."""
        value &= (1 << self.width) - 1
        for i in range(self.width):
            if value >> i & 1:
                self.inc(self.rec(i + 1, field))

    def abs_into(self, src: str, dst: str) -> None:
        """dst = |src| (dst zero first)."""
        self.copy_field(src, dst)
        with self.if_nz(self.rec(self.width, dst)):
            self.negate(dst)

    def flag_if_any(self, field: str, first_bit: int, flag: int) -> None:
        """flag = 1 if any bit first_bit .. width - 1 of field is set."""
        for i in range(first_bit, self.width):
            with self.if_nz(self.rec(i + 1, field)):
                self.set(flag, 1)

    @contextmanager
    def repeat(self, n: int, counter: int):
        """The body n times, counted down on a global cell."""
        self.set(counter, n)
        with self.loop(counter):
            yield
            self.dec(counter)

    def multiply(self, a: str, b: str, p: str, frac: int, counter: int) -> None:
        """p = (a * b) >> frac for magnitudes a and b (p zero first); a and b
        are used up (zero after).  Horner's rule over b's bits, least
        significant first: the low frac bits add a and halve p, the high
        ones add a and double a."""
        with self.repeat(frac, counter):
            with self.if_nz(self.rec(1, b)):
                self.add_field(p, a)
            self.shift_right(p)
            self.shift_right(b)
        with self.repeat(self.width - frac, counter):
            with self.if_nz(self.rec(1, b)):
                self.add_field(p, a)
            self.shift_left(a)
            self.shift_right(b)
        self.clear_field(a)


class Model:
    """The operations above on Python ints, bit for bit (width-bit two's complement)."""

    def __init__(self, width: int):
        self.width = width
        self.mask = (1 << width) - 1

    def wrap(self, v: int) -> int:
        return v & self.mask

    def signed(self, v: int) -> int:
        v &= self.mask
        return v - (1 << self.width) if v >> (self.width - 1) else v

    def neg(self, v: int) -> int:
        return self.wrap(-v)

    def abs(self, v: int) -> int:
        return self.neg(v) if v >> (self.width - 1) & 1 else v

    def multiply(self, a: int, b: int, frac: int) -> int:
        p = 0
        for _ in range(frac):
            if b & 1:
                p = self.wrap(p + a)
            p >>= 1
            b >>= 1
        for _ in range(self.width - frac):
            if b & 1:
                p = self.wrap(p + a)
            a = self.wrap(a << 1)
            b >>= 1
        return p

    def any_from(self, v: int, first_bit: int) -> bool:
        return (v & self.mask) >> first_bit != 0
