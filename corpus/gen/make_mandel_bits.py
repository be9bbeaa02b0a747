"""Generate corpus/bf/mandel_bits.bf: the Mandelbrot set in ASCII, computed
on wide binary fixed-point numbers that live one bit per record on the tape
(records.py: every addition, shift and negation walks the record array, a
multiplication is Horner's rule over one operand's bits).

Numbers are WIDTH-bit two's complement with FRAC fractional bits.  For each
point c = cr + i*ci of the grid, from z = 0, one round is

    a, b = |x|, |y|;            escaped if a >= 2 or b >= 2
    v  = 2 * (a*b >> FRAC), negated when x and y differ in sign
    xx = a*a >> FRAC;  yy = b*b >> FRAC
    x  = xx - yy + cr;  y = v + ci
    escaped if xx + yy >= 4

and the point's character is chosen by the number of rounds run (the last
one included) before it escaped or ran ITERATIONS rounds.  Model.rounds is
the same computation in Python; the script checks the program's output
against it when run with --check (through shimlab, tailcall).

`--small DIR` writes a smaller picture for the Python oracle.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from records import Model, Records

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "bf"
sys.path.insert(0, str(HERE))
from common import header, check_output  # noqa: E402

WIDTH, FRAC = 16, 12
FIELDS = ["M", "X", "Y", "CR", "CI", "A", "B", "P", "N", "Q", "V", "C", "T", "U"]
JULIA = None        # the julia variant's constant c (raw fixed point)
CHARS = " .,:;-~=+*cox%&#O8@$"


@dataclass(frozen=True)
class Grid:
    x0: int
    dx: int
    cols: int
    y0: int
    dy: int
    rows: int
    iterations: int


FULL = Grid(-8602, 115, 96, -4797, 246, 40, 60)
SMALL = Grid(-8320, 1536, 7, -3840, 2560, 4, 6)
JULIA_FULL = Grid(-1600, 29, 110, -1015, 58, 36, 64)
JULIA_SMALL = Grid(-1500, 400, 7, -800, 500, 4, 8)


def char_table(iterations: int) -> bytes:
    """The character of each round count 0 .. iterations (the last: inside)."""
    out = []
    for n in range(iterations + 1):
        out.append("@" if n == iterations else CHARS[min(n * (len(CHARS) - 2) // iterations,
                                                         len(CHARS) - 2)])
    return "".join(out).encode()


def rounds(m: Model, cr: int, ci: int, iterations: int) -> int:
    x = y = 0
    if JULIA:                      # z starts at the point, c is the constant
        x, y, cr, ci = cr, ci, m.wrap(JULIA[0]), m.wrap(JULIA[1])
    n = 0
    while True:
        n += 1
        a, b = m.abs(x), m.abs(y)
        esc = m.any_from(a, FRAC + 1) or m.any_from(b, FRAC + 1)
        v = m.wrap(m.multiply(a, b, FRAC) << 1)
        if (x ^ y) >> (WIDTH - 1) & 1:
            v = m.neg(v)
        xx = m.multiply(a, a, FRAC)
        yy = m.multiply(b, b, FRAC)
        x = m.wrap(xx - yy + cr)
        y = m.wrap(v + ci)
        esc = esc or m.any_from(m.wrap(xx + yy), FRAC + 2)
        if esc or n == iterations:
            return n


def expected(grid: Grid) -> bytes:
    m = Model(WIDTH)
    table = char_table(grid.iterations)
    out = bytearray()
    for row in range(grid.rows):
        ci = m.wrap(grid.y0 + row * grid.dy)
        for col in range(grid.cols):
            cr = m.wrap(grid.x0 + col * grid.dx)
            out.append(table[rounds(m, cr, ci, grid.iterations)])
        out += b"\n"
    return bytes(out)


def build(grid: Grid) -> Records:
    bf = Records(WIDTH, FIELDS, globals_=24)
    rows, cols, n, left, run, esc, counter = bf.reserve(7)
    table = char_table(grid.iterations)
    bf.init_markers()
    if JULIA:
        bf.set_const("KR", JULIA[0])
        bf.set_const("KI", JULIA[1])
    bf.set_const("CI", grid.y0)
    with bf.repeat(grid.rows, rows):
        bf.clear_field("CR")
        bf.set_const("CR", grid.x0)
        with bf.repeat(grid.cols, cols):
            bf.clear_field("X")
            bf.clear_field("Y")
            if JULIA:
                bf.copy_field("CR", "X")
                bf.copy_field("CI", "Y")
            bf.clear(n)
            bf.set(left, grid.iterations)
            bf.set(run, 1)
            with bf.loop(run):
                bf.inc(n)
                bf.abs_into("X", "A")
                bf.abs_into("Y", "B")
                bf.flag_if_any("A", FRAC + 1, esc)
                bf.flag_if_any("B", FRAC + 1, esc)
                bf.multiply("A", "B", "P", FRAC, counter)
                bf.shift_left("P")
                bf.move_field("P", "V")
                # the sign of x*y: x's top bit xor y's
                with bf.temps(1) as s:
                    with bf.if_nz(bf.rec(WIDTH, "X")):
                        bf.toggle(s)
                    with bf.if_nz(bf.rec(WIDTH, "Y")):
                        bf.toggle(s)
                    with bf.if_nz_consume(s):
                        bf.negate("V")
                bf.abs_into("X", "A")
                bf.copy_field("A", "B")
                bf.multiply("A", "B", "P", FRAC, counter)
                bf.copy_field("KR" if JULIA else "CR", "N")
                bf.add_field("N", "P")
                bf.move_field("P", "Q")
                bf.abs_into("Y", "A")
                bf.copy_field("A", "B")
                bf.multiply("A", "B", "P", FRAC, counter)
                bf.add_field("N", "P", subtract=True)
                bf.add_field("Q", "P")
                bf.clear_field("P")
                bf.flag_if_any("Q", FRAC + 2, esc)
                bf.clear_field("Q")
                bf.clear_field("X")
                bf.move_field("N", "X")
                bf.clear_field("Y")
                bf.move_field("V", "Y")
                bf.add_field("Y", "KI" if JULIA else "CI")
                bf.dec(left)
                with bf.if_zero(left):
                    bf.set(esc, 1)
                with bf.if_nz_consume(esc):
                    bf.clear(run)
            bf.print_by_count(n, table)
            bf.set_const("A", grid.dx)
            bf.add_field("CR", "A")
            bf.clear_field("A")
        bf.set(left, 10)
        bf.out(left)
        bf.clear(left)
        bf.set_const("A", grid.dy)
        bf.add_field("CI", "A")
        bf.clear_field("A")
    return bf


DESCRIPTION = [
    "The Mandelbrot set in ASCII on wide binary fixed point numbers with one bit",
    f"per record of {len(FIELDS)} cells and {WIDTH} bits with {FRAC} after the point",
    "where every addition and shift and negation walks the record array",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=Path, help="write the small picture to this folder")
    ap.add_argument("--julia", action="store_true",
                    help="the variant: a Julia set on 14-bit numbers, another record layout")
    ap.add_argument("--check", action="store_true",
                    help="run the program (shimlab, tailcall) and compare with the model")
    args = ap.parse_args()
    stem, full, small = "mandel_bits", FULL, SMALL
    if args.julia:
        global WIDTH, FRAC, FIELDS, JULIA, DESCRIPTION
        WIDTH, FRAC, JULIA = 14, 10, (-800, 160)
        FIELDS = ["M", "A", "B", "T", "U", "C", "P", "X", "Y", "N", "Q", "V", "CR", "CI",
                  "KR", "KI"]
        DESCRIPTION = ["A Julia set in ASCII on wide binary fixed point numbers with one bit",
                       f"per record of {len(FIELDS)} cells and {WIDTH} bits with {FRAC} after "
                       "the point"]
        stem, full, small = "julia_bits", JULIA_FULL, JULIA_SMALL
    grid, folder, name = (small, args.small, f"{stem}_small") if args.small else \
        (full, OUT, stem)
    bf = build(grid)
    src = folder / f"{name}.bf"
    src.write_text(header("make_mandel_bits.py", DESCRIPTION) + bf.code())
    (folder / f"{name}.out").write_bytes(expected(grid))
    if args.check:
        check_output(src)


if __name__ == "__main__":
    main()
