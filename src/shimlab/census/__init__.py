"""The baseline check on interpreters others built: `census(path)` finds a
binary's dispatch code (CPython's eval loop, Lua's, Ruby's, Perl's, PHP's,
shimlab's own, or any function by name), says how it was found and how sure
that is, what kind of dispatch it is, how many indirect jumps it has, and
whether a build meant to have one jump per handler has merged them.

    from shimlab.census import census
    r = census("/usr/bin/python3.11")
    r.kind, r.indirect_jumps, r.merged, r.to_json()

Machine code is read as `shimlab dis --native` reads it (shimlab.disasm,
shimlab.elf, shimlab.dispatch_sites); `shimlab census` is the command.
"""
from __future__ import annotations

import re

from ..dispatch_sites import (Handler, goto_handlers, label_ranges, merged, merged_verdict,
                              tail_dispatch, with_own)
from ..elf import Image
from ..errors import ShimlabError
from . import locate, runtimes, tables
from .report import Report

__all__ = ["census", "Report", "CensusError"]


class CensusError(ShimlabError):
    """A binary the census cannot read, or in which it finds no dispatch code."""


def census(path, function: str | None = None) -> Report:
    """The census of one binary: `function` names the dispatch function
    (default: the known interpreters' ones; a launcher that links the
    interpreter's library is followed to it)."""
    image = Image(path)
    via = None
    if function is None and runtimes.by_symbol(image.functions) is None:
        lib = runtimes.by_library(image.dynamic["DT_NEEDED"])
        if lib:
            found = image.find_library(lib[1])
            if found is None:
                raise CensusError(f"{path}: links {lib[1]} ({lib[0].name}), which is not "
                                  f"found where the loader would look")
            via, image = f"{path} links {lib[1]}: read {found}", Image(found)
    rt, start, code, confidence, evidence = _locate(image, function)
    report = Report(binary=str(path), file=str(image.path), runtime=rt.name if rt else None,
                    compiler=_compiler(image), function=start, stripped=image.stripped)
    if via:
        report.evidence.append(via)
    report.dispatch_code = [{"start": b.start, "size": b.size, "name": b.name}
                            for b in code.blocks]
    report.size, report.indirect_jumps, report.indirect_calls = code.size, code.jumps, code.calls
    report.found_by, report.confidence = code.how, confidence
    report.evidence += evidence
    _classify(image, rt, code, report)
    return report


# -- where the dispatch code is ------------------------------------------------------

def _locate(image: Image, function: str | None):
    table = ".dynsym (exported)" if image.stripped else ".symtab"
    if function is not None:
        if function not in image.functions:
            raise CensusError(f"{image.path}: no function {function!r} in its symbols"
                              + _stripped_note(image))
        code = locate.read(image, locate.named(image, function), f"named by its symbol "
                                                                 f"in {table}")
        hit = runtimes.by_symbol({function: 0})
        return (hit[0] if hit else None), function, code, "certain: its own symbol names it", []
    hit = runtimes.by_symbol(image.functions)
    if hit is None:
        raise CensusError(f"{image.path}: no interpreter dispatch code found: it names none "
                          f"of {runtimes.KNOWN}" + _stripped_note(image)
                          + "; name the function with --function NAME")
    rt, name, is_dispatch = hit
    code = locate.read(image, locate.named(image, name), f"named by its symbol in {table}")
    split = [b.name for b in code.blocks[1:]]
    if split:
        code.how += f", with the parts the compiler split off it ({', '.join(split)})"
    unnamed = locate.split_parts(image, code) if is_dispatch else []
    if unnamed:
        code = locate.read(image, code.blocks + unnamed, code.how + (
            f", and {len(unnamed)} part(s) the compiler split off it whose symbols are "
            f"stripped: " + ", ".join(f"{b.label()} ({b.size:,} bytes by .eh_frame)"
                                      for b in unnamed)
            + ", entered by jumps from it (never called) and jumping back into it"))
    if is_dispatch and (code.jumps >= 1 or (rt.call_loop and code.calls)
                        or _enters_a_table(image, code)):
        in_parts = sum(1 for i in code.insns if i.indirect_jump and not any(
            b.start <= i.addr < b.start + b.size for b in code.blocks if b.name))
        if in_parts * 2 <= code.jumps:
            return rt, name, code, "certain: its own symbol names it", (
                [f"{in_parts} of its {code.jumps} indirect jumps are in the unnamed part(s)"]
                if unnamed else [])
        return rt, name, code, "", [f"{in_parts} of its {code.jumps} indirect jumps are "
                                    f"in the unnamed part(s)"] + _cluster_check(image, code)
    # the named function holds no dispatch: the loop is in code without a symbol
    followed = locate.follow(image, code, name)
    if followed is None:
        raise CensusError(f"{image.path}: {rt.name}'s {name} is here, but no code reached "
                          f"from it has a dispatch loop ({locate.LEAST_JUMPS}+ indirect "
                          f"jumps)" + _stripped_note(image))
    evidence = []
    if not is_dispatch:
        evidence.append(f"{rt.dispatch[0]} has no symbol here; started from {name}")
    else:
        evidence.append(f"{name} itself ({code.size:,} bytes) has {code.jumps} indirect "
                        f"jumps: the loop lives in code without a symbol")
    evidence += _cluster_check(image, followed)
    return rt, name, followed, "", evidence


