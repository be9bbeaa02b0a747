"""One binary's census (Report), its JSON form, and the table that
`shimlab census` prints for several."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..bench.table import table

MERGED = "MERGED"


@dataclass
class Report:
    binary: str                     # as named
    file: str                       # the file read (a launcher's interpreter library)
    runtime: str | None             # CPython, Lua, ... or None (--function on anything)
    compiler: str
    function: str                   # the named function the search started from (the
                                    # dispatch function, or an exported one that reaches it)
    stripped: bool                  # no .symtab
    dispatch_code: list[dict] = field(default_factory=list)    # start, size, name
    size: int = 0                   # bytes of dispatch code
    indirect_jumps: int = 0
    indirect_calls: int = 0
    kind: str = ""                  # switch, computed goto, tail call, call loop ...
    handlers: int | None = None
    handlers_own: int | None = None     # handlers with a dispatch jump of their own
    size_handlers: int | None = None    # tail calls: bytes of all handlers
    handler_jumps: int | None = None    # tail calls: indirect jumps in all handlers
    table: dict | None = None
    merged: bool = False
    verdict: str = ""
    found_by: str = ""
    confidence: str = ""
    evidence: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def dispatch_jumps(self) -> int:
        """The indirect jumps of the dispatch code: a tail-call build's are in its handlers."""
        return self.handler_jumps if self.kind == "tail call" else self.indirect_jumps

    @property
    def jumps_per_kb(self) -> float:
        size = self.size_handlers or self.size
        return self.dispatch_jumps / (size / 1024) if size else 0.0


HEADERS = ["binary", "runtime", "compiler", "dispatch code", "bytes", "ind. jumps",
           "kind", "handlers (own/all)", "found", "check"]


def row(r: Report) -> list:
    code = ", ".join(d["name"] or f"unnamed@{d['start']:#x}" for d in r.dispatch_code)
    handlers = f"{r.handlers_own}/{r.handlers}" if r.handlers is not None else "-"
    found = r.confidence.split(":")[0]
    jumps = r.dispatch_jumps if r.kind != "call loop" else f"{r.indirect_calls} calls"
    if r.kind == "tail call":
        code = f"{code} + {r.handlers} handlers"
    size = r.size + (r.size_handlers or 0)
    return [r.binary, r.runtime or "-", r.compiler, code, f"{size:,}", jumps, r.kind,
            handlers, found, MERGED if r.merged else "ok"]


def format_table(reports: list[Report]) -> str:
    return table([row(r) for r in reports], HEADERS, align="lllllrllll")


def format_detail(r: Report) -> str:
    """What the table cannot hold: how the code was found, how sure, and why."""
    lines = [f"{r.binary}:" + (f" (read {r.file})" if r.file != r.binary else ""),
             f"  found: {r.found_by}", f"  how sure: {r.confidence}"]
    lines += [f"  {e}" for e in r.evidence]
    lines.append(f"  verdict: {r.verdict}")
    return "\n".join(lines)
