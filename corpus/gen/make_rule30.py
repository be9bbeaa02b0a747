"""Generate corpus/bf/rule30.bf: the rule 30 cellular automaton, printed.

One cell of the automaton a record (records.py), the cells beyond both ends
dead.  A generation is two walks: the first computes every new cell from
its left neighbour, itself and its right neighbour (new = left xor (self or
right)), the second moves the new cells into place; every EVERY-th
generation a third walk prints the row ('#' alive, a space dead).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import check_output, header  # noqa: E402
from records import Records  # noqa: E402

OUT = HERE.parent / "bf"
FIELDS = ["M", "O", "N", "T", "U", "C"]
WIDTH, ROWS, EVERY = 201, 400, 25


def build(width: int, rows: int, every: int) -> Records:
    bf = Records(width, FIELDS, globals_=6)
    g1, g2, g3, nl = bf.reserve(4)
    bf.init_markers()
    bf.inc(bf.rec(width // 2 + 1, "O"))
    a, b = next((a, b) for a in range(1, 256) for b in range(1, 256) if a * b == rows)
    with bf.repeat(a, g1), bf.repeat(b, g2):
        with bf.repeat(every, g3):
            generation(bf)
        print_row(bf, width)
        bf.set(nl, 10)
        bf.out(nl)
        bf.clear(nl)
    return bf


def generation(bf: Records) -> None:
    with bf.walk_up():
        o, n, t, u = bf.f("O"), bf.f("N"), bf.f("T"), bf.f("U")
        # t = self + right (copies), then n = (t != 0)
        bf._move(o, t, u)
        bf._move(u, o)
        bf._move(bf.f("O", 1), t, u)
        bf._move(u, bf.f("O", 1))
        with bf.loop(t):
            bf.clear(t)
            bf.inc(n)
        # n ^= left: if left, n = 1 - n
        bf._move(bf.f("O", -1), t, u)
        bf._move(u, bf.f("O", -1))
        with bf.loop(t):
            bf.dec(t)
            bf.inc(u)
            with bf.loop(n):
                bf.dec(n)
                bf.dec(u)
            bf._move(u, n)
    bf.scan_down()
    with bf.walk_up():                            # the new cells into place
        bf.clear(bf.f("O"))
        bf._move(bf.f("N"), bf.f("O"))
    bf.scan_down()


def print_row(bf: Records, width: int) -> None:
    with bf.walk_up():
        o, n, t = bf.f("O"), bf.f("N"), bf.f("T")
        bf.add(t, 32)
        bf._move(o, t, t, t, n)                   # t = 32 + 3 * o ('#' or ' ')
        bf._move(n, o)
        bf.out(t)
        bf.clear(t)
    bf.scan_down()


def expected(width: int, rows: int, every: int) -> bytes:
    row = [0] * width
    row[width // 2] = 1
    out = bytearray()
    for _ in range(rows):
        for _ in range(every):
            row = [(row[i - 1] if i else 0) ^ (row[i] | (row[i + 1] if i + 1 < width else 0))
                   for i in range(width)]
        out += bytes(35 if c else 32 for c in row) + b"\n"
    return bytes(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--small", type=Path)
    args = ap.parse_args()
    w, g, e, folder, name = (15, 6, 2, args.small, "rule30_small") if args.small else \
        (WIDTH, ROWS, EVERY, OUT, "rule30")
    bf = build(w, g, e)
    src = folder / f"{name}.bf"
    src.write_text(header("make_rule30.py", ["The rule 30 cellular automaton printed a",
                                             "generation a line"]) + bf.code())
    (folder / f"{name}.out").write_bytes(expected(w, g, e))
    if args.check:
        check_output(src)


if __name__ == "__main__":
    main()
