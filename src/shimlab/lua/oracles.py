"""The expected output of the programs whose sizes are chosen per run
(examples/lua/exits.lua and interp.lua), computed here rather than kept in
files: the driver holds every run to it as it holds the others to
examples/lua/expected/."""
from __future__ import annotations

BLOCK = 64      # iterations per block in exits.lua


def exits(m: str, blocks: str) -> str:
    m, blocks = int(m), int(blocks)
    taken = {j * BLOCK // m for j in range(m)}
    count = blocks * BLOCK
    a = sum(i for i in range(count) if i % BLOCK in taken)
    b = count * (count - 1) // 2 - a
    return f"m={m} blocks={blocks}: {a} {b}\n"


def interp(k: str, n: str) -> str:
    return f"{int(k)} x {int(n)}: {1 if int(k) and int(n) else 0}\n"


ORACLES = {"exits": exits, "interp": interp}
