"""ELF files as shimlab reads them: code and data by address, function symbols
(.symtab, then .dynsym), function extents from .eh_frame (which survives
stripping), the compiler's .comment, data words through their relocations,
and the libraries a program links.  disasm turns the code into instructions.
"""
from __future__ import annotations

import io
import re
import struct
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .errors import ShimlabError, ToolchainError

EM_X86_64 = 62
SHF_EXECINSTR = 0x4
R_X86_64_64, R_X86_64_RELATIVE = 1, 8
STT_OBJECT, STT_FUNC = 1, 2
_MACHINES = {3: "x86 (32-bit)", 40: "ARM", 183: "AArch64", 243: "RISC-V", 20: "PowerPC",
             21: "PowerPC64", 22: "s390", 8: "MIPS"}
# The sections the linker makes for calls into shared libraries: jumps through
# the GOT, one per imported function, never an interpreter's dispatch.
PLT = (".plt", ".plt.sec", ".plt.got", ".iplt")


class ElfError(ShimlabError):
    """A file that is not an x86-64 ELF file shimlab can read."""


@dataclass(frozen=True)
class Symbol:
    name: str
    addr: int
    size: int


@dataclass(frozen=True)
class Section:
    name: str
    addr: int
    size: int
    offset: int
    flags: int
    nobits: bool

    @property
    def end(self) -> int:
        return self.addr + self.size

    @property
    def code(self) -> bool:
        return bool(self.flags & SHF_EXECINSTR) and not self.nobits


def _elffile():
    try:
        from elftools.elf.elffile import ELFFile
    except ImportError:
        raise ToolchainError("pyelftools missing: pip install pyelftools (make setup)") from None
    return ELFFile


