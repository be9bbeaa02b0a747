"""jit-trampoline: traces in another register order than the interpreter's,
and stubs that move every register at each crossing (peachpy_stencils/trampoline.py).

The stubs are read back with capstone (shimlab.disasm) and run symbolically:
each must leave every contract value and every cached value in the other
order's register, with one mov per value (and one more per cycle)."""
from __future__ import annotations

import pytest

from shimlab import disasm, isa, modes
from shimlab.abi import contract

pytest.importorskip("peachpy")
pytest.importorskip("capstone")

from shimlab.jit import stencil_store  # noqa: E402

MODE = modes.get("jit-trampoline")
ORDER = MODE.trace_order
KS = range(len(contract.CACHE_REGS) + 1)
A = contract.STATE
B = contract.trace_state(A, ORDER)


def _sfx(k):
    return f":k{k}" if k else ""


def _run(code: bytes, regs: dict) -> tuple[dict, list]:
    """Runs a stub's movs on symbolic values; returns the registers after it
    and its instructions up to the first jump."""
    regs = dict(regs)
    seen = []
    for i in disasm.disassemble(code):
        if i.jump:
            break
        seen.append(i)
        if i.mnemonic in ("mov", "movabs") and len(i.regs) == 2 and "[" not in i.op_str:
            regs[i.regs[0]] = regs.get(i.regs[1])
        elif i.mnemonic == "movabs":
            regs[i.regs[0]] = "imm"
        elif i.mnemonic == "mov" and f"[{B['sp']} - " in i.op_str.split(",")[1]:
            # a reload from the traces' sp: mov reg, qword ptr [sp - 8 * (j + 1)]
            off = i.op_str.split("-")[-1].strip(" ]")
            regs[i.regs[0]] = ("c", int(off, 0) // 8 - 1)
        elif i.mnemonic in ("mov", "movsxd") and "[" in i.op_str.split(",")[1]:
            regs[i.regs[0]] = "memory"
        elif i.mnemonic in ("sub", "inc"):
            continue
        else:
            raise AssertionError(f"unexpected {i.mnemonic} {i.op_str}")
    return regs, seen


def _moves(insns) -> int:
    return sum(1 for i in insns if i.mnemonic == "mov" and len(i.regs) == 2
               and "[" not in i.op_str)


def _cycles_extra(k: int) -> int:
    """The movs a parallel move needs beyond one per value: one per cycle
    (the state's rotation always; the cached values' when all of them wrap)."""
    return 1 + (k == len(contract.CACHE_REGS))


def test_the_traces_order_moves_every_value():
    assert set(B.values()) == set(A.values())
    assert all(B[x] != A[x] for x in A), B
    for k in KS:
        regs = contract.trace_cache_registers(k, ORDER)
        assert len(set(regs)) == k and not set(regs) & set(A.values())
        assert all(r != c for r, c in zip(regs, contract.CACHE_REGS[:k])), (k, regs)
    assert contract.interpreter_state(B, ORDER) == A
    # the traces' order is one the stencils can serve
    assert contract.state_for(tuple(B.values())) == B


@pytest.mark.parametrize("k", KS)
def test_the_entry_trampoline_moves_every_register_to_the_traces_order(k):
    st = stencil_store.load()
    code = st[f"{MODE.entry_stencil}{_sfx(k)}"].code
    start = {A[x]: x for x in A} | {r: f"c{j}" for j, r in enumerate(contract.CACHE_REGS[:k])}
    after, insns = _run(code, start)
    assert {x: after[B[x]] for x in A} == {x: x for x in A}
    tc = contract.trace_cache_registers(k, ORDER)
    assert [after[r] for r in tc] == [f"c{j}" for j in range(k)]
    # a mov per value, one more per cycle, and nothing else
    assert len(insns) == _moves(insns) == len(A) + k + _cycles_extra(k), disasm.listing(insns)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("which", ["exit_stencil", "count_exit_stencil", "handler_exit_stencil",
                                   "handler_far"])
def test_an_exit_trampoline_moves_every_register_back(k, which):
    st = stencil_store.load()
    name = MODE.handler_exit_stencil + ":far" if which == "handler_far" else getattr(MODE, which)
    code = st[f"{name}{_sfx(k)}"].code
    after, insns = _run(code, {B[x]: x for x in B})
    want = {x: x for x in A} | {"ip": "imm"}
    got = {x: after[A[x]] for x in A}
    if which == "handler_far":
        assert after["rax"] == "imm"
    assert got == want, disasm.listing(insns)
    assert [after[r] for r in contract.CACHE_REGS[:k]] == [("c", j) for j in range(k)]
    # the reloads went to the traces' registers, and the moves carried them over
    assert _moves(insns) == len(A) + k + _cycles_extra(k), disasm.listing(insns)


def test_a_trace_starts_with_the_entry_trampoline():
    from shimlab.jit.compile import Context, compile_trace, load_stencils, lower
    from shimlab.jit.trace import Trace, TraceOp
    op = {ins.name: i for i, ins in enumerate(isa.INSTRUCTIONS)}
    code = [(op["LOAD_INT"], 7), (op["POP"], 0), (op["HALT"], 0)]
    trace = Trace(0, [TraceOp(0, op["LOAD_INT"], 7, "LOAD_INT"), TraceOp(1, op["POP"], 0, "POP")],
                  closed=False, end_pc=2)
    handlers = [0x20000] * isa.NUM_OPCODES
    for k in (0, 3):
        ctx = Context("jit-trampoline", 0x10000, [], code, handlers, cache=k)
        direct = compile_trace(trace, Context("jit-direct", 0x10000, [], code, handlers,
                                              cache=k), None)
        c = compile_trace(trace, ctx, None)
        entry = load_stencils(ctx)[MODE.entry_stencil + _sfx(k)].code
        assert c.code.startswith(entry) and c.entry_stub == len(entry)
        # the same pieces as jit-direct's, but written for B (their encodings can
        # differ: [r13] needs a displacement byte, [r12] a SIB byte)
        assert c.exits == direct.exits
        # (at K > 0 the trace first pushes the K cached values, from the
        # traces' order's registers)
        names = [p.stencil for p in lower(trace, ctx).lowered.pieces]
        assert names[k:] == ["LOAD_INT", "POP"] and len(names) == k + 2
        assert c.body_size == len(entry) + sum(len(stencil_store.load(B)[n].code)
                                               for n in names)
        # the body is the traces' order's stencils: LOAD_INT's, written for B
        mine, theirs = stencil_store.load(B)["LOAD_INT"], stencil_store.load()["LOAD_INT"]
        assert mine.code != theirs.code
        holes = {h.offset + j for h in mine.holes for j in range(h.width)}
        body = c.code[len(entry) + sum(len(stencil_store.load(B)[n].code) for n in names[:k]):]
        assert all(body[j] == mine.code[j] for j in range(len(mine.code)) if j not in holes)
        # every exit leaves through the trampoline that moves back
        exit_stub = load_stencils(ctx)[MODE.exit_stencil + _sfx(k)]
        assert exit_stub.code[-3:] in c.code[c.body_size:]


def test_clang_built_stencils_are_refused():
    from shimlab.jit.compile import CompileError, Context, load_stencils
    with pytest.raises(CompileError, match="another register order"):
        load_stencils(Context("jit-trampoline", 0, [], [], source="clang"))
