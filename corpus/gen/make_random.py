"""Generate corpus/bf/random_*.bf: random BF programs made of the loop shapes
real programs use, with a fixed seed each.

A program is a sequence of blocks on a tape of 64 cells; the generator
knows the head's position everywhere (every loop body returns to where it
started, and a scan runs over a row of cells it set just before, up to a
zero it made), so every program ends.  The blocks:

  counting loop   c = n, then [ body; c- ] with a body that leaves c alone
  if              [ body; [-] ]: runs at most once
  clear           [-] or [+]
  move/multiply   [- >>+++ <<<- ... ]: the counter stepped by -1, +1 or an
                  odd step, any number of targets at any offsets and factors
  scan            a row of nonzero cells k apart, a zero after them, [>>>]
  adds, moves     runs of + - and of < >
  output          . of a cell

Each program's expected output comes from a C translation of it
(common.c_reference), not from shimlab.
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import c_reference, header  # noqa: E402

OUT = HERE.parent / "bf"
CELLS = 64
# name: (first seed, how deep loops nest, outputs): the seed is the first
# from there whose program runs STEPS BF commands (the C translation counts)
PROGRAMS = {"random_idioms": (2026, 3, 0.02),
            "random_nested": (7, 5, 0.004)}
STEPS = (150_000_000, 500_000_000)


class Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.pos = 0
        self.out: list[str] = []

    def at(self, cell: int) -> None:
        d = cell - self.pos
        self.out.append(">" * d if d > 0 else "<" * -d)
        self.pos = cell

    def emit(self, s: str) -> None:
        self.out.append(s)

    def block(self, depth: int, busy: set, weight: float, outputs: float) -> None:
        """One random block; busy: cells an enclosing loop counts with (never
        touched); weight: how many times this block will run (the budget)."""
        r = self.rng
        free = [c for c in range(2, CELLS - 8) if c not in busy]
        kind = r.choices(["count", "if", "clear", "muladd", "scan", "add", "out"],
                         [3 if depth else 0, 2 if depth else 0, 2, 4, 1, 3,
                          outputs * 10])[0]
        if kind == "add":
            self.at(r.choice(free))
            self.emit(r.choice("+-") * r.randint(1, 40))
        elif kind == "out":
            self.at(r.choice(free))
            self.emit(".")
        elif kind == "clear":
            self.at(r.choice(free))
            self.emit(r.choice(["[-]", "[+]"]))
        elif kind == "muladd":
            c = r.choice(free)
            targets = r.sample([x for x in free if x != c], r.randint(1, 4))
            step = r.choice([-1, -1, -1, 1, -3, 3, -5])
            self.at(c)
            body = [("+" if step > 0 else "-") * abs(step)]
            here = c
            for t in targets:
                body.append((">" if t > here else "<") * abs(t - here))
                body.append(r.choice("+-") * r.randint(1, 7))
                here = t
            body.append((">" if c > here else "<") * abs(c - here))
            if r.random() < 0.5:                  # the counter's step last, as often written
                body = body[1:] + body[:1]
            self.emit("[" + "".join(body) + "]")
        elif kind == "scan":
            stride = r.choice([1, 1, 2, 3, 4])
            n = r.randint(1, 6)
            room = [s for s in free if all(s + stride * k in free for k in range(n + 1))]
            if not room:
                return
            s = r.choice(room)
            for k in range(n):
                self.at(s + stride * k)
                self.emit("[-]+")
            self.at(s + stride * n)
            self.emit("[-]")
            self.at(s)
            self.emit("[" + ">" * stride + "]")
            self.pos = s + stride * n
        elif kind == "count":
            c = r.choice(free)
            n = r.randint(2, 90)
            if weight * n > self.budget:
                n = max(1, int(self.budget // weight))
            self.at(c)
            self.emit("[-]" + "+" * n + "[")
            for _ in range(r.randint(1, 5)):
                self.block(depth - 1, busy | {c}, weight * n, outputs)
            self.at(c)
            self.emit("-]")
        elif kind == "if":
            c = r.choice(free)
            self.at(c)
            self.emit("[")
            for _ in range(r.randint(1, 3)):
                self.block(depth - 1, busy | {c}, weight, outputs)
            self.at(c)
            self.emit("[-]]")


def build(seed: int, depth: int, outputs: float) -> str:
    g = Gen(random.Random(seed))
    g.budget = 10 ** 9
    for cell in range(CELLS - 8):               # a start that is not all zeros
        g.at(cell)
        g.emit("+" * g.rng.randint(0, 9))
    top = 0
    while top < 40:
        g.block(depth, set(), 1, outputs)
        top += 1
    g.at(0)
    for cell in range(2, CELLS - 8):             # the final tape, as a checksum
        g.at(cell)
        g.emit(".")
    return "".join(g.out)


def wrap(code: str, width: int = 78) -> str:
    return "\n".join(code[k:k + width] for k in range(0, len(code), width)) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.parse_args()
    for name, (seed, depth, outputs) in PROGRAMS.items():
        src = OUT / f"{name}.bf"
        while True:
            src.write_text(header("make_random.py", [f"A random program of loop idioms (seed {seed})"])
                           + wrap(build(seed, depth, outputs)))
            out, n = c_reference(src, steps=True)
            if STEPS[0] <= n <= STEPS[1]:
                break
            seed += 1
        (OUT / f"{name}.out").write_bytes(out)
        print(f"{name}: {src.stat().st_size} bytes, {len(src.with_suffix('.out').read_bytes())} "
              "bytes of output")


if __name__ == "__main__":
    main()
