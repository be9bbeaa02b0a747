"""The register contract, as the JIT stencils see it (mirror of csrc/vm.h).

clang's preserve_none passes arguments in this order on x86-64; the tail-call
handlers take the VM state as their leading arguments, so each state value
stays in one register between handlers.  tests/test_contract.py checks this
list against vm.h and against a compiled handler's disassembly.

The order is not a stable ABI, so `derive(cc)` reads it from a compiled probe
and `state_for(order)` maps the VM state onto it; STATE is the documented
default (what clang 19 and 22 do), used when no compiler is named.
"""
from __future__ import annotations

from .errors import ShimlabError

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
    (cached per compiler binary).  See contract_probe.py."""
    from .contract_probe import derive_order
    return derive_order(cc)


def state_of(cc: str | None) -> dict[str, str]:
    """The register assignment of compiler `cc`'s handlers (STATE when None)."""
    return STATE if cc is None else state_for(derive(cc))
