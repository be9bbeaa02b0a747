"""Generate examples/bf/mandel.bf: an ASCII picture of the Mandelbrot set.

For every point c = cx + i*cy of a grid the program iterates z = z*z + c from
z = 0 and prints one character per point, chosen by the number of rounds
before z escaped (INSIDE when it stayed for all the rounds of the grid,
64 for the full picture), and a newline after each row.

Numbers are fixed point with FRAC fractional bits (ONE = 32 means 1.0) in
sign-magnitude form: a sign cell (0 plus, 1 minus) and an 8-bit magnitude.
Between rounds x and y are kept with their magnitude split into a high and
a low part, m = 32*h + l (l < 32), so the escape test |x| >= 2.0 is just
h >= 2, and while a point is still running both magnitudes are below 64,
h is 0 or 1 and every product fits in 8 bits:

    a*b/32 = ah*b + bh*al + al*bl/32     (truncated, as (a*b) >> 5)

where the last term is computed by counting al*bl units through a room
counter that carries into the result every 32 units (no cell holds al*bl).
Products are truncated toward zero (the sign is applied to the truncated
product of the magnitudes).  One round, given x, y and their truncated
squares xx = x*x >> 5, yy = y*y >> 5 from the previous round (all zero at the
start):

    xy = sign(x*y) * (|x|*|y| >> 5)
    x  = xx - yy + cx          (sign-magnitude adds: compare by counting down)
    y  = 2*xy + cy
    count the round; stop if |x| >= 64 or |y| >= 64
    xx, yy = x*x >> 5, y*y >> 5; stop if xx + yy > 128     (|z|^2 > 4)
    stop after the grid's number of rounds

Bounds: a point still running has xx + yy <= 128, so |xy| <= 64 and the new
magnitudes stay below 256 (|y| <= 2*64 + |cy|, |x| <= 128 + |cx|); the model
below asserts every intermediate fits in a cell.  The character is chosen by
the round count through nested counting loops (print_by_count).

The grid: cx = X_FROM/32 .. X_TO/32 in steps of X_STEP/32, cy = Y_FROM/32 ..
Y_TO/32 in steps of Y_STEP/32 (rows twice as far apart as columns, since
characters are about twice as tall as wide).  cx and cy are stepped by
sign-magnitude additions of the step.

`--small DIR` writes a smaller picture (mandel_small.bf/.out) to DIR, for
checking against the slow Python oracle (--mode reference).
"""
import argparse
from dataclasses import dataclass
from pathlib import Path

from bfgen import BF, write

HERE = Path(__file__).resolve().parent
FRAC = 5
ONE = 1 << FRAC  # 32: the fixed point 1.0

# round count -> character: counts up to the first bound get the first
# character, and so on; a point that never escaped gets INSIDE
BANDS = [(3, " "), (4, "."), (5, ":"), (6, "-"), (8, "="), (10, "+"),
         (13, "*"), (18, "%"), (255, "#")]
INSIDE = "@"


@dataclass(frozen=True)
class Grid:
    x_from: int
    x_to: int
    x_step: int
    y_from: int
    y_to: int
    y_step: int
    iterations: int

    @property
    def xs(self) -> range:
        return range(self.x_from, self.x_to + 1, self.x_step)

    @property
    def ys(self) -> range:
        return range(self.y_from, self.y_to + 1, self.y_step)


FULL = Grid(-66, 20, 2, -36, 36, 4, 64)   # 44 columns, 19 rows
SMALL = Grid(-64, 16, 8, -32, 32, 16, 12)  # 11 columns, 5 rows


def char_table(iterations: int) -> bytes:
    """The character for every round count 0 .. iterations."""
    table = []
    for n in range(iterations + 1):
        if n == iterations:
            table.append(INSIDE)
        else:
            table.append(next(c for bound, c in BANDS if n <= bound))
    return "".join(table).encode()


# ------------------------------------------------------------ the model
def cell(v: int) -> int:
    assert 0 <= v < 256, v
    return v


