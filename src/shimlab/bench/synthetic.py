"""The transition benchmark's programs: a loop whose every iteration does the
same work, split into M segments of [JIT stretch][interpreted stretch].

Each JIT stretch gets its own trace, installed before the first run (no
recording, so every run is the same); its exit resumes at the interpreted
stretch, which runs in the interpreter up to the next segment's ENTER_JIT.
Programs with different M execute the same VM instructions, J in traces and
I in the interpreter per iteration, plus the loop's own control (always
interpreted); they differ only in M round trips per iteration.  The work
is LOAD_INT/POP pairs: cheap, and no long dependency chain through memory.

A spec names a program: "transitions:m=4,j=64,i=64,n=20000" (or "interp:k=16,n=..."
for a loop of k interpreted instructions, which measures one dispatch).  With
",sites=K" a jit-direct-sites run enters its M traces through K copies of
ENTER_JIT (trace k through copy k mod K): the same program and traces with
K entry jumps, which separates the number of entry sites from the crossings.
With ",opt=L" the traces are compiled at trace optimizer level L (default 0,
one stencil per instruction): at L >= 2 the LOAD_INT/POP pairs fold away, so
a trace is its crossings alone and keeps cached values in registers.

"crossing:m=4,k=16,n=4000,jit=1" is the paired design's program (bench/
roundtrip.py): a loop of M segments, each a NOP and then k interpreted
instructions.  With jit=1 every NOP is a stretch of its own, so the JIT
installs an empty trace there and each segment crosses into JIT code and
back; with jit=0 (the null crossing) the same program runs with no trace,
the NOP interpreted in its place.  The two are the same bytecode, run by
the same binary: they dispatch the same handlers in the same order and
differ only in the crossings.  With ",traces=1" the M segments are one
segment run M times by an inner loop (one trace entered M times per
iteration, its loop control interpreted in both programs).

With ",live=K" (what `bench transitions --cache K` runs) every iteration
first pushes K values, which stay on the operand stack under the work of
every segment and are consumed (added up and stored to a second local) only
after the last segment: at every entry into a trace and every exit from one
the top K stack values are values a later instruction uses, so a crossing
that keeps K values in registers carries K live values, not K dead pad
slots.  The 2K instructions this adds are interpreted, and the same at every
M, so programs with different M stay matched.  Without it (live=0) the
programs are exactly those of before.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..bytecode import Assembler, Function, Program
from ..errors import ShimlabError
from ..frontend.verify import verify
from ..jit.defaults import LEVELS

PREFIXES = ("transitions:", "interp:", "crossing:")
MAX_LIVE = 16       # live values: at least every K of --cache


@dataclass(frozen=True)
class Spec:
    kind: str
    m: int = 1          # crossings (round trips) per iteration
    j: int = 64         # VM instructions per iteration in traces
    i: int = 64         # VM instructions per iteration in the interpreter (work part)
    k: int = 0          # interp: instructions per iteration
    n: int = 20000      # iterations
    sites: int = 0      # jit-direct-sites: ENTER_JIT copies the traces share (0: one each)
    live: int = 0       # values kept on the operand stack across every crossing
    opt: int = 0        # the traces' optimizer level (jit/optimize.py)
    jit: int = 1        # crossing: 1 a trace at every NOP, 0 none (the null crossing)
    traces: int = 0     # crossing: distinct traces (0: one per segment, M; 1: one, entered M times)

    @property
    def name(self) -> str:
        live = (f",live={self.live}" if self.live else "") + (f",opt={self.opt}" if self.opt else "")
        if self.kind == "interp":
            return f"interp:k={self.k},n={self.n}{live}"
        if self.kind == "crossing":
            return (f"crossing:m={self.m},k={self.k},n={self.n},jit={self.jit}"
                    + (f",traces={self.traces}" if self.traces else "")
                    + (f",sites={self.sites}" if self.sites else "") + live)
        sites = f",sites={self.sites}" if self.sites else ""
        return f"transitions:m={self.m},j={self.j},i={self.i},n={self.n}{sites}{live}"


def is_synthetic(workload: str) -> bool:
    return workload.startswith(PREFIXES)


def parse(spec: str) -> Spec:
    kind, _, rest = spec.partition(":")
    try:
        fields = {k: int(v) for k, v in (p.split("=") for p in rest.split(",") if p)}
        s = Spec(kind, **fields)
    except (ValueError, TypeError):
        raise ShimlabError(f"bad synthetic workload {spec!r} (e.g. transitions:m=4,j=64,i=64,"
                           f"n=20000)") from None
    if kind == "transitions":
        if s.m < 1 or s.j % (2 * s.m) or s.i % (2 * s.m) or s.j < 2 * s.m or s.i < 2 * s.m:
            raise ShimlabError(f"{spec}: j and i must be positive multiples of 2*m "
                               "(the work is LOAD_INT/POP pairs split evenly over m segments)")
    elif kind == "interp":
        if s.k < 2 or s.k % 2:
            raise ShimlabError(f"{spec}: k must be an even number >= 2")
    elif kind == "crossing":
        if s.m < 1 or s.k < 2 or s.k % 2 or s.jit not in (0, 1) or s.traces not in (0, 1):
            raise ShimlabError(f"{spec}: m >= 1, k an even number >= 2, jit 0 or 1, "
                               "traces 0 or 1")
    else:
        raise ShimlabError(f"unknown synthetic workload {spec!r}")
    if s.sites < 0 or (s.sites and s.kind not in ("transitions", "crossing")):
        raise ShimlabError(f"{spec}: sites must be a positive count, of a transitions program")
    if s.n < 1:
        raise ShimlabError(f"{spec}: n must be at least 1")
    if not 0 <= s.live <= MAX_LIVE:
        raise ShimlabError(f"{spec}: live must be 0 to {MAX_LIVE}")
    if s.opt not in LEVELS:
        raise ShimlabError(f"{spec}: opt must be one of {', '.join(map(str, LEVELS))}")
    return s


def _pairs(a: Assembler, instructions: int) -> None:
    for _ in range(instructions // 2):
        a.emit("LOAD_INT", 1)
        a.emit("POP")


def build(spec: str) -> tuple[Program, list[tuple[int, int]]]:
    """The program and its JIT stretches as (first pc, pc after the last)."""
    s = parse(spec)
    a = Assembler(s.name, "bytecode")
    stretches = []
    a.load_int(s.n)
    a.emit("STORE_LOCAL", 0)
    top = a.label()
    a.bind(top)
    for v in range(s.live):             # live=K: K values under every crossing...
        a.emit("LOAD_INT", v + 2)
    if s.kind == "interp":
        _pairs(a, s.k)
    elif s.kind == "crossing":
        _segments(a, s, stretches)
    else:
        for _ in range(s.m):
            start = a.pc
            _pairs(a, s.j // s.m)
            stretches.append((start, a.pc))
            _pairs(a, s.i // s.m)
    if s.live:                          # ...used after the last one: summed into local 1
        for _ in range(s.live - 1):
            a.emit("ADD")
        a.emit("STORE_LOCAL", 1)
    _count_down(a, 0, top)          # loop control, in the interpreter: n -= 1; while n
    a.emit("HALT")
    prog = a.finish()
    names = ["n"] + (["sink"] if s.live else []) + (["j"] if s.kind == "crossing" and s.traces
                                                      else [])
    prog.functions = [Function("main", 0, 0, len(names), names, 4)]
    stretches = stretches if s.kind != "crossing" or s.jit else []
    return verify(prog), stretches


def _segments(a: Assembler, s: Spec, stretches: list) -> None:
    """The paired design's body: M times a NOP (the crossing's place) and k
    interpreted instructions, unrolled, or (traces=1) one such segment in an
    inner loop of M iterations."""
    if not s.traces:
        for _ in range(s.m):
            stretches.append((a.pc, a.pc + 1))
            a.emit("NOP")
            _pairs(a, s.k)
        return
    inner = 2 if s.live else 1          # the inner loop's counter: the local after n (and sink)
    a.load_int(s.m)
    a.emit("STORE_LOCAL", inner)
    top = a.label()
    a.bind(top)
    stretches.append((a.pc, a.pc + 1))
    a.emit("NOP")
    _pairs(a, s.k)
    _count_down(a, inner, top)


def _count_down(a: Assembler, local: int, top) -> None:
    """local -= 1; back to `top` while it is not 0 (7 instructions a pass,
    6 the last: its LOOP does not run)."""
    a.emit("LOAD_LOCAL", local)
    a.emit("LOAD_INT", 1)
    a.emit("SUB")
    a.emit("DUP")
    a.emit("STORE_LOCAL", local)
    done = a.label()
    a.emit("JUMP_IF_FALSE", done)
    back = a.pc
    a.emit("LOOP", 0)
    a.program.code[back] = (a.program.code[back][0], top.pc - back)
    a.bind(done)


def jit_options(spec: str, stretches) -> dict:
    """What the JIT of a run of this program is told: install the stretches,
    record nothing (no hot loops, no hot side exits), and (sites=K) share K
    entry copies."""
    s = parse(spec)
    out = {"stretches": stretches, "record": False, "opt": s.opt, "link": False}
    if s.sites:
        out["entry_sites"] = s.sites
    return out


def relocated(spec: str) -> bool:
    """Whether a JIT run of this program is measured over relocations (the VM
    and its installed traces moved before every run, vm.bench_relocating):
    programs with traces installed, and the paired design's null crossing
    too, so that both sides of a pair are measured the same way."""
    s = parse(spec)
    return s.kind in ("crossing", "transitions")


def instructions_per_run(spec: str) -> int:
    s = parse(spec)
    if s.kind == "crossing":     # M NOPs and stretches; an inner loop: 2 to set, 7 a pass
        body = s.m * (1 + s.k) + (7 * s.m + 1 if s.traces else 0)     # (its last: no LOOP)
        return 2 + s.n * (body + 2 * s.live + 7)
    body = s.k if s.kind == "interp" else s.j + s.i
    # setup; body, the live values' 2K and control (the last LOOP is HALT)
    return 2 + s.n * (body + 2 * s.live + 7)
