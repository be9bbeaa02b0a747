"""The register contract, as the JIT stencils see it (mirror of csrc/vm.h).

clang's preserve_none passes arguments in this order on x86-64; the tail-call
handlers take the VM state as their leading arguments, so each state value
stays in one register between handlers.  tests/test_contract.py checks this
list against vm.h and against a compiled handler's disassembly.
"""
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
