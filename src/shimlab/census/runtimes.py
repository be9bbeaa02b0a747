"""The interpreters the census knows: the function that holds each one's
dispatch loop, the exported functions it is reached from when that one has
no symbol, the library a thin launcher links it from, and the names that
tell a tail-call or computed-goto build.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Runtime:
    name: str
    dispatch: tuple[str, ...]           # the function holding the dispatch loop
    entries: tuple[str, ...] = ()       # exported functions it is reached from
    library: str | None = None          # a launcher's DT_NEEDED prefix (libpython...)
    handler_prefix: str | None = None   # a tail-call build's handler functions
    goto_tables: tuple[str, ...] = ()   # a computed-goto build's label tables
    call_loop: bool = False             # dispatches by calling each op's function


RUNTIMES = (
    Runtime("CPython", ("_PyEval_EvalFrameDefault",), ("PyEval_EvalCode",), "libpython",
            handler_prefix="_TAIL_CALL_",
            goto_tables=("opcode_targets", "opcode_targets_table")),
    Runtime("Lua", ("luaV_execute",), ("lua_callk", "lua_pcallk", "lua_resume"), "liblua",
            goto_tables=("disptab",)),
    Runtime("Ruby", ("vm_exec_core",), ("rb_iseq_eval_main", "rb_iseq_eval", "rb_funcallv"),
            "libruby", goto_tables=("insns_address_table",)),
    Runtime("Perl", ("Perl_runops_standard",), (), "libperl", call_loop=True),
    Runtime("PHP", ("execute_ex",), ("zend_execute",), "libphp"),
    # shimlab's own builds: `shimlab census` on build/interp/*/libshimlab.so
    Runtime("shimlab", ("sl_interpret",), (), None, handler_prefix="sl_op_",
            goto_tables=("sl_interpret.sl_labels", "sl_labels.0", "sl_labels")),
)

KNOWN = ", ".join(f"{r.dispatch[0]} ({r.name})" for r in RUNTIMES)


def by_symbol(functions) -> tuple[Runtime, str, bool] | None:
    """(runtime, the function to start from, whether it is the dispatch
    function itself) for the first runtime whose names `functions` has."""
    for rt in RUNTIMES:
        for name in rt.dispatch:
            if name in functions:
                return rt, name, True
    for rt in RUNTIMES:
        for name in rt.entries:
            if name in functions:
                return rt, name, False
    return None


def by_library(needed: list[str]) -> tuple[Runtime, str] | None:
    for rt in RUNTIMES:
        for soname in needed:
            if rt.library and soname.startswith(rt.library):
                return rt, soname
    return None