class Image:
    """One ELF file, read once.  Raises ElfError (one line) for a missing
    file, a file that is not ELF, or one for another architecture."""

    def __init__(self, path):
        self.path = Path(path)
        try:
            with open(self.path, "rb") as f:
                head = f.read(64)
                self._data = head + f.read()
        except FileNotFoundError:
            raise ElfError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise ElfError(f"{path}: is a directory, not a binary") from None
        except OSError as e:
            raise ElfError(f"{path}: cannot read it ({e.strerror})") from None
        if head[:4] != b"\x7fELF":
            raise ElfError(f"{path}: not an ELF file (no executable or shared library)")
        if head[4] != 2 or head[5] != 1:
            raise ElfError(f"{path}: a {'32' if head[4] == 1 else '?'}-bit or big-endian ELF "
                           f"file; shimlab reads x86-64 only")
        machine = struct.unpack_from("<H", head, 18)[0]
        if machine != EM_X86_64:
            raise ElfError(f"{path}: a binary for {_MACHINES.get(machine, f'machine {machine}')}"
                           f"; shimlab reads x86-64 machine code only")
        try:
            self._elf = _elffile()(io.BytesIO(self._data))
            self.sections = [Section(s.name, s["sh_addr"], s["sh_size"], s["sh_offset"],
                                     s["sh_flags"], s["sh_type"] == "SHT_NOBITS")
                             for s in self._elf.iter_sections()]
        except ToolchainError:
            raise
        except Exception as e:          # pyelftools' own errors on a damaged file
            raise ElfError(f"{path}: a damaged ELF file ({type(e).__name__}: {e})") from None
        self.pic = self._elf.header["e_type"] == "ET_DYN"
        self._alloc = sorted((s for s in self.sections if s.addr and s.size),
                             key=lambda s: s.addr)

    # -- sections, bytes and words --------------------------------------------------------

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def section_at(self, addr: int) -> Section | None:
        k = bisect_right([s.addr for s in self._alloc], addr) - 1
        if k >= 0 and self._alloc[k].addr <= addr < self._alloc[k].end:
            return self._alloc[k]
        return None

    def read(self, addr: int, size: int) -> bytes:
        """The file's bytes at link-time address `addr` (zeros in .bss)."""
        sec = self.section_at(addr)
        if sec is None:
            raise ElfError(f"{self.path}: no section holds address {addr:#x}")
        size = min(size, sec.end - addr)
        if sec.nobits:
            return bytes(size)
        start = sec.offset + addr - sec.addr
        return self._data[start:start + size]

    def code_sections(self) -> list[Section]:
        return [s for s in self.sections if s.code]

    def is_code(self, addr: int) -> bool:
        sec = self.section_at(addr)
        return bool(sec and sec.code)

    @cached_property
    def relocated(self) -> dict[int, int]:
        """Offset -> value of every pointer the loader writes (R_X86_64_RELATIVE:
        the addend; R_X86_64_64: a symbol defined here plus the addend): what
        a position-independent file's pointer tables hold once loaded."""
        out = {}
        for sec in self._elf.iter_sections():
            if sec["sh_type"] != "SHT_RELA" or not sec["sh_flags"] & 0x2:    # SHF_ALLOC
                continue
            raw = sec.data()
            values = None
            for off, info, addend in struct.iter_unpack("<QQq", raw[:len(raw) // 24 * 24]):
                kind = info & 0xffffffff
                if kind == R_X86_64_RELATIVE:
                    out[off] = addend
                elif kind == R_X86_64_64:
                    if values is None:
                        table = self._elf.get_section(sec["sh_link"])
                        values = [s["st_value"] for s in table.iter_symbols()]
                    value = values[info >> 32] if info >> 32 < len(values) else 0
                    if value:
                        out[off] = value + addend
        return out

    def pointer(self, addr: int) -> int | None:
        """The 8-byte pointer stored at `addr`, as loaded (relocation applied)."""
        if addr in self.relocated:
            return self.relocated[addr]
        raw = self.read(addr, 8) if self.section_at(addr) else b""
        return struct.unpack("<Q", raw)[0] if len(raw) == 8 else None

    def int32(self, addr: int) -> int | None:
        raw = self.read(addr, 4) if self.section_at(addr) else b""
        return struct.unpack("<i", raw)[0] if len(raw) == 4 else None

    # -- symbols ------------------------------------------------------------------------

    def _symbols(self, kind: int) -> dict[str, Symbol]:
        out: dict[str, Symbol] = {}
        for table in (".symtab", ".dynsym"):      # .symtab first: it has the local ones
            sec = self.section(table)
            if sec is None or sec.nobits:
                continue
            strings = self.sections[self._link(table)]
            names = self._data[strings.offset:strings.offset + strings.size]
            raw = self._data[sec.offset:sec.offset + sec.size]
            for name, info, _, _, value, size in struct.iter_unpack(
                    "<IBBHQQ", raw[:len(raw) // 24 * 24]):
                if info & 0xf != kind or not value or not name:
                    continue
                text = names[name:names.index(b"\0", name)].decode(errors="replace")
                if text not in out:
                    out[text] = Symbol(text, value, size)
        return out

    def _link(self, name: str) -> int:
        return self._elf.get_section_by_name(name)["sh_link"]

    @cached_property
    def functions(self) -> dict[str, Symbol]:
        """Function symbols by name: .symtab's (local ones included), then .dynsym's."""
        return self._symbols(STT_FUNC)

    @cached_property
    def objects(self) -> dict[str, Symbol]:
        """Data symbols (tables among them) by name."""
        return self._symbols(STT_OBJECT)

    @cached_property
    def object_at(self) -> dict[int, Symbol]:
        return {s.addr: s for s in self.objects.values()}

    @property
    def stripped(self) -> bool:
        """No .symtab: only exported names are left (.dynsym)."""
        return self.section(".symtab") is None

    @cached_property
    def function_at(self) -> dict[int, str]:
        return {s.addr: n for n, s in sorted(self.functions.items(), reverse=True)}

    # -- .eh_frame: where every function starts and ends, named or not ------------------

    @cached_property
    def extents(self) -> list[tuple[int, int]]:
        """(start, size) of every function with unwind information, sorted:
        a stripped binary's static functions still have theirs."""
        sec = self.section(".eh_frame")
        if sec is None or sec.nobits:
            return []
        return sorted(set(_fdes(self._data[sec.offset:sec.offset + sec.size], sec.addr)))

    def extent_of(self, addr: int) -> tuple[int, int] | None:
        ext = self.extents
        k = bisect_right(ext, (addr, float("inf"))) - 1
        return ext[k] if k >= 0 and addr < ext[k][0] + ext[k][1] else None

    # -- what built it and what it links ---------------------------------------------

    @cached_property
    def comment(self) -> str | None:
        """The compilers named in .comment (absent when stripped)."""
        sec = self.section(".comment")
        if sec is None or sec.nobits:
            return None
        names = [s.decode(errors="replace").strip()
                 for s in self._data[sec.offset:sec.offset + sec.size].split(b"\0")]
        return "; ".join(dict.fromkeys(n for n in names if n)) or None

    def strings(self, pattern: bytes, section: str = ".rodata") -> list[str]:
        sec = self.section(section)
        if sec is None or sec.nobits:
            return []
        return [m.group(0).decode(errors="replace")
                for m in re.finditer(pattern, self._data[sec.offset:sec.offset + sec.size])]

    @cached_property
    def dynamic(self) -> dict[str, list[str]]:
        sec = self._elf.get_section_by_name(".dynamic")
        out: dict[str, list[str]] = {"DT_NEEDED": [], "DT_RUNPATH": [], "DT_RPATH": []}
        if sec is None:
            return out
        for tag in sec.iter_tags():
            if tag.entry.d_tag == "DT_NEEDED":
                out["DT_NEEDED"].append(tag.needed)
            elif tag.entry.d_tag in ("DT_RUNPATH", "DT_RPATH"):
                text = tag.runpath if tag.entry.d_tag == "DT_RUNPATH" else tag.rpath
                out[tag.entry.d_tag] += text.split(":")
        return out

    def find_library(self, soname: str) -> Path | None:
        """Where the dynamic loader would find `soname` for this file: its
        RPATH/RUNPATH ($ORIGIN expanded), the file's own folder (an unpacked
        package keeps its libraries next to its programs' folders), then the
        system's library folders."""
        origin = str(self.path.resolve().parent)
        dirs = [d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
                for d in self.dynamic["DT_RPATH"] + self.dynamic["DT_RUNPATH"] if d]
        root = _unpacked_root(self.path.resolve())
        if root:
            dirs += [str(root / d) for d in _LIB_DIRS]
        dirs += [origin] + [f"/{d}" for d in _LIB_DIRS] + _ld_so_conf_dirs()
        for d in dirs:
            candidate = Path(d) / soname
            if candidate.is_file():
                return candidate
        return None


_LIB_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "usr/lib64",
             "lib", "usr/lib", "usr/local/lib")


def _unpacked_root(path: Path) -> Path | None:
    """The root of an unpacked package tree (.../usr/bin/prog -> ...), if `path` lies in one."""
    parts = path.parts
    if "usr" in parts[:-1]:
        k = len(parts) - 1 - parts[::-1].index("usr")
        return Path(*parts[:k]) if k > 1 else None
    return None


def _ld_so_conf_dirs() -> list[str]:
    out = []
    conf = Path("/etc/ld.so.conf.d")
    for f in sorted(conf.glob("*.conf")) if conf.is_dir() else ():
        try:
            out += [ln.strip() for ln in f.read_text().splitlines()
                    if ln.strip().startswith("/")]
        except OSError:
            pass
    return out


# -- the .eh_frame records: CIEs say how their FDEs encode addresses ------------------

def _uleb(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7f) << shift
        shift += 7
        if b < 0x80:
            return value, pos


_FORMATS = {0x00: "<Q", 0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x0a: "<h", 0x0b: "<i", 0x0c: "<q"}


def _encoded(data: bytes, pos: int, enc: int, base: int) -> tuple[int | None, int]:
    fmt = _FORMATS.get(enc & 0x0f)
    if fmt is None:
        return None, pos
    value = struct.unpack_from(fmt, data, pos)[0]
    if (enc & 0x70) == 0x10:        # pc-relative: from the field's own address
        value += base + pos
    return value & 0xffffffffffffffff, pos + struct.calcsize(fmt)


def _cie_encoding(data: bytes, pos: int, end: int) -> int:
    """The FDE pointer encoding of the CIE whose body starts at `pos` (after its id)."""
    version = data[pos]
    aug_end = data.index(b"\0", pos + 1)
    aug = data[pos + 1:aug_end].decode(errors="replace")
    pos = aug_end + 1
    if "eh" in aug:
        pos += 8
    _, pos = _uleb(data, pos)                 # code alignment
    _, pos = _uleb(data, pos)                 # data alignment (its sign is of no matter here)
    pos = pos + 1 if version == 1 else _uleb(data, pos)[1]
    if not aug.startswith("z"):
        return 0x00
    _, pos = _uleb(data, pos)
    for c in aug[1:]:
        if c == "R":
            return data[pos]
        if c == "P":
            _, pos = _encoded(data, pos + 1, data[pos], 0)
        elif c == "L":
            pos += 1
    return 0x00


def _fdes(data: bytes, addr: int):
    """Yields (start, size) of each FDE of an .eh_frame at link address `addr`."""
    cies: dict[int, int] = {}
    pos = 0
    while pos + 8 <= len(data):
        length = struct.unpack_from("<I", data, pos)[0]
        if length == 0:
            break
        if length == 0xffffffff:            # 64-bit DWARF: not emitted for x86-64 code
            return
        body, end = pos + 4, pos + 4 + length
        cie_id = struct.unpack_from("<I", data, body)[0]
        try:
            if cie_id == 0:
                cies[pos] = _cie_encoding(data, body + 4, end)
            else:           # the CIE's pointer counts back from the pointer itself
                cie = body - cie_id
                enc = cies.get(cie)
                if enc is None:
                    enc = cies[cie] = _cie_encoding(data, cie + 8, len(data))
                start, p = _encoded(data, body + 4, enc, addr)
                size, _ = _encoded(data, p, enc & 0x0f, 0)
                if start and size:
                    yield start, size
        except (IndexError, struct.error, ValueError):
            pass
        pos = end
