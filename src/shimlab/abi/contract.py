"""The register contract: which register holds which piece of VM state (mirror of csrc/vm.h).

clang's preserve_none passes arguments in this order on x86-64; the tail-call
handlers take the VM state as their leading arguments, so each state value
stays in one register between handlers.  tests/test_contract.py checks this
list against vm.h and against a compiled handler's disassembly.

The order is not a stable ABI, so `derive(cc)` reads it from a compiled probe
and `state_for(order)` maps the VM state onto it; STATE is the documented
default (what clang 19 and 22 do), used when no compiler is named.
"""
from __future__ import annotations

from functools import lru_cache

from .. import toolchain
from ..digest import sha256
from ..errors import ShimlabError

PRESERVE_NONE_ARGS = ("r12", "r13", "r14", "r15", "rdi", "rsi", "rdx", "rcx", "r8", "r9",
                      "r11", "rax")

# state value -> register, in argument order
STATE = {
    "ip": "r12",     # const sl_instr *: the current instruction
    "sp": "r13",     # int64_t *: next free operand-stack slot
    "fp": "r14",     # int64_t *: locals of the current frame
    "head": "r15",   # uint8_t *: the BF tape head
    "vm": "rdi",     # sl_vm *: everything else
    "table": "rsi",  # the dispatch table
}

INSTR_SIZE = 8       # sl_instr: int32 opcode, int32 operand
OPARG_OFFSET = 4

# Registers the PeachPy stencils use for their own purposes: rax/rdx (idiv),
# rcx (shift counts), r8 as plain scratch, and r9/r10 hold the operand in the
# asm interpreter.  A contract that puts VM state in one of them cannot be
# served by these stencils, and says so instead of miscompiling.  The trace
# optimizer's level 3 keeps minipy locals in r9, r10 and rbx (peachpy_stencils/fused.py),
# which this keeps out of every contract too (rbx is no argument register).
STENCIL_SCRATCH = ("rax", "rcx", "rdx", "r8", "r9", "r10")


class ContractError(ShimlabError):
    pass


def state_for(order: tuple[str, ...]) -> dict[str, str]:
    """The VM state laid onto an argument order (the handlers' parameter order
    is STATE's: ip, sp, fp, head, vm, table)."""
    if len(order) < len(STATE):
        raise ContractError(f"preserve_none passes only {len(order)} arguments in registers; "
                            f"the VM state needs {len(STATE)}")
    state = dict(zip(STATE, order))
    clash = sorted(set(state.values()) & set(STENCIL_SCRATCH))
    if clash:
        names = ", ".join(f"{k} in {r}" for k, r in state.items() if r in clash)
        raise ContractError(f"this contract puts {names}: the stencils use "
                            f"{', '.join(clash)} as scratch, so they cannot serve it")
    return state


def key(state: dict[str, str]) -> str:
    """A short name for a register assignment ('' for the default one)."""
    return "" if state == STATE else "-".join(state[k] for k in STATE)


def derive(cc: str | None = None) -> tuple[str, ...]:
    """preserve_none's argument registers for compiler `cc`, read from a probe
    (cached per compiler binary)."""
    compiler = toolchain.get_compiler(cc, need={"preserve_none"})
    return _derive_path(compiler.path)


def state_of(cc: str | None) -> dict[str, str]:
    """The register assignment of compiler `cc`'s handlers (STATE when None)."""
    return STATE if cc is None else state_for(derive(cc))


# -- reading the order from a compiler ---------------------------------------
# A probe function takes twelve arguments and stores each into its own global;
# in the object file every store is a `mov [rip + disp], reg` whose
# displacement carries a relocation naming the global, so the order falls out
# of capstone's operands and the ELF relocations (shimlab.disasm), with no
# instruction interpreted beyond that store.

NARGS = len(PRESERVE_NONE_ARGS)

PROBE = ("".join(f"long sl_probe_arg{i};\n" for i in range(NARGS))
         + "__attribute__((preserve_none)) void sl_probe("
         + ", ".join(f"long a{i}" for i in range(NARGS)) + ") {\n"
         + "".join(f"    sl_probe_arg{i} = a{i};\n" for i in range(NARGS)) + "}\n")

