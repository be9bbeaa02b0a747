"""The execution modes: one immutable record each, the only list of them.

A mode names the generated interpreter it builds on, what the build adds
(C defines, hand-written sources, compiler features), and for the JIT modes
how execution enters a trace and how a trace leaves.  Adding a crossing is
one record here plus its C and stencil code; nothing else lists modes.
"""
from __future__ import annotations

from .errors import BuildError
from .record import Frozen, factory

# The dispatch variants the generator (interp/generate.py) writes from isa.py.
VARIANTS = ("switch", "goto", "goto-merged", "tailcall")

_TAILCALL_FEATURES = frozenset({"musttail", "preserve_none", "preserve_none_musttail"})
# Hand-written C every JIT build compiles in (csrc/).
_JIT_SOURCES = ("shim.c", "jitmem.c")
_JIT_HEADERS = ("jit_interp.h", "crossing.h")


class Mode(Frozen):
    name: str
    variant: str                           # the generated interpreter it builds on
    summary: str
    features: frozenset[str] = frozenset()  # what the compiler must support (toolchain probes)
    defines: tuple[str, ...] = ()           # -D flags of its build
    c_sources: tuple[str, ...] = ()         # hand-written C compiled in besides driver.c
    headers: tuple[str, ...] = ()           # hand-written headers it needs besides vm.h
    family_flags: dict = factory(dict)   # compiler family -> extra flags
    binary: str = ""                        # modes with one binary share this name ("" = name)
    asm_handlers: bool = False              # PeachPy handlers linked in (interp/asm_handlers.py)
    # can keep the operand stack's top K values in registers (--cache K, K > 0):
    # the tail-call interpreter generated per K, and the JIT modes on it
    cache: bool = False
    # -- JIT modes only ---------------------------------------------------------
    jit: bool = False
    entry: str = ""                         # how the interpreter enters a trace
    exit: str = ""                          # how a trace gives control back
    exit_stencil: str = ""                  # the stencil of an exit slot
    count_exit_stencil: str = ""            # the same in count builds (keeps counts exact)
    exits_to_handler: str = "none"          # "all", "deopt" (deopt exits only) or "none"
    trace_table: bool = False               # traces get opcodes and dispatch-table slots
    entry_copies: bool = False              # ...whose slots hold copies of ENTER_JIT, not traces
    # the stencil of a deopt exit that jumps straight to the handler (":far" variant too)
    handler_exit_stencil: str = "exit:direct-handler"
    # the traces' register order (abi/contract.py trace_state): "" the
    # interpreter's; else the traces are built for another, and its stubs
    # (written against both orders) move every register at each crossing
    trace_order: str = ""
    entry_stencil: str = ""                 # a stub laid before every trace: ENTER_JIT lands in it
    # with K cached values (--cache K): ENTER_JIT spills them to the memory
    # stack before the trace runs (the shim's C call cannot carry them in the
    # preserve_none registers); else the trace is entered with them in registers
    entry_spills: bool = False
    # entered through an ordinary C call to a conversion shim, and left by
    # returning to it (the crossings the lab prices against the direct ones)
    shim: bool = False

    @property
    def build_name(self) -> str:
        return self.binary or self.name


def _jit(name: str, summary: str, crossing: str, **how) -> Mode:
    """A JIT mode: the tail-call interpreter built with SL_JIT=`crossing`
    (csrc/crossing.h), plus how its traces are entered and left."""
    return Mode(name, "tailcall", summary, _TAILCALL_FEATURES, defines=(f"-DSL_JIT={crossing}",),
                c_sources=_JIT_SOURCES, headers=_JIT_HEADERS, jit=True, cache=True, **how)


_DIRECT_ENTRY = "ENTER_JIT jumps to the trace with the contract registers as they are"
_TABLE_EXIT = "the exit slot sets ip and jumps through the dispatch table"

