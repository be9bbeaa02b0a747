"""How an interpreter's handlers reach each other, read off its machine code:
which handlers keep an indirect dispatch jump of their own, and when the
jumps have merged into a shared few.  One reading for shimlab's own builds
(dis --native, interp/dispatch_check.py) and for anyone's (shimlab census).
"""
from __future__ import annotations

from dataclasses import dataclass

from .disasm import Insn

MERGED_VERDICT = ("MERGED: the handlers share one dispatch jump, so the indirect-branch "
                  "predictor sees one site (a broken baseline)")


def merged_verdict(sites: int, handlers: int) -> str:
    if sites <= 1:
        return MERGED_VERDICT
    return (f"MERGED: {handlers} handlers share {sites} dispatch jumps, so the indirect-branch "
            f"predictor sees {sites} sites, not one per handler (a broken baseline)")


@dataclass
class Handler:
    name: str
    start: int
    size: int
    insns: int
    dispatch: str           # how this handler reaches the next one
    own_sites: int          # indirect jumps inside the handler's own code


def merged(sites: int, with_own: int, handlers: int) -> bool:
    """A build meant to have a dispatch jump per handler whose handlers
    (nearly) all leave through a shared one."""
    return sites <= 1 or with_own <= handlers // 10


def with_own(handlers: list[Handler]) -> int:
    return sum(1 for h in handlers if h.own_sites)


def tail_dispatch(body: list[Insn], starts: dict[int, str]) -> tuple[str, int]:
    """How a tail-call handler (a function of its own) leaves: its own
    indirect jumps, else a jump to another handler, else a return."""
    sites = sum(1 for i in body if i.indirect_jump)
    if sites:
        return "tail call through the table", sites
    jumps = [starts[i.target] for i in body if i.jump and i.target in starts]
    if jumps:
        return f"jumps to {jumps[0]}", 0
    if any(i.ret for i in body):
        return "returns (leaves the interpreter)", 0
    return "none", 0


def reaches_site(body: list[Insn], target: int, sites: list[int], window: int = 8) -> bool:
    """Is an indirect dispatch jump within a few instructions after target?"""
    k = next((n for n, i in enumerate(body) if i.addr == target), None)
    if k is None:
        return False
    return any(body[j].addr in sites for j in range(k, min(k + window, len(body))))


def label_ranges(body: list[Insn], labels: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    """Each goto handler's (name, start, stop): from its label to the next
    label, or to the end of the code."""
    bounds = sorted({start for _, start in labels}) + [body[-1].end]
    return [(name, start, next((b for b in bounds if b > start), start))
            for name, start in labels]


def goto_handlers(body: list[Insn], ranges: list[tuple[str, int, int]]) -> list[Handler]:
    """The handlers of one function that dispatches by computed goto: each
    range's own indirect jumps, or where it goes instead."""
    sites = [i.addr for i in body if i.indirect_jump]
    out = []
    for name, start, stop in ranges:
        own = [i for i in body if start <= i.addr < stop]
        n_own = sum(1 for i in own if i.indirect_jump)
        if n_own:
            how = "own indirect jump"
        else:
            shared = [i.target for i in own if i.jump and reaches_site(body, i.target, sites)]
            how = (f"jumps to shared dispatch at {shared[0]:#x}" if shared
                   else "falls into another handler")
        out.append(Handler(name, start, stop - start, len(own), how, n_own))
    return out
