"""The baseline check: how each built interpreter really dispatches.

Reads a build's functions from its ELF symbol table and their instructions
through capstone (shimlab.disasm), finds every handler (goto labels report
their own addresses, tail-call handlers are functions) and counts the
indirect jumps that dispatch.  A build whose handlers all share one dispatch
jump is flagged: that is the broken baseline that once inflated a 2% speedup
to 15%.  Every mode is understood: the switch (one jump table), the goto
variants, and the tail-call binary that asm and the JIT modes build on.
How a handler's code is read and when jumps count as merged is
shimlab.dispatch_sites, which `shimlab census` reads other interpreters with.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import disasm, isa, modes
from ..abi.vmh import ffi
from ..dispatch_sites import (MERGED_VERDICT, Handler, goto_handlers, label_ranges, merged,
                              reaches_site, tail_dispatch, with_own)
from ..errors import ShimlabError
from . import loader

# The tail-call binary's trace-entry handler; jit-direct-sites' copies are
# sl_op_ENTER_JIT_<k> (csrc/crossing.h).
ENTER_JIT = "ENTER_JIT"


@dataclass
class Report:
    mode: str
    compiler: str
    build: str = ""         # what binary the mode runs, when it is not its own
    handlers: list[Handler] = field(default_factory=list)
    dispatch_sites: int = 0
    flagged: bool = False
    verdict: str = ""
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        n = sum(1 for h in self.handlers if h.name != ENTER_JIT)
        what = (f"{n} handlers" if self.handlers else
                f"{isa.NUM_OPCODES} instructions, all cases of one switch")
        return (f"{self.mode} / {self.compiler}: {self.dispatch_sites} indirect dispatch "
                f"jump(s) for {what}: {self.verdict}")


class UnknownHandler(ShimlabError):
    pass


def _build_note(spec: modes.Mode) -> str:
    if spec.jit:
        sharing = [m.name for m in modes.MODES.values() if m.build_name == spec.build_name]
        crossing = next(d for d in spec.defines if d.startswith("-DSL_JIT="))[len("-DSL_JIT="):]
        shared = f", shared by {', '.join(sharing)}" if len(sharing) > 1 else ""
        return (f"the {spec.build_name} binary{shared}: the tail-call interpreter built with "
                f"SL_JIT={crossing} (csrc/crossing.h); traces are not in the binary")
    if spec.asm_handlers:
        return "the tail-call interpreter with PeachPy handlers (interp/asm_handlers.py)"
    return ""


def _functions(build) -> dict[str, list[disasm.Insn]]:
    return disasm.function_code(build.path)


def _handler_symbol(funcs, spec, name: str) -> str | None:
    """The function implementing instruction `name` in a tail-call build."""
    for sym in ((f"sl_asm_{name}",) if spec.asm_handlers else ()) + (f"sl_op_{name}",):
        if sym in funcs:
            return sym
    return None


def _merged(report: Report, n_own: int) -> None:
    """Merged: (nearly) every handler leaves through one shared jump."""
    report.flagged = merged(report.dispatch_sites, n_own, len(report.handlers))
    if report.flagged:
        report.verdict = MERGED_VERDICT


def _analyze_tailcall(build, spec, funcs, report: Report) -> Report:
    starts = {body[0].addr: name for name, body in funcs.items() if body}
    for name in [ins.name for ins in isa.INSTRUCTIONS] + ([ENTER_JIT] if spec.jit else []):
        sym = _handler_symbol(funcs, spec, name)
        body = funcs.get(sym, []) if sym else []
        how, sites = tail_dispatch(body, starts) if body else ("no handler in the binary", 0)
        if name == ENTER_JIT:       # it enters traces: no dispatch, and no part of the check
            how, sites = "enters a trace (see above)", 0
        size = body[-1].end - body[0].addr if body else 0
        report.handlers.append(Handler(name, body[0].addr if body else 0, size, len(body),
                                       how, sites))
    report.dispatch_sites = sum(h.own_sites for h in report.handlers)
    n_own = with_own(report.handlers)
    dispatching = [h for h in report.handlers
                   if not h.dispatch.startswith("returns") and h.name != ENTER_JIT]
    report.verdict = ("one tail-call dispatch per handler" if n_own == len(dispatching) else
                      f"{n_own} of {len(dispatching)} handlers dispatch on their own")
    if spec.asm_handlers:
        from .asm_handlers import C_HANDLERS
        report.verdict = (f"one dispatch jump per PeachPy handler; {len(C_HANDLERS)} "
                          f"left to C ({', '.join(C_HANDLERS)})")
    _merged(report, n_own)
    if spec.jit:
        report.notes.append(_entry_note(spec, funcs))
    return report


def _entry_note(spec, funcs) -> str:
    """How ENTER_JIT reaches a trace in this mode's binary."""
    enter = funcs.get(f"sl_op_{ENTER_JIT}", [])
    starts = {body[0].addr: name for name, body in funcs.items() if body}
    called = [starts.get(i.target, f"{i.target:#x}") for i in enter if i.call and i.target]
    if spec.entry_copies:
        copies = [n for n in funcs if n.startswith(f"sl_op_{ENTER_JIT}_")]
        own = sum(1 for n in copies if any(i.indirect_jump for i in funcs[n]))
        return (f"ENTER_JIT: {len(copies)} copies (sl_op_ENTER_JIT_<k>), {own} with an "
                f"indirect jump of their own: each trace enters through its own jump")
    if spec.trace_table:
        return ("ENTER_JIT is bypassed: each trace's opcode has a dispatch-table slot that "
                "is the trace, so a handler's own dispatch jump lands in it")
    if called:
        return (f"ENTER_JIT calls {', '.join(called)} (which calls the trace), then "
                f"dispatches through its own jump; {len(enter)} instructions")
    jumps = sum(1 for i in enter if i.indirect_jump)
    return f"ENTER_JIT: {jumps} indirect jump(s) into the trace, {len(enter)} instructions"


