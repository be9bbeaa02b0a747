"""Where a compiled trace goes and how the interpreter reaches it: its code
placed in the code memory, ENTER_JIT (or a table slot of its own) patched in
at its start, its exits linked to traces, and the perf map."""
from __future__ import annotations

import os
import time

from .. import isa
from ..errors import JitError
from ..record import replace
from .memory import CodeMemory, MemoryError_
from .report import JitStats, TraceInfo
from .trace import Trace

ENTER_JIT = isa.NUM_OPCODES


def trace_compiler():
    # imported when the first trace is made (see runtime._ready)
    from . import compile as jit_compile
    return jit_compile


class Installer:
    """The traces of one loaded program: their memory, where each is entered,
    the exits still waiting for a trace to link to, the table slots."""

    def __init__(self, jit, memory: CodeMemory, stats: JitStats, *, table=None,
                 table_slots: int = 0, entry_copies=(), link: bool = False,
                 side_threshold: int = 1, rec_table: int = 0, overrides=None,
                 max_trace_bytes: int, max_code_bytes: int, perf_map: bool = False,
                 verify_wx: bool = False):
        self.jit, self.ffi = jit, jit.ffi
        self.memory, self.stats = memory, stats
        self.table, self.table_slots, self.slots_used = table, table_slots, 0
        self.entry_copies = list(entry_copies)
        self.link, self.side_threshold, self.rec_table = link, side_threshold, rec_table
        self.overrides = overrides or {}
        self.max_trace_bytes, self.max_code_bytes = max_trace_bytes, max_code_bytes
        self.perf_map, self.verify_wx = perf_map, verify_wx
        self.traces_at: dict[int, int] = {}       # pc -> where a trace starting there is entered
        self.waiting: dict[int, list] = {}        # pc -> [(TraceInfo, exit)] not linked yet

    def release(self) -> None:
        """Every trace gone (a relocation installs them anew)."""
        self.memory.release()
        self.stats.traces.clear()
        self.slots_used = 0

    def install(self, trace: Trace, code_base: int, side: bool = False, blocks: int = 0,
                handed_over: int | None = None) -> None:
        """Compiles `trace`, places it and makes it reachable (unless a limit
        declines it).  handed_over: when its recording was handed over
        (thread CPU ns), for --stats's phase times; None for a stretch."""
        f, jit = self.ffi, self.jit
        t_in = time.thread_time_ns()
        record_ns = t_in - handed_over if handed_over is not None else 0
        if self.overrides:
            # replace keeps every other field (an inner back-edge's loop_pc)
            trace.ops = [replace(t, stencil=self.overrides.get(t.stencil, t.stencil))
                         for t in trace.ops]
        info = TraceInfo(len(self.stats.traces), trace.start, len(trace.ops), 0, trace.closed,
                         trace.why_end, [], side=side, trace=trace)
        ctx = jit.context(code_base)
        # an upper bound on exits: a deopt and a branch per instruction, and
        # a bounds check's deopt per stretch
        nexits = 2 + 3 * len(trace.ops)
        if jit.want_stats:
            info.tallies = f.new("int64_t[]", 1 + nexits)
            ctx.tallies = int(f.cast("uintptr_t", info.tallies))
            info.blocks = f.new("int64_t[]", 8 + 4 * len(trace.ops))   # one a guard, at most
            ctx.blocks = int(f.cast("uintptr_t", info.blocks))
        if self.link:
            info.heat = f.new("int64_t[]", [self.side_threshold] * nexits)
            ctx.heat = int(f.cast("uintptr_t", info.heat))
            ctx.rec_table = self.rec_table
            ctx.traces_at = dict(self.traces_at)
        jit_compile = trace_compiler()
        # laid out once: its size decides where it goes, then it is patched there
        compiled, optimize_ns = self._lay_out(trace, ctx, jit_compile)
        if len(compiled.code) > self.max_trace_bytes:
            self.stats.declined.append((trace.start, f"{len(compiled.code)} bytes of code, "
                                        f"more than the {self.max_trace_bytes} allowed"))
            return
        if self.memory.bytes + len(compiled.code) > self.max_code_bytes:
            self.stats.declined.append((trace.start, f"the JIT's code limit "
                                        f"({self.max_code_bytes} bytes) is reached"))
            return

        def fill(address: int) -> bytes:
            nonlocal compiled
            compiled = jit_compile.place(compiled, address, symbols=self.perf_map)
            return compiled.code
        address = self.memory.place(len(compiled.code), fill)
        info.address, info.size = address, len(compiled.code)
        info.exits = [e.pc for e in compiled.exits]
        info.patch_at, info.linked = compiled.patch_at, list(compiled.linked)
        info.folded = dict(compiled.folded)
        if blocks:
            info.folded["paths not recorded taken in as blocks"] = blocks
        info.block_ops, info.retakes = compiled.block_ops, compiled.retakes
        if info.blocks is not None and len(info.block_ops) > len(info.blocks):
            raise JitError(f"trace at pc {trace.start}: {len(info.block_ops)} blocks, more "
                           "than its counters")
        self.stats.traces.append(info)
        if self.link:
            self._link_in(info, trace.start, address, compiled)
        if self.perf_map:
            self._write_perf_map(info, compiled)
        if self.verify_wx:
            check_no_wx_mapping()
        if record_ns:
            info.record_ns, info.optimize_ns = record_ns, optimize_ns
            # the rest of installing it is copy-and-patch's (ENTER_JIT's patch below is a store)
            info.compile_ns = time.thread_time_ns() - t_in - optimize_ns
        if not side:             # a side trace is reached only through its side exit
            self._enter_at(trace.start, address)
        if self.jit.trace_cache is not None:      # the next run installs it again
            self.jit.trace_cache.note_installed(trace, side, blocks)

    def _lay_out(self, trace: Trace, ctx, jit_compile) -> tuple:
        """The trace laid out (compile_trace's, size_only), and the
        optimizer's time: from the plan an earlier run kept when the trace
        cache has one (no optimizer then: its time is 0, the plan's is
        copy-and-patch's), else optimized and laid out, and the plan kept."""
        cache = self.jit.trace_cache
        key = plan = None
        if cache is not None:
            key = cache.key_of(trace)
            plan = cache.get(key)
            if plan is not None and not cache.verify:
                try:
                    compiled = jit_compile.from_plan(plan, trace, ctx)
                    cache.hits += 1
                    return compiled, 0
                except jit_compile.CompileError:
                    cache.drop(key)       # it does not fit: compiled again, kept anew
                    plan = None
        t_opt = time.thread_time_ns()
        lowering = jit_compile.lower(trace, ctx)           # the optimizer
        optimize_ns = time.thread_time_ns() - t_opt
        compiled = jit_compile.compile_trace(trace, ctx, None, size_only=True, lowering=lowering)
        if cache is not None:
            made = jit_compile.plan_of(compiled, trace)
            if plan is not None:        # verify: the kept plan is what compiling made, and
                # placing it places the same code (here at address 0)
                if made != plan or jit_compile.place(
                        jit_compile.from_plan(plan, trace, ctx), None, symbols=False).code != \
                        jit_compile.place(compiled, None, symbols=False).code:
                    raise JitError(f"trace cache ({cache.path}): the plan kept for the trace "
                                   f"at pc {trace.start} is not what compiling it makes")
                cache.hits += 1
            else:
                cache.put(key, made)
        return compiled, optimize_ns

    def _link_in(self, info: TraceInfo, start: int, address: int, compiled) -> None:
        """The new trace's unlinked exits wait for a trace at their pc; the
        exits that waited for one at its start jump into it."""
        # entered from another trace past its entry tally, so --stats counts
        # only the entries that cross from the interpreter
        # (and past an entry trampoline: a trace is already in the traces' order)
        self.traces_at[start] = address + compiled.entry_stub + (compiled.entry_tally or 0)
        for i, ex in enumerate(compiled.exits):
            if not ex.deopt and not info.linked[i]:
                self.waiting.setdefault(ex.pc, []).append((info, i))
        for other, i in self.waiting.pop(start, ()):
            self.link_exit(other, i, self.traces_at[start])
        for pc in {ex.pc for ex in compiled.exits}:    # drop what linking just linked
            if pc in self.waiting:
                self.waiting[pc] = [(t, i) for t, i in self.waiting[pc] if not t.linked[i]]

    def link_exit(self, info: TraceInfo, exit_index: int, target: int) -> None:
        """Patches exit `exit_index` of trace `info` into a jump to `target`."""
        at = info.address + info.patch_at[exit_index]
        rel = target - (at + 5)
        if not -(1 << 31) <= rel < (1 << 31):
            return                   # out of rel32 reach: the exit keeps crossing
        try:
            self.memory.patch(at, b"\xE9" + rel.to_bytes(4, "little", signed=True))
        except MemoryError_:
            return                   # (a dual-mapped trace past the memfds kept open)
        info.linked[exit_index] = True
        self.stats.links += 1

    def _enter_at(self, start: int, address: int) -> None:
        """The interpreter enters the trace at `start`: ENTER_JIT there, or
        (jit-table) an opcode of its own whose table slot is the trace, so
        the interpreter dispatches straight into it."""
        f, jit = self.ffi, self.jit
        jit.entry[start] = f.cast("void *", address)
        op = ENTER_JIT
        if self.table is not None and self.slots_used < self.table_slots:
            op = ENTER_JIT + 1 + self.slots_used
            self.table[op] = (self.entry_copies[self.slots_used % len(self.entry_copies)]
                              if self.entry_copies else f.cast("void *", address))
            self.slots_used += 1
        f.cast("sl_instr *", jit.loaded.vm.code)[start].op = op

    def _write_perf_map(self, info: TraceInfo, compiled) -> None:
        name = self.jit.loaded.program.name
        lines = [f"{info.address:x} {info.size:x} shimlab:trace{info.index}:{name}:pc{info.start}\n"]
        for off, size, sym in compiled.symbols:
            lines.append(f"{info.address + off:x} {size:x} shimlab:trace{info.index}:{sym}\n")
        with open(f"/tmp/perf-{os.getpid()}.map", "a") as fh:
            fh.writelines(lines)


def check_no_wx_mapping() -> None:
    """W^X, checked: no mapping of this process is writable and executable."""
    with open("/proc/self/maps") as f:
        bad = [line.strip() for line in f if "w" in line.split()[1] and "x" in line.split()[1]]
    if bad:
        raise JitError(f"a mapping is writable and executable: {bad[0]}")