_REGISTRY = (
    Mode("switch", "switch", "for (;;) switch (ip->op)"),
    Mode("goto", "goto", "computed goto, a dispatch jump at the end of every handler",
         frozenset({"computed_goto"})),
    Mode("goto-merged", "goto-merged",
         "computed goto with every handler jumping to one shared dispatch site",
         frozenset({"computed_goto"}),
         # gcc factors all computed gotos into one and duplicates them back
         # unless told not to; clang gets the same from the asm goto in the source
         family_flags={"gcc": ("--param=max-goto-duplication-insns=0",)}),
    Mode("tailcall", "tailcall",
         "one preserve_none function per handler, musttail dispatch through the table",
         _TAILCALL_FEATURES, cache=True),
    Mode("asm", "tailcall",
         "PeachPy handlers in the tail-call interpreter's registers (a hand-written reference)",
         _TAILCALL_FEATURES, defines=("-DSL_ASM",), asm_handlers=True),
    _jit("jit-shim", "traces entered and left through a C shim", "SL_JIT_SHIM",
         entry="ENTER_JIT calls the C shim, which saves rbx, r12-r15 and calls the trace",
         exit="the trace returns the resume ip to the shim; ENTER_JIT dispatches",
         exit_stencil="exit:shim", count_exit_stencil="exit:shim", entry_spills=True,
         shim=True),
    _jit("jit-shim-args", "as jit-shim, the cached values passed through the shim's C "
         "signature", "SL_JIT_SHIM_ARGS",
         entry="ENTER_JIT calls a C shim whose arguments include the K cached values (past "
         "the sixth, on the C stack); it saves rbx, r12-r15 and calls the trace with them in "
         "their registers",
         exit="the exit spills the cached values to the operand stack and returns the resume "
         "ip to the shim; ENTER_JIT reloads them and dispatches",
         exit_stencil="exit:shim", count_exit_stencil="exit:shim", shim=True),
    _jit("jit-direct", "preserve_none tail call in, dispatch-table jump out", "SL_JIT_DIRECT",
         entry=_DIRECT_ENTRY, exit=_TABLE_EXIT, exit_stencil="exit:direct",
         count_exit_stencil="exit:direct:count", exits_to_handler="deopt"),
    _jit("jit-direct-handler", "as jit-direct, exits jump straight to the handler",
         "SL_JIT_DIRECT", binary="jit-direct", entry=_DIRECT_ENTRY,
         exit="the exit slot sets ip and jumps to the resume instruction's handler",
         exit_stencil="exit:direct-handler", count_exit_stencil="exit:direct-handler",
         exits_to_handler="all"),
    _jit("jit-table", "the interpreter's dispatch lands in the trace itself", "SL_JIT_DIRECT",
         binary="jit-direct", entry="each trace has an opcode whose dispatch-table slot is "
         "the trace", exit=_TABLE_EXIT, exit_stencil="exit:direct",
         count_exit_stencil="exit:direct:count", exits_to_handler="deopt", trace_table=True),
    _jit("jit-direct-sites", "as jit-direct, each trace entered by an ENTER_JIT of its own",
         "SL_JIT_DIRECT", binary="jit-direct", entry="each trace has an opcode whose table "
         "slot is one of 64 copies of ENTER_JIT, so each trace has its own entry jump",
         exit=_TABLE_EXIT, exit_stencil="exit:direct", count_exit_stencil="exit:direct:count",
         exits_to_handler="deopt", trace_table=True, entry_copies=True),
    _jit("jit-trampoline", "traces in another register order: a stub moves every register "
         "each way", "SL_JIT_DIRECT", binary="jit-direct",
         entry="ENTER_JIT jumps to the trace's entry trampoline, a stub that moves the contract "
         "registers and the K cached values from the interpreter's preserve_none order to the "
         "traces' (a rotation: every value moves) and falls into the trace",
         exit="the exit slot sets ip in the traces' order, moves every register back to the "
         "interpreter's and jumps through the dispatch table (no call, nothing saved)",
         exit_stencil="exit:trampoline", count_exit_stencil="exit:trampoline:count",
         handler_exit_stencil="exit:trampoline-handler", exits_to_handler="deopt",
         trace_order="rotated", entry_stencil="entry:trampoline"),
)

MODES: dict[str, Mode] = {m.name: m for m in _REGISTRY}
NAMES = tuple(MODES)
INTERPRETERS = tuple(m.name for m in _REGISTRY if not m.jit)
JIT = tuple(m.name for m in _REGISTRY if m.jit)
# the modes that take --cache K with K > 0
CACHING = tuple(m.name for m in _REGISTRY if m.cache)
# `run` also takes the Python oracle, which is no build
REFERENCE = "reference"


class UnknownMode(BuildError):
    pass


def get(name: str) -> Mode:
    try:
        return MODES[name]
    except KeyError:
        raise UnknownMode(f"unknown mode {name!r} (choose from {', '.join(NAMES)})") from None


def is_jit(name: str) -> bool:
    return name in MODES and MODES[name].jit
