"""The JIT attached to one loaded program: its options checked, counters and
recorder buffers for the C interpreter, the hooks the interpreter calls (a
recording is ready, the code is in place) and the recording policy.  Where a
trace goes is install.py's; what --stats prints is report.py's."""
from __future__ import annotations

import time
from functools import cached_property
from array import array

from .. import isa, modes
from ..abi import contract
from ..abi import vmh
from ..abi.vmh import ffi
from ..errors import JitError, ShimlabError
from ..interp.loader import TABLE_SLOTS, handler_addresses
from .defaults import DEFAULT_THRESHOLD, LEVELS, trace_cache_setting
from .policy import initial_counters, payback_countdown, records_nothing, remembered_wait

# What makes, places and reports traces (install, memory, report, trace) is
# imported when the JIT first needs it: a run whose loops never get hot, or
# end before its payback, pays for none of it (~3 ms of a process, issue 24).

MAX_TRACE = 2000              # VM instructions in one trace
MAX_RECORDING = 200_000       # VM instructions one recording may log (inner loops included)
MAX_TRACE_BYTES = 256 << 10   # machine code of one trace
MAX_CODE_BYTES = 64 << 20     # all traces of one program
RETRIES = 2                   # recordings that left the loop before a linear trace is kept
NEVER = (1 << 63) - 1


# The compiler and the stencils are imported, and the stencils loaded, when
# the first trace is made (Jit._ready): a run whose loops never get hot pays
# for neither (about 0.1 s of a JIT process's start-up, issue 24).
def _stencil_store():
    from . import stencil_store
    return stencil_store


