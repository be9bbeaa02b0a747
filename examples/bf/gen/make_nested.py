"""Generate examples/bf/nested.bf: six nested counting loops and their checksums.

Method: loop counters c1 .. c6 (trip counts in COUNTS), each counting down
from its trip count to 1; the innermost body runs once for every combination.
  * tuples: a four digit decimal counter of innermost runs;
  * sum:    (c1 + c2 + ... + c6) added up over all innermost runs, mod 256;
  * mix:    on every entry of the body of level k, ck * (2k + 1) is added,
            mod 256.
The three results are printed in decimal.
"""
from pathlib import Path

from bfgen import BF, write

HERE = Path(__file__).resolve().parent
COUNTS = [3, 4, 3, 5, 2, 6]


def expected() -> bytes:
    tuples = s = mix = 0

    def level(k: int, values: list[int]) -> None:
        nonlocal tuples, s, mix
        for v in range(COUNTS[k], 0, -1):
            mix = (mix + v * (2 * (k + 1) + 1)) % 256
            if k + 1 < len(COUNTS):
                level(k + 1, values + [v])
            else:
                tuples += 1
                s = (s + sum(values) + v) % 256

    level(0, [])
    return f"tuples {tuples} sum {s} mix {mix}\n".encode()


def build() -> BF:
    bf = BF()
    counters = bf.reserve(len(COUNTS))
    tuples = bf.reserve(4)
    total, mix = bf.reserve(2)

    def level(k: int) -> None:
        c = counters[k]
        bf.set(c, COUNTS[k])
        with bf.loop(c):
            bf.copy(c, mix, 2 * (k + 1) + 1)
            if k + 1 < len(COUNTS):
                level(k + 1)
            else:
                bf.dec_increment(tuples)
                for cc in counters:
                    bf.copy(cc, total)
            bf.dec(c)

    bf.comment("six nested loops")
    level(0)
    bf.comment("print the results")
    with bf.temps(1) as t:
        bf.print_text("tuples ", t)
        bf.dec_print(tuples)
        bf.print_text(" sum ", t)
        bf.print_byte(total)
        bf.print_text(" mix ", t)
        bf.print_byte(mix)
        bf.print_text("\n", t)
    return bf


if __name__ == "__main__":
    write(HERE.parent / "nested.bf", Path(__file__).name, [
        "nested: six counting loops nested inside each other (trip counts 3 4 3 5 2 6)",
        "counts the innermost runs in decimal and keeps two 8 bit checksums of the loop counters",
        "then prints: tuples N sum S mix M",
    ], build())
    (HERE.parent / "nested.out").write_bytes(expected())
