"""The trampolines of jit-trampoline: traces compiled for another register
order than the interpreter's (abi/contract.py trace_state: a rotation, so
every value moves), as when the interpreter and the JIT code come from
compilers whose preserve_none argument orders differ.  Every crossing goes
through a stub that moves each register, with no call and nothing saved:

  entry:trampoline          laid at the start of every trace, where ENTER_JIT
                            jumps: moves the contract registers and the K
                            cached values from the interpreter's order (A)
                            to the traces' (B) and falls into the trace
  exit:trampoline           sets ip (in B), reloads the K cached values into
                            B's registers, moves everything back to A and
                            jumps through the dispatch table, like exit:direct
  exit:trampoline:count     the same, counting the instruction it dispatches
  exit:trampoline-handler   (deopt exits) the same, then a direct jump to the
                            resume instruction's handler (:far, indirect)
  opt:hot-exit:trampoline   opt:hot-exit's heat; hot, it moves back to A and
                            dispatches through the recorder's table

Unlike every other stencil these are written against both orders: `r` is the
interpreter's contract, as always, and the traces' registers are derived
from it.  So the JIT takes them from the interpreter's stencil artifact and
the traces' other stencils from the artifact of the traces' order
(jit/compile.py).  With K cached values each has a :k<K> variant, and each
exit a :k<K>:keep one for a trace that still holds them in its registers:
it moves them back instead of reloading them.
"""
from peachpy import x86_64
from peachpy.x86_64 import INC, JMP, MOV, MOVSXD, SUB, dword, qword, rax, rcx

from shimlab.abi import contract

from .asm import Regs, stencil, vm_offset
from .opt import record_here

ORDER = "rotated"          # modes.py: jit-trampoline's trace_order
TEMP = "r10"               # no argument register of any order: free in every stub
KEYS = tuple(contract.STATE)


def _orders(r) -> tuple[dict, dict]:
    """The interpreter's state registers (A) and the traces' (B), by name."""
    a = {k: str(getattr(r, k)) for k in KEYS}
    return a, contract.trace_state(a, ORDER)


def _reg(name: str):
    return getattr(x86_64, name)


def moves(pairs: list[tuple[str, str]], temp: str = TEMP) -> list[tuple[str, str]]:
    """(destination, source) register moves that do the parallel move of
    `pairs` ((source, destination) each, destinations distinct): a chain from
    its free end, a cycle through `temp` (one move more than its length)."""
    pending = {dst: src for src, dst in pairs if src != dst}
    out = []
    while pending:
        sources = set(pending.values())
        free = next((d for d in pending if d not in sources), None)
        if free is not None:
            out.append((free, pending.pop(free)))
            continue
        d = next(iter(pending))         # all in cycles: park one in temp
        out.append((temp, d))
        pending = {k: (temp if v == d else v) for k, v in pending.items()}
    return out


def _pairs(r, k: int, to_traces: bool) -> list[tuple[str, str]]:
    a, b = _orders(r)
    pairs = [(a[x], b[x]) for x in KEYS]
    pairs += list(zip(contract.CACHE_REGS[:k], contract.trace_cache_registers(k, ORDER)))
    return pairs if to_traces else [(d, s) for s, d in pairs]


def _move(asm, r, k: int, to_traces: bool) -> None:
    for dst, src in moves(_pairs(r, k, to_traces)):
        asm(MOV(_reg(dst), _reg(src)))


def _traces(r) -> Regs:
    return Regs.of(_orders(r)[1])


def _reload(asm, b: Regs, k: int) -> None:
    """The K cached values from the memory stack into the traces' registers for them."""
    for j, name in enumerate(contract.trace_cache_registers(k, ORDER)):
        asm(MOV(_reg(name), qword[b.sp - 8 * (j + 1)]))
    if k:
        asm(SUB(b.sp, 8 * k))


def _back(a, r, k, keep=False):
    """An exit's way back: ip set to where it resumes, the K values reloaded
    in the traces' order (unless the trace kept them in its registers: keep),
    then every register moved to the interpreter's."""
    b = _traces(r)
    a(MOV(b.ip, a.hole("resume_ip")))
    if not keep:
        _reload(a, b, k)
    _move(a, r, k, False)


def _variants(k: int, keep: bool = False) -> None:
    sfx = (f":k{k}" if k else "") + (":keep" if keep else "")
    what = f" ({k} cached value(s) move too{', kept in registers' if keep else ''})" if k else ""

    if not keep:
        @stencil(f"entry:trampoline{sfx}", "the entry trampoline: every register from the "
                 f"interpreter's order to the traces'{what}")
        def entry(a, r):
            _move(a, r, k, True)

    @stencil(f"exit:trampoline{sfx}",
             f"exit:direct in the traces' order, every register moved back before the jump{what}")
    def exit_(a, r):
        _back(a, r, k, keep)
        a(MOVSXD(rax, dword[r.ip]), JMP(qword[r.table + rax * 8]))

    @stencil(f"exit:trampoline:count{sfx}",
             f"exit:trampoline that also counts the instruction it dispatches{what}")
    def exit_count(a, r):
        b = _traces(r)
        # counts first: rcx is a cached value's register from K = 1 on
        # counts with r10 when the values are in registers (rcx can be one's)
        scratch = x86_64.r10 if keep else rcx
        a(MOV(b.ip, a.hole("resume_ip")), MOVSXD(rax, dword[b.ip]),
          MOV(scratch, qword[b.vm + vm_offset("counts")]), INC(qword[scratch + rax * 8]))
        if not keep:
            _reload(a, b, k)
        _move(a, r, k, False)
        a(JMP(qword[r.table + rax * 8]))

    @stencil(f"exit:trampoline-handler{sfx}",
             f"a deopt exit: every register moved back, then the handler's direct jump{what}")
    def exit_handler(a, r):
        _back(a, r, k, keep)
        a.jmp_hole("handler")

    @stencil(f"exit:trampoline-handler:far{sfx}",
             f"exit:trampoline-handler for a trace more than 2 GiB from the interpreter{what}")
    def exit_handler_far(a, r):
        _back(a, r, k, keep)
        a(MOV(rax, a.hole("handler_abs")), JMP(rax))


for _k in range(len(contract.CACHE_REGS) + 1):
    _variants(_k)
    if _k:
        _variants(_k, keep=True)


def _hot_exits(k: int) -> None:
    """The hot side exit: every register, and the K cached values the exit
    holds in the traces' registers (jit/compile.py reloads them first), moved
    back before the recorder runs."""
    sfx, what = (f":k{k}", f" ({k} cached value(s) move too)") if k else ("", "")

    def move_back(a, r):
        _move(a, r, k, False)

    stencil(f"opt:hot-exit:trampoline{sfx}",
            f"opt:hot-exit for traces in the trampoline's order{what}")(
        record_here(False, move_back))
    stencil(f"opt:hot-exit:trampoline:count{sfx}",
            f"opt:hot-exit:trampoline that counts the instruction it dispatches{what}")(
        record_here(True, move_back))


for _k in range(len(contract.CACHE_REGS) + 1):
    _hot_exits(_k)
