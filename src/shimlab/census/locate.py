"""Finding an interpreter's dispatch code in a binary, with or without its
symbols: the named function (and the parts a compiler split off it), else
the code reached from it by calls and jumps that holds the most indirect
jumps, else the densest cluster of indirect jumps in the whole binary.
Function bounds without symbols come from .eh_frame (shimlab.elf).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field

from .. import disasm
from ..disasm import Insn
from ..elf import PLT, Image

FOLLOW_DEPTH = 3            # calls deep from the entry function
FOLLOW_LIMIT = 400          # functions read at most while following
LEAST_JUMPS = 16            # fewer indirect jumps than this is no dispatch loop
# `jmp` with a register or memory operand: FF /4 (the ModRM reg field is 4)
_JMP_INDIRECT = re.compile(rb"\xff[\x20-\x27\x60-\x67\xa0-\xa7\xe0-\xe7]")


@dataclass
class Block:
    start: int
    size: int
    name: str | None            # its symbol, or None (an unnamed piece of code)

    def label(self) -> str:
        return self.name or f"unnamed code at {self.start:#x}"


@dataclass
class Code:
    """The dispatch code found, its instructions, and how it was found."""
    blocks: list[Block]
    insns: list[Insn]
    how: str
    steps: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(b.size for b in self.blocks)

    @property
    def jumps(self) -> int:
        return sum(1 for i in self.insns if i.indirect_jump)

    @property
    def calls(self) -> int:
        return sum(1 for i in self.insns if i.indirect_call)

    def inside(self, addr: int) -> bool:
        return any(b.start <= addr < b.start + b.size for b in self.blocks)


def read(image: Image, blocks: list[Block], how: str) -> Code:
    insns = sorted((i for b in blocks for i in disasm.code(image, b.start, b.size)),
                   key=lambda i: i.addr)
    return Code(blocks, insns, how)


def named(image: Image, name: str) -> list[Block]:
    """The function `name` and the parts a compiler split off it, named
    `name.cold`, `name.part.0` ... in .symtab."""
    sym = image.functions[name]
    size = sym.size or (image.extent_of(sym.addr) or (0, 0))[1]
    parts = [Block(sym.addr, size, name)]
    parts += [Block(s.addr, s.size, n) for n, s in sorted(image.functions.items())
              if n.startswith(name + ".") and s.size]
    return parts


def jumped_to(image: Image, code: Code) -> list[tuple[int, int]]:
    """Unnamed code the function jumps to (not calls): split-off parts, or
    functions it tail-calls."""
    return [ext for ext in _outside(image, [i for i in code.insns if i.jump], code.inside)
            if ext[0] not in image.function_at]


def split_parts(image: Image, code: Code) -> list[Block]:
    """Parts a compiler split off the function (GCC's NAME.cold) whose
    symbols are stripped: code the function jumps to (never calls) that
    jumps back into the middle of the function."""
    out = []
    for ext in jumped_to(image, code):
        body = disasm.code(image, *ext)
        if any(i.jump and i.target is not None and code.inside(i.target)
               and i.target != code.blocks[0].start for i in body):
            out.append(Block(ext[0], ext[1], None))
    return out


def _outside(image: Image, insns: list[Insn], here) -> list[tuple[int, int]]:
    """The other functions (.eh_frame extents) that `insns` call or jump to."""
    out = []
    for i in insns:
        if i.target is None or not (i.call or i.jump) or here(i.target):
            continue
        sec = image.section_at(i.target)
        if sec is None or sec.name in PLT:
            continue
        ext = image.extent_of(i.target)
        if ext and ext not in out:
            out.append(ext)
    return out


def dispatch_table(image: Image, insns: list[Insn], here) -> int:
    """Entries of the largest table that an indirect jump of `insns` indexes
    and whose entries all land in `here`: a dispatch table (0: none)."""
    from . import tables
    best = 0
    for k, i in enumerate(insns):
        if i.indirect_jump:
            t = tables.site_table(image, insns, k, here)
            best = max(best, len(t.entries) if t else 0)
    return best


def follow(image: Image, start: Code, entry: str) -> Code | None:
    """The code reachable from `start` by direct calls and jumps (a few
    calls deep) with the largest dispatch table, else the most indirect
    jumps: a build whose dispatch jumps merged has few, but still its table."""
    seen = {(b.start, b.size) for b in start.blocks}
    frontier = [(ext, [entry]) for ext in _outside(image, start.insns, start.inside)]
    best, read_count = None, 0
    for depth in range(FOLLOW_DEPTH):
        nxt = []
        for ext, path in frontier:
            if ext in seen or read_count >= FOLLOW_LIMIT:
                continue
            seen.add(ext)
            read_count += 1
            name = image.function_at.get(ext[0])
            insns = disasm.code(image, *ext)
            def here(a, e=ext):
                return e[0] <= a < e[0] + e[1]
            jumps = sum(1 for i in insns if i.indirect_jump)
            score = (dispatch_table(image, insns, here) if jumps else 0, jumps)
            trail = path + [name or f"{ext[0]:#x}"]
            if best is None or score > best[0]:
                best = (score, ext, name, insns, trail)
            nxt += [(e, trail) for e in _outside(image, insns, here)]
        frontier = nxt
        if best and _enough(best[0]):           # the nearest loop, not a deeper one
            break
    if best is None or not _enough(best[0]):
        return None
    (entries, jumps), (addr, size), name, insns, path = best
    block = Block(addr, size, name)
    table = f"a dispatch table of {entries} entries and " if entries >= LEAST_TABLE else ""
    how = (f"followed {' -> '.join(path)}: {block.label()} ({size:,} bytes by .eh_frame) "
           f"has {table}{jumps} indirect jumps, the most of the {read_count} functions read")
    return Code([block], insns, how)


LEAST_TABLE = 16            # a dispatch table has at least this many entries


def _enough(score) -> bool:
    return score[0] >= LEAST_TABLE or score[1] >= LEAST_JUMPS


def densest(image: Image, top: int = 3) -> list[tuple[int, tuple[int, int]]]:
    """(indirect jumps, extent) of the functions with the most indirect
    jumps in the whole binary, PLT left out: a byte scan ranks them, capstone counts the best."""
    starts = [s for s, _ in image.extents]
    rough: Counter = Counter()
    for sec in image.code_sections():
        if sec.name in PLT:
            continue
        data = image.read(sec.addr, sec.size)
        for m in _JMP_INDIRECT.finditer(data):
            k = bisect_right(starts, sec.addr + m.start()) - 1
            if k >= 0:
                rough[image.extents[k]] += 1
    out = []
    for ext, _ in rough.most_common(top * 2):
        insns = disasm.code(image, *ext)
        out.append((sum(1 for i in insns if i.indirect_jump), ext))
    return sorted(out, reverse=True)[:top]
