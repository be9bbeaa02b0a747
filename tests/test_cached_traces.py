"""Traces that carry cached values (--cache K) across their crossings: entered
with the interpreter's top K stack values in registers, they keep them there
until a stencil needs their register or the memory stack, and leave without
a reload when they still have them (jit/fuse.py, jit/optimize.py).  What
the crossing benchmark measures rests on this: a direct crossing's code is
the same at every K, the shim's spills and reloads, the trampoline moves."""
from __future__ import annotations

import re

import pytest

from shimlab import disasm, modes
from shimlab.bench import synthetic
from shimlab.frontend import compile_text
from shimlab.jit import compile as jit_compile, optimize
from shimlab.jit.trace import Trace, TraceOp, from_recording

BASE = 0x7F00_0000_0000
CODE = 0x7E00_0000_0000


def _stretch(live: int) -> tuple[Trace, list]:
    """The transition benchmark's first JIT stretch, with `live` values under it."""
    spec = "transitions:m=2,j=16,i=16,n=10" + (f",live={live}" if live else "")
    program, stretches = synthetic.build(spec)
    start, end = stretches[0]
    ops = [TraceOp(pc, op, arg, _stencil(op)) for pc, (op, arg) in
           enumerate(program.code[start:end], start)]
    return Trace(start, ops, closed=False, end_pc=end, why_end="stretch ends"), program


def _stencil(op: int) -> str:
    from shimlab import isa
    return isa.INSTRUCTIONS[op].name


def _ctx(mode: str, program, k: int, opt: int) -> jit_compile.Context:
    return jit_compile.Context(mode, CODE, list(program.consts), list(program.code),
                               handler_addrs=[BASE + 0x1000] * 256, opt=opt, cache=k)


def _lowered(trace, program, mode, k, opt):
    ctx = _ctx(mode, program, k, opt)
    return optimize.lower(trace, program.consts, opt, count=False,
                          cache=jit_compile.cache_for(ctx))


def _ran(compiled) -> bytes:
    """The bytes a run through the trace executes: the body, then its end exit's slot."""
    return compiled.code[:compiled.body_size + compiled.slot_size]


@pytest.mark.parametrize("mode", ["jit-direct", "jit-direct-handler", "jit-table"])
def test_a_direct_crossing_runs_the_same_code_at_every_k(mode):
    """The stretch's work folds away at level 2, and the K values stay in
    their registers from the entry to the exit: the code a round trip runs
    is byte for byte K = 0's (the exit slot's padding aside)."""
    at = {}
    for k in (0, 1, 3, 5):
        trace, program = _stretch(k)
        c = jit_compile.compile_trace(trace, _ctx(mode, program, k, 2), BASE)
        exit_code = _ran(c)[c.body_size:]
        exit_code = exit_code[:exit_code.index(b"\xcc")]
        # (the live values' pushes move the stretch: its resume address differs)
        resume = (CODE + 8 * trace.end_pc).to_bytes(8, "little")
        at[k] = (c.code[:c.body_size], exit_code.replace(resume, bytes(8)))
        assert [e.kept for e in c.exits] == [bool(k)], (k, c.exits)
    assert at[1] == at[0] and at[3] == at[0] and at[5] == at[0], at


def test_level_0_spills_at_entry_and_reloads_at_the_exit():
    trace, program = _stretch(3)
    low = _lowered(trace, program, "jit-direct", 3, 0)
    assert [p.stencil for p in low.pieces[:3]] == \
        ["opt:push:reg:r8", "opt:push:reg:rcx", "opt:push:reg:rdx"]
    c = jit_compile.compile_trace(trace, _ctx("jit-direct", program, 3, 0), BASE)
    assert [e.kept for e in c.exits] == [False]


def test_the_shim_is_entered_with_the_values_spilled():
    """jit-shim's ENTER_JIT spills in C (crossing.h): its traces never keep them."""
    assert modes.get("jit-shim").entry_spills
    assert not any(modes.get(m).entry_spills for m in modes.JIT if m != "jit-shim")
    trace, program = _stretch(2)
    assert jit_compile.cache_for(_ctx("jit-shim", program, 2, 2)) is None
    c = jit_compile.compile_trace(trace, _ctx("jit-shim", program, 2, 2), BASE)
    assert [e.kept for e in c.exits] == [False]


def test_the_shim_with_arguments_gets_them_in_registers_and_spills_at_its_exit():
    """jit-shim-args: the shim's C arguments bring the values into the
    trace's registers; its exit spills them (one C return value) through
    exit:shim:kK:keep, so the trace itself is jit-direct's."""
    trace, program = _stretch(2)
    c = jit_compile.compile_trace(trace, _ctx("jit-shim-args", program, 2, 2), BASE)
    assert [e.kept for e in c.exits] == [True]
    direct = jit_compile.compile_trace(trace, _ctx("jit-direct", program, 2, 2), BASE)
    assert c.code[:c.body_size] == direct.code[:direct.body_size]


def test_the_trampoline_keeps_them_in_its_own_order_and_moves_them_back():
    trace, program = _stretch(2)
    low = _lowered(trace, program, "jit-trampoline", 2, 2)
    assert not any(p.stencil.startswith("opt:push") for p in low.pieces), low.pieces
    c = jit_compile.compile_trace(trace, _ctx("jit-trampoline", program, 2, 2), BASE)
    assert [e.kept for e in c.exits] == [True]
    assert any(name == "exit->pc" + str(trace.end_pc) for _, _, name in c.symbols)


def _bf_loop(src: str) -> tuple[Trace, object]:
    program = compile_text(src, "x.bf", "bf", 0)
    names = [_stencil(op) for op, _ in program.code]
    head = len(names) - 1 - names[::-1].index("LOOP_IF_CELL")
    start = head + program.code[head][1]
    rec = list(range(start, head + 1))
    return from_recording([tuple(c) for c in program.code], rec, start), program


