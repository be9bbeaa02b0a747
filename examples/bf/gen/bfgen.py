"""A tiny BF macro assembler used by the make_*.py scripts in this folder.

Every cell is addressed by its absolute index; the assembler tracks the head
position at generation time, so each loop body is closed at the cell that
opened it and every construct is position-balanced (the head is known
statically everywhere, as in hand-written "structured" BF).

Conventions the macros rely on:
  * scratch cells handed out by `temps()` are zero when taken and must be
    zero again when given back (the macros below all leave them so);
  * cells hold 8-bit wrapping values.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

COMMANDS = set("+-<>[].,")


class BF:
    def __init__(self, first_free: int = 0, last: int = 29_999):
        self.parts: list[str] = []
        self.pos = 0
        self._next_temp = first_free
        self._last = last

    # ------------------------------------------------------------ raw output
    def emit(self, code: str) -> None:
        assert all(ch in COMMANDS for ch in code), code
        self.parts.append(code)

    def comment(self, text: str) -> None:
        """A comment on a line of its own; refuses text that would be code."""
        bad = COMMANDS.intersection(text)
        assert not bad, f"comment {text!r} contains BF commands {sorted(bad)}"
        self.parts.append("\n" + text + "\n")

    def at(self, cell: int) -> None:
        assert 0 <= cell <= self._last, cell
        d = cell - self.pos
        self.emit(">" * d if d > 0 else "<" * -d)
        self.pos = cell

    # ------------------------------------------------------------ cell ops
    def add(self, cell: int, n: int) -> None:
        n %= 256
        if n == 0:
            return
        self.at(cell)
        self.emit("+" * n if n <= 128 else "-" * (256 - n))

    def inc(self, cell: int) -> None:
        self.add(cell, 1)

    def dec(self, cell: int) -> None:
        self.add(cell, -1)

    def clear(self, cell: int) -> None:
        self.at(cell)
        self.emit("[-]")

    def set(self, cell: int, n: int) -> None:
        self.clear(cell)
        self.add(cell, n)

    def out(self, cell: int) -> None:
        self.at(cell)
        self.emit(".")

    def read(self, cell: int) -> None:
        self.at(cell)
        self.emit(",")

    # ------------------------------------------------------------ control
    @contextmanager
    def loop(self, cell: int):
        """while cell != 0: body   (the body must end wherever it likes; the
        assembler moves back to `cell` before the closing bracket)."""
        self.at(cell)
        self.emit("[")
        yield
        self.at(cell)
        self.emit("]")

    @contextmanager
    def if_nz_consume(self, cell: int):
        """if cell != 0: body; the cell is zero afterwards (cleared at the end
        of the body, so the body may still read it)."""
        with self.loop(cell):
            yield
            self.clear(cell)

    @contextmanager
    def temps(self, n: int):
        """n scratch cells, zero on entry and (by contract) on exit."""
        start = self._next_temp
        self._next_temp += n
        assert self._next_temp - 1 <= self._last
        try:
            yield tuple(range(start, start + n)) if n > 1 else start
        finally:
            self._next_temp = start

    def reserve(self, n: int) -> list[int]:
        """Permanently allocate n cells (for named variables)."""
        start = self._next_temp
        self._next_temp += n
        return list(range(start, start + n))

    # ------------------------------------------------------------ data moves
    def move(self, src: int, targets: dict[int, int]) -> None:
        """Add src * factor to every target; src becomes zero."""
        with self.loop(src):
            self.dec(src)
            for cell, factor in sorted(targets.items(), key=lambda kv: kv[0]):
                self.add(cell, factor)

    def copy(self, src: int, dst: int, factor: int = 1) -> None:
        """dst += src * factor, src kept (one scratch cell)."""
        with self.temps(1) as t:
            self.move(src, {dst: factor, t: 1})
            self.move(t, {src: 1})

    @contextmanager
    def if_nz(self, cell: int):
        """if cell != 0: body   (cell kept; the body must not change it)."""
        with self.temps(1) as t:
            self.copy(cell, t)
            with self.if_nz_consume(t):
                yield

    @contextmanager
    def if_zero(self, cell: int):
        """if cell == 0: body   (cell kept; the body must not change it)."""
        with self.temps(1) as flag:
            self.inc(flag)
            with self.if_nz(cell):
                self.dec(flag)
            with self.if_nz_consume(flag):
                yield

    @contextmanager
    def if_zero_adjacent(self, x: int):
        """if x == 0: body, in a constant number of steps (x kept).

        Needs the two cells right of x to be zero (they are zero again after).
        With B = x+1 set to 1, `[>-]>` ends on B when x is zero and on x+2
        otherwise; the body (run only on B) clears B and steps to x+2, so
        both paths leave the head on x+2."""
        b, c = x + 1, x + 2
        self.inc(b)
        self.at(x)
        self.emit("[>-]>")
        self.pos = b  # on the path that runs the body
        self.emit("[")
        yield
        self.at(b)
        self.emit("->")
        self.pos = c
        self.emit("]")

    def set_flag_if_nz(self, cell: int, flag: int) -> None:
        """flag = 1 if cell != 0 (flag left alone otherwise); cell kept."""
        with self.if_nz(cell):
            self.set(flag, 1)

    def flag_if_at_least(self, cell: int, k: int, flag: int) -> None:
        """flag += 1 if cell >= k (k >= 1); cell kept.  A copy of the cell is
        counted down through k nested loops; only the innermost one, entered
        when the copy held at least k, touches the flag and clears the rest."""
        assert k >= 1
        with self.temps(1) as t:
            self.copy(cell, t)

            def level(n: int) -> None:
                with self.loop(t):
                    self.dec(t)
                    if n < k:
                        level(n + 1)
                    else:
                        self.inc(flag)
                        self.clear(t)

            level(1)

    def dec_normalize(self, digit: int, carry: int) -> None:
        """For a digit cell holding 0..19: if it is 10 or more, take 10 off and
        add 1 to the carry cell."""
        with self.temps(1) as big:
            self.flag_if_at_least(digit, 10, big)
            with self.if_nz_consume(big):
                self.add(digit, -10)
                self.inc(carry)

    def toggle(self, bit: int) -> None:
        """bit = 1 - bit for a 0/1 cell."""
        with self.temps(1) as t:
            self.inc(t)
            with self.loop(bit):
                self.dec(bit)
                self.dec(t)
            self.move(t, {bit: 1})

    def print_text(self, text: str | bytes, cell: int) -> None:
        """Print constant text through a scratch cell that starts and ends at 0."""
        data = text.encode() if isinstance(text, str) else text
        value = 0
        for b in data:
            self.add(cell, b - value)
            self.out(cell)
            value = b
        self.clear(cell)

    # ------------------------------------------------------------ decimal numbers
    # A decimal number is a list of cells, least significant digit first,
    # each holding 0..9.

    def dec_increment(self, digits: list[int]) -> None:
        """number += 1 with carry; wraps to zero when every digit was 9."""
        self._dec_inc_from(digits, 0)

    def _dec_inc_from(self, digits: list[int], i: int) -> None:
        d = digits[i]
        self.inc(d)
        with self.temps(1) as t:
            # t = d - 10, zero exactly when the digit overflowed
            self.copy(d, t)
            self.add(t, -10)
            with self.temps(1) as flag:
                self.inc(flag)
                with self.if_nz_consume(t):
                    self.dec(flag)
                with self.if_nz_consume(flag):
                    self.clear(d)
                    if i + 1 < len(digits):
                        self._dec_inc_from(digits, i + 1)

    def dec_print(self, digits: list[int]) -> None:
        """Print the number in decimal without leading zeros (0 prints as 0)."""
        with self.temps(2) as (started, scratch):
            for i in range(len(digits) - 1, 0, -1):
                d = digits[i]
                self.set_flag_if_nz(d, started)
                with self.if_nz(started):
                    self._print_digit(d)
            self._print_digit(digits[0])
            self.clear(started)

    def dec_print_fixed(self, digits: list[int]) -> None:
        """Print every digit, leading zeros included."""
        for d in reversed(digits):
            self._print_digit(d)

    def _print_digit(self, d: int) -> None:
        self.add(d, 48)
        self.out(d)
        self.add(d, -48)

    def dec_add_small_into(self, value: int, digits: list[int]) -> None:
        """Move the 8-bit cell `value` (any size) into the decimal number by
        unit increments; value becomes zero."""
        with self.loop(value):
            self.dec(value)
            self.dec_increment(digits)

    def divmod10_move(self, src: int, digit: int, carry: int) -> None:
        """src (0..255) moved out: digit += src mod 10 and carry += src div 10,
        assuming digit starts at 0."""
        with self.temps(1) as room:
            self.set(room, 10)  # steps left before the digit wraps
            with self.loop(src):
                self.dec(src)
                self.inc(digit)
                self.dec(room)
                with self.if_zero(room):
                    self.add(digit, -10)
                    self.inc(carry)
                    self.add(room, 10)
            self.clear(room)

    def divmod10_move_fast(self, src: int, digit: int, carry: int) -> None:
        """Like divmod10_move, with a constant time wrap test per unit."""
        with self.temps(3) as (room, _z1, _z2):  # room needs two zero cells on its right
            self.set(room, 10)
            with self.loop(src):
                self.dec(src)
                self.inc(digit)
                self.dec(room)
                with self.if_zero_adjacent(room):
                    self.add(digit, -10)
                    self.inc(carry)
                    self.add(room, 10)
            self.clear(room)

    def parity(self, cell: int, bit: int) -> None:
        """bit ^= cell & 1 for a 0/1 bit cell; cell kept."""
        with self.temps(1) as t:
            self.copy(cell, t)
            with self.loop(t):
                self.dec(t)
                self.toggle(bit)

    def greater_flag(self, a: int, b: int, flag: int) -> None:
        """flag += 1 if a > b (8-bit, unsigned); a and b kept.  Both copies
        are counted down together; the flag is raised if the copy of b runs
        out while the copy of a still has units left."""
        with self.temps(3) as (x, y, more):
            self.copy(a, x)
            self.copy(b, y)
            with self.loop(x):
                self.dec(x)
                self.inc(more)
                with self.if_nz(y):
                    self.dec(y)
                    self.dec(more)
                with self.if_nz_consume(more):
                    self.inc(flag)
                    self.clear(x)
            self.clear(y)

    def print_byte(self, cell: int) -> None:
        """Print an 8-bit cell in decimal (no leading zeros); cell kept."""
        with self.temps(4) as (work, d0, d1, d2):
            self.copy(cell, work)
            self.divmod10_move(work, d0, d1)
            # d1 now holds value div 10 (0..25); split it again
            with self.temps(1) as tens:
                self.move(d1, {tens: 1})
                self.divmod10_move(tens, d1, d2)
            self.dec_print([d0, d1, d2])
            for c in (d0, d1, d2):
                self.clear(c)

    # ------------------------------------------------------------ fixed point helpers
    # (added for make_mandel.py)

    def divmod_move_fast(self, src: int, low: int, high: int, base: int) -> None:
        """src (0..255) moved out: low += src mod base and high += src div
        base, assuming low starts at 0 (base 2..255); a constant time wrap
        test per unit, like divmod10_move_fast."""
        assert 2 <= base <= 255
        with self.temps(3) as (room, _z1, _z2):  # room needs two zero cells on its right
            self.set(room, base)
            with self.loop(src):
                self.dec(src)
                self.inc(low)
                self.dec(room)
                with self.if_zero_adjacent(room):
                    self.add(low, -base)
                    self.inc(high)
                    self.add(room, base)
            self.clear(room)

    def flag_if_at_least_move(self, src: int, k: int, flag: int) -> None:
        """flag += 1 if src >= k (1 <= k <= 255); src is moved out (zero
        after).  A room counter starting at k is counted down with src; the
        constant time zero test raises the flag and stops the loop."""
        assert 1 <= k <= 255
        with self.temps(3) as (room, _z1, _z2):  # room needs two zero cells on its right
            self.set(room, k)
            with self.loop(src):
                self.dec(src)
                self.dec(room)
                with self.if_zero_adjacent(room):
                    self.inc(flag)
                    self.clear(src)
            self.clear(room)

    def bit_xor(self, a: int, b: int, dst: int) -> None:
        """dst ^= a ^ b for 0/1 cells a, b, dst; a and b kept."""
        with self.if_nz(a):
            self.toggle(dst)
        with self.if_nz(b):
            self.toggle(dst)

    def signed_add_move(self, a_sign: int, a_mag: int, b_sign: int, b_mag: int) -> None:
        """Sign-magnitude addition: (a_sign, a_mag) += (b_sign, b_mag); the
        addend is moved out (both of its cells are zero after).  Signs are
        0 (plus) or 1 (minus); zero may carry either sign.

        Equal signs add the magnitudes.  Different signs count b_mag down
        against a_mag; the units for which a_mag is already zero go to a
        borrow cell, and a nonzero borrow becomes the magnitude with b's
        sign.  The zero test of a_mag takes constant time: the two cells
        right of a_mag must be zero."""
        with self.temps(2) as (differ, same):
            self.bit_xor(a_sign, b_sign, differ)
            self.inc(same)
            with self.if_nz_consume(differ):
                self.dec(same)
                with self.temps(2) as (borrow, flag):
                    with self.loop(b_mag):
                        self.dec(b_mag)
                        self.inc(flag)
                        with self.if_zero_adjacent(a_mag):
                            self.dec(flag)
                            self.inc(borrow)
                        with self.if_nz_consume(flag):
                            self.dec(a_mag)
                    with self.loop(borrow):  # runs at most once
                        self.toggle(a_sign)
                        self.move(borrow, {a_mag: 1})
            with self.if_nz_consume(same):
                self.move(b_mag, {a_mag: 1})
            self.clear(b_sign)

    def mul_split_add(self, ah: int, al: int, bh: int, bl: int, r: int,
                      base: int, factor: int = 1) -> None:
        """r += factor * floor(a * b / base) for a = base*ah + al and
        b = base*bh + bl with ah, bh in 0..1 and al, bl below base; all four
        inputs kept (a and b may be the same cells).

        a*b/base = ah*b + bh*al + al*bl/base, so only the last term needs a
        division: for every unit of al, bl units are counted through a room
        counter that adds one to r each time base units have gone by, so no
        cell ever holds al*bl."""
        with self.if_nz(ah):
            self.copy(bh, r, factor * base)
            self.copy(bl, r, factor)
        with self.if_nz(bh):
            self.copy(al, r, factor)
        with self.temps(4) as (count, room, _z1, _z2):  # room needs two zero cells on its right
            self.set(room, base)
            self.copy(al, count)
            with self.loop(count):
                self.dec(count)
                with self.temps(1) as side:
                    with self.loop(bl):
                        self.dec(bl)
                        self.inc(side)
                        self.dec(room)
                        with self.if_zero_adjacent(room):
                            self.add(r, factor)
                            self.add(room, base)
                    self.move(side, {bl: 1})
            self.clear(room)

    def print_by_count(self, count: int, chars: bytes) -> None:
        """Print chars[count] (count kept; a count beyond the table prints
        the last entry).  A copy of the count is taken down through nested
        loops, one level per table entry, each adding the step to the next
        character; only as many levels run as the count says."""
        with self.temps(2) as (t, ch):
            self.copy(count, t)
            self.add(ch, chars[0])

            def level(k: int) -> None:
                with self.loop(t):
                    self.dec(t)
                    self.add(ch, chars[k] - chars[k - 1])
                    if k + 1 < len(chars):
                        level(k + 1)
                    else:
                        self.clear(t)

            if len(chars) > 1:
                level(1)
            else:
                self.clear(t)
            self.out(ch)
            self.clear(ch)

    # ------------------------------------------------------------ result
    def code(self, width: int = 78) -> str:
        """The program text: comments on their own lines, code wrapped."""
        lines: list[str] = []
        for part in "".join(self.parts).split("\n"):
            if part and all(ch in COMMANDS for ch in part):
                for k in range(0, len(part), width):
                    lines.append(part[k:k + width])
            else:
                lines.append(part)
        text = "\n".join(lines)
        while "\n\n\n" in text:
            text = text.replace("\n\n\n", "\n\n")
        return text.strip("\n") + "\n"


def header(script: str, description: list[str]) -> str:
    """The first comment lines of a generated file (checked to be code free)."""
    script = script.replace(".", " ")
    lines = [f"GENERATED by the script {script} in examples slash bf slash gen: do not edit this file "
             "by hand; change the script and run it again", ""]
    lines += description
    text = "\n".join(lines) + "\n\n"
    bad = COMMANDS.intersection(text)
    assert not bad, f"header contains BF commands {sorted(bad)}"
    return text


def write(path: Path, script: str, description: list[str], bf: BF) -> None:
    path.write_text(header(script, description) + bf.code())
