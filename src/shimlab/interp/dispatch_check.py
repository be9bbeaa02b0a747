"""The baseline check: how each built interpreter really dispatches.

Disassembles a build with objdump, finds every handler (goto labels and
tail-call functions report their own addresses), and counts the indirect
jumps that dispatch.  A goto build whose handlers all share one dispatch jump
is flagged: that is the broken baseline that once inflated a 2% speedup to 15%.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

from .. import isa, modes
from ..abi.vmh import ffi
from ..errors import ToolchainError
from . import loader
from .asm import C_HANDLERS

_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
_DIRECT_JMP = re.compile(r"^([0-9a-f]+)\b")


@dataclass
class Insn:
    addr: int
    mnemonic: str
    operands: str

    @property
    def indirect_jump(self) -> bool:
        return self.mnemonic.startswith("jmp") and self.operands.startswith("*")

    @property
    def direct_jump_target(self) -> int | None:
        if self.mnemonic.startswith("jmp") and not self.operands.startswith("*"):
            m = _DIRECT_JMP.match(self.operands)
            return int(m.group(1), 16) if m else None
        return None


@dataclass
class Handler:
    name: str
    start: int
    size: int
    insns: int
    dispatch: str           # how this handler reaches the next one
    own_sites: int          # indirect jumps inside the handler's own code


@dataclass
class Report:
    mode: str
    compiler: str
    handlers: list[Handler] = field(default_factory=list)
    dispatch_sites: int = 0
    flagged: bool = False
    verdict: str = ""

    def summary(self) -> str:
        return (f"{self.mode} / {self.compiler}: {self.dispatch_sites} indirect dispatch "
                f"jump(s) for {len(self.handlers)} handlers: {self.verdict}")


def objdump(path) -> dict[str, list[Insn]]:
    tool = shutil.which("objdump")
    if not tool:
        raise ToolchainError("objdump not found (apt-get install binutils)")
    text = subprocess.run([tool, "-d", "--no-show-raw-insn", str(path)], capture_output=True,
                          text=True, check=True).stdout
    funcs: dict[str, list[Insn]] = {}
    current = None
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            current = funcs.setdefault(m.group(2), [])
            continue
        m = _INSN.match(line)
        if m and current is not None:
            current.append(Insn(int(m.group(1), 16), m.group(2), m.group(3).split("#")[0].strip()))
    return funcs


def _file_addresses(build, funcs) -> list[int]:
    """Handler start addresses as link-time addresses (as objdump prints them)."""
    runtime = loader.handler_addresses(build)
    lib = loader.library(str(build.path))
    base = int(ffi().cast("uintptr_t", lib.sl_interpret)) - funcs["sl_interpret"][0].addr
    return [a - base if a else 0 for a in runtime]


def analyze(build) -> Report:
    funcs = objdump(build.path)
    report = Report(build.mode, build.compiler.name)
    names = [ins.name for ins in isa.INSTRUCTIONS]
    spec = modes.get(build.mode)
    if spec.variant == "tailcall":
        for name in names:
            # the asm mode's PeachPy handler, else the C tail-call handler
            body = funcs.get(f"sl_asm_{name}") or funcs.get(f"sl_op_{name}", [])
            sites = sum(1 for i in body if i.indirect_jump)
            size = (body[-1].addr - body[0].addr + 1) if body else 0
            report.handlers.append(Handler(name, body[0].addr if body else 0, size, len(body),
                                           "tail call through the table" if sites else "none",
                                           sites))
        report.dispatch_sites = sum(h.own_sites for h in report.handlers)
        report.verdict = "one tail-call dispatch per handler"
        if spec.asm_handlers:
            report.verdict = (f"one dispatch jump per PeachPy handler; {len(C_HANDLERS)} "
                              f"left to C ({', '.join(C_HANDLERS)})")
        return report

    body = funcs["sl_interpret"]
    sites = [i.addr for i in body if i.indirect_jump]
    report.dispatch_sites = len(sites)
    if spec.variant == "switch":
        report.verdict = ("one shared switch dispatch" if len(sites) <= 1 else
                          f"switch dispatch duplicated into {len(sites)} sites by the compiler")
        return report

    starts = _file_addresses(build, funcs)
    end = body[-1].addr + 1
    bounds = sorted(set(starts)) + [end]
    by_addr = {i.addr: i for i in body}
    for name, start in zip(names, starts):
        stop = next(b for b in bounds if b > start)
        own = [i for i in body if start <= i.addr < stop]
        n_own = sum(1 for i in own if i.indirect_jump)
        if n_own:
            how = "own indirect jump"
        else:
            targets = {i.direct_jump_target for i in own} - {None}
            shared = [t for t in targets if t in by_addr and _reaches_site(body, t, sites)]
            how = (f"jumps to shared dispatch at {shared[0]:#x}" if shared
                   else "falls into another handler")
        report.handlers.append(Handler(name, start, stop - start, len(own), how, n_own))
    with_own = sum(1 for h in report.handlers if h.own_sites)
    # Merged: (nearly) every handler leaves through one shared jump.
    report.flagged = len(sites) <= 1 or with_own <= len(report.handlers) // 10
    if report.flagged:
        report.verdict = ("MERGED: the handlers share one dispatch jump, so the indirect-branch "
                          "predictor sees one site (a broken goto baseline)")
    elif with_own < len(report.handlers):
        report.verdict = (f"{with_own} of {len(report.handlers)} handlers dispatch on their "
                          f"own; the rest share tails (cross-jumping)")
    else:
        report.verdict = "every handler dispatches on its own"
    return report


def _reaches_site(body, target: int, sites: list[int], window: int = 8) -> bool:
    """Is an indirect dispatch jump within a few instructions after target?"""
    addrs = [i.addr for i in body]
    try:
        k = addrs.index(target)
    except ValueError:
        return False
    return any(body[j].addr in sites for j in range(k, min(k + window, len(body))))


def format_report(report: Report, counts: list[int] | None = None) -> str:
    lines = [report.summary()]
    if report.flagged:
        lines.append("WARNING: ratios against this build measure the compiler's merged "
                     "dispatch, not computed goto")
    lines.append("")
    executed = f"{'executed':>12}  " if counts else ""
    lines.append(f"  {'handler':<18} {'start':>8} {'bytes':>6} {'insns':>6}  {executed}dispatch")
    for i, h in enumerate(report.handlers):
        executed = f"{counts[i]:>12}  " if counts else ""
        lines.append(f"  {h.name:<18} {h.start:>#8x} {h.size:>6} {h.insns:>6}  {executed}"
                     f"{h.dispatch}")
    return "\n".join(lines) + "\n"