_PROBE_KEY = sha256(PROBE.encode()).hexdigest()[:16]   # a new probe, a new key


def parse(insns, relocs: dict[int, str]) -> tuple[str, ...]:
    """The probe's instructions and relocations -> the argument registers in order."""
    found: dict[int, str] = {}
    for i in insns:
        # a plain store: one register operand, a rip-relative destination
        if i.mnemonic != "mov" or len(i.regs) != 1 or i.rip_disp_at is None:
            continue
        sym = relocs.get(i.addr + i.rip_disp_at, "")
        if sym.startswith("sl_probe_arg") and sym[len("sl_probe_arg"):].isdigit():
            found[int(sym[len("sl_probe_arg"):])] = i.regs[0]
    missing = [i for i in range(NARGS) if i not in found]
    if missing:
        raise ContractError("cannot read the preserve_none probe: no plain register store "
                            f"for argument(s) {', '.join(map(str, missing))}")
    return tuple(found[i] for i in range(NARGS))


@lru_cache(maxsize=None)
def _derive_path(path: str) -> tuple[str, ...]:
    """The order for the compiler binary at `path`: from the disk cache
    (build/contract.json, keyed by the binary's real path, size and mtime and
    by the probe's text) or probed, and then cached.  Probing takes a
    compile and the ELF and capstone imports, about 0.1 s of every JIT
    process's start-up before the cache (issue 24)."""
    import json
    import os
    from ..atomicfile import write_atomic
    from ..paths import build_dir
    real = os.path.realpath(path)
    cache = os.path.join(build_dir(), "contract.json")
    try:
        st = os.stat(real)
        key = f"{st.st_mtime_ns}:{st.st_size}:{_PROBE_KEY}"
    except OSError:
        key = None
    try:
        with open(cache) as f:
            entries = json.load(f)
        entries = entries if isinstance(entries, dict) else {}
    except (OSError, ValueError):
        entries = {}
    hit = entries.get(real)
    if key and isinstance(hit, dict) and hit.get("key") == key and \
            isinstance(hit.get("order"), list) and len(hit["order"]) == NARGS:
        return tuple(hit["order"])
    order = _probe_order(path)
    if key:
        entries[real] = {"key": key, "order": list(order)}
        try:
            write_atomic(cache, json.dumps(entries, indent=1, sort_keys=True))
        except OSError:
            pass            # a read-only tree just probes again next time
    return order