def _enters_a_table(image: Image, code: locate.Code) -> bool:
    """Whether the code calls through a table of functions (a tail-call
    build's entry, which calls the first handler)."""
    entries = set(image.function_at) | {s for s, _ in image.extents}
    return any(i.indirect_call and tables.site_table(image, code.insns, k, entries.__contains__)
               for k, i in enumerate(code.insns))


def _cluster_check(image: Image, code: locate.Code) -> list[str]:
    """Whether the code found is also where the binary's indirect jumps are densest."""
    dense = locate.densest(image)
    if not dense:
        return []
    (n, ext), rest = dense[0], dense[1:]
    if any(ext == (b.start, b.size) for b in code.blocks):
        after = f"; the next has {rest[0][0]}" if rest else ""
        return [f"it is also the binary's densest cluster of indirect jumps "
                f"(PLT left out){after}"]
    return [f"the binary's densest cluster of indirect jumps is elsewhere: {n} at "
            f"{ext[0]:#x} ({ext[1]:,} bytes)"]


def _stripped_note(image: Image) -> str:
    if not image.stripped:
        return ""
    return (f" (stripped: no .symtab, only the {len(image.functions)} exported functions "
            f"of .dynsym)")


def _compiler(image: Image) -> str:
    """The compiler, from .comment (clang before GCC: a clang build carries
    GCC's line too, from the C library's start files), else from CPython's
    version string."""
    text = image.comment
    if text:
        clang = re.search(r"clang version (\d+[\d.]*)", text)
        gcc = re.search(r"GCC: \([^)]*\) (\d+[\d.]*)", text)
        if clang:
            return f"clang {clang.group(1)}"
        if gcc:
            return f"GCC {gcc.group(1)}"
        return text
    said = image.strings(rb"\[(GCC|Clang) \d+[\d.]*[^]\n]{0,40}\]")
    if said:
        name, version = said[0].strip("[]").split()[:2]
        return f"{'clang' if name == 'Clang' else name} {version} (CPython's version string)"
    return "unknown (.comment stripped)"


# -- what kind of dispatch, and is it merged ----------------------------------------

def _classify(image: Image, rt, code: locate.Code, report: Report) -> None:
    insns = code.insns
    starts = {s: n for s, n in image.function_at.items()}
    fstarts = set(starts) | {s for s, _ in image.extents}
    sites = [k for k, i in enumerate(insns) if i.indirect_jump or i.indirect_call]
    # a tail-call build: a table of functions, most of which end in a jump of their own
    # (a table of functions that return is a call loop's, or a table of helpers)
    tail = []
    for k in sites:
        t = tables.site_table(image, insns, k, fstarts.__contains__)
        if t and len(t.distinct) >= 8 and t.addr not in {x.addr for x, _ in tail}:
            handlers = _tail_handlers(image, t, starts)
            if with_own(handlers) > len(handlers) // 2:
                tail.append((t, handlers))
    if tail:
        return _tail_calls(rt, code, *max(tail, key=lambda p: len(p[1])), report)
    # a label may sit in a split-off part no symbol names, even one that is only
    # reached through the table (an error path): most labels must be in the code
    def inside(a: int) -> bool:
        if code.inside(a):
            return True
        ext = image.extent_of(a)
        return bool(ext) and ext[0] not in image.function_at

    by_table: dict[int, list] = {}
    for k in sites:
        if insns[k].indirect_jump:
            t = tables.site_table(image, insns, k, inside)
            if t and 2 * sum(1 for a in t.distinct if code.inside(a)) > len(t.distinct):
                by_table.setdefault(t.addr, [t, 0])[1] += 1
    if by_table:
        t, used = max(by_table.values(), key=lambda v: (v[1], len(v[0].entries)))
        # most jumps going elsewhere than the table: that table is an inner switch's
        if used * 4 >= code.jumps or code.jumps < locate.LEAST_JUMPS:
            return _goto_or_switch(image, rt, code, t, used, report)
    if code.jumps >= locate.LEAST_JUMPS:
        labels = tables.referenced(image, insns, code.inside)
        return _threaded(rt, code, labels[0] if labels else None, report)
    if code.calls:
        report.kind = "call loop"
        report.verdict = (f"calls each operation's function through a pointer "
                          f"({code.calls} indirect call site(s)); no per-handler jumps to merge")
        _confidence(report, None, code)
        return None
    report.kind = "unknown"
    report.verdict = f"{code.jumps} indirect jump(s) and no dispatch table read off them"
    _confidence(report, None, code)
    return None


def _table_json(t: tables.Table, used: int | None = None) -> dict:
    return {"addr": t.addr, "section": t.section, "symbol": t.symbol, "width": t.width,
            "entries": len(t.entries), "distinct": len(t.distinct), "sites": used}


