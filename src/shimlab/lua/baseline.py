"""The baseline check on each Lua build: the indirect jumps that dispatch in
luaV_execute (Lua 5.4 and 5.5) or in LuaJIT's hand-written bytecode handlers
(its lj_BC_* functions), and MERGED where a computed-goto build has only a
handful for all its opcodes: the broken baseline of shimlab's own story.

Machine code is read as `shimlab census` reads it (shimlab.elf and
census.locate: a function with the parts a compiler split off it), in
dispatch_sites() alone; the MERGED rule is dispatch_sites.merged, the one
the census and `dis --native` apply.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import dispatch_sites as sites_rule
from ..census import CensusError, locate
from ..elf import Image
from . import source
from .build import LuaBuild

EXECUTE = "luaV_execute"
LUAJIT_HANDLERS = "lj_BC_"


def dispatch_sites(binary, names=(), prefix: str | None = None) -> dict[str, tuple[int, int, int]]:
    """{function: (instructions, bytes, indirect jumps)} for the functions of
    `binary` named in `names` or starting with `prefix`, each with the parts a
    compiler split off (luaV_execute.cold).  The one reader of machine code here."""
    image = Image(binary)
    wanted = [n for n in names if n in image.functions]
    if prefix:
        wanted += sorted(n for n in image.functions if n.startswith(prefix) and "." not in n)
    out = {}
    for name in dict.fromkeys(wanted):
        code = locate.read(image, locate.named(image, name), "named")
        out[name] = (len(code.insns), code.size, code.jumps)
    return out


@dataclass(frozen=True)
class Census:
    build: str
    dispatch: str           # goto, switch, asm
    where: str              # what was read
    opcodes: int
    jumps: int
    with_own: int | None    # LuaJIT: handlers with a dispatch jump of their own
    instructions: int
    merged: bool
    verdict: str

    def line(self) -> str:
        return f"{self.build}: {self.jumps} indirect dispatch jump(s) in {self.where}: {self.verdict}"


def opcodes(flavour: str) -> int:
    """The opcodes of a Lua version: the names in its lopnames.h."""
    text = (source.third_party() / flavour / "lopnames.h").read_text()
    body = text[text.index("opnames[]"):]
    return len(re.findall(r'"[A-Z_0-9]+"', body[:body.index("NULL")]))


def census(b: LuaBuild) -> Census:
    if b.is_luajit:
        sites = dispatch_sites(b.path, prefix=LUAJIT_HANDLERS)
        jumps = sum(s[2] for s in sites.values())
        own = sum(1 for s in sites.values() if s[2])
        merged = sites_rule.merged(jumps, own, len(sites))
        verdict = ("MERGED: the handlers share their dispatch" if merged else
                   f"{own} of {len(sites)} handlers dispatch on their own (ins_next in the "
                   f"DynASM source)")
        return Census(b.name, b.dispatch, f"{len(sites)} handlers {LUAJIT_HANDLERS}*",
                      len(sites), jumps, own, sum(s[0] for s in sites.values()), merged, verdict)
    n_ops = opcodes(b.flavour)
    found = dispatch_sites(b.path, [EXECUTE])
    if EXECUTE not in found:
        raise CensusError(f"{b.path}: no {EXECUTE} in its symbol table")
    insns, _size, jumps = found[EXECUTE]
    merged = b.dispatch == "goto" and sites_rule.merged(jumps, jumps, n_ops)
    if b.dispatch == "switch":
        verdict = ("one shared switch dispatch" if jumps <= 1 else
                   f"the switch's dispatch duplicated into {jumps} sites")
    elif merged:
        verdict = (f"MERGED: {jumps} for {n_ops} opcodes, the handlers share their dispatch "
                   f"(a broken baseline)")
    elif jumps >= n_ops:
        verdict = f"a dispatch jump per handler or more ({n_ops} opcodes)"
    else:
        verdict = f"{jumps} for {n_ops} opcodes: some handlers share a dispatch tail"
    return Census(b.name, b.dispatch, EXECUTE, n_ops, jumps, None, insns, merged, verdict)