def _probe_order(path: str) -> tuple[str, ...]:
    # imported here: probing is rare (cached per compiler), and a run never needs it
    import subprocess
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory(prefix="shimlab-contract-") as tmp:
        src, obj = Path(tmp) / "probe.c", Path(tmp) / "probe.o"
        src.write_text(PROBE)
        # -O1: one store per argument, no spills; -fno-pic: no GOT indirection
        proc = subprocess.run([path, "-O1", "-fno-pic", "-c", str(src), "-o", str(obj)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ContractError(f"{path} cannot compile the preserve_none probe: "
                                f"{proc.stderr.strip()[:300]}")
        from .. import disasm       # only when a compiler is probed (then cached)
        return parse(*disasm.object_text(obj))


# -- cached values (--cache K) -------------------------------------------------
# With K cached values the handlers take 6 + K arguments: the state, then the
# operand stack's top K (c0 the top).  They land in the argument registers
# after the state's; CACHE is where clang 19 and 22 put them (the exit stubs
# of peachpy_stencils/exits.py reload them there).

CACHE = PRESERVE_NONE_ARGS[len(STATE):]


def cache_registers(cc: str | None, k: int) -> tuple[str, ...]:
    """The registers of the K cached values c0..c(K-1) for compiler `cc`
    (the documented default when None)."""
    order = PRESERVE_NONE_ARGS if cc is None else derive(cc)
    if len(STATE) + k > len(order):
        raise ContractError(f"{k} cached values: preserve_none passes only {len(order)} "
                            f"arguments in registers, {len(STATE)} of them the VM state")
    return tuple(order[len(STATE):len(STATE) + k])


def check_cache_stencils(cc: str, k: int) -> None:
    """The JIT's exit stubs reload cached values into CACHE's registers: refuse
    a compiler that passes them elsewhere instead of miscompiling."""
    if derive(cc)[:len(STATE)] != tuple(STATE.values()) or cache_registers(cc, k) != CACHE[:k]:
        raise ContractError(f"{cc} passes the state or {k} cached values in other registers "
                            f"than the JIT's exit stubs reload them into "
                            f"({', '.join(tuple(STATE.values()) + CACHE[:k])})")


def musttail_probe(nargs: int) -> str:
    """C for a preserve_none handler of `nargs` int64 arguments that dispatches
    with an indirect musttail call, like an interpreter with nargs - 6 cached
    values."""
    params = ", ".join(f"long a{i}" for i in range(nargs))
    args = ", ".join(f"a{i}" for i in range(nargs))
    return (f"typedef __attribute__((preserve_none)) int sl_fn({params});\n"
            f"__attribute__((preserve_none)) int sl_probe({params}) {{\n"
            f"    sl_fn *const *table = (sl_fn *const *)a5;\n"
            f"    __attribute__((musttail)) return table[a0]({args});\n}}\n")


@lru_cache(maxsize=None)
def _musttail_compiles(path: str, nargs: int) -> bool:
    import subprocess
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory(prefix="shimlab-contract-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(musttail_probe(nargs))
        proc = subprocess.run([path, "-O2", "-c", str(src), "-o", str(Path(tmp) / "probe.o")],
                              capture_output=True, text=True)
    return proc.returncode == 0


def max_cache(cc: str | None = None) -> int:
    """The most cached values compiler `cc` can dispatch with: the largest K
    whose 6 + K argument indirect musttail call compiles (clang 19 and 22 run
    out of registers at 12 arguments, so 5)."""
    compiler = toolchain.get_compiler(cc, need={"preserve_none", "musttail"})
    k = 0
    while len(STATE) + k < NARGS and _musttail_compiles(compiler.path, len(STATE) + k + 1):
        k += 1
    return k


# -- a second register order: traces compiled for other registers --------------
# jit-trampoline (modes.py) runs its traces in another order than the
# interpreter's, as when the interpreter and the JIT code come from compilers
# whose preserve_none orders differ: a rotation, so that every value moves
# and none leaves the registers the stencils can serve.  Each state value goes
# to the register of the next one (ip to sp's, ..., table to ip's), each
# cached value c_j to CACHE[j + 1] (c4 wraps round to c0's); the trampoline
# stubs (peachpy_stencils/trampoline.py) move them there on entry and back on exit.

ORDERS = ("", "rotated")             # "": the traces use the interpreter's registers
CACHE_REGS = CACHE[:CACHE.index("rax")]    # the registers K = 1..5 cached values can use


def trace_state(state: dict[str, str] | None, order: str) -> dict[str, str] | None:
    """The register assignment of the traces of a mode with trace order
    `order`, for an interpreter with `state` (None: the static contract)."""
    if order == "":
        return state
    if order != "rotated":
        raise ContractError(f"unknown trace order {order!r} (choose from {ORDERS})")
    regs = list((state or STATE).values())
    return dict(zip(STATE, regs[1:] + regs[:1]))


def interpreter_state(traces: dict[str, str], order: str) -> dict[str, str]:
    """The inverse of trace_state: the interpreter's registers, given the traces'."""
    if order == "":
        return traces
    regs = list(traces.values())
    return dict(zip(STATE, regs[-1:] + regs[:-1]))


def trace_cache_registers(k: int, order: str) -> tuple[str, ...]:
    """Where the traces of trace order `order` hold K cached values (c0 first)."""
    if order == "":
        return CACHE_REGS[:k]
    return tuple(CACHE_REGS[(j + 1) % len(CACHE_REGS)] for j in range(k))