class Jit:
    def __init__(self, loaded, threshold: int = DEFAULT_THRESHOLD, stats: bool = False,
                 perf_map: bool = False, max_trace: int = MAX_TRACE,
                 max_trace_bytes: int = MAX_TRACE_BYTES, max_code_bytes: int = MAX_CODE_BYTES,
                 stretches: tuple = (), record: bool = True, stencils: dict | None = None,
                 verify_wx: bool = False,
                 source: str = "peachpy", entry_sites: int | None = None,
                 opt: int = 0, link: bool | None = None, side_threshold: int | None = None,
                 regions: bool = True, trace_cache: str | bool | None = False,
                 payback_ms: float = 0, loading_since_ns: int | None = None,
                 history=None):
        """stretches: (first pc, end pc) of straight-line code to compile as
        traces before the first run (benchmarks place their crossings so);
        record=False: never record hot loops; stencils: {"DUP": "DUP:mine"}
        uses another stencil for an instruction (prototypes); source: where the
        instruction stencils come from, "peachpy" (peachpy_stencils/) or "clang"
        (compiled from isa.py's C bodies by the interpreter's compiler);
        entry_sites (jit-direct-sites): how many copies of ENTER_JIT the traces
        share, trace k entering through copy k mod entry_sites (default: all);
        opt: the trace optimizer's level (jit/optimize.py); link (default: on
        from opt 1): a side exit taken side_threshold times (default: the
        threshold) records a trace from where it resumes and jumps to it,
        and every exit to where a trace starts jumps into that trace;
        regions (from opt 1): a loop trace takes in the short paths its
        recording did not take (trace.add_blocks) instead of side traces;
        trace_cache: place traces recorded again from the plans earlier
        runs kept (jit/trace_cache.py: "on"/True, "verify", "off"/False, the
        default, or None: as $SHIMLAB_TRACE_CACHE says, on when unset:
        `shimlab run`'s default); payback_ms: compile nothing until the run
        has spent this much CPU time in the interpreter (0: from the first
        recording; policy.payback_countdown); loading_since_ns: the thread
        CPU time when the caller began loading the program (`run`'s child):
        the run history's lengths count from there to the end of close(),
        as a run that sits the JIT out counts its own (sit_out.py); history:
        the run history the caller read (run_history.RunHistory), else this
        JIT reads its own where it keeps one."""
        load_t0 = time.thread_time_ns() if loading_since_ns is None else loading_since_ns
        if threshold < 1:
            raise JitError("--jit-threshold must be at least 1")
        f = self.ffi = ffi()
        self.loaded, self.lib, vm = loaded, loaded.lib, loaded.vm
        self.mode = loaded.build.mode
        self.threshold, self.want_stats = threshold, stats
        n = len(loaded.program.code)
        self.entry = f.new("void *[]", n)
        # (every pc counts: loop headers, function entries, return points; policy.py)
        self.counters = f.new("int64_t[]", initial_counters(loaded.program.code,
                                                            threshold if record else NEVER))
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
        overrides = _stencil_store().check_overrides(
            dict(stencils), self.trace_state, source,
            loaded.build.compiler.name) if stencils else {}
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
        self.side_tries: dict[int, int] = {}
        names = {ins.name for ins in isa.INSTRUCTIONS}
        self.traceable = f.new("uint8_t[]", [1 if ins.name in isa.TRACEABLE else 0
                                             for ins in isa.INSTRUCTIONS] + [0])
        assert isa.TRACEABLE <= names
        self.max_trace = max_trace
        cap = max(MAX_RECORDING, max_trace)
        self.rec = f.new("int32_t[]", cap)
        self.orig = f.new("int32_t[]", [op for op, _ in loaded.program.code])
        vm.jit_entry, vm.jit_counters, vm.jit_traceable = self.entry, self.counters, self.traceable
        vm.jit_orig = self.orig
        vm.rec_buf, vm.rec_cap = self.rec, cap
        self.rec_cap = cap
        vm.pin_code = 1
        self.handlers = handler_addresses(loaded.build)
        self.code = list(loaded.program.code)
        # what a CALL's stencil is patched with (optimize.Frames)
        self.funcs = [(fn.nargs, fn.nlocals, fn.max_stack) for fn in loaded.program.functions]
        self.entries = frozenset(fn.entry for fn in loaded.program.functions)
        self.returns = None              # where each RETURN can go: made by _ready
        self.ready = False               # stencils loaded (_ready)
        table, entry_copies = None, []
        if spec.entry_copies:
            copies = vmh.constant("SL_JIT_ENTER_COPIES")
            sites = copies if entry_sites is None else entry_sites
            if not 1 <= sites <= copies:
                raise JitError(f"entry_sites {sites}: choose 1 to {copies}")
            entry_copies = [self.lib.sl_jit_enter_copies[i] for i in range(sites)]
        if spec.trace_table:
            enter = int(f.cast("uintptr_t", self.lib.sl_jit_enter_handler))
            table = f.new("void *[]", [f.cast("void *", a) for a in self.handlers + [enter]]
                          + [f.NULL] * TABLE_SLOTS)
            vm.jit_table = table
        self._stats = self._memory = self._installer = None     # made when first asked for
        self._installer_args = dict(
            table=table, table_slots=TABLE_SLOTS,
            entry_copies=entry_copies, link=self.link, side_threshold=self.side_threshold,
            rec_table=int(f.cast("uintptr_t", loaded.lib.sl_jit_rec_table)) if self.link else 0,
            overrides=overrides, max_trace_bytes=max_trace_bytes,
            max_code_bytes=max_code_bytes, perf_map=perf_map,
            verify_wx=verify_wx)       # verify_wx: read /proc/self/maps after every compile (tests)
        self.retries: dict[int, int] = {}
        self.error: BaseException | None = None
        self._t0: int | None = None       # when the recording being compiled was handed over
        if trace_cache is False:
            self.trace_cache_setting = "off"
        else:                             # None: $SHIMLAB_TRACE_CACHE says
            self.trace_cache_setting = trace_cache_setting(trace_cache)
        self.overrides = overrides
        self.trace_cache = None           # opened by _ready when the setting allows
        self._replay_done = False         # its replay list installed (_replay)
        if payback_ms < 0:
            raise JitError("the JIT's payback time cannot be negative")
        self.payback_ns = self.payback_asked_ns = int(payback_ms * 1e6)
        # with the trace cache, `shimlab run`'s wait as the last run of this
        # program suggests (run_history.py, policy.remembered_wait)
        self.history = None
        if self.payback_ns and self.trace_cache_setting != "off":
            if history is None:
                from .run_history import RunHistory, run_options
                build = loaded.build
                history = RunHistory(run_options(self.mode, opt, build.cache, build.count,
                                                 vm.tape_len),
                                     self.code, loaded.program.consts, self.program_digest)
            else:   # (the key holds the program's digest: not hashed again for the trace cache)
                self.__dict__["program_digest"] = history.key[1]
            self.history = history
            self.payback_ns = remembered_wait(self.history.last, self.payback_ns)
        if self.payback_ns:
            # while the JIT waits, a loop that gets hot stops the run at once,
            # recording nothing (sl_rec stops at a full buffer): recordings
            # made only to be dropped took modpow.py's interpreter-only run
            # from 23.1 to 33.7 ms in the VM (--stats, Zen 3)
            vm.rec_cap = 0
        self._run_t0 = time.thread_time_ns()      # (prepared() sets it again)
        self._load_t0 = load_t0                   # the history's lengths count from here
        self._jit_from_ns: int | None = None      # when in it the JIT started (_ready)
        self._jit_own_ns = 0                      # its time in recorded(), the JIT's own work
        self._waits: dict[int, tuple[int, int]] = {}    # pc: (when, countdown) of its last wait
        # recordings dropped so (--stats; counted here, as JitStats is made only when needed)
        self.payback_waits = 0

    @property
    def stats(self):
        """What the JIT did (report.JitStats)."""
        if self._stats is None:
            from .report import JitStats
            self._stats = JitStats()
        return self._stats

    @property
    def memory(self):
        """The traces' code memory (memory.CodeMemory)."""
        if self._memory is None:
            from .memory import CodeMemory
            self._memory = CodeMemory(self.lib, self.ffi, min(self.handlers))
        return self._memory

    @property
    def installer(self):
        """Where traces are placed and made reachable (install.Installer)."""
        if self._installer is None:
            from .install import Installer
            self._installer = Installer(self, self.memory, self.stats, **self._installer_args)
        return self._installer

    @cached_property
    def program_digest(self) -> str:
        """The key both caches file this program under (hashed once)."""
        from ..digest import program_digest
        return program_digest(self.code, self.loaded.program.consts)

    def _ready(self) -> None:
        """The stencils loaded (or built) and the exit slots' size worked
        out, once, before the first trace: so a trace's compile time is its
        own (but for a few microseconds the first time it uses a stencil,
        compile._shape).  Their time is the JIT's start (stats.start_ns)."""
        if self.ready:
            return
        t0 = time.thread_time_ns()
        self._jit_from_ns = max(1, t0 - self._load_t0)
        from .trace import return_points
        self.returns = return_points(self.code, sorted(self.entries))
        store = _stencil_store()
        store.load(self.state, self.source, self.loaded.build.compiler.name)
        if modes.get(self.mode).trace_order:
            store.load(self.trace_state)
        ctx = self.context(0)
        ctx.tallies, ctx.heat = (0 if self.want_stats else None), (0 if self.link else None)
        from .install import trace_compiler
        trace_compiler().prepare(ctx)
        self.trace_cache = self._open_trace_cache()
        self.ready = True
        self.stats.start_ns = time.thread_time_ns() - t0

    def _replay(self, vm) -> bool:
        """Once, when the JIT starts: the traces the trace cache lists from
        the last run, installed in its order (side traces linked as they
        were).  True when it installed any: the recording that started the
        JIT is then dropped (its loop may have a trace now; if not, it
        gets hot again)."""
        cache = self.trace_cache
        if cache is None or self._replay_done:
            return False
        self._replay_done = True
        entries = cache.traces(self.code)
        if not entries:
            return False
        t0 = time.thread_time_ns()
        code_base = int(self.ffi.cast("uintptr_t", vm.code))
        for trace, side, blocks in entries:
            before = len(self.stats.traces)
            self.installer.install(trace, code_base, side=side, blocks=blocks)
            if len(self.stats.traces) > before:
                self.stats.traces[-1].replayed = True
                cache.replayed += 1
                if not side:
                    self.counters[trace.start] = NEVER
        cache.replay_ns = time.thread_time_ns() - t0
        start = self._pc_of(vm, vm.rec_start)
        if self.counters[start] != NEVER:
            self.counters[start] = self.threshold
        vm.rec_len = 0
        return True

    def _open_trace_cache(self):
        """The plans of earlier runs of this program under these options, or
        None: the cache is off, or a trace's stencils are not only the
        artifact's (--stencil, a registered prototype, clang-built ones)."""
        from . import trace_cache
        setting = self.trace_cache_setting
        store = _stencil_store()
        if setting == "off" or self.overrides or self.source != "peachpy" or store.registered():
            return None
        spec = modes.get(self.mode)
        digests = (store.digest(self.state),
                   store.digest(self.trace_state) if spec.trace_order else "")
        if None in digests:
            return None
        build = self.loaded.build
        # everything a layout depends on besides the trace itself (its
        # instructions are each plan's own key) and the program (the file's)
        options = (self.mode, self.opt, bool(build.count), build.cache,
                   int(self.loaded.vm.tape_len), self.want_stats, self.link, self.source,
                   tuple(sorted(self.state.items())), digests, tuple(self.funcs))
        try:
            return trace_cache.TraceCache(options, self.code, self.loaded.program.consts,
                                          verify=setting == "verify",
                                          program=self.program_digest)
        except (ValueError, OSError):      # (a key marshal cannot write): compile as without
            return None

    # -- the run stopped with SL_JIT_RECORDED ----------------------------------------
    def recorded(self) -> None:
        """Compile (or decline) what was recorded; the run then resumes."""
        t0 = time.thread_time_ns()
        try:
            self._recorded(self.loaded.vm)
        finally:
            self._jit_own_ns += time.thread_time_ns() - t0

    def _recorded(self, vm) -> None:
        if not self.ready and self.payback_ns and self._wait_for_payback(vm):
            return
        if vm.rec_cap == 0:
            # the wait is over: record at this pc's next arrival, from its start
            vm.rec_cap, vm.rec_len = self.rec_cap, 0
            self.counters[self._pc_of(vm, vm.rec_start)] = 1
            return
        try:
            self._ready()
            if self._replay(vm):
                return
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

    def _wait_for_payback(self, vm) -> bool:
        """Before the JIT's start has paid for itself: drop the recording and
        count the loop down again to about when it will have (True)."""
        now = time.thread_time_ns()
        ran = now - self._run_t0
        if ran >= self.payback_ns:
            return False
        start = self._pc_of(vm, vm.rec_start)
        last = self._waits.get(start)
        since, counted = (now - last[0], last[1]) if last else (ran, self.threshold)
        countdown = payback_countdown(counted, since, self.payback_ns - ran, self.threshold)
        self.counters[start] = countdown
        self._waits[start] = (now, countdown)
        self.payback_waits += 1
        vm.rec_len = 0
        return True

    def _pc_of(self, vm, ptr) -> int:
        """The pc of a pointer into the VM's code (vm.ip, vm.rec_start)."""
        cast = self.ffi.cast
        return (int(cast("uintptr_t", ptr)) - int(cast("uintptr_t", vm.code))) // 8

    def _compile_recording(self, vm) -> None:
        from .trace import Decline, add_blocks, from_recording
        f = self.ffi
        self.stats.recordings += 1
        code_base = int(f.cast("uintptr_t", vm.code))
        stop_pc = self._pc_of(vm, vm.ip)
        # one C-level copy: a recording through long inner loops has tens of
        # thousands of pcs, and a list of Python ints of them cost ~1 ms
        rec = array("i")
        rec.frombytes(f.buffer(self.rec, 4 * vm.rec_len))
        start = self._pc_of(vm, vm.rec_start)
        hot = [(info, i) for info, i in self.installer.waiting.get(start, ()) if int(info.heat[i]) <= 0]
        if hot:
            self._side_recording(vm, rec, stop_pc, start, code_base, hot)
            return
        try:
            if vm.rec_len >= vm.rec_cap and len(rec) > 1:
                # the buffer filled (an inner loop ran long): keep the path up to
                # its last instruction, which the trace leaves to run
                stop_pc, rec = rec[-1], rec[:-1]
            trace = from_recording(self.code, rec, stop_pc,
                                   stop_op=int(vm.code[stop_pc].op), max_ops=self.max_trace,
                                   returns=self.returns)
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
        self.installer.install(trace, code_base, blocks=blocks, handed_over=self._t0)

    def _side_recording(self, vm, rec, stop_pc, start, code_base, hot) -> None:
        """A hot side exit recorded the path from where it resumes: a trace
        from there to the first place that has a trace (its end jumps in)."""
        from .install import ENTER_JIT
        from .trace import Decline, first_of, from_recording
        if records_nothing(self.code, start):     # (policy.py: the exit never records again)
            for info, i in hot:
                info.heat[i] = NEVER
            return
        self.stats.side_recordings += 1
        traced = frozenset(self.installer.traces_at)
        # (not at a function's entry: through the call, whose return the trace
        # then knows, rather than into a trace whose RETURN guards on one caller)
        cut = first_of(rec, traced - self.entries, 1)
        if cut is not None:
            stop_pc, rec = rec[cut], rec[:cut]
        elif vm.rec_len >= vm.rec_cap and len(rec) > 1:
            stop_pc, rec = rec[-1], rec[:-1]
        stop_op = ENTER_JIT if stop_pc in traced else int(vm.code[stop_pc].op)
        try:
            trace = from_recording(self.code, rec, stop_pc, stop_op=stop_op,
                                   max_ops=self.max_trace, traced=traced, returns=self.returns)
        except Decline as d:
            # try again later, a few times: the path from a side exit varies
            tries = self.side_tries[start] = self.side_tries.get(start, 0) + 1
            for info, i in hot:
                info.heat[i] = NEVER if tries >= RETRIES + 1 else self.side_threshold << (3 * tries)
            if tries >= RETRIES + 1:
                self.stats.declined.append((start, f"side exit: {d.reason}"))
            return
        trace.retry = False
        self.installer.install(trace, code_base, side=True, handed_over=self._t0)

    def prepared(self) -> None:
        """The VM has its code in place: compile the requested stretches."""
        self._run_t0 = time.thread_time_ns()
        self._jit_from_ns, self._jit_own_ns = (1 if self.ready else None), 0
        code_base = int(self.ffi.cast("uintptr_t", self.loaded.vm.code))
        if self.stretches:
            self._ready()
            from .trace import Trace, TraceOp
        for start, end in self.stretches:
            if not 0 <= start < end <= len(self.code):
                raise JitError(f"stretch {start}..{end} is outside the code")
            ops = []
            for pc in range(start, end):
                op, arg = self.code[pc]
                ins = isa.INSTRUCTIONS[op]
                if ins.name not in isa.TRACEABLE or ins.flow is not isa.Flow.NEXT:
                    raise JitError(f"stretch {start}..{end}: {ins.name} at pc {pc} is not "
                                   "straight-line code with a stencil")
                ops.append(TraceOp(pc, op, arg, ins.name))
            self.counters[start] = NEVER
            self.installer.install(Trace(start, ops, closed=False, end_pc=end,
                                         why_end="stretch ends"), code_base)

    def relocate(self, seed: int) -> None:
        """A new memory layout for the VM (code included) and new places for
        every trace: what a benchmark with installed stretches does before
        each measured run, so its samples are over layouts, not one."""
        if self.stats.recordings or len(self.stats.traces) != len(self.stretches):
            raise JitError("only installed stretches can be relocated (recorded traces "
                           "belong to the code address they were recorded at)")
        self.installer.release()
        if self.lib.sl_relayout(self.loaded.vm, seed & 0xFFFFFFFF or 1):
            raise JitError("out of memory moving the VM to a new layout")
        self.prepared()

    def context(self, code_base: int):
        """What compiling a trace of this program needs (its arrays aside)."""
        build = self.loaded.build
        from .install import trace_compiler
        return trace_compiler().Context(self.mode, code_base, self.loaded.program.consts, self.code,
                                   self.handlers, count=build.count, state=self.state,
                                   source=self.source, cc=build.compiler.name, opt=self.opt,
                                   cache=build.cache, tape_len=int(self.loaded.vm.tape_len),
                                   funcs=self.funcs)

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
        from .report import report
        return report(self, counts)

    def close(self) -> None:
        if self._memory is not None:
            self._memory.release()
        if self.trace_cache is not None:
            self.trace_cache.save()
        if self.history is not None and self.error is None:
            # the whole of it, loading and closing too: what the JIT's path
            # costs besides the VM (its runtime, the trace cache's file)
            # decides against a run that sits it out
            self.history.save(time.thread_time_ns() - self._load_t0, self._jit_from_ns,
                              self._jit_own_ns,
                              waited_as_asked=self.payback_ns <= self.payback_asked_ns)
