"""Generate examples/bf/rot13.bf: ROT13 of the input, letters only.

Method: for each input byte c, a copy of c is counted down through a chain
of 123 nested loops; loop level k is entered only when c >= k.  Entering the
levels 65, 78, 91, 97, 110 and 123 adjusts a shift cell by +13, -26, +13,
+13, -26, +13, so afterwards the shift is +13 for A..M and a..m, -13 for
N..Z and n..z and 0 for every other byte.  The shift is added to c, which is
printed.  The innermost level clears what is left of the copy, so every
outer loop runs at most once.
"""
from pathlib import Path

from bfgen import BF, write

HERE = Path(__file__).resolve().parent
SHIFTS = {65: 13, 78: -26, 91: 13, 97: 13, 110: -26, 123: 13}
assert sum(SHIFTS.values()) == 0


SAMPLE = (
    "Why did the chicken cross the road? Gb trg gb gur bgure fvqr!\n"
    "The Quick Brown Fox Jumps Over The Lazy Dog 0123456789\n"
    "abcdefghijklmnopqrstuvwxyz\nABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
    "Edges: @AMNZ[ `amnz{ and ~!#$%^&*()_+-=<>[].,;:'\"/\\|\n"
    "shimlab dispatches interpreters; ROT13 twice is the identity.\n"
    "Non-ASCII bytes stay as they are: caf\u00e9 \u00fcber na\u00efve \u2713\n"
).encode() + bytes(range(1, 256)) + b"\nend\n"


def rot13(data: bytes) -> bytes:
    return bytes(c + 13 if 65 <= c <= 77 or 97 <= c <= 109 else
                 c - 13 if 78 <= c <= 90 or 110 <= c <= 122 else c for c in data)


def build() -> BF:
    bf = BF(first_free=3)
    c, t, shift = 0, 1, 2

    def chain(k: int) -> None:
        with bf.loop(t):
            bf.dec(t)
            if k in SHIFTS:
                bf.add(shift, SHIFTS[k])
            if k < max(SHIFTS):
                chain(k + 1)
            else:
                bf.clear(t)

    bf.comment("read the first byte")
    bf.read(c)
    with bf.loop(c):
        bf.comment("copy the byte and count the copy down through the nested levels")
        bf.copy(c, t)
        chain(1)
        bf.comment("apply the shift and print; then clear the cell and read the next byte")
        bf.move(shift, {c: 1})
        bf.out(c)
        bf.clear(c)
        bf.read(c)
    return bf


if __name__ == "__main__":
    write(HERE.parent / "rot13.bf", Path(__file__).name, [
        "rot13: prints the ROT13 of its input until the input ends",
        "letters A to Z and a to z are rotated by 13 places; all other bytes pass unchanged",
        "(a zero byte in the input ends the program like the end of input)",
    ], build())
    (HERE.parent / "rot13.in").write_bytes(SAMPLE)
    (HERE.parent / "rot13.out").write_bytes(rot13(SAMPLE))
