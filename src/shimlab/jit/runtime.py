"""The JIT attached to one loaded program: counters and recorder buffers for
the C interpreter, the hook it calls when a recording is ready, trace
installation (ENTER_JIT at the loop header), --stats and --perf-map."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from .. import isa, modes
from ..abi import contract
from ..abi import vmh
from ..abi.vmh import ffi
from ..errors import ShimlabError
from ..interp.loader import TABLE_SLOTS, handler_addresses
from . import compile as jit_compile
from .memory import CodeMemory
from .trace import TRACEABLE, Decline, Trace, TraceOp, from_recording

DEFAULT_THRESHOLD = 64
MAX_TRACE = 2000              # VM instructions in one trace
MAX_RECORDING = 200_000       # VM instructions one recording may log (inner loops included)
MAX_TRACE_BYTES = 256 << 10   # machine code of one trace
MAX_CODE_BYTES = 64 << 20     # all traces of one program
RETRIES = 2                   # recordings that left the loop before a linear trace is kept
NEVER = (1 << 63) - 1
ENTER_JIT = isa.NUM_OPCODES


class JitError(ShimlabError):
    pass


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


class Jit:
    def __init__(self, loaded, threshold: int = DEFAULT_THRESHOLD, stats: bool = False,
                 perf_map: bool = False, max_trace: int = MAX_TRACE,
                 max_trace_bytes: int = MAX_TRACE_BYTES, max_code_bytes: int = MAX_CODE_BYTES,
                 stretches: tuple = (), record: bool = True, stencils: dict | None = None,
                 verify_wx: bool = False,
                 source: str = "peachpy", entry_sites: int | None = None):
        """stretches: (first pc, end pc) of straight-line code to compile as
        traces before the first run (benchmarks place their crossings so);
        record=False: never record hot loops; stencils: {"DUP": "DUP:mine"}
        uses another stencil for an instruction (prototypes); source: where the
        instruction stencils come from, "peachpy" (jitstubs/) or "clang"
        (compiled from isa.py's C bodies by the interpreter's compiler);
        entry_sites (jit-direct-sites): how many copies of ENTER_JIT the traces
        share, trace k entering through copy k mod entry_sites (default: all)."""
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
        self.overrides = dict(stencils or {})
        self.verify_wx = verify_wx       # read /proc/self/maps after every compile (tests)
        self.source = source
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
        # the stencils' registers are those the interpreter's compiler passes
        # preserve_none arguments in, read from that compiler (contract.derive)
        self.state = contract.state_of(loaded.build.compiler.name)
        self.table = None
        self.slots_used = 0
        spec = modes.get(self.mode)
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
        self.code = list(loaded.program.code)

    # -- the run stopped with SL_JIT_RECORDED ----------------------------------------
    def recorded(self) -> None:
        """Compile (or decline) what was recorded; the run then resumes."""
        vm = self.loaded.vm
        try:
            self._compile_recording(vm)
        except Exception as e:      # stop jitting; the run finishes, then fails with it
            self.error = e
            for i in range(len(self.code)):
                self.counters[i] = NEVER
        finally:
            vm.rec_len = 0

    def _compile_recording(self, vm) -> None:
        f = self.ffi
        self.stats.recordings += 1
        code_base = int(f.cast("uintptr_t", vm.code))
        stop_pc = (int(f.cast("uintptr_t", vm.ip)) - code_base) // 8
        rec = f.unpack(self.rec, vm.rec_len)
        start = (int(f.cast("uintptr_t", vm.rec_start)) - code_base) // 8
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
                self.counters[start] = self.threshold
            else:
                self.counters[start] = NEVER
                self.stats.declined.append((start, d.reason))
            return
        self.counters[start] = NEVER
        self._install(trace, code_base)

    def prepared(self) -> None:
        """The VM has its code in place: compile the requested stretches."""
        code_base = int(self.ffi.cast("uintptr_t", self.loaded.vm.code))
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

    def _install(self, trace: Trace, code_base: int) -> None:
        f = self.ffi
        if self.overrides:
            # replace keeps every other field (an inner back-edge's loop_pc)
            trace.ops = [replace(t, stencil=self.overrides.get(t.stencil, t.stencil))
                         for t in trace.ops]
        info = TraceInfo(len(self.stats.traces), trace.start, len(trace.ops), 0, trace.closed,
                         trace.why_end, [])
        ctx = jit_compile.Context(self.mode, code_base, self.loaded.program.consts, self.code,
                                  self.handlers, count=self.loaded.build.count,
                                  state=self.state, source=self.source,
                                  cc=self.loaded.build.compiler.name)
        if self.want_stats:
            nexits = 1 + 2 * len(trace.ops)         # an upper bound: one slot per guard
            info.tallies = f.new("int64_t[]", 1 + nexits)
            ctx.tallies = int(f.cast("uintptr_t", info.tallies))
        compiled = jit_compile.compile_trace(trace, ctx, None)     # to learn the size
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
            compiled = jit_compile.compile_trace(trace, ctx, address)
            return compiled.code
        address = self.memory.place(len(compiled.code), fill)
        info.address, info.size = address, len(compiled.code)
        info.exits = [e.pc for e in compiled.exits]
        self.stats.traces.append(info)
        if self.perf_map:
            self._write_perf_map(info, compiled)
        if self.verify_wx:
            _check_no_wx_mapping()
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

    def report(self) -> str:
        s = self.stats
        lines = [f"jit ({self.mode}): {len(s.traces)} trace(s) compiled, "
                 f"{len(s.declined)} declined, {s.recordings} recording(s), "
                 f"{sum(t.size for t in s.traces)} bytes of code"
                 + (" (dual-mapped: the kernel refused mprotect to exec)"
                    if self.memory.dual else "")]
        for t in s.traces:
            pos = self.loaded.program.position(t.start)
            where = f" ({self.loaded.program.name}:{pos[0]})" if pos and pos[0] else ""
            ent = t.entries()
            lines.append(f"  trace {t.index}: loop at pc {t.start}{where}, {t.ops} instructions, "
                         f"{t.size} bytes, {'loops' if t.closed else 'ends: ' + t.why_end}"
                         + ("" if ent is None else f", entered {ent} times"))
            counts = t.exit_counts()
            if counts is None:
                lines.append(f"      {len(t.exits)} exits, to pcs {', '.join(map(str, t.exits))}")
                continue
            for i, pc in enumerate(t.exits):
                if counts[i]:
                    lines.append(f"      exit {i} -> pc {pc}: taken {counts[i]} times")
            idle = sum(1 for c in counts if not c)
            if idle:
                lines.append(f"      {idle} other exit(s) never taken")
        for pc, why in s.declined:
            lines.append(f"  declined: loop at pc {pc}: {why}")
        return "\n".join(lines)

    def close(self) -> None:
        self.memory.release()


def _check_no_wx_mapping() -> None:
    """W^X, checked: no mapping of this process is writable and executable."""
    with open("/proc/self/maps") as f:
        bad = [line.strip() for line in f if "w" in line.split()[1] and "x" in line.split()[1]]
    if bad:
        raise JitError(f"a mapping is writable and executable: {bad[0]}")
