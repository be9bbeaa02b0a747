"""`shimlab stencils compare`: PeachPy stencils against compiler-built ones,
per instruction; or two stencils of one instruction (a prototype against the
standard one, `stencils compare CELL_ADD CELL_ADD:rmw`).

For each instruction a loop repeats a small stack-neutral unit that contains
it; the JIT traces the loop with one stencil set or the other and the
cycles of one unit are the run's cycles, less those of the same set's bare
loop, over the units run.  Code size is the stencil, as laid in a trace.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from .. import isa, isolate, toolchain, vm
from ..abi import contract
from ..bytecode import Assembler, Function
from ..errors import ShimlabError
from ..frontend.verify import verify
from ..interp import build
from ..jit import stencil_store
from . import stats
from .table import table

SOURCES = ("peachpy", "clang")
# Output and input would measure the buffer, not the stencil.
SKIP = ("CELL_OUT", "CELL_IN", "PRINT_BYTE")


def unit(name: str) -> list[tuple[str, int]]:
    """A stack-neutral sequence that runs `name` once (locals 1 and 2 hold 7 and 3).
    Conditional jumps jump by one, so both ways lead on."""
    if name in isa.BINOPS:
        return [("LOAD_LOCAL", 1), ("LOAD_LOCAL", 2), (name, 0), ("STORE_LOCAL", 3)]
    if name in isa.UNOPS:
        return [("LOAD_LOCAL", 1), (name, 0), ("STORE_LOCAL", 3)]
    if name in ("JUMP_IF_FALSE", "JUMP_IF_TRUE"):
        return [("LOAD_LOCAL", 1), (name, 1)]
    return {"NOP": [("NOP", 0)], "LOAD_INT": [("LOAD_INT", 5), ("POP", 0)],
            "LOAD_CONST": [("LOAD_CONST", 0), ("POP", 0)],
            "LOAD_LOCAL": [("LOAD_LOCAL", 1), ("POP", 0)],
            "STORE_LOCAL": [("LOAD_LOCAL", 1), ("STORE_LOCAL", 3)],
            "POP": [("LOAD_LOCAL", 1), ("POP", 0)],
            "DUP": [("LOAD_LOCAL", 1), ("DUP", 0), ("POP", 0), ("POP", 0)],
            "JUMP": [("JUMP", 1)], "CELL_ADD": [("CELL_ADD", 1)], "CELL_ZERO": [("CELL_ZERO", 0)],
            "MOVE": [("MOVE", 1), ("MOVE", -1)],
            "JUMP_IF_CELL_ZERO": [("JUMP_IF_CELL_ZERO", 1)]}.get(name, [])


def instructions() -> list[str]:
    """The instructions compared: those with a stencil and a unit."""
    return [ins.name for ins in isa.INSTRUCTIONS
            if ins.has_stencil and ins.name not in SKIP and unit(ins.name)]


def program(name: str | None, units: int, n: int):
    """while i < n: <units x unit(name)>; i += 1 -- the loop the JIT traces."""
    a = Assembler(f"compare-{name}", "bytecode")
    a.program.consts = [1 << 40]
    for slot, value in ((1, 7), (2, 3)):
        a.emit("LOAD_INT", value)
        a.emit("STORE_LOCAL", slot)
    top, done = a.label(), a.label()
    a.bind(top)
    a.emit("LOAD_LOCAL", 0)
    a.emit("LOAD_INT", n)
    a.emit("LT")
    a.emit("JUMP_IF_FALSE", done)
    for _ in range(units if name else 0):
        for op, arg in unit(name):
            a.emit(op, arg)
    for op, arg in (("LOAD_LOCAL", 0), ("LOAD_INT", 1), ("ADD", 0), ("STORE_LOCAL", 0)):
        a.emit(op, arg)
    back = a.pc
    a.emit("LOOP", top.pc - back)
    a.bind(done)
    a.emit("HALT")
    prog = a.finish()
    prog.functions = [Function("main", 0, 0, 4, ["i", "a", "b", "c"], 8)]
    return verify(prog)


def measure(names: list[str], cc: str | None, units: int, n: int, rounds: int,
            samples: int, variants: dict | None = None) -> dict:
    """{(variant, name or None): [[cycles of each run] for each round]},
    rounds interleaving the variants and instructions (run in a child
    process).  variants: label -> JIT options (default: each stencil source)."""
    variants = variants or {s: {"source": s} for s in SOURCES}
    b = build.build("jit-direct", cc)
    progs = {nm: program(nm, units, n) for nm in [None] + names}
    out: dict = {}
    for r in range(rounds):
        order = [(v, nm) for nm in progs for v in variants]
        if r % 2:
            order.reverse()
        for v, nm in order:
            with vm.Loaded(b, progs[nm], jit={"threshold": 1, **variants[v]}) as loaded:
                cycles, _ = loaded.bench(2, samples)
                traces = len(loaded.jit.stats.traces)
            if traces != 1:
                raise RuntimeError(f"{nm}: expected one trace, got {traces}")
            out.setdefault((v, nm), []).append(list(cycles))
    return out


def _pinned(*args) -> dict:
    """measure() pinned to one CPU (in the child process that runs it)."""
    try:
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    except (AttributeError, OSError):
        pass
    return measure(*args)


def per_unit(runs: list, bare: list, scale: int, rng, n_boot: int = 2000) -> stats.Estimate:
    """Median cycles of one unit, less the bare loop's, with a 95% interval.

    runs and bare hold one list of cycles per round; each round loads the
    program anew (new code placement, new trace), so rounds are resampled
    first and runs within them, never pooled as if independent.
    """
    def per_run(groups):
        return [np.asarray(g, float) / scale for g in groups]
    return stats.difference(stats.median_estimate(per_run(runs), n_boot, rng),
                            stats.median_estimate(per_run(bare), n_boot, rng))


def report(data: dict, names: list[str], cc: str, units: int, n: int, out=None) -> list:
    out = out or sys.stdout       # at call time: a default bound at import goes stale
    # one Generator: every per-unit estimate is bootstrapped independently
    rng = np.random.default_rng(0)
    st = {s: stencil_store.load(contract.state_of(cc), s, cc) for s in SOURCES}
    std = stencil_store.standard(contract.state_of(cc))
    rows, result = [], []
    for nm in names:
        est = {s: per_unit(data[(s, nm)], data[(s, None)], n * units, rng) for s in SOURCES}
        ratio = stats.ratio_of(est["clang"], est["peachpy"])
        size = {s: _stencil_size(st[s], nm, std) for s in SOURCES}
        rows.append((nm, " ".join(op for op, _ in unit(nm)), size["peachpy"], size["clang"],
                     est["peachpy"].fmt(2), est["clang"].fmt(2), ratio.fmt(2),
                     stats.verdict(ratio.value, ratio.lo, ratio.hi)))
        result.append({"instruction": nm, "bytes": size,
                       "cycles": {s: e.value for s, e in est.items()},
                       "ratio": ratio.value, "lo": ratio.lo, "hi": ratio.hi})
    print(table(rows, ["instruction", "unit", "bytes PeachPy", "bytes clang",
                       "cycles/unit PeachPy [95% CI]", f"cycles/unit {cc} [95% CI]",
                       "clang/PeachPy [95% CI]", "verdict"], align="llrrllll"), file=out)
    print(f"cycles/unit: TSC cycles of one unit in a traced loop ({units} units an iteration, "
          f"{n} iterations), less the bare loop's, median over runs; bytes: the "
          "instruction's stencil (a compiler stencil's final jump to its continuation "
          "removed); verdict: is the compiler-built stencil faster or slower.", file=out)
    return result


def _stencil_size(st: dict, name: str, std: dict) -> str:
    # the standard stencils of the instruction only (std): no prototype's size
    sizes = [f"{len(s.code)}" for k, s in st.items() if k.split(":")[0] == name and k in std]
    return "/".join(sizes)


def unit_stencil(name: str) -> str:
    """The standard stencil the unit of instruction `name` runs in its trace:
    the instruction's own, or for a conditional jump (by one, so both ways
    lead on, and the trace records the jump as taken) its :taken variant."""
    return f"{name}:taken" if isa.BY_NAME[name].flow is isa.Flow.BRANCH else name


def pair_variants(a: str, b: str, state: dict | None = None) -> tuple[str, str, dict]:
    """(instruction, the standard stencil in its unit, label -> JIT options)
    for comparing stencils a and b; a one-line error when they cannot be."""
    ins = {stencil_store.instruction_of(x) for x in (a, b)}
    for x in (a, b):
        stencil_store.lookup(x, state)          # unknown or broken: its own line
    if len(ins) != 1 or None in ins:
        raise ShimlabError(f"cannot compare {a} with {b}: compare two stencils of one "
                           f"instruction (e.g. CELL_ADD CELL_ADD:rmw)")
    name = ins.pop()
    if name not in instructions():
        raise ShimlabError(f"cannot compare stencils of {name}: it has no unit to time it in "
                           f"(those that have: {', '.join(instructions())})")
    key = unit_stencil(name)
    variants = {}
    for label, x in (("a", a), ("b", b)):
        stands_for = stencil_store.replaces(x, state)
        if stands_for != key:
            raise ShimlabError(f"cannot compare {x}: the unit of {name} runs {key}, and {x} "
                               f"stands in for {stands_for or 'no standard stencil'} (name a "
                               f"prototype of it {key}:VARIANT)")
        try:
            stencil_store.check_overrides({key: x}, state)
        except ShimlabError as e:
            raise ShimlabError(f"cannot compare {x}: {e}") from None
        variants[label] = {} if x == key else {"stencils": {key: x}}
    return name, key, variants


def report_pair(data: dict, a: str, b: str, name: str, cc: str, units: int, n: int,
                out=None) -> dict:
    out = out or sys.stdout
    rng = np.random.default_rng(0)
    st = stencil_store.load(contract.state_of(cc))
    est = {lbl: per_unit(data[(lbl, name)], data[(lbl, None)], n * units, rng)
           for lbl in ("a", "b")}
    ratio = stats.ratio_of(est["b"], est["a"])
    verdict = stats.verdict(ratio.value, ratio.lo, ratio.hi)
    rows = [(x, len(st[x].code), est[lbl].fmt(2)) for lbl, x in (("a", a), ("b", b))]
    print(table(rows, ["stencil", "bytes", "cycles/unit [95% CI]"], align="lrl"), file=out)
    print(f"\n{b} / {a}: {ratio.fmt(3)} (95% CI): {verdict}", file=out)
    print(f"(cycles/unit: TSC cycles of one unit, {' '.join(op for op, _ in unit(name))}, in a "
          f"traced loop ({units} units an iteration, {n} iterations), less the bare loop's "
          f"under the same stencils, median over runs; {cc}, jit-direct; verdict: is {b} "
          f"faster or slower than {a})", file=out)
    return {"instruction": name, "a": a, "b": b, "bytes": {a: len(st[a].code), b: len(st[b].code)},
            "cycles": {a: est["a"].value, b: est["b"].value},
            "ratio": ratio.value, "lo": ratio.lo, "hi": ratio.hi, "verdict": verdict}


def is_pair(names: list[str]) -> bool:
    """`stencils compare A B` compares two stencils; a list of plain
    instruction names compares PeachPy with clang for each."""
    return len(names) == 2 and (any(":" in n for n in names) or names[0] == names[1])


def main(args) -> int:
    pair = is_pair(args.instruction)
    if not pair:            # names checked before the compiler is probed
        staged = [nm for nm in args.instruction if ":" in nm]
        if staged:
            raise ShimlabError(f"{staged[0]} is a stencil, not an instruction: compare two "
                               f"stencils of one instruction as `stencils compare A B`")
        bad = [nm for nm in args.instruction if nm not in instructions()]
        if bad:
            raise ShimlabError(f"cannot compare {', '.join(bad)} (choose from "
                               f"{', '.join(instructions())})")
    cc = toolchain.get_compiler(args.cc, need={"preserve_none", "musttail"}).name
    n, units = (200, 16) if args.quick else (2000, 32)
    rounds, samples = (2, 5) if args.quick else (args.rounds, 15)
    if pair:
        a, b = args.instruction
        name, _, variants = pair_variants(a, b, contract.state_of(cc))
        data = isolate.call("stencils compare", _pinned, [name], cc, units, n, rounds, samples,
                            variants)
        report_pair(data, a, b, name, cc, units, n)
        return 0
    names = args.instruction or instructions()
    data = isolate.call("stencils compare", _pinned, names, cc, units, n, rounds, samples)
    report(data, names, cc, units, n)
    return 0
