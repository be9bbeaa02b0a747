"""The JIT attached to one loaded program: counters and recorder buffers for
the C interpreter, the hook it calls when a recording is ready, trace
installation (ENTER_JIT at the loop header), --stats and --perf-map."""
from __future__ import annotations

import os
import time
from array import array
from dataclasses import dataclass, field, replace

from .. import fits, isa, modes
from ..abi import contract
from ..abi import vmh
from ..abi.vmh import ffi
from ..errors import ShimlabError
from ..interp.loader import TABLE_SLOTS, handler_addresses
from .defaults import DEFAULT_THRESHOLD, LEVELS
from .memory import CodeMemory, MemoryError_
from .trace import TRACEABLE, Decline, Trace, TraceOp, add_blocks, first_of, from_recording

MAX_TRACE = 2000              # VM instructions in one trace
MAX_RECORDING = 200_000       # VM instructions one recording may log (inner loops included)
MAX_TRACE_BYTES = 256 << 10   # machine code of one trace
MAX_CODE_BYTES = 64 << 20     # all traces of one program
RETRIES = 2                   # recordings that left the loop before a linear trace is kept
NEVER = (1 << 63) - 1
ENTER_JIT = isa.NUM_OPCODES


class JitError(ShimlabError):
    pass


# The compiler and the stencils are imported, and the stencils loaded, when
# the first trace is made (Jit._ready): a run whose loops never get hot pays
# for neither (about 0.1 s of a JIT process's start-up, issue 24).
def _jit_compile():
    from . import compile as jit_compile
    return jit_compile


def _stencil_store():
    from . import stencil_store
    return stencil_store


@dataclass
class TraceInfo:
    index: int
    start: int
    ops: int
    size: int
    closed: bool
    why_end: str
    exits: list[int]                 # resume pc of each exit slot
    address: int = 0
    tallies: object = None           # int64[1 + exits]: entries, then each exit
    side: bool = False               # a side trace: recorded from a hot exit
    heat: object = None              # int64[exits]: each exit's countdown to a side trace
    patch_at: list = field(default_factory=list)   # per exit: where its link jump goes
    linked: list = field(default_factory=list)     # per exit: jumps into a trace
    folded: dict = field(default_factory=dict)     # what the optimizer did
    blocks: object = None            # --stats: int64 per block of the body, its runs
    # --stats: a recorded trace's time from the recording to installed code, by
    # phase: reading the recording into a trace (trace.from_recording), the
    # optimizer (optimize.lower) and copy-and-patch (both passes, placing, linking);
    # the thread's CPU time, so other processes of a shared machine do not count
    record_ns: int = 0
    optimize_ns: int = 0
    compile_ns: int = 0
    block_ops: list = field(default_factory=list)  # --stats: VM instructions per block
    retakes: list = field(default_factory=list)    # per exit: the interpreter re-runs one

    def executed(self) -> int | None:
        """VM instructions this trace ran (--stats): each block's runs times
        its instructions, less those a deopt handed back to the interpreter."""
        if self.blocks is None:
            return None
        ran = sum(int(self.blocks[b]) * n for b, n in enumerate(self.block_ops))
        counts = self.exit_counts() or []
        return ran - sum(c for c, again in zip(counts, self.retakes) if again)

    def entries(self) -> int | None:
        return None if self.tallies is None else int(self.tallies[0])

    def exit_counts(self) -> list[int] | None:
        return None if self.tallies is None else [int(self.tallies[1 + i])
                                                  for i in range(len(self.exits))]


@dataclass
class JitStats:
    traces: list[TraceInfo] = field(default_factory=list)
    declined: list[tuple[int, str]] = field(default_factory=list)   # (header pc, why)
    recordings: int = 0
    side_recordings: int = 0
    links: int = 0
    retried: int = 0
    start_ns: int = 0            # loading the stencils before the first trace (thread CPU)


