"""The `asm` interpreter: every handler PeachPy-encoded, registers chosen by hand.

Each handler is the JIT stencil of its instruction with the holes turned into
reads of ip->arg, then `ip += 1` and a dispatch jump of its own; render()
writes them, and their dispatch table, as an assembler file that build.py
links with the tail-call interpreter's C handlers (the fallbacks below).
"""
from __future__ import annotations

from peachpy_stencils import asm as jasm
from peachpy_stencils.build import load_families

from .. import isa
from ..abi import contract
from ..errors import BuildError
from ..isa import Flow
from ..stencil import StencilError, find_holes

# The instructions the asm interpreter leaves to the C tail-call handler of
# the same name (its table points straight at sl_op_NAME): those isa.py gives
# no stencil, with the reason it gives (they call into C or move whole frames,
# and none is on a hot dispatch path in the benchmarks).  Every other
# instruction must have a PeachPy body, or the build fails naming it.
C_HANDLERS = {ins.name: ins.no_stencil for ins in isa.INSTRUCTIONS if ins.no_stencil}

# Stencil bodies are reused as they are: a hole becomes the operand read
# from ip->arg into OPERAND (and CONSTS for the constant pool), registers no
# stencil touches (contract.STENCIL_SCRATCH reserves them).
OPERAND, CONSTS = "r9", "r10"

# Intel cores since Skylake (with the JCC-erratum microcode) cannot cache a
# jump in the decoded-uop cache when it crosses or ends on a 32-byte
# boundary; the C compilers' handlers dodge it by luck, so these handlers are
# placed so that none of their jumps does (measured: up to 30% on BF).
WINDOW = 32


def _handler_asm(name: str, regs: jasm.Regs, count_offset: int | None,
                 operand: isa.Operand | None = None):
    """An Asm whose holes read the operand, whose deopt exit is the C handler
    and whose `branch` exit is the taken path of a conditional jump."""
    from peachpy import x86_64 as x
    IP, VM, TABLE = regs.ip, regs.vm, regs.table
    opnd, consts = getattr(x, OPERAND), getattr(x, CONSTS)

    class HandlerAsm(jasm.Asm):
        taken = False

        def __init__(self):
            super().__init__()
            self.jump_parts: list[int] = []

        def _mark_jump(self):
            self.jump_parts.append(len(self.parts) - 1)

        def jcc(self, cc, label):
            super().jcc(cc, label)
            self._mark_jump()
            return self

        def jump_spans(self) -> list[tuple[int, int]]:
            """(start, end) offsets of every jump in the assembled handler."""
            pos, spans = 0, []
            for i, p in enumerate(self.parts):
                size = 2 if isinstance(p, tuple) else len(p)
                if i in self.jump_parts:
                    spans.append((pos, pos + size))
                pos += size
            return spans

        def hole(self, kind):
            if kind in ("oparg", "local", "const"):
                self(x.MOVSXD(opnd, x.dword[IP + contract.OPARG_OFFSET]))
            if kind == "oparg":
                return opnd
            if kind == "local":
                return opnd * 8          # the hole is a byte offset: 8 * index
            if kind == "const":
                self(x.MOV(consts, x.qword[VM + jasm.vm_offset("consts")]))
                return x.qword[consts + opnd * 8]
            # a packed cell operand (isa.pack_cell): the offset above the low byte
            if kind == "cell":
                self(x.MOVSXD(opnd, x.dword[IP + contract.OPARG_OFFSET]), x.SAR(opnd, 8))
                return opnd
            if kind == "byte":
                self(x.MOVZX(consts.as_dword, x.byte[IP + contract.OPARG_OFFSET]))
                return consts
            raise BuildError(f"asm interpreter: {name}: its stencil has a {kind} hole, "
                             "which no interpreter operand can fill")

        def jcc_hole(self, cc, kind):
            if kind == "deopt":          # the C handler re-runs it from the same state
                jasm.Asm.jcc_hole(self, cc, "deopt")
                self._mark_jump()
                return self
            if kind == "branch":
                self.taken = True
                return self.jcc(cc, "taken")
            raise BuildError(f"asm interpreter: {name}: its stencil jumps to a {kind} exit")

        def jmp_hole(self, kind):
            raise BuildError(f"asm interpreter: {name}: its stencil jumps to a {kind} exit")

        # The next opcode is loaded from the old ip plus an offset, next to
        # (not after) the ip update: the load does not wait for the add, which
        # keeps the ip -> opcode -> table -> jump chain one step shorter.
        def dispatch_next(self):
            self(x.MOVSXD(x.rax, x.dword[IP + contract.INSTR_SIZE]),
                 x.ADD(IP, contract.INSTR_SIZE))
            self.jump_through_table()

        def jump_by_operand(self):
            if operand in isa.PACKED_MOVE_JUMP:     # the low byte, forward or backward
                self(x.MOVZX(opnd.as_dword, x.byte[IP + contract.OPARG_OFFSET]))
                if operand is isa.Operand.BACKWARD_MOVE:
                    self(x.NEG(opnd))
            elif operand in isa.PACKED_AT_JUMP:     # the low 24 bits, forward or backward
                self(x.MOV(opnd.as_dword, x.dword[IP + contract.OPARG_OFFSET]),
                     x.AND(opnd.as_dword, isa.AT_JUMP_MAX))
                if operand is isa.Operand.BACKWARD_AT:
                    self(x.NEG(opnd))
            else:
                self(x.MOVSXD(opnd, x.dword[IP + contract.OPARG_OFFSET]))
            self(x.MOVSXD(x.rax, x.dword[IP + opnd * contract.INSTR_SIZE]),
                 x.LEA(IP, [IP + opnd * contract.INSTR_SIZE]))
            self.jump_through_table()

        def jump_through_table(self):
            if count_offset is not None:     # count builds: like SL_COUNT in C
                self(x.MOV(x.rcx, x.qword[VM + count_offset]),
                     x.INC(x.qword[x.rcx + x.rax * 8]))
            self(x.JMP(x.qword[TABLE + x.rax * 8]))
            self._mark_jump()

    return HandlerAsm()