def _file_addresses(build, funcs) -> list[int]:
    """Handler start addresses as link-time addresses (as the symbol table has them)."""
    runtime = loader.handler_addresses(build)
    lib = loader.library(build.so)
    base = int(ffi().cast("uintptr_t", lib.sl_interpret)) - funcs["sl_interpret"][0].addr
    return [a - base if a else 0 for a in runtime]


def _goto_ranges(build, funcs) -> tuple[list[disasm.Insn], list[tuple[str, int, int]]]:
    """sl_interpret's instructions and each handler's (name, start, stop): from
    its label to the next label (or the end of the function)."""
    body = _interpret_body(funcs)
    starts = _file_addresses(build, funcs)
    return body, label_ranges(body, [(ins.name, start)
                                     for ins, start in zip(isa.INSTRUCTIONS, starts)])


def _interpret_body(funcs) -> list[disasm.Insn]:
    """sl_interpret's instructions, with the parts a compiler split off
    (gcc's sl_interpret.cold), in address order."""
    parts = [n for n in funcs if n == "sl_interpret" or n.startswith("sl_interpret.")]
    return sorted((i for n in parts for i in funcs[n]), key=lambda i: i.addr)


def _analyze_goto(build, funcs, report: Report) -> Report:
    body, ranges = _goto_ranges(build, funcs)
    report.dispatch_sites = sum(1 for i in body if i.indirect_jump)
    report.handlers = goto_handlers(body, ranges)
    n_own = with_own(report.handlers)
    if n_own < len(report.handlers):
        report.verdict = (f"{n_own} of {len(report.handlers)} handlers dispatch on their "
                          f"own; the rest share tails (cross-jumping)")
    else:
        report.verdict = "every handler dispatches on its own"
    _merged(report, n_own)
    return report


def _analyze_switch(funcs, report: Report) -> Report:
    body = _interpret_body(funcs)
    report.dispatch_sites = sum(1 for i in body if i.indirect_jump)
    report.verdict = ("one shared switch dispatch" if report.dispatch_sites <= 1 else
                      f"switch dispatch duplicated into {report.dispatch_sites} sites by "
                      f"the compiler")
    report.notes.append(f"the cases have no addresses of their own: sl_interpret is "
                        f"{sum(i.size for i in body)} bytes, {len(body)} instructions")
    return report


def analyze(build) -> Report:
    spec = modes.get(build.mode)
    report = Report(build.mode, build.compiler.name, _build_note(spec))
    funcs = _functions(build)
    if spec.variant == "switch":
        return _analyze_switch(funcs, report)
    if spec.variant == "tailcall":
        return _analyze_tailcall(build, spec, funcs, report)
    return _analyze_goto(build, funcs, report)


