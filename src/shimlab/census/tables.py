"""Dispatch tables read off machine code: the table an indirect jump or call
indexes, and what its entries point at (labels inside one function for a
computed goto or a switch, function entries for tail calls).

The table's address comes from the jump's own operand (`jmp [rax*8 + T]`),
from the load that fed a register jump (`mov rax, [rcx + rax*8]; jmp rax`),
and the base register from a `lea reg, [rip + T]` (position-independent
code) or `mov reg, T`.  Entries are read as the loader leaves them: a
position-independent file's pointers through their RELATIVE relocations.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..disasm import Insn
from ..elf import Image

MAX_ENTRIES = 4096
BACK = 24               # how far back a jump's feeding load is looked for


@dataclass(frozen=True)
class Table:
    addr: int
    width: int                  # 8: absolute pointers; 4: offsets from the table (PIC switch)
    entries: tuple[int, ...]
    section: str
    symbol: str | None          # the data symbol that names it, if any

    @property
    def distinct(self) -> list[int]:
        return sorted(set(self.entries))


def _writes(i: Insn, reg: str) -> bool:
    return bool(i.regs) and i.regs[0] == reg and i.mnemonic not in ("cmp", "test", "push")


def _load(i: Insn) -> int | None:
    """The address a `lea reg, [rip + T]` or `mov reg, T` puts in its register."""
    if not i.regs:
        return None
    if i.mnemonic == "lea" and i.mem and i.mem.rip:
        return i.mem.disp
    if i.mnemonic == "mov" and i.mem is None and len(i.regs) == 1:
        try:
            return int(i.op_str.split(",")[1], 0)
        except (IndexError, ValueError):
            return None
    return None


_LOADS: dict = {}


def _loads(body: list[Insn]) -> dict[str, list[tuple[int, int]]]:
    """reg -> [(index, address)] of every address load in `body` (kept for the last few bodies)."""
    key = (id(body), len(body), body[0].addr if body else 0)
    if key not in _LOADS:
        out: dict[str, list[tuple[int, int]]] = {}
        for n, i in enumerate(body):
            v = _load(i)
            if v is not None:
                out.setdefault(i.regs[0], []).append((n, v))
        if len(_LOADS) > 8:
            _LOADS.clear()
        _LOADS[key] = out
    return _LOADS[key]


def _values(body: list[Insn], k: int, reg: str) -> list[int]:
    """The addresses register `reg` may hold at body[k], likeliest first: the
    `lea reg, [rip + T]` or `mov reg, T` nearest before it, then every other
    such load of `reg` in the code (a base hoisted out of the loop is set far
    away, and other paths write the register in between)."""
    loads = _loads(body).get(reg, [])
    near = [v for n, v in loads if n < k][-1:]
    return near + [v for v in dict.fromkeys(v for _, v in loads) if v not in near]


def _indexed(body: list[Insn], k: int, mem) -> list[tuple[int, int]]:
    """Candidate (table address, entry width) of an indexed memory operand at body[k]."""
    if mem is None or not mem.index or mem.scale not in (4, 8):
        return []
    bases = _values(body, k, mem.base) if mem.base else [0]
    return [((b + mem.disp) & (2**64 - 1), mem.scale) for b in bases]


def site_table(image: Image, body: list[Insn], k: int,
               inside: Callable[[int], bool]) -> Table | None:
    """The table that the indirect jump or call body[k] goes through, if it
    can be read and its entries land where `inside` says they should."""
    site = body[k]
    where = _indexed(body, k, site.mem)
    if not where and site.mem is None and site.regs:
        reg = site.regs[0]
        for n in range(k - 1, max(k - BACK, -1), -1):
            i = body[n]
            if not _writes(i, reg):
                continue
            if i.mnemonic == "mov":
                where = _indexed(body, n, i.mem)
            elif i.mnemonic == "add" and len(i.regs) == 2:
                # movsxd reg, [B + idx*4]; add reg, B: a position-independent switch
                feed = next((m for m in range(n - 1, max(n - BACK, -1), -1)
                             if _writes(body[m], reg)), None)
                if feed is not None and body[feed].mnemonic == "movsxd":
                    where = _indexed(body, feed, body[feed].mem)
            break
    for addr, width in where:
        t = read(image, addr, width, inside)
        if t is not None:
            return t
    return None


def read(image: Image, addr: int, width: int, inside: Callable[[int], bool],
         least: int = 4) -> Table | None:
    """The table at `addr`: its entries up to the first that does not land
    `inside` (or to the end of the data symbol that names it)."""
    sec = image.section_at(addr)
    if sec is None or sec.code:
        return None
    symbol = image.object_at.get(addr)
    limit = (symbol.size // width if symbol and symbol.size else MAX_ENTRIES)
    entries = []
    for n in range(min(limit, MAX_ENTRIES)):
        slot = addr + n * width
        if width == 8:
            value = image.pointer(slot)
        else:
            off = image.int32(slot)
            value = None if off is None else addr + off
        if value is None or not inside(value):
            break
        entries.append(value)
    if len(entries) < least:
        return None
    return Table(addr, width, tuple(entries), sec.name, symbol.name if symbol else None)


def referenced(image: Image, body: list[Insn], inside: Callable[[int], bool],
               least: int = 16) -> list[Table]:
    """Tables the code takes the address of (`lea reg, [rip + T]`) whose
    entries land inside: a threaded interpreter's handler list, which its
    jumps do not index (they jump to an address kept in the instruction)."""
    out, seen = [], set()
    for i in body:
        if i.mem and i.mem.rip and i.mem.disp not in seen:
            seen.add(i.mem.disp)
            t = read(image, i.mem.disp, 8, inside, least)
            if t:
                out.append(t)
    return sorted(out, key=lambda t: -len(t.entries))