def _stencil_for(ins: isa.Instr, registry: dict) -> str | None:
    """The stencil whose body is this instruction's handler body: the plain one,
    or the fall-through variant of a conditional jump (its branch exit is the
    taken path)."""
    if ins.flow in (Flow.BRANCH, Flow.BACKEDGE_BRANCH):
        name = f"{ins.name}:fallthrough"
    else:
        name = ins.name
    return name if name in registry else None


def handler(ins: isa.Instr, registry: dict, regs: jasm.Regs, count_offset) -> tuple[bytes, list]:
    """(code, holes) of the asm handler of `ins`; deopt holes are rel32 jumps
    to the C handler, for the assembler to resolve."""
    a = _handler_asm(ins.name, regs, count_offset, ins.operand)
    if ins.flow in (Flow.JUMP, Flow.BACKEDGE):      # always taken: ip += arg
        a.jump_by_operand()
    else:
        if ins.flow not in (Flow.NEXT, Flow.BRANCH, Flow.BACKEDGE_BRANCH):
            raise BuildError(f"asm interpreter: {ins.name} ({ins.flow.value}) has no PeachPy "
                             "body; give it a no_stencil reason in isa.py to use the C handler")
        stencil = _stencil_for(ins, registry)
        if stencil is None:
            raise BuildError(f"asm interpreter: {ins.name} has no stencil in peachpy_stencils/ to build "
                             "its handler from; write one, or give it a no_stencil "
                             "reason in isa.py (C_HANDLERS) to use the C handler")
        registry[stencil][0](a, regs)
        a.dispatch_next()
        if a.taken:
            a.label("taken")
            a.jump_by_operand()
    code = a.assemble()
    try:
        holes = find_holes(ins.name, code, a.declared)
    except StencilError as e:
        raise BuildError(f"asm interpreter: {e}") from None
    return code, holes, a.jump_spans()


def placement(spans: list[tuple[int, int]]) -> int:
    """Bytes of padding after a 32-byte boundary at which no jump crosses or
    ends on the next boundary (the least such; 0 when none can be found)."""
    for pad in range(WINDOW):
        if all((pad + s) // WINDOW == (pad + e - 1) // WINDOW and (pad + e) % WINDOW
               for s, e in spans):
            return pad
    return 0


def _bytes_lines(code: bytes) -> list[str]:
    return [f"    .byte {', '.join(f'0x{b:02x}' for b in code[i:i + 16])}"
            for i in range(0, len(code), 16)]


def render(state: dict | None = None, count: bool = False) -> str:
    """The assembler file of the asm interpreter for register assignment
    `state` (a compiler's, contract.state_of(cc)); count builds count every
    dispatch into vm->counts like the C interpreters."""
    state = state or contract.STATE
    registry = load_families()
    regs = jasm.Regs.of(state)
    count_offset = jasm.vm_offset("counts") if count else None
    out = ["# generated by shimlab.interp.asm_handlers from the PeachPy stencils -- do not edit",
           f"# register contract: {', '.join(f'{k} {r}' for k, r in state.items())}",
           "    .text"]
    table = []
    for ins in isa.INSTRUCTIONS:
        if ins.name in C_HANDLERS:
            out.append(f"    .hidden sl_op_{ins.name}    # C handler: {C_HANDLERS[ins.name]}")
            table.append(f"sl_op_{ins.name}")
            continue
        code, holes, spans = handler(ins, registry, regs, count_offset)
        sym = f"sl_asm_{ins.name}"
        table.append(sym)
        pad = placement(spans)
        out += ["", "    .p2align 5"] + ([f"    .skip {pad}, 0x90"] if pad else [])
        out += [f"    .type {sym},@function", f"{sym}:"]
        pos = 0
        for h in holes:                  # only deopt holes remain: rel32 to the C handler
            out += _bytes_lines(code[pos:h.offset])
            out += [f"    .hidden sl_op_{ins.name}",
                    f"    .long sl_op_{ins.name} - . - 4    # deopt: the C handler"]
            pos = h.offset + h.width
        out += _bytes_lines(code[pos:])
        out.append(f"    .size {sym}, . - {sym}")
    out += ["", '    .section .data.rel.ro,"aw"', "    .p2align 3", "    .globl sl_asm_table",
            "    .hidden sl_asm_table", "sl_asm_table:"]
    out += [f"    .quad {t}" for t in table]
    out += ['    .section .note.GNU-stack,"",@progbits', ""]
    return "\n".join(out)