def format_report(report: Report, counts: list[int] | None = None) -> str:
    lines = [report.summary()]
    if report.build:
        lines.append(f"  (reads {report.build})")
    if report.flagged:
        lines.append("WARNING: ratios against this build measure the compiler's merged "
                     "dispatch, not the mode's")
    lines += [f"  {n}" for n in report.notes]
    lines.append("")
    executed = f"{'executed':>12}  " if counts else ""
    if not report.handlers:
        if counts:
            lines.append(f"  {'instruction':<18} {'executed':>12}")
            lines += [f"  {ins.name:<18} {counts[i]:>12}" for i, ins in enumerate(isa.INSTRUCTIONS)]
        return "\n".join(lines) + "\n"
    lines.append(f"  {'handler':<18} {'start':>8} {'bytes':>6} {'insns':>6}  {executed}dispatch")
    for i, h in enumerate(report.handlers):
        executed = (f"{counts[i] if i < len(counts) else 0:>12}  " if counts else "")
        lines.append(f"  {h.name:<18} {h.start:>#8x} {h.size:>6} {h.insns:>6}  {executed}"
                     f"{h.dispatch}")
    return "\n".join(lines) + "\n"


# -- one handler's machine code (dis --native --handler NAME) -------------------

def handler_listing(build, name: str) -> str:
    """One handler's machine code, Compiler Explorer style: its label, each
    instruction, and where its jumps go (the dispatch jump marked)."""
    spec = modes.get(build.mode)
    funcs = _functions(build)
    known = [ins.name for ins in isa.INSTRUCTIONS] + ([ENTER_JIT] if spec.jit else [])
    wanted = name.upper() if name.upper() in known else name
    if spec.variant == "switch":
        raise UnknownHandler("--handler: the switch interpreter's cases have no code of their "
                             "own (the compiler lays them out inside sl_interpret); use "
                             "--mode goto or --mode tailcall")
    if spec.variant == "tailcall":
        sym = _handler_symbol(funcs, spec, wanted) if wanted in known else \
            (wanted if wanted in funcs else None)
        if sym is None:
            raise UnknownHandler(f"--handler {name}: no such handler in the {build.mode} "
                                 f"binary (an instruction name, e.g. LOAD_INT, or a function: "
                                 f"{', '.join(sorted(n for n in funcs if n.startswith('sl_'))[:6])}"
                                 f", ...)")
        body, title = funcs[sym], sym
    else:
        if wanted not in known:
            raise UnknownHandler(f"--handler {name}: no instruction of that name "
                                 f"(e.g. {', '.join(known[:4])}, ...)")
        all_body, ranges = _goto_ranges(build, funcs)
        _, start, stop = next(r for r in ranges if r[0] == wanted)
        body = [i for i in all_body if start <= i.addr < stop]
        title = f"L_{wanted} (in sl_interpret, up to the next handler's label)"
    labels = {b[0].addr: n for n, b in funcs.items() if b}
    ranges = []
    if spec.variant != "tailcall":
        all_body, ranges = _goto_ranges(build, funcs)
        sites = [i.addr for i in all_body if i.indirect_jump]
        labels.update({start: f"L_{n}" for n, start, _ in ranges})

    def where(target: int) -> str | None:
        if target in labels:
            return labels[target]
        if ranges and reaches_site(all_body, target, sites):
            return f"shared dispatch at {target:#x}"
        inside = [(n, start) for n, start, stop in ranges if start <= target < stop]
        return f"L_{inside[0][0]}+{target - inside[0][1]:#x}" if inside else None

    # ENTER_JIT's jump goes into the trace, unless it calls the C shim (jit-shim)
    enters = title.startswith(f"sl_op_{ENTER_JIT}") and not any(i.call for i in body)

    def note(i: disasm.Insn) -> str | None:
        if i.indirect_jump:
            return "into the trace: indirect jump" if enters else "dispatch: indirect jump"
        if i.target is not None and (i.jump or i.call):
            dest = where(i.target)
            return f"{'calls' if i.call else 'to'} {dest}" if dest else None
        if i.ret:
            return "returns"
        return None

    size = body[-1].end - body[0].addr if body else 0
    lines = [f"{build.mode} / {build.compiler.name}: {title}, {size} bytes, "
             f"{len(body)} instructions", f"{title.split()[0]}:"]
    # Compiler Explorer shows addresses and instructions, not bytes
    return "\n".join(lines) + "\n" + disasm.listing(body, note, raw=False)