def _confidence(report: Report, t: tables.Table | None, code: locate.Code,
                what: str = "the dispatch table its jumps index") -> None:
    if report.confidence:
        return
    if t is not None:
        report.confidence = (f"sure: {what} ({len(t.entries)} entries at {t.addr:#x}, "
                             f"{t.section}) points only into it")
    else:
        report.confidence = "likely: the most indirect jumps reached; no table confirms it"


def _names(t: tables.Table) -> list[tuple[str, int]]:
    first = {}
    for k, a in enumerate(t.entries):
        first.setdefault(a, k)
    return [(f"#{k}", a) for a, k in sorted(first.items(), key=lambda p: p[1])]


def _goto_or_switch(image, rt, code, t, used, report) -> None:
    report.table = _table_json(t, used)
    elsewhere = sum(1 for a in t.distinct if not code.inside(a))
    if elsewhere:
        report.evidence.append(f"{elsewhere} of its labels lie in unnamed code outside it "
                               f"(a part split off it that does not jump back)")
    handlers = goto_handlers(code.insns, label_ranges(code.insns, _names(t)))
    report.handlers, report.handlers_own = len(handlers), with_own(handlers)
    goto_names = rt.goto_tables if rt else ()
    if t.width == 4:
        kind, why = "switch", "its table holds offsets, as compilers lay out a switch"
    elif t.symbol and (t.symbol in goto_names or re.search(r"label|target|disptab", t.symbol)):
        kind, why = "computed goto", f"its table is {t.symbol}, a table of label addresses"
    elif image.pic and t.section != ".rodata":
        kind, why = ("computed goto", f"its table of absolute label addresses is in "
                     f"{t.section}; compilers lay out a switch as offsets in position-"
                     f"independent code")
    elif used >= 2:
        kind, why = ("computed goto", f"{used} jumps index one table: one per handler, as a "
                     f"computed goto compiles (a switch the compiler copied into every case "
                     f"would read the same)")
    else:
        kind, why = ("switch", "one jump through a table of case addresses (a computed goto "
                     "merged into one jump would read the same: no symbol tells them apart)")
    report.kind = kind
    report.evidence.append(f"{kind}: {why}")
    report.merged = kind == "computed goto" and merged(code.jumps, report.handlers_own,
                                                       report.handlers)
    if report.merged:
        report.verdict = merged_verdict(code.jumps, report.handlers)
    elif kind == "switch":
        report.verdict = f"switch: {code.jumps} indirect jump(s), {used} through its table"
    else:
        report.verdict = (f"{report.handlers_own} of {report.handlers} handlers dispatch on "
                          f"their own")
    _confidence(report, t, code)


def _threaded(rt, code, labels, report) -> None:
    report.kind = "computed goto (threaded)"
    report.evidence.append("its jumps go to an address held in the instruction, not indexed "
                           "from a table")
    if labels is not None:
        report.table = _table_json(labels)
        handlers = goto_handlers(code.insns, label_ranges(code.insns, _names(labels)))
        report.handlers, report.handlers_own = len(handlers), with_own(handlers)
        report.merged = merged(code.jumps, report.handlers_own, report.handlers)
        report.evidence.append(f"its handlers' addresses: a table of {len(labels.entries)} "
                               f"labels at {labels.addr:#x} that the code takes")
    report.verdict = (merged_verdict(code.jumps, report.handlers) if report.merged else
                      f"{code.jumps} dispatch jumps" + (
                          f"; {report.handlers_own} of {report.handlers} handlers dispatch on "
                          f"their own" if labels is not None else ""))
    _confidence(report, labels, code, "the table of its handlers' addresses that it takes")


def _tail_handlers(image, t: tables.Table, starts: dict[int, str]) -> list:
    named = {a: starts.get(a, f"{a:#x}") for a in t.distinct}
    handlers = []
    for addr in t.distinct:
        sym = image.function_at.get(addr)
        size = image.functions[sym].size if sym else (image.extent_of(addr) or (addr, 0))[1]
        body = locate.read(image, [locate.Block(addr, size, sym)], "").insns if size else []
        how, own = tail_dispatch(body, named)
        handlers.append(Handler(named[addr], addr, size, len(body), how, own))
    return handlers


def _tail_calls(rt, code, t, handlers, report) -> None:
    report.table = _table_json(t, None)
    report.handlers, report.handlers_own = len(handlers), with_own(handlers)
    prefix = rt.handler_prefix if rt else None
    by_name = sum(1 for h in handlers if prefix and h.name.startswith(prefix))
    report.kind = "tail call"
    own_sites = sum(h.own_sites for h in handlers)
    report.merged = merged(own_sites, report.handlers_own, len(handlers))
    report.verdict = merged_verdict(own_sites, len(handlers)) if report.merged else (
        f"{report.handlers_own} of {len(handlers)} handlers end in their own dispatch jump")
    report.evidence.append(
        f"tail call: a table of {len(t.entries)} function entries ({len(handlers)} "
        f"distinct) at {t.addr:#x}, each handler a function of its own"
        + (f"; {by_name} are named {prefix}*" if by_name else ""))
    report.size_handlers = sum(h.size for h in handlers)
    report.handler_jumps = own_sites
    _confidence(report, t, code)
