"""Generate examples/bf/bigout.bf: 4096 lines of 64 bytes (256 KiB of output).

Method: each line is a four digit line number (a decimal counter printed
with leading zeros), a space, 58 letters and a newline.  The letters run
round the alphabet a..z without restarting at a new line, so each line
starts 6 letters on from the previous one.  The wrap of the alphabet is found
with a constant time zero test on a countdown cell.  The 4096 lines are two
nested loops of 64.
"""
from pathlib import Path

from bfgen import BF, write

HERE = Path(__file__).resolve().parent
OUTER, INNER, LETTERS = 64, 64, 58


def expected() -> bytes:
    out = bytearray()
    k = 0
    for line in range(OUTER * INNER):
        out += f"{line:04d} ".encode()
        for _ in range(LETTERS):
            out.append(97 + k % 26)
            k += 1
        out += b"\n"
    return bytes(out)


def build() -> BF:
    bf = BF()
    number = bf.reserve(4)
    letter, room, zero1, zero2 = bf.reserve(4)  # room must have two zero cells on its right
    outer, inner, column, text = bf.reserve(4)
    bf.set(letter, 97)
    bf.set(room, 26)
    bf.set(outer, OUTER)
    with bf.loop(outer):
        bf.set(inner, INNER)
        with bf.loop(inner):
            bf.comment("line number and a space")
            bf.dec_print_fixed(number)
            bf.dec_increment(number)
            bf.print_text(" ", text)
            bf.comment("the letters")
            bf.set(column, LETTERS)
            with bf.loop(column):
                bf.out(letter)
                bf.inc(letter)
                bf.dec(room)
                with bf.if_zero_adjacent(room):
                    bf.add(letter, -26)
                    bf.add(room, 26)
                bf.dec(column)
            bf.print_text("\n", text)
            bf.dec(inner)
        bf.dec(outer)
    return bf


if __name__ == "__main__":
    write(HERE.parent / "bigout.bf", Path(__file__).name, [
        "bigout: prints 4096 lines of 64 bytes each (262144 bytes in all)",
        "each line: a four digit line number then a space then 58 letters running round the alphabet",
    ], build())
    (HERE.parent / "bigout.out").write_bytes(expected())