class Jit:
    def __init__(self, loaded, threshold: int = DEFAULT_THRESHOLD, stats: bool = False,
                 perf_map: bool = False, max_trace: int = MAX_TRACE,
                 max_trace_bytes: int = MAX_TRACE_BYTES, max_code_bytes: int = MAX_CODE_BYTES,
                 stretches: tuple = (), record: bool = True, stencils: dict | None = None,
                 verify_wx: bool = False,
                 source: str = "peachpy", entry_sites: int | None = None,
                 opt: int = 0, link: bool | None = None, side_threshold: int | None = None,
                 regions: bool = True):
        """stretches: (first pc, end pc) of straight-line code to compile as
        traces before the first run (benchmarks place their crossings so);
        record=False: never record hot loops; stencils: {"DUP": "DUP:mine"}
        uses another stencil for an instruction (prototypes); source: where the
        instruction stencils come from, "peachpy" (jitstubs/) or "clang"
        (compiled from isa.py's C bodies by the interpreter's compiler);
        entry_sites (jit-direct-sites): how many copies of ENTER_JIT the traces
        share, trace k entering through copy k mod entry_sites (default: all);
        opt: the trace optimizer's level (jit/optimize.py); link (default: on
        from opt 1): a side exit taken side_threshold times (default: the
        threshold) records a trace from where it resumes and jumps to it,
        and every exit to where a trace starts jumps into that trace;
        regions (from opt 1): a loop trace takes in the short paths its
        recording did not take (trace.add_blocks) instead of side traces."""
        if threshold < 1:
            raise JitError("--jit-threshold must be at least 1")
        f = self.ffi = ffi()
        self.loaded, self.lib, vm = loaded, loaded.lib, loaded.vm
        self.mode = loaded.build.mode
        self.threshold, self.want_stats, self.perf_map = threshold, stats, perf_map
        self.max_trace_bytes, self.max_code_bytes = max_trace_bytes, max_code_bytes
        n = len(loaded.program.code)
        self.entry = f.new("void *[]", n)
        self.counters = f.new("int64_t[]", [threshold if record else NEVER] * n)
        self.stretches = list(stretches)
        # a prototype in place of a standard stencil is checked before any
        # trace uses it: a stencil of another instruction would corrupt the VM
        spec = modes.get(self.mode)
        # the registers the traces run in: the interpreter's compiler's
        # preserve_none order (contract.derive), or another (jit-trampoline)
        self.state = contract.state_of(loaded.build.compiler.name)
        self.trace_state = contract.trace_state(self.state, spec.trace_order)
        if spec.trace_order and source != "peachpy":
            raise JitError(f"{self.mode}: its traces run in another register order than the "
                           f"interpreter's, which {source}-built stencils cannot")
        self.overrides = _stencil_store().check_overrides(
            dict(stencils), self.trace_state, source,
            loaded.build.compiler.name) if stencils else {}
        self.verify_wx = verify_wx       # read /proc/self/maps after every compile (tests)
        self.source = source
        if opt not in LEVELS:
            raise JitError(f"--jit-opt {opt}: choose one of {', '.join(map(str, LEVELS))}")
        self.opt = opt
        self.regions = regions and opt >= 1
        # (with --cache K a linked exit first reloads the values its trace
        # spilled: jit/compile.py _reloads)
        self.link = opt >= 1 if link is None else link
        self.side_threshold = threshold if side_threshold is None else side_threshold
        if self.side_threshold < 1:
            raise JitError("the side exit threshold must be at least 1")
        self.traces_at: dict[int, int] = {}       # pc -> where a trace starting there is entered
        self.waiting: dict[int, list] = {}        # pc -> [(TraceInfo, exit)] not linked yet
        self.side_tries: dict[int, int] = {}
        self.rec_table = int(f.cast("uintptr_t", loaded.lib.sl_jit_rec_table)) if self.link else 0
        names = {ins.name for ins in isa.INSTRUCTIONS}
        self.traceable = f.new("uint8_t[]", [1 if ins.name in TRACEABLE else 0
                                             for ins in isa.INSTRUCTIONS] + [0])
        assert TRACEABLE <= names
        self.max_trace = max_trace
        cap = max(MAX_RECORDING, max_trace)
        self.rec = f.new("int32_t[]", cap)
        self.orig = f.new("int32_t[]", [op for op, _ in loaded.program.code])
        vm.jit_entry, vm.jit_counters, vm.jit_traceable = self.entry, self.counters, self.traceable
        vm.jit_orig = self.orig
        vm.rec_buf, vm.rec_cap = self.rec, cap
        vm.pin_code = 1
        self.handlers = handler_addresses(loaded.build)
        self.code = list(loaded.program.code)
        self.ready = False               # stencils loaded (_ready)
        self.table = None
        self.slots_used = 0
        self.entry_copies: list = []
        if spec.entry_copies:
            copies = vmh.constant("SL_JIT_ENTER_COPIES")
            sites = copies if entry_sites is None else entry_sites
            if not 1 <= sites <= copies:
                raise JitError(f"entry_sites {sites}: choose 1 to {copies}")
            self.entry_copies = [self.lib.sl_jit_enter_copies[i] for i in range(sites)]
        if spec.trace_table:
            enter = int(f.cast("uintptr_t", self.lib.sl_jit_enter_handler))
            self.table = f.new("void *[]", [f.cast("void *", a) for a in self.handlers + [enter]]
                               + [f.NULL] * TABLE_SLOTS)
            self.table_slots = TABLE_SLOTS
            vm.jit_table = self.table
        self.memory = CodeMemory(self.lib, f, min(self.handlers))
        self.stats = JitStats()
        self.retries: dict[int, int] = {}
        self.error: BaseException | None = None
        self._t0: int | None = None       # when the recording being compiled was handed over

    def _ready(self) -> None:
        """The stencils loaded (or built) and what compiling needs of them
        worked out (each one's holes, the exit slots' size), once, before
        the first trace: so a trace's compile time is its own.  Their time is
        the JIT's start (stats.start_ns)."""
        if self.ready:
            return
        t0 = time.thread_time_ns()
        store = _stencil_store()
        store.load(self.state, self.source, self.loaded.build.compiler.name)
        if modes.get(self.mode).trace_order:
            store.load(self.trace_state)
        ctx = self._context(0)
        ctx.tallies, ctx.heat = (0 if self.want_stats else None), (0 if self.link else None)
        _jit_compile().prepare(ctx)
        self.ready = True
        self.stats.start_ns = time.thread_time_ns() - t0

    # -- the run stopped with SL_JIT_RECORDED ----------------------------------------
    def recorded(self) -> None:
        """Compile (or decline) what was recorded; the run then resumes."""
        vm = self.loaded.vm
        try:
            self._ready()
        except Exception as e:      # as a failed compile: stop jitting, fail after the run
            self.error = e
            for i in range(len(self.code)):
                self.counters[i] = NEVER
            vm.rec_len = 0
            return
        self._t0 = time.thread_time_ns()      # the recording's phase starts
        try:
            self._compile_recording(vm)
        except Exception as e:      # stop jitting; the run finishes, then fails with it
            self.error = e
            for i in range(len(self.code)):
                self.counters[i] = NEVER
        finally:
            vm.rec_len = 0
            self._t0 = None

    def _compile_recording(self, vm) -> None:
        f = self.ffi
        self.stats.recordings += 1
        code_base = int(f.cast("uintptr_t", vm.code))
        stop_pc = (int(f.cast("uintptr_t", vm.ip)) - code_base) // 8
        # one C-level copy: a recording through long inner loops has tens of
        # thousands of pcs, and a list of Python ints of them cost ~1 ms
        rec = array("i")
        rec.frombytes(f.buffer(self.rec, 4 * vm.rec_len))
        start = (int(f.cast("uintptr_t", vm.rec_start)) - code_base) // 8
        hot = [(info, i) for info, i in self.waiting.get(start, ()) if int(info.heat[i]) <= 0]
        if hot:
            self._side_recording(vm, rec, stop_pc, start, code_base, hot)
            return
        try:
            if vm.rec_len >= vm.rec_cap and len(rec) > 1:
                # the buffer filled (an inner loop ran long): keep the path up to
                # its last instruction, which the trace leaves to run
                stop_pc, rec = rec[-1], rec[:-1]
            trace = from_recording(self.code, rec, stop_pc,
                                   stop_op=int(vm.code[stop_pc].op), max_ops=self.max_trace)
            if trace.retry and self.retries.get(start, 0) < RETRIES:
                raise Decline(trace.why_end, retry=True)
        except Decline as d:
            if d.retry and self.retries.get(start, 0) < RETRIES:
                self.retries[start] = self.retries.get(start, 0) + 1
                self.stats.retried += 1
                self.counters[start] = self.threshold
            else:
                self.counters[start] = NEVER
                self.stats.declined.append((start, d.reason))
            return
        self.counters[start] = NEVER
        blocks = add_blocks(trace, self.code, self.max_trace) if self.regions else 0
        self._install(trace, code_base, blocks=blocks)

    def _side_recording(self, vm, rec, stop_pc, start, code_base, hot) -> None:
        """A hot side exit recorded the path from where it resumes: a trace
        from there to the first place that has a trace (its end jumps in)."""
        self.stats.side_recordings += 1
        traced = frozenset(self.traces_at)
        cut = first_of(rec, traced, 1)
        if cut is not None:
            stop_pc, rec = rec[cut], rec[:cut]
        elif vm.rec_len >= vm.rec_cap and len(rec) > 1:
            stop_pc, rec = rec[-1], rec[:-1]
        stop_op = ENTER_JIT if stop_pc in traced else int(vm.code[stop_pc].op)
        try:
            trace = from_recording(self.code, rec, stop_pc, stop_op=stop_op,
                                   max_ops=self.max_trace, traced=traced)
        except Decline as d:
            # try again later, a few times: the path from a side exit varies
            tries = self.side_tries[start] = self.side_tries.get(start, 0) + 1
            for info, i in hot:
                info.heat[i] = NEVER if tries >= RETRIES + 1 else self.side_threshold << (3 * tries)
            if tries >= RETRIES + 1:
                self.stats.declined.append((start, f"side exit: {d.reason}"))
            return
        trace.retry = False
        self._install(trace, code_base, side=True)

    def _link(self, info: "TraceInfo", exit_index: int, target: int) -> None:
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

    def prepared(self) -> None:
        """The VM has its code in place: compile the requested stretches."""
        code_base = int(self.ffi.cast("uintptr_t", self.loaded.vm.code))
        if self.stretches:
            self._ready()
        for start, end in self.stretches:
            if not 0 <= start < end <= len(self.code):
                raise JitError(f"stretch {start}..{end} is outside the code")
            ops = []
            for pc in range(start, end):
                op, arg = self.code[pc]
                ins = isa.INSTRUCTIONS[op]
                if ins.name not in TRACEABLE or ins.flow is not isa.Flow.NEXT:
                    raise JitError(f"stretch {start}..{end}: {ins.name} at pc {pc} is not "
                                   "straight-line code with a stencil")
                ops.append(TraceOp(pc, op, arg, ins.name))
            self.counters[start] = NEVER
            self._install(Trace(start, ops, closed=False, end_pc=end, why_end="stretch ends"),
                          code_base)

    def relocate(self, seed: int) -> None:
        """A new memory layout for the VM (code included) and new places for
        every trace: what a benchmark with installed stretches does before
        each measured run, so its samples are over layouts, not one."""
        if self.stats.recordings or len(self.stats.traces) != len(self.stretches):
            raise JitError("only installed stretches can be relocated (recorded traces "
                           "belong to the code address they were recorded at)")
        self.memory.release()
        self.stats.traces.clear()
        self.slots_used = 0
        if self.lib.sl_relayout(self.loaded.vm, seed & 0xFFFFFFFF or 1):
            raise JitError("out of memory moving the VM to a new layout")
        self.prepared()

    def _install(self, trace: Trace, code_base: int, side: bool = False, blocks: int = 0) -> None:
        f = self.ffi
        t_in = time.thread_time_ns()
        # a recorded trace: the time since the recording was handed over (stretches: none)
        record_ns, self._t0 = (t_in - self._t0, None) if self._t0 is not None else (0, None)
        if self.overrides:
            # replace keeps every other field (an inner back-edge's loop_pc)
            trace.ops = [replace(t, stencil=self.overrides.get(t.stencil, t.stencil))
                         for t in trace.ops]
        info = TraceInfo(len(self.stats.traces), trace.start, len(trace.ops), 0, trace.closed,
                         trace.why_end, [], side=side)
        ctx = self._context(code_base)
        # an upper bound on exits: a deopt and a branch per instruction, and
        # a bounds check's deopt per stretch
        nexits = 2 + 3 * len(trace.ops)
        if self.want_stats:
            info.tallies = f.new("int64_t[]", 1 + nexits)
            ctx.tallies = int(f.cast("uintptr_t", info.tallies))
            info.blocks = f.new("int64_t[]", 8 + 4 * len(trace.ops))   # one a guard, at most
            ctx.blocks = int(f.cast("uintptr_t", info.blocks))
        if self.link:
            info.heat = f.new("int64_t[]", [self.side_threshold] * nexits)
            ctx.heat = int(f.cast("uintptr_t", info.heat))
            ctx.rec_table = self.rec_table
            ctx.traces_at = dict(self.traces_at)
        jit_compile = _jit_compile()
        t_opt = time.thread_time_ns()
        jit_compile.lower(trace, ctx)           # the optimizer (compile_trace reuses its pieces)
        optimize_ns = time.thread_time_ns() - t_opt
        # laid out once: its size decides where it goes, then it is patched there
        compiled = jit_compile.compile_trace(trace, ctx, None, size_only=True)
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
            # entered from another trace past its entry tally, so --stats counts
            # only the entries that cross from the interpreter
            # (and past an entry trampoline: a trace is already in the traces' order)
            self.traces_at[trace.start] = address + compiled.entry_stub + (compiled.entry_tally or 0)
            for i, ex in enumerate(compiled.exits):
                if not ex.deopt and not info.linked[i]:
                    self.waiting.setdefault(ex.pc, []).append((info, i))
            for other, i in self.waiting.pop(trace.start, ()):
                self._link(other, i, self.traces_at[trace.start])
            for pc in {ex.pc for ex in compiled.exits}:    # drop what linking just linked
                if pc in self.waiting:
                    self.waiting[pc] = [(t, i) for t, i in self.waiting[pc] if not t.linked[i]]
        if self.perf_map:
            self._write_perf_map(info, compiled)
        if self.verify_wx:
            _check_no_wx_mapping()
        if record_ns:
            info.record_ns, info.optimize_ns = record_ns, optimize_ns
            # the rest of installing it is copy-and-patch's (ENTER_JIT's patch below is a store)
            info.compile_ns = time.thread_time_ns() - t_in - optimize_ns
        if side:                 # reached only through its side exit: no ENTER_JIT
            return
        self.entry[trace.start] = f.cast("void *", address)
        op = ENTER_JIT
        if self.table is not None and self.slots_used < self.table_slots:
            # jit-table: the trace gets an opcode of its own whose table slot is
            # the trace, so the interpreter dispatches straight into it
            op = ENTER_JIT + 1 + self.slots_used
            self.table[op] = (self.entry_copies[self.slots_used % len(self.entry_copies)]
                              if self.entry_copies else f.cast("void *", address))
            self.slots_used += 1
        f.cast("sl_instr *", self.loaded.vm.code)[trace.start].op = op

    def _context(self, code_base: int):
        """What compiling a trace of this program needs (its arrays aside)."""
        build = self.loaded.build
        return _jit_compile().Context(self.mode, code_base, self.loaded.program.consts, self.code,
                                   self.handlers, count=build.count, state=self.state,
                                   source=self.source, cc=build.compiler.name, opt=self.opt,
                                   cache=build.cache, tape_len=int(self.loaded.vm.tape_len))

    def _write_perf_map(self, info: TraceInfo, compiled) -> None:
        name = self.loaded.program.name
        lines = [f"{info.address:x} {info.size:x} shimlab:trace{info.index}:{name}:pc{info.start}\n"]
        for off, size, sym in compiled.symbols:
            lines.append(f"{info.address + off:x} {size:x} shimlab:trace{info.index}:{sym}\n")
        with open(f"/tmp/perf-{os.getpid()}.map", "a") as fh:
            fh.writelines(lines)

    # -- after a run -------------------------------------------------------------
    def check(self) -> None:
        if self.error is not None:
            e, self.error = self.error, None
            if isinstance(e, ShimlabError):
                raise e
            raise JitError(f"the JIT failed: {type(e).__name__}: {e}") from e

    def report(self, counts=None) -> str:
        """--stats; counts (a count build's per-opcode counts) adds the share
        of VM instructions that ran in traces."""
        s = self.stats
        lines = [f"jit ({self.mode}): {len(s.traces)} trace(s) compiled, "
                 f"{len(s.declined)} declined, {s.recordings} recording(s), "
                 f"{sum(t.size for t in s.traces)} bytes of code"
                 + (" (dual-mapped: the kernel refused mprotect to exec)"
                    if self.memory.dual else "")]
        side = sum(1 for t in s.traces if t.side)
        loops = s.recordings - s.side_recordings
        lines.append(f"  recordings: {loops} at hot loops ({len(s.traces) - side - len(self.stretches)}"
                     f" compiled, {s.retried} retried because the path left the loop), "
                     f"{s.side_recordings} at hot side exits ({side} compiled); "
                     f"{s.links} exit(s) linked to traces, trace optimizer level {self.opt}")
        if s.start_ns:
            lines.append(f"  the JIT's start (stencils loaded before the first trace): "
                         f"{s.start_ns / 1e6:.1f} ms")
        lines += trace_times(s.traces)
        ran = [t.executed() for t in s.traces]
        if counts is not None and None not in ran:
            total = sum(int(c) for c in list(counts)[:isa.NUM_OPCODES])
            share = 100.0 * sum(ran) / total if total else 0.0
            lines.append(f"  VM instructions run in traces: {sum(ran)} of {total} ({share:.1f}%)")
        for t in s.traces:
            pos = self.loaded.program.position(t.start)
            where = f" ({self.loaded.program.name}:{pos[0]})" if pos and pos[0] else ""
            ent = t.entries()
            kind = "side trace from pc" if t.side else "loop at pc"
            lines.append(f"  trace {t.index}: {kind} {t.start}{where}, {t.ops} instructions, "
                         f"{t.size} bytes, {'loops' if t.closed else 'ends: ' + t.why_end}"
                         + ("" if ent is None else f", entered {ent} times from the interpreter")
                         + ("" if t.executed() is None else f", ran {t.executed()} instructions"))
            if t.folded:
                lines.append("      optimizer: " + ", ".join(f"{n} {what}" for what, n in
                                                            sorted(t.folded.items())))
            if t.linked and any(t.linked):
                lines.append(f"      {sum(t.linked)} of {len(t.exits)} exits linked to traces")
            counts_ = t.exit_counts()
            if counts_ is None:
                lines.append(f"      {len(t.exits)} exits, to pcs {', '.join(map(str, t.exits))}")
                continue
            for i, pc in enumerate(t.exits):
                if counts_[i]:
                    lines.append(f"      exit {i} -> pc {pc}: taken {counts_[i]} times")
            idle = sum(1 for c in counts_ if not c)
            if idle:
                lines.append(f"      {idle} other exit(s) never taken (or linked before)")
        for pc, why in s.declined:
            lines.append(f"  declined: loop at pc {pc}: {why}")
        return "\n".join(lines)

    def close(self) -> None:
        self.memory.release()


