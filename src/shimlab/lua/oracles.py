"""The expected output of the programs whose sizes are chosen per run
(examples/lua/exits.lua and interp.lua), computed here rather than kept in
files: the driver holds every run to it as it holds the others to
examples/lua/expected/."""
from __future__ import annotations

BLOCK = 64      # iterations per block in exits.lua


def exits(m: str, blocks: str) -> str:
    """exits.lua counts the taken and the other iterations of its measured loop."""
    m, blocks = int(m), int(blocks)
    taken = blocks * len({j * BLOCK // m for j in range(m)})
    return f"m={m} blocks={blocks}: {taken} {blocks * BLOCK - taken}\n"


def interp(k: str, n: str) -> str:
    return f"{int(k)} x {int(n)}: {1 if int(k) and int(n) else 0}\n"


ORACLES = {"exits": exits, "interp": interp}
