"""Generate examples/bf/fib.bf: the Fibonacci numbers F(0) .. F(97), one a line.

Method: two 20 digit decimal numbers a and b (one cell per digit, least
significant first).  Each round prints a, adds b into a digit by digit and
then normalizes the digits from the least significant one up (a digit of 10
or more gives 10 back and carries 1); then the same with the roles swapped.
F(97) is the last Fibonacci number below 10 to the power 20.
"""
from pathlib import Path

from bfgen import BF, write

HERE = Path(__file__).resolve().parent
WIDTH = 20
ROUNDS = 49  # two numbers a round: F(0) .. F(97)


def expected() -> bytes:
    a, b, out = 0, 1, []
    for _ in range(2 * ROUNDS):
        assert a < 10 ** WIDTH
        out.append(f"{a}\n")
        a, b = b, a + b
    return "".join(out).encode()


def build() -> BF:
    bf = BF()
    a = bf.reserve(WIDTH)
    b = bf.reserve(WIDTH)
    rounds, sink = bf.reserve(2)

    def add_into(dst: list[int], src: list[int]) -> None:
        for d, s in zip(dst, src):
            bf.copy(s, d)
        for i, d in enumerate(dst):
            bf.dec_normalize(d, dst[i + 1] if i + 1 < len(dst) else sink)
        bf.clear(sink)  # a carry out of the top digit is dropped

    def show(num: list[int]) -> None:
        bf.dec_print(num)
        with bf.temps(1) as t:
            bf.print_text("\n", t)

    bf.comment("a is F of 0 and b is F of 1")
    bf.set(b[0], 1)
    bf.set(rounds, ROUNDS)
    with bf.loop(rounds):
        bf.comment("print a then a becomes a plus b")
        show(a)
        add_into(a, b)
        bf.comment("print b then b becomes b plus a")
        show(b)
        add_into(b, a)
        bf.dec(rounds)
    return bf


if __name__ == "__main__":
    write(HERE.parent / "fib.bf", Path(__file__).name, [
        "fib: prints the Fibonacci numbers from F of 0 up to F of 97 in decimal with one number a line",
        "(F of 97 is the last one below ten to the power twenty)",
        "the numbers are kept as twenty decimal digit cells each and added digit by digit with carries",
    ], build())
    (HERE.parent / "fib.out").write_bytes(expected())
