"""The expected outputs of the hand-written BF programs of corpus/bf (the
files are written by hand; this script writes their .in and .out): each
output comes from the C translation of the program (common.c_reference)
and must equal what a Python model of the program's task says, two oracles
outside shimlab.  Run it after changing one of them: python hand_outputs.py
"""
from __future__ import annotations

import sys
from math import gcd
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import c_reference  # noqa: E402

BF = HERE.parent / "bf"


def lcg_bytes(n: int, seed: int) -> bytes:
    """n printable bytes of a fixed linear congruential sequence (an input)."""
    x, out = seed, bytearray()
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2 ** 31
        out.append(33 + (x >> 16) % 94)
    return bytes(out)


def table() -> bytes:
    return "".join("".join(f" {a * b:3d}" for b in range(1, 16)) + "\n"
                   for a in range(1, 16)).encode()


def primes() -> bytes:
    return "".join(f"{n}\n" for n in range(2, 256)
                   if all(n % d for d in range(2, n))).encode()


def countsort(data: bytes) -> bytes:
    return bytes(sorted(data))


def coprime() -> bytes:
    return "".join("".join("#" if gcd(a, b) == 1 else "." for b in range(1, 101)) + "\n"
                   for a in range(1, 101)).encode()


INPUTS = {"countsort": lcg_bytes(5000, 2024)}
MODELS = {"table": table, "primes": primes, "coprime": coprime,
          "countsort": lambda: countsort(INPUTS["countsort"])}


def main() -> int:
    bad = 0
    for name, model in MODELS.items():
        src = BF / f"{name}.bf"
        data = INPUTS.get(name, b"")
        if name in INPUTS:
            src.with_suffix(".in").write_bytes(data)
        got, want = c_reference(src, data), model()
        if got != want:
            print(f"{src.name}: its C translation prints {len(got)} bytes that are not "
                  f"the model's {len(want)}")
            bad += 1
            continue
        src.with_suffix(".out").write_bytes(got)
        print(f"{src.name}: {len(got)} bytes of output, C translation and model agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