@pytest.mark.parametrize("mode,k", [("jit-direct", 3), ("jit-trampoline", 2)])
def test_a_bf_loop_keeps_the_values_through_its_back_edge(mode, k):
    """BF code never touches the operand stack, and its stencils (the bounds
    check saves rcx when it must) write none of the cached values' registers:
    nothing is spilled, at the entry or in the loop, and every exit keeps them."""
    trace, program = _bf_loop("+++[->>+<<]")
    low = _lowered(trace, program, mode, k, 1)
    names = [p.stencil for p in low.pieces]
    assert not any(n.startswith(("opt:push", "opt:pop")) for n in names), names
    assert "opt:check:rcx" in names, names
    leaving = [p for p in low.pieces if p.stencil in ("opt:check:rcx", "LOOP_IF_CELL:close")]
    assert leaving and all(p.kept for p in leaving), low.pieces


def test_arithmetic_in_a_loop_spills_at_the_start_instead_of_every_iteration():
    """minipy's fused arithmetic leaves its result in rdx, where c0 is: the
    loop could only come back to its start with a reload each iteration, so
    the start is a label in memory like the others (one spill on entry)."""
    src = "t = 0\nfor i in range(100):\n    t = t + i\nprint(t)\n"
    program = compile_text(src, "x.py", "minipy", 1)
    names = [_stencil(op) for op, _ in program.code]
    head = names.index("LOOP")
    start = head + program.code[head][1]
    trace = from_recording([tuple(c) for c in program.code], list(range(start, head + 1)), start)
    low = _lowered(trace, program, "jit-direct", 1, 2)
    first_label = min(low.labels.values())
    assert [p.stencil for p in low.pieces[:first_label]] == ["opt:push:reg:rdx"], low.pieces
    assert not any(p.kept for p in low.pieces)


def test_written_registers_sees_implicit_writes_calls_and_saved_registers():
    # cqo; idiv rcx -> rax, rdx
    assert disasm.written_registers(bytes.fromhex("4899 48f7f9")) >= {"rax", "rdx"}
    assert disasm.written_registers(bytes.fromhex("e800000000")) is None      # call
    # push rcx; mov rcx, rax; pop rcx: rcx comes back
    assert "rcx" not in disasm.written_registers(bytes.fromhex("51 4889c1 59"))
    # mov ecx, 1 writes rcx (its 64-bit register)
    assert disasm.written_registers(bytes.fromhex("b901000000")) == {"rcx"}


def test_a_linked_exit_reloads_what_its_trace_spilled_before_the_jump():
    """With linking on (side exits have heat), an exit whose trace spilled
    the K values pops them back into the registers a trace is entered with
    them in, and the link's jmp is patched after those pops: the trace it
    jumps into finds them where ENTER_JIT would have left them."""
    trace, program = _stretch(3)
    for mode, regs in (("jit-direct", ("rdx", "rcx", "r8")),
                       ("jit-trampoline", modes_registers("jit-trampoline", 3))):
        ctx = _ctx(mode, program, 3, 0)           # level 0: spilled at the start
        ctx.heat, ctx.rec_table = 0x1000, 0x2000
        c = jit_compile.compile_trace(trace, ctx, BASE)
        assert [e.kept for e in c.exits] == [False]
        parts = jit_compile._exit_parts(ctx, c.exits[0])
        assert list(parts[:3]) == [f"opt:pop:reg:{r}" for r in regs], parts
        assert parts[-1].endswith(":k3:keep"), parts
        st = jit_compile.load_stencils(ctx)
        pops = sum(len(st[p].code) for p in parts[:3])
        assert c.patch_at[0] == c.body_size + pops
    # jit-shim's traces are entered spilled: its links jump as they are
    ctx = _ctx("jit-shim", program, 3, 0)
    ctx.heat, ctx.rec_table = 0x1000, 0x2000
    c = jit_compile.compile_trace(trace, ctx, BASE)
    assert not any(p.startswith("opt:pop") for p in jit_compile._exit_parts(ctx, c.exits[0]))
    assert c.patch_at[0] == c.body_size


def modes_registers(mode: str, k: int) -> tuple[str, ...]:
    from shimlab.abi import contract
    return contract.trace_cache_registers(k, modes.get(mode).trace_order)


@pytest.mark.parametrize("mode", ["jit-direct", "jit-shim", "jit-shim-args", "jit-trampoline"])
def test_side_exits_are_recorded_and_linked_at_k(mode):
    """heavy.py at K = 2 links the same exits as at K = 0 (its loop trace's
    side exits each get a trace) and prints tailcall's output (the oracle
    takes minutes on it; the corpus tests hold tailcall to the oracle)."""
    import subprocess
    import sys
    from conftest import EXAMPLES, ROOT
    path = str(EXAMPLES / "minipy" / "heavy.py")

    def run(*args):
        p = subprocess.run([sys.executable, "-m", "shimlab.cli", "run", path, *args],
                           capture_output=True, cwd=ROOT, timeout=300)
        assert p.returncode == 0, p.stderr
        return p
    want = run("--mode", "tailcall").stdout
    linked = {}
    for k in (0, 2):
        # (a threshold: the default payback starts the JIT at a time, not a count)
        p = run("--mode", mode, "--cache", str(k), "--stats", "--jit-threshold", "64")
        assert p.stdout == want
        linked[k] = re.search(rb"(\d+) exit\(s\) linked to traces", p.stderr).group(1)
    assert linked[2] == linked[0] and int(linked[0]) > 0, linked
