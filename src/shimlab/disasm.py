"""x86-64 machine code as structured instructions (capstone), and functions'
code read out of ELF files (shimlab.elf).

Every disassembly in shimlab comes through here: the baseline check of
shimlab's builds (dis --native), the census of anyone's interpreter, the
stencil listings, the register-contract probe.  What an instruction does is
read from capstone's groups and operand kinds, never from its text.
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from functools import lru_cache

from . import elf
from .errors import ToolchainError

CAPSTONE_MISSING = "capstone missing: apt-get install python3-capstone (then make setup)"


@dataclass(frozen=True)
class Mem:
    """A memory operand, base + index * scale + disp; a rip-relative one has
    base None and disp the absolute address it names."""
    base: str | None
    index: str | None
    scale: int
    disp: int
    rip: bool = False


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
    mem: Mem | None = None      # the memory operand, if any

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
    def indirect_call(self) -> bool:
        """A call through a register or memory (a call-threaded interpreter's dispatch)."""
        return self.call and self.target is None

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
        mem = next((_mem(i, o.mem, x86) for o in ops if o.type == x86.X86_OP_MEM), None)
        disp_at = i.disp_offset if mem and mem.rip and i.disp_offset else None
        out.append(Insn(i.address, bytes(i.bytes), i.mnemonic, i.op_str, jump, call,
                        cs.CS_GRP_RET in groups, target, regs, disp_at, mem))
    return out


def _mem(i, m, x86) -> Mem:
    if m.base == x86.X86_REG_RIP:
        return Mem(None, None, 1, (i.address + i.size + m.disp) & (2**64 - 1), rip=True)
    return Mem(i.reg_name(m.base) if m.base else None,
               i.reg_name(m.index) if m.index else None, m.scale, m.disp & (2**64 - 1))


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


# -- functions of ELF files ---------------------------------------------------------

Symbol = elf.Symbol


def functions(path) -> dict[str, Symbol]:
    """The function symbols of ELF file `path` (.symtab, local ones
    included, then .dynsym), by name."""
    return _functions(elf.Image(path))


def _functions(image: elf.Image) -> dict[str, Symbol]:
    if not image.functions:
        raise ToolchainError(f"{image.path}: no function symbols (stripped?)")
    return image.functions


def code(image: elf.Image, addr: int, size: int) -> list[Insn]:
    """The instructions of `size` bytes of `image`'s code at `addr`."""
    return disassemble(image.read(addr, size), addr)


def function_code(path, names=None) -> dict[str, list[Insn]]:
    """Each function's instructions (all functions, or those in `names` that exist)."""
    image = elf.Image(path)
    syms = _functions(image)
    wanted = syms if names is None else {n: syms[n] for n in names if n in syms}
    return {n: code(image, s.addr, s.size) for n, s in wanted.items()}


def object_text(path) -> tuple[list[Insn], dict[int, str]]:
    """A relocatable object's .text instructions (addresses are offsets into
    .text) and its .text relocations: offset -> the symbol they name."""
    ELFFile = elf._elffile()
    from elftools.elf.relocation import RelocationSection
    with open(path, "rb") as f:
        obj = ELFFile(f)
        text = obj.get_section_by_name(".text")
        if text is None:
            raise ToolchainError(f"{path}: no .text section")
        relocs = {}
        for sec in obj.iter_sections():
            if isinstance(sec, RelocationSection) and \
                    obj.get_section(sec["sh_info"]).name == ".text":
                symtab = obj.get_section(sec["sh_link"])
                for r in sec.iter_relocations():
                    relocs[r["r_offset"]] = symtab.get_symbol(r["r_info_sym"]).name
        return disassemble(text.data()), relocs