def split(m: int) -> tuple[int, int]:
    return cell(m // ONE), m % ONE


def mul(ah: int, al: int, bh: int, bl: int) -> int:
    """floor(a*b/ONE) of two magnitudes below 2*ONE, as the program does it."""
    assert ah <= 1 and bh <= 1
    frac = 0
    r = 0
    for _ in range(al):          # al*bl units through a room counter
        for _ in range(bl):
            frac += 1
            if frac == ONE:
                frac = 0
                r += 1
    r += ah * (ONE * bh + bl) + bh * al
    a, b = ONE * ah + al, ONE * bh + bl
    assert r == (a * b) >> FRAC
    return cell(r)


def signed_add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    (sa, ma), (sb, mb) = a, b
    if sa == sb:
        return sa, cell(ma + mb)
    if ma >= mb:
        return sa, ma - mb
    return sb, mb - ma


def rounds(cx: tuple[int, int], cy: tuple[int, int], iterations: int) -> int:
    xs, xh, xl = 0, 0, 0
    ys, yh, yl = 0, 0, 0
    xx = yy = 0
    n = 0
    while True:
        xy = mul(xh, xl, yh, yl)
        nx = signed_add(signed_add((0, xx), (1, yy)), cx)
        ny = signed_add((xs ^ ys, cell(2 * xy)), cy)
        (xs, mx), (ys, my) = nx, ny
        (xh, xl), (yh, yl) = split(mx), split(my)
        n += 1
        if xh >= 2 or yh >= 2:
            return n
        xx, yy = mul(xh, xl, xh, xl), mul(yh, yl, yh, yl)
        if cell(xx + yy) >= 4 * ONE + 1:
            return n
        if n == iterations:
            return n


def expected(grid: Grid) -> bytes:
    table = char_table(grid.iterations)
    out = bytearray()
    cy = (1, -grid.y_from) if grid.y_from < 0 else (0, grid.y_from)
    for _ in grid.ys:
        cx = (1, -grid.x_from) if grid.x_from < 0 else (0, grid.x_from)
        for _ in grid.xs:
            out.append(table[rounds(cx, cy, grid.iterations)])
            cx = signed_add(cx, (0, grid.x_step))
        out += b"\n"
        cy = signed_add(cy, (0, grid.y_step))
    # the sign-magnitude model agrees with plain integers
    for y in grid.ys:
        for x in grid.xs:
            assert rounds((int(x < 0), abs(x)), (int(y < 0), abs(y)), grid.iterations) \
                == reference_rounds(x, y, grid.iterations)
    return bytes(out)


def reference_rounds(cx: int, cy: int, iterations: int) -> int:
    """The same algorithm on Python integers (a cross check of the model)."""
    def tmul(a: int, b: int) -> int:
        p = (abs(a) * abs(b)) >> FRAC
        return -p if (a < 0) != (b < 0) else p

    x = y = xx = yy = 0
    for n in range(1, iterations + 1):
        xy = tmul(x, y)
        x, y = xx - yy + cx, 2 * xy + cy
        if abs(x) >= 2 * ONE or abs(y) >= 2 * ONE:
            return n
        xx, yy = tmul(x, x), tmul(y, y)
        if xx + yy > 4 * ONE:
            return n
    return iterations


# ------------------------------------------------------------ the program
def build(grid: Grid) -> BF:
    bf = BF()
    # magnitudes that take part in signed additions (as the first operand)
    # need two zero cells on their right
    cx_s, cx_m, _, _ = bf.reserve(4)
    cy_s, cy_m, _, _ = bf.reserve(4)
    nx_s, nx_m, _, _ = bf.reserve(4)
    ny_s, ny_m, _, _ = bf.reserve(4)
    xs, xh, xl, ys, yh, yl, xx, yy = bf.reserve(8)
    rows, cols, running, left, n, esc, far, text = bf.reserve(8)
    table = char_table(grid.iterations)

    def set_signed(sign: int, mag: int, value: int) -> None:
        bf.set(sign, int(value < 0))
        bf.set(mag, abs(value))

    def add_constant(sign: int, mag: int, value: int) -> None:
        with bf.temps(2) as (ts, tm):
            bf.add(ts, int(value < 0))
            bf.add(tm, abs(value))
            bf.signed_add_move(sign, mag, ts, tm)

    def add_copy(sign: int, mag: int, src_sign: int, src_mag: int) -> None:
        with bf.temps(2) as (ts, tm):
            bf.copy(src_sign, ts)
            bf.copy(src_mag, tm)
            bf.signed_add_move(sign, mag, ts, tm)

    def one_round() -> None:
        bf.comment("new y is twice x times y plus cy")
        bf.bit_xor(xs, ys, ny_s)
        bf.mul_split_add(xh, xl, yh, yl, ny_m, ONE, factor=2)
        add_copy(ny_s, ny_m, cy_s, cy_m)
        bf.comment("new x is x squared minus y squared plus cx")
        bf.move(xx, {nx_m: 1})
        with bf.temps(1) as minus:
            bf.inc(minus)
            bf.signed_add_move(nx_s, nx_m, minus, yy)
        add_copy(nx_s, nx_m, cx_s, cx_m)
        bf.comment("split the new magnitudes into high and low parts")
        for cell in (xs, xh, xl, ys, yh, yl):
            bf.clear(cell)
        bf.move(nx_s, {xs: 1})
        bf.divmod_move_fast(nx_m, xl, xh, ONE)
        bf.move(ny_s, {ys: 1})
        bf.divmod_move_fast(ny_m, yl, yh, ONE)
        bf.inc(n)
        bf.dec(left)
        bf.comment("escaped if x or y has a magnitude of two or more")
        bf.flag_if_at_least(xh, 2, esc)
        bf.flag_if_at_least(yh, 2, esc)
        with bf.if_zero(esc):
            bf.comment("the squares for the next round and the test of their sum")
            bf.mul_split_add(xh, xl, xh, xl, xx, ONE)
            bf.mul_split_add(yh, yl, yh, yl, yy, ONE)
            with bf.temps(1) as total:
                bf.copy(xx, total)
                bf.copy(yy, total)
                bf.flag_if_at_least_move(total, 4 * ONE + 1, far)
        bf.comment("go on unless escaped or out of rounds")
        bf.clear(running)
        bf.set_flag_if_nz(left, running)
        for flag in (esc, far):
            with bf.if_nz_consume(flag):
                bf.clear(running)

    def pixel() -> None:
        bf.comment("one point")
        bf.set(left, grid.iterations)
        bf.set(running, 1)
        with bf.loop(running):
            one_round()
        bf.comment("print the character for the round count")
        bf.print_by_count(n, table)
        for cell in (xs, xh, xl, ys, yh, yl, xx, yy, n, left):
            bf.clear(cell)

    bf.comment("the first row")
    set_signed(cy_s, cy_m, grid.y_from)
    bf.set(rows, len(grid.ys))
    with bf.loop(rows):
        set_signed(cx_s, cx_m, grid.x_from)
        bf.set(cols, len(grid.xs))
        with bf.loop(cols):
            pixel()
            bf.comment("next column")
            add_constant(cx_s, cx_m, grid.x_step)
            bf.dec(cols)
        bf.print_text("\n", text)
        bf.comment("next row")
        add_constant(cy_s, cy_m, grid.y_step)
        bf.dec(rows)
    return bf


def describe(grid: Grid) -> list[str]:
    def num(v: int) -> str:
        return f"minus {-v}" if v < 0 else str(v)

    return [
        "mandel: an ASCII picture of the Mandelbrot set by escape time iteration of z squared plus c",
        f"fixed point numbers with {FRAC} fractional bits so that {ONE} means one in sign and magnitude cells",
        f"{len(grid.xs)} columns with cx from {num(grid.x_from)} to {num(grid.x_to)} in steps of {grid.x_step} "
        f"and {len(grid.ys)} rows with cy from {num(grid.y_from)} to {num(grid.y_to)} in steps of {grid.y_step}",
        f"at most {grid.iterations} rounds a point; the character shows the rounds before escape",
        "products of magnitudes split into high and low parts so every cell stays below 256",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", metavar="DIR", type=Path,
                        help="write a small picture as mandel_small.bf/.out into DIR instead")
    args = parser.parse_args()
    if args.small:
        grid, out_dir, name = SMALL, args.small, "mandel_small"
    else:
        grid, out_dir, name = FULL, HERE.parent, "mandel"
    write(out_dir / f"{name}.bf", Path(__file__).name, describe(grid), build(grid))
    (out_dir / f"{name}.out").write_bytes(expected(grid))


if __name__ == "__main__":
    main()
