"""x86-64 machine code as structured instructions (capstone) and ELF function symbols.

Every disassembly in shimlab comes through here: the baseline check, the
stencil listings, the register-contract probe.  What an instruction does is
read from capstone's groups and operand kinds, never from its text.
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from functools import lru_cache

from .errors import ToolchainError

CAPSTONE_MISSING = "capstone missing: apt-get install python3-capstone (then make setup)"


@dataclass(frozen=True)
class Insn:
    addr: int
    raw: bytes
    mnemonic: str
    op_str: str
    jump: bool                  # jmp or jcc (capstone's JUMP group)
    call: bool
    ret: bool
    target: int | None          # a direct jump's or call's destination
    regs: tuple[str, ...]       # register operands, in operand order
    rip_disp_at: int | None     # byte offset of a rip-relative displacement, if any

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def end(self) -> int:
        return self.addr + len(self.raw)

    @property
    def indirect_jump(self) -> bool:
        """A jump whose destination is a register or memory operand."""
        return self.jump and self.target is None

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {self.op_str}".strip()


@lru_cache(maxsize=None)
def _capstone():
    # Debian's capstone 4 imports distutils.sysconfig and never uses it (it
    # loads libcapstone by soname): through setuptools' distutils shim that
    # import alone takes 0.3 s, and Python 3.12 has no distutils.  Stand-ins
    # satisfy it and are removed again, so a later real import is unaffected.
    stubs = {n: types.ModuleType(n) for n in ("distutils", "distutils.sysconfig")
             if n not in sys.modules}
    sys.modules.update(stubs)
    try:
        import capstone
        from capstone import x86
    except (ImportError, OSError) as e:
        raise ToolchainError(f"{CAPSTONE_MISSING} ({type(e).__name__}: {e})") from None
    finally:
        for n in stubs:
            sys.modules.pop(n, None)
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    md.skipdata = True          # data between functions: skip it, do not stop
    return capstone, x86, md


def disassemble(code: bytes, addr: int = 0) -> list[Insn]:
    """Every instruction of `code`, which starts at address `addr`."""
    cs, x86, md = _capstone()
    out = []
    for i in md.disasm(bytes(code), addr):
        if i.id == 0:           # a skipped data byte (skipdata)
            out.append(Insn(i.address, bytes(i.bytes), ".byte", i.op_str, False, False,
                            False, None, (), None))
            continue
        groups = set(i.groups)
        jump, call = cs.CS_GRP_JUMP in groups, cs.CS_GRP_CALL in groups
        ops = i.operands
        target = None
        if (jump or call) and ops and ops[0].type == x86.X86_OP_IMM:
            target = ops[0].imm
        regs = tuple(i.reg_name(o.reg) for o in ops if o.type == x86.X86_OP_REG)
        rip = any(o.type == x86.X86_OP_MEM and o.mem.base == x86.X86_REG_RIP for o in ops)
        disp_at = i.disp_offset if rip and i.disp_offset else None
        out.append(Insn(i.address, bytes(i.bytes), i.mnemonic, i.op_str, jump, call,
                        cs.CS_GRP_RET in groups, target, regs, disp_at))
    return out


_FAMILY = {}     # capstone's register name -> its 64-bit register's


def _full(name: str) -> str:
    """eax, ax, al, r8d, r8b ... -> rax, r8 (flags and rip stay as they are)."""
    if not _FAMILY:
        for q in ("ax", "bx", "cx", "dx"):
            for n in (f"r{q}", f"e{q}", q, f"{q[0]}l", f"{q[0]}h"):
                _FAMILY[n] = f"r{q}"
        for q in ("si", "di", "bp", "sp"):
            for n in (f"r{q}", f"e{q}", q, f"{q}l"):
                _FAMILY[n] = f"r{q}"
        for k in range(8, 16):
            for n in (f"r{k}", f"r{k}d", f"r{k}w", f"r{k}b"):
                _FAMILY[n] = f"r{k}"
    return _FAMILY.get(name, name)


def written_registers(code: bytes) -> frozenset[str] | None:
    """The general registers a piece of straight-line code writes (64-bit
    names), implicit writes included (idiv's rax and rdx), less one saved by a
    push and restored by its pop; None when it calls out, since a callee may
    then write any of them."""
    cs, x86, md = _capstone()
    out, saved = set(), []          # saved: (register, written before its push)
    for i in md.disasm(bytes(code), 0):
        if i.id == 0 or cs.CS_GRP_CALL in set(i.groups):
            return None
        reg = _full(i.reg_name(i.operands[0].reg)) if (
            i.mnemonic in ("push", "pop") and i.operands[0].type == x86.X86_OP_REG) else None
        if i.mnemonic == "push" and reg:
            saved.append((reg, reg in out))
            continue
        if i.mnemonic == "pop" and saved and saved[-1][0] == reg:
            if not saved.pop()[1]:
                out.discard(reg)
            continue
        out.update(_full(i.reg_name(r)) for r in i.regs_access()[1])
    return frozenset(out)


def reads_flags_first(code: bytes) -> bool:
    """Whether straight-line code reads the flags before it writes them: a
    setcc or jcc that consumes the compare of the code before it."""
    cs, x86, md = _capstone()
    for i in md.disasm(bytes(code), 0):
        if i.id == 0:
            continue
        read, written = i.regs_access()
        if x86.X86_REG_EFLAGS in read:
            return True
        if x86.X86_REG_EFLAGS in written:
            return False
    return False


def listing(insns: list[Insn], marks=None, raw: bool = True) -> str:
    """Text of `insns`: address, the bytes (with `raw`), the instruction, and
    a note per instruction from `marks(insn)` (or None)."""
    lines = []
    for i in insns:
        note = marks(i) if marks else None
        code = f"{i.raw.hex(' '):<32} " if raw else ""
        lines.append(f"    {i.addr:4x}: {code}{i.text}"
                     + (f"    <- {note}" if note else ""))
    return "\n".join(lines) + "\n"


# -- ELF files -----------------------------------------------------------------

@dataclass(frozen=True)
class Symbol:
    name: str
    addr: int
    size: int


def _elf():
    try:
        from elftools.elf.elffile import ELFFile
    except ImportError:
        raise ToolchainError("pyelftools missing: pip install pyelftools (make setup)") from None
    return ELFFile


def functions(path) -> dict[str, Symbol]:
    """The function symbols of ELF file `path` (the static symbol table,
    local ones included), by name."""
    ELFFile = _elf()
    with open(path, "rb") as f:
        elf = ELFFile(f)
        table = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
        if table is None:
            raise ToolchainError(f"{path}: no symbol table (stripped?)")
        return {s.name: Symbol(s.name, s["st_value"], s["st_size"])
                for s in table.iter_symbols()
                if s["st_info"]["type"] == "STT_FUNC" and s["st_value"] and s.name}


def _code_sections(path) -> list[tuple[int, bytes]]:
    """(link-time address, bytes) of every executable section."""
    ELFFile = _elf()
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return [(sec["sh_addr"], sec.data()) for sec in elf.iter_sections()
                if sec["sh_type"] == "SHT_PROGBITS" and sec["sh_flags"] & 0x4]   # SHF_EXECINSTR


def _slice(sections, path, addr: int, size: int) -> bytes:
    for start, data in sections:
        if start <= addr < start + len(data):
            return data[addr - start:addr - start + size]
    raise ToolchainError(f"{path}: no code section holds address {addr:#x}")


def function_code(path, names=None) -> dict[str, list[Insn]]:
    """Each function's instructions (all functions, or those in `names` that exist)."""
    syms = functions(path)
    wanted = syms if names is None else {n: syms[n] for n in names if n in syms}
    sections = _code_sections(path)
    return {n: disassemble(_slice(sections, path, s.addr, s.size), s.addr)
            for n, s in wanted.items()}


def object_text(path) -> tuple[list[Insn], dict[int, str]]:
    """A relocatable object's .text instructions (addresses are offsets into
    .text) and its .text relocations: offset -> the symbol they name."""
    ELFFile = _elf()
    from elftools.elf.relocation import RelocationSection
    with open(path, "rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        if text is None:
            raise ToolchainError(f"{path}: no .text section")
        relocs = {}
        for sec in elf.iter_sections():
            if isinstance(sec, RelocationSection) and \
                    elf.get_section(sec["sh_info"]).name == ".text":
                symtab = elf.get_section(sec["sh_link"])
                for r in sec.iter_relocations():
                    relocs[r["r_offset"]] = symtab.get_symbol(r["r_info_sym"]).name
        return disassemble(text.data()), relocs
