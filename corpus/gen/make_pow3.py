"""Generate corpus/bf/pow3.bf: powers of three in decimal, as a BF bignum.

The number is an array of records (records.py), one decimal digit each,
least significant first.  Multiplying by 3 walks the array up: each digit
becomes 3 * digit + carry, divided by ten by counting it down against a room
counter (a loop per unit, with a constant-time zero test), the tens carried
into the next record.  Every STEP-th power is printed by a walk down that
carries a "started" flag past the leading zeros.
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
FIELDS = ["M", "D", "C", "S", "T", "R", "Z1", "Z2", "U"]
POWERS, STEP = 2400, 150


def digits_of(n: int) -> int:
    return len(str(3 ** n))


def build(powers: int, step: int) -> Records:
    width = digits_of(powers) + 1
    bf = Records(width, FIELDS, globals_=12)
    outer, inner, nl = bf.reserve(3)
    bf.init_markers()
    bf.inc(bf.rec(1, "D"))                        # the number 1
    with bf.repeat(powers // step, outer):
        with bf.repeat(step, inner):
            with bf.walk_up():                    # times 3, plus the carry in
                d, c, t, r = bf.f("D"), bf.f("C"), bf.f("T"), bf.f("R")
                bf._move(d, t, t, t)
                bf._move(c, t)
                bf.add(r, 10)                     # room: units left before a ten
                with bf.loop(t):
                    bf.dec(t)
                    bf.inc(d)
                    bf.dec(r)
                    with bf.if_zero_adjacent(r):
                        bf.add(d, -10)
                        bf.inc(bf.f("C", 1))
                        bf.add(r, 10)
                bf.clear(r)
            bf.at(bf.rec(width + 1))
            bf.scan_down()
        # print: a walk down with the "started" flag S carried along
        with bf.walk_down():
            d, s, t, u = bf.f("D"), bf.f("S"), bf.f("T"), bf.f("U")
            bf._move(d, t, u)
            bf._move(u, d)
            with bf.loop(t):                      # a nonzero digit: the number has started
                bf.clear(t)
                bf.clear(s)
                bf.inc(s)
            with bf.loop(s):                      # started: print the digit, pass S down
                bf._move(d, t, u)
                bf._move(u, d)
                bf.add(t, 48)
                bf.out(t)
                bf.clear(t)
                bf.dec(s)
                bf.inc(bf.f("S", -1))
        bf.at(bf.rec(0, "S"))
        bf.emit("[-]")
        bf.set(nl, 10)
        bf.out(nl)
        bf.clear(nl)
    return bf


def expected(powers: int, step: int) -> bytes:
    return b"".join(b"%d\n" % 3 ** k for k in range(step, powers + 1, step))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--small", type=Path)
    args = ap.parse_args()
    powers, step, folder, name = (40, 10, args.small, "pow3_small") if args.small else \
        (POWERS, STEP, OUT, "pow3")
    bf = build(powers, step)
    src = folder / f"{name}.bf"
    src.write_text(header("make_pow3.py", ["Powers of three in decimal as a BF bignum with one",
                                           "decimal digit a record"]) + bf.code())
    (folder / f"{name}.out").write_bytes(expected(powers, step))
    if args.check:
        check_output(src)


if __name__ == "__main__":
    main()
