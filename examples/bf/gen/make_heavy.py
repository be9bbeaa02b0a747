"""Generate examples/bf/heavy.bf: Collatz records for the starting values 1 .. N.

For every n in 1 .. N (N = OUTER * INNER) the program follows the Collatz
rule (x even: x / 2, x odd: 3x + 1) from x = n until x = 1, counting the
steps.  Whenever n needs more steps than every smaller starting value, it
prints the line "n steps"; at the end it prints the total number of steps
taken over all starting values.

Representation: x is a WIDTH digit decimal number, one cell per digit (least
significant first), so every step is real multi-digit arithmetic:
  * odd test:  parity of the lowest digit;
  * halving:   long division by 2 from the top digit down, the remainder
               of each digit carried as 10 into the next lower one;
  * 3x + 1:    digit times 3 plus carry from the bottom up, split into digit
               and carry by a counting loop (the initial carry is the +1);
  * x = 1 ?:   every digit above the lowest one zero and the lowest one 1.
n and the grand total are decimal counters; the step count of one run and
the record so far are 8-bit cells (the most steps below 6171 is 238).
"""
from pathlib import Path

from bfgen import BF, write

HERE = Path(__file__).resolve().parent
OUTER, INNER = 50, 50
WIDTH = 7


def collatz_steps(n: int) -> tuple[int, int]:
    steps, top = 0, n
    while n != 1:
        n = 3 * n + 1 if n % 2 else n // 2
        steps += 1
        top = max(top, n)
    return steps, top


def expected() -> bytes:
    out, best, total = [], 0, 0
    for n in range(1, OUTER * INNER + 1):
        steps, top = collatz_steps(n)
        assert steps < 256 and top < 10 ** WIDTH
        total += steps
        if steps > best:
            best = steps
            out.append(f"{n} {steps}\n")
    out.append(f"total {total}\n")
    return "".join(out).encode()


def build() -> BF:
    bf = BF()
    n = bf.reserve(4)
    x = bf.reserve(WIDTH)
    total = bf.reserve(8)
    steps, best, running, outer, inner, sink, text = bf.reserve(7)

    def recompute_running() -> None:
        """running = 1 unless x == 1."""
        bf.clear(running)
        for d in x[1:]:
            bf.set_flag_if_nz(d, running)
        with bf.temps(1) as t:
            bf.copy(x[0], t)
            bf.dec(t)
            with bf.if_nz_consume(t):
                bf.set(running, 1)

    def halve() -> None:
        with bf.temps(3) as (rem, v, flip):
            for d in reversed(x):
                bf.move(d, {v: 1})
                bf.move(rem, {v: 10})
                # count v down; every second unit adds one to the digit
                with bf.loop(v):
                    bf.dec(v)
                    bf.inc(flip)
                    with bf.loop(rem):
                        bf.dec(rem)
                        bf.dec(flip)
                        bf.inc(d)
                    bf.move(flip, {rem: 1})
            bf.clear(rem)  # x was even: nothing is left over

    def triple_plus_one() -> None:
        with bf.temps(2) as (carry, v):
            bf.set(carry, 1)
            for i, d in enumerate(x):
                bf.move(d, {v: 3})
                bf.move(carry, {v: 1})
                bf.divmod10_move_fast(v, d, carry)
            bf.move(carry, {sink: 1})
            bf.clear(sink)

    bf.comment("n starts at 1")
    bf.set(n[0], 1)
    bf.set(outer, OUTER)
    with bf.loop(outer):
        bf.set(inner, INNER)
        with bf.loop(inner):
            bf.comment("x becomes n")
            for dn, dx in zip(n, x):
                bf.copy(dn, dx)
            recompute_running()
            with bf.loop(running):
                bf.comment("one Collatz step")
                with bf.temps(1) as odd:
                    bf.parity(x[0], odd)
                    with bf.temps(1) as even:
                        bf.inc(even)
                        with bf.if_nz_consume(odd):
                            bf.dec(even)
                            triple_plus_one()
                        with bf.if_nz_consume(even):
                            halve()
                bf.inc(steps)
                bf.dec_increment(total)
                recompute_running()
            bf.comment("a new record prints n and its step count")
            with bf.temps(1) as record:
                bf.greater_flag(steps, best, record)
                with bf.if_nz_consume(record):
                    bf.clear(best)
                    bf.copy(steps, best)
                    bf.dec_print(n)
                    bf.print_text(" ", text)
                    bf.print_byte(steps)
                    bf.print_text("\n", text)
            bf.comment("next n")
            bf.clear(steps)
            for d in x:
                bf.clear(d)
            bf.dec_increment(n)
            bf.dec(inner)
        bf.dec(outer)
    bf.comment("the total number of steps")
    bf.print_text("total ", text)
    bf.dec_print(total)
    bf.print_text("\n", text)
    return bf


if __name__ == "__main__":
    write(HERE.parent / "heavy.bf", Path(__file__).name, [
        f"heavy: Collatz step counts for every starting value from 1 to {OUTER * INNER}",
        "prints each starting value that needs more steps than all smaller ones with its step count",
        "and at the end the total number of steps taken over all starting values",
        f"the numbers are kept as {WIDTH} decimal digit cells and halved or tripled digit by digit",
    ], build())
    (HERE.parent / "heavy.out").write_bytes(expected())
