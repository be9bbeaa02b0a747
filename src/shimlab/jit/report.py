"""What the JIT did, as records and as text: a trace's TraceInfo, the run's
JitStats, the --stats report and the traces' time by phase (record,
optimize, compile).  Numpy-free: a run's --stats imports it."""
from __future__ import annotations


from .. import isa
from ..record import field, record


@record
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
    replayed: bool = False           # installed from the trace cache's replay list
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
    trace: object = field(default=None, repr=False)  # the trace.Trace compiled (its instructions)

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


@record
class JitStats:
    traces: list[TraceInfo] = field(default_factory=list)
    declined: list[tuple[int, str]] = field(default_factory=list)   # (header pc, why)
    recordings: int = 0
    side_recordings: int = 0
    links: int = 0
    retried: int = 0
    start_ns: int = 0            # loading the stencils before the first trace (thread CPU)


def _history_says(last) -> str:
    """Why the payback wait is what it is: the earlier runs it follows."""
    if last.interp_ns is None:
        return ""
    runs = [f"the interpreter alone {'' if last.interp_exact else 'at least '}"
            f"{last.interp_ns / 1e6:.1f} ms"]
    if last.jit_ns is not None:
        runs.append(f"with the JIT {last.jit_ns / 1e6:.1f} ms "
                    f"({last.jit_own_ns / 1e6:.1f} of it the JIT's own)")
    return (f", as earlier runs of it suggest ({', '.join(runs)}, from loading the "
            f"program to closing it)")


def report(jit, counts=None) -> str:
    """--stats; counts (a count build's per-opcode counts) adds the share
    of VM instructions that ran in traces."""
    s = jit.stats
    lines = [f"jit ({jit.mode}): {len(s.traces)} trace(s) compiled, "
             f"{len(s.declined)} declined, {s.recordings} recording(s), "
             f"{sum(t.size for t in s.traces)} bytes of code"
             + (" (dual-mapped: the kernel refused mprotect to exec)"
                if jit.memory.dual else "")]
    recorded = [t for t in s.traces if not t.replayed]
    side = sum(1 for t in recorded if t.side)
    loops = s.recordings - s.side_recordings
    lines.append(f"  recordings: {loops} at hot loops ({len(recorded) - side - len(jit.stretches)}"
                 f" compiled, {s.retried} retried because the path left the loop), "
                 f"{s.side_recordings} at hot side exits ({side} compiled); "
                 f"{s.links} exit(s) linked to traces, trace optimizer level {jit.opt}")
    if s.start_ns:
        lines.append(f"  the JIT's start (stencils loaded before the first trace): "
                     f"{s.start_ns / 1e6:.1f} ms")
    why = "" if jit.history is None else _history_says(jit.history.last)
    if jit.payback_ns:
        lines.append(f"  payback: nothing compiled before the run had spent "
                     f"{round(jit.payback_ns / 1e6, 1):g} ms in the interpreter{why} "
                     f"({jit.payback_waits} recording(s) dropped"
                     + ("" if jit.ready else "; the run ended first, the JIT never started")
                     + "; --jit-threshold N compiles from the N-th arrival)")
    elif jit.payback_asked_ns:
        lines.append(f"  payback: no wait{why}")
    cache = jit.trace_cache
    if cache is not None:
        lines.append(f"  trace cache ({jit.trace_cache_setting}): {cache.hits} of "
                     f"{len(s.traces)} trace(s) placed from plans earlier runs kept, "
                     f"{cache.replayed} installed when the JIT started from the list the "
                     f"last run left (in {cache.replay_ns / 1e6:.1f} ms) ({cache.path})")
    elif jit.ready:
        lines.append("  trace cache: off (every trace optimized and laid out)")
    lines += trace_times(s.traces)
    ran = [t.executed() for t in s.traces]
    if counts is not None and None not in ran:
        total = sum(int(c) for c in list(counts)[:isa.NUM_OPCODES])
        share = 100.0 * sum(ran) / total if total else 0.0
        lines.append(f"  VM instructions run in traces: {sum(ran)} of {total} ({share:.1f}%)")
    for t in s.traces:
        pos = jit.loaded.program.position(t.start)
        where = f" ({jit.loaded.program.name}:{pos[0]})" if pos and pos[0] else ""
        ent = t.entries()
        kind = "side trace from pc" if t.side else "loop at pc"
        lines.append(f"  trace {t.index}: {kind} {t.start}{where}, {t.ops} instructions, "
                     f"{t.size} bytes, {'loops' if t.closed else 'ends: ' + t.why_end}"
                     + ("" if ent is None else f", entered {ent} times from the interpreter")
                     + ("" if t.executed() is None else f", ran {t.executed()} instructions"))
        if t.folded:
            lines.append("      optimizer: " + ", ".join(f"{n} {what}" for what, n in
                                                        sorted(t.folded.items())))
        calls = _calls(t.trace)
        if calls:
            lines.append(f"      {calls}")
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
    from .. import fits      # (math: only a --stats report with timed traces needs it)
    fit = fits.line([t.ops for t in timed],
                    [(t.record_ns + t.optimize_ns + t.compile_ns) / 1e6 for t in timed])
    if fit is None:
        return {}
    a, b = fit
    return {"at 100": a + 100 * b, "fixed": a, "per instruction": b}


def _calls(trace) -> str:
    """What calls and returns a trace runs through (jit/trace.py), or ''."""
    if trace is None:
        return ""
    calls = sum(1 for o in trace.ops if o.name == "CALL")
    rets = [o.stencil for o in trace.ops if o.name == "RETURN" and not o.synthetic]
    if not calls and not rets:
        return ""
    out = len(rets) - rets.count("RETURN")
    return (f"runs through {calls} call(s) and {len(rets)} return(s)"
            + (f" ({out} to a caller it did not call)" if out else ""))


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
