"""Generate corpus/bf/sort.bf: a bubble sort of its input's bytes in BF.

The input's N bytes go one a record into an array of records (records.py).
A pass walks the array comparing each value with the next one's: both are
copied and counted down together, and when the next one's copy runs out
first the two values are swapped.  N passes later the array is printed.
The input (sort.in) is N printable bytes from a fixed linear congruential
sequence.
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
FIELDS = ["M", "V", "T", "F", "U", "B", "C", "X"]
N = 360


def data(n: int) -> bytes:
    x, out = 12345, bytearray()
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2 ** 31
        out.append(33 + (x >> 16) % 94)
    return bytes(out)


def build(n: int) -> Records:
    bf = Records(n, FIELDS, globals_=6)
    outer, inner = bf.reserve(2)
    bf.init_markers()
    with bf.walk_up():
        bf.at(bf.f("V"))
        bf.emit(",")
    bf.scan_down()
    a, b = next((a, b) for a in range(1, 256) for b in range(1, 256) if a * b >= n and a + b < 80)
    with bf.repeat(a, outer):
        with bf.repeat(b, inner):
            bf.dec(bf.rec(n))                     # the last record ends the pass
            bf.at(bf.rec(1))
            bf.emit("[")
            v, t, f, u = bf.f("V"), bf.f("T"), bf.f("F"), bf.f("U")
            bf._move(v, t, f)                     # t = this value (f as the spare)
            bf._move(f, v)
            bf._move(bf.f("V", 1), u, f)          # u = the next one's
            bf._move(f, bf.f("V", 1))
            with bf.loop(t):
                bf.dec(t)
                # u == 0: the next one is smaller, so raise f and stop; else u - 1
                bf.inc(bf.f("B"))
                bf.at(u)
                bf.emit("[->-]>")
                bf.pos = bf.f("B")
                bf.emit("[")
                bf.inc(f)
                bf.clear(t)
                bf.dec(bf.f("B"))
                bf.at(bf.f("B"))
                bf.emit(">")
                bf.pos = bf.f("C")
                bf.emit("]")
                bf.at(t)
            bf.clear(u)
            with bf.loop(f):                      # swap
                bf.dec(f)
                bf._move(v, t)
                bf._move(bf.f("V", 1), v)
                bf._move(t, bf.f("V", 1))
            bf.at(bf.rec(2))
            bf.emit("]")
            bf.pos = bf.rec(n)
            bf.inc(bf.rec(n))
            bf.emit("<" * bf.stride + "[" + "<" * bf.stride + "]")
            bf.pos = bf.rec(0)
    with bf.walk_up():
        bf.out(bf.f("V"))
    bf.scan_down()
    return bf


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--small", type=Path)
    args = ap.parse_args()
    n, folder, name = (12, args.small, "sort_small") if args.small else (N, OUT, "sort")
    bf = build(n)
    src = folder / f"{name}.bf"
    src.write_text(header("make_sort.py", ["A bubble sort of the input bytes with one value",
                                           "a record"]) + bf.code())
    (folder / f"{name}.in").write_bytes(data(n))
    (folder / f"{name}.out").write_bytes(bytes(sorted(data(n))))
    if args.check:
        check_output(src)


if __name__ == "__main__":
    main()