PHASES = ("record", "optimize", "compile")


def phase_times(traces) -> dict | None:
    """The recorded traces' mean time by phase (ms), a trace and per 100 VM
    instructions (their total time over their total instructions: a mean
    of per-trace ratios would be ruled by the one-instruction traces);
    None when no trace was recorded."""
    timed = [t for t in traces if t.record_ns]
    if not timed:
        return None
    ops = sum(t.ops for t in timed)
    out = {"traces": len(timed), "instructions": ops / len(timed)}
    for phase in PHASES + ("all",):
        ns = sum(t.record_ns + t.optimize_ns + t.compile_ns if phase == "all"
                 else getattr(t, f"{phase}_ns") for t in timed)
        out[phase] = ns / len(timed) / 1e6
        out[f"{phase} per 100"] = ns / max(ops, 1) * 100 / 1e6
    out.update(_line_at_100(timed))
    return out


def _line_at_100(timed) -> dict:
    """What one trace of 100 instructions takes: the least-squares line of a
    trace's whole time against its instructions, read at 100 (ms), with its
    intercept (what every trace costs, however short) and slope (per
    instruction, ms).  The per-100 ratio above charges short traces' fixed
    cost to their few instructions; this does not.  Empty without two
    traces of different lengths.  (fits, not bench.stats: the JIT sits below
    the benchmarks and a run's --stats should not import numpy.)"""
    fit = fits.line([t.ops for t in timed],
                    [(t.record_ns + t.optimize_ns + t.compile_ns) / 1e6 for t in timed])
    if fit is None:
        return {}
    a, b = fit
    return {"at 100": a + 100 * b, "fixed": a, "per instruction": b}


def trace_times(traces) -> list[str]:
    """--stats: the lines of phase_times."""
    p = phase_times(traces)
    if p is None:
        return []
    return [f"  trace time (CPU), mean of {p['traces']} recorded trace(s) of "
            f"{p['instructions']:.0f} instructions: "
            + ", ".join(f"{ph} {p[ph]:.3f}" for ph in PHASES) + f", in all {p['all']:.3f} ms",
            "      per 100 instructions: "
            + ", ".join(f"{ph} {p[ph + ' per 100']:.3f}" for ph in PHASES)
            + f", in all {p['all per 100']:.3f} ms"] + (
            [f"      a trace of 100 instructions (least-squares line over the traces): "
             f"{p['at 100']:.3f} ms ({p['fixed']:.3f} ms a trace + "
             f"{p['per instruction'] * 1e3:.1f} us an instruction)"] if "at 100" in p else [])


def _check_no_wx_mapping() -> None:
    """W^X, checked: no mapping of this process is writable and executable."""
    with open("/proc/self/maps") as f:
        bad = [line.strip() for line in f if "w" in line.split()[1] and "x" in line.split()[1]]
    if bad:
        raise JitError(f"a mapping is writable and executable: {bad[0]}")
