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

import re
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from .. import toolchain
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
# served by these stencils, and says so instead of miscompiling.
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
# in the object file's disassembly every store names the register the argument
# arrived in and carries a relocation naming the global, so the order falls out
# without interpreting any instruction beyond `mov %reg, <global>`.

NARGS = len(PRESERVE_NONE_ARGS)

PROBE = ("".join(f"long sl_probe_arg{i};\n" for i in range(NARGS))
         + "__attribute__((preserve_none)) void sl_probe("
         + ", ".join(f"long a{i}" for i in range(NARGS)) + ") {\n"
         + "".join(f"    sl_probe_arg{i} = a{i};\n" for i in range(NARGS)) + "}\n")

_STORE = re.compile(r"^\s*[0-9a-f]+:\s+mov\s+%(\w+),")
_RELOC = re.compile(r"R_X86_64_\w+\s+sl_probe_arg(\d+)\b")


def parse(listing: str) -> tuple[str, ...]:
    """objdump -dr text of the probe -> the argument registers in order."""
    found: dict[int, str] = {}
    reg = None
    for line in listing.splitlines():
        m = _STORE.match(line)
        if m:
            reg = m.group(1)
            continue
        r = _RELOC.search(line)
        if r and reg is not None:
            found[int(r.group(1))] = reg
            reg = None
    missing = [i for i in range(NARGS) if i not in found]
    if missing:
        raise ContractError("cannot read the preserve_none probe: no plain register store "
                            f"for argument(s) {', '.join(map(str, missing))}")
    return tuple(found[i] for i in range(NARGS))


@lru_cache(maxsize=None)
def _derive_path(path: str) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory(prefix="shimlab-contract-") as tmp:
        src, obj = Path(tmp) / "probe.c", Path(tmp) / "probe.o"
        src.write_text(PROBE)
        # -O1: one store per argument, no spills; -fno-pic: no GOT indirection
        proc = subprocess.run([path, "-O1", "-fno-pic", "-c", str(src), "-o", str(obj)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ContractError(f"{path} cannot compile the preserve_none probe: "
                                f"{proc.stderr.strip()[:300]}")
        dis = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", str(obj)],
                             capture_output=True, text=True, check=True).stdout
    return parse(dis)
