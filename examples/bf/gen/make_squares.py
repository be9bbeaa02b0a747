"""Generate examples/bf/squares.bf: the squares 0, 1, 4, ... 10000, one a line.

Method: the square is kept as a five digit decimal number (one cell per
digit, least significant first).  Going from i*i to (i+1)*(i+1) adds the odd
number 2i+1, which is held in an ordinary 8-bit cell and added to the decimal
number one unit at a time with decimal carries.  Each square is printed
without leading zeros.
"""
from pathlib import Path

from bfgen import BF, write

HERE = Path(__file__).resolve().parent
LAST_ROOT = 100  # prints 0*0 .. LAST_ROOT*LAST_ROOT


def expected() -> bytes:
    return "".join(f"{i * i}\n" for i in range(LAST_ROOT + 1)).encode()


def build() -> BF:
    bf = BF()
    square = bf.reserve(5)
    odd, rounds = bf.reserve(2)
    bf.comment("odd number to add next: 1; rounds left: 101")
    bf.set(odd, 1)
    bf.set(rounds, LAST_ROOT + 1)
    with bf.loop(rounds):
        bf.comment("print the square and a newline")
        bf.dec_print(square)
        with bf.temps(1) as t:
            bf.print_text("\n", t)
        bf.comment("add the odd number to the square unit by unit")
        with bf.temps(1) as t:
            bf.copy(odd, t)
            bf.dec_add_small_into(t, square)
        bf.add(odd, 2)
        bf.dec(rounds)
    return bf


if __name__ == "__main__":
    write(HERE.parent / "squares.bf", Path(__file__).name, [
        "squares: prints the squares of 0 to 100 in decimal with one square a line",
        "the square is kept as five decimal digit cells and grows by the odd numbers 1 3 5 and so on",
    ], build())
    (HERE.parent / "squares.out").write_bytes(expected())
