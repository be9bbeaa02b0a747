"""The baseline check on each Lua build: the indirect jumps that dispatch in
luaV_execute (Lua 5.4 and 5.5) or in LuaJIT's hand-written bytecode handlers
(its lj_BC_* functions), and MERGED where a computed-goto build has only a
handful for all its opcodes: the broken baseline of shimlab's own story.

Machine code is read through shimlab's reader (interp.dispatch_check) in
dispatch_sites() alone: issue 26's census API replaces that one function.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..interp import dispatch_check
from . import source
from .build import LuaBuild

EXECUTE = "luaV_execute"
LUAJIT_HANDLERS = "lj_BC_"


def dispatch_sites(binary, names=(), prefix: str | None = None) -> dict[str, tuple[int, int, int]]:
    """{function: (instructions, bytes, indirect jumps)} for the functions of
    `binary` named in `names` or starting with `prefix`, each with the parts a
    compiler split off (luaV_execute.cold).  The one reader of machine code here."""
    return {n: (f.insns, f.size, f.indirect_jumps)
            for n, f in dispatch_check.function_sites(binary, names, prefix).items()}


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
        merged = dispatch_check.looks_merged(jumps, len(sites), own)
        verdict = ("MERGED: the handlers share their dispatch" if merged else
                   f"{own} of {len(sites)} handlers dispatch on their own (ins_next in the "
                   f"DynASM source)")
        return Census(b.name, b.dispatch, f"{len(sites)} handlers {LUAJIT_HANDLERS}*",
                      len(sites), jumps, own, sum(s[0] for s in sites.values()), merged, verdict)
    n_ops = opcodes(b.flavour)
    found = dispatch_sites(b.path, [EXECUTE])
    if EXECUTE not in found:
        raise dispatch_check.UnknownHandler(f"{b.path}: no {EXECUTE} in its symbol table")
    insns, _size, jumps = found[EXECUTE]
    merged = b.dispatch == "goto" and dispatch_check.looks_merged(jumps, n_ops)
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
