"""Stencils built by a compiler, as CPython builds its JIT's: each instruction's C
body from isa.py, compiled by clang into a preserve_none function that
tail-calls a continuation; the code bytes and relocations (read with
pyelftools) become the stencil and its holes.

The registers are the compiler's own (the same compiler builds the
interpreter), the exits and counters are the PeachPy ones, so a trace from
either source differs only in the instruction stencils.
"""
from __future__ import annotations

import io
import json
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from .. import isa, toolchain
from ..atomicfile import write_atomic
from ..digest import sha256
from ..isa import Flow
from ..paths import CSRC, build_root
from ..stencil import Hole, Stencil, StencilError, disassemble

FLAGS = ("-std=gnu11", "-O3", "-c", "-fno-pic", "-mcmodel=medium", "-ffunction-sections",
         "-fno-asynchronous-unwind-tables", "-fno-stack-protector", "-fcf-protection=none",
         "-fno-jump-tables", "-fomit-frame-pointer")

# Each hole is an external symbol.  Operands that fit 32 bits are functions
# (the medium code model keeps code addresses in 32 bits, so they become
# imm32/disp32 fields); the constant is data (a 64-bit movabs).
HOLE_SYMBOLS = {"_JIT_OPARG": "oparg", "_JIT_LOCAL": "local", "_JIT_CONST": "const",
                "_JIT_DEOPT": "deopt", "_JIT_BRANCH": "branch", "_JIT_LOOP": "loop",
                "_JIT_CONTINUE": "continue"}
REL32 = {"R_X86_64_PLT32", "R_X86_64_PC32"}
ABS = {"R_X86_64_32": 4, "R_X86_64_32S": 4, "R_X86_64_64": 8}

PRELUDE = """\
#include "vm.h"
#define SL_PRESERVE_NONE __attribute__((preserve_none))
#define SL_MUSTTAIL __attribute__((musttail))
typedef SL_PRESERVE_NONE int sl_cont(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table));
extern sl_cont _JIT_CONTINUE, _JIT_DEOPT, _JIT_BRANCH, _JIT_LOOP;
extern void _JIT_OPARG(void), _JIT_LOCAL(void);
extern char _JIT_CONST[];
#define GO(target) do { SL_MUSTTAIL return target(ip, sp, fp, head, vm, table); } while (0)
/* the operand and constant holes instead of reads of the bytecode */
#undef ARG
#define ARG ((int32_t)(intptr_t)&_JIT_OPARG)
#undef CONST
#define CONST(i) ((int64_t)(intptr_t)_JIT_CONST)
#undef LOCAL
#define LOCAL(i) (*(int64_t *)((char *)fp + (intptr_t)&_JIT_LOCAL))
/* a failure deopts with the state as it was on entry: the interpreter re-runs
   the instruction and reports the error (or grows the buffer) itself */
#undef FAIL_WITH
#define FAIL_WITH(s_, v_) do { SL_MUSTTAIL return _JIT_DEOPT(ip, sp0, fp, head0, vm, table); } while (0)
#undef OUTPUT
#define OUTPUT(b) do { if (vm->out_len >= vm->out_cap) FAIL(0); \\
    vm->out[vm->out_len++] = (uint8_t)(b); } while (0)
/* input: an empty buffer before the end deopts too (the interpreter reads on) */
#undef INPUT_TO
#define INPUT_TO(p) do { if (vm->in_pos < vm->in_len) *(p) = vm->in[vm->in_pos++]; \\
    else if (!vm->in_eof) FAIL(0); } while (0)
"""


def _function(stencil: str, body: str, on_jump: str, at_end: str) -> str:
    """One preserve_none stencil function: `body` with JUMPBY/BACKEDGE going
    to `on_jump` and the fall-through end going to `at_end`."""
    return (f"SL_PRESERVE_NONE int {c_symbol(stencil)}(SL_CONTRACT_ARGS(ip, sp, fp, head, vm, table)) {{\n"
            "    int64_t *sp0 = sp; uint8_t *head0 = head; (void)sp0; (void)head0;\n"
            f"#undef JUMPBY\n#define JUMPBY(n) GO({on_jump})\n"
            f"#undef BACKEDGE\n#define BACKEDGE(n) GO({on_jump})\n"
            f"    {body}\n    GO({at_end});\n}}\n")


def c_symbol(stencil: str) -> str:
    return "sl_stencil_" + stencil.replace(":", "__")


def source() -> tuple[str, list[str]]:
    """The C file of every instruction stencil, and the stencil names in it.
    The names and variants are the PeachPy stencils' (jit/trace.py picks them)."""
    out, names = [PRELUDE], []

    def add(name, body, on_jump, at_end):
        names.append(name)
        out.append(_function(name, body, on_jump, at_end))
    for ins in isa.INSTRUCTIONS:
        if not ins.has_stencil:     # (CALL and RETURN run in traces as PeachPy's frames.py)
            continue
        if ins.flow is Flow.NEXT:
            add(ins.name, ins.c, "_JIT_CONTINUE", "_JIT_CONTINUE")
        elif ins.flow is Flow.JUMP:
            add(ins.name, ins.c, "_JIT_CONTINUE", "_JIT_CONTINUE")
        elif ins.flow is Flow.BRANCH:
            add(f"{ins.name}:taken", ins.c, "_JIT_CONTINUE", "_JIT_BRANCH")
            add(f"{ins.name}:fallthrough", ins.c, "_JIT_BRANCH", "_JIT_CONTINUE")
        elif ins.flow is Flow.BACKEDGE:
            add(f"{ins.name}:close", ins.c, "_JIT_LOOP", "_JIT_LOOP")
        elif ins.flow is Flow.BACKEDGE_BRANCH:
            add(f"{ins.name}:close", ins.c, "_JIT_LOOP", "_JIT_BRANCH")
            add(f"{ins.name}:fallthrough", ins.c, "_JIT_BRANCH", "_JIT_CONTINUE")
    return "".join(out), names


def _extract(obj: bytes, names: list[str]) -> dict:
    """name -> (code, holes) from the object file; a final jump to the
    continuation is dropped (the next stencil follows), as CPython does."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection
    elf = ELFFile(io.BytesIO(obj))
    symtab = elf.get_section_by_name(".symtab")
    result = {}
    for name in names:
        text = elf.get_section_by_name(f".text.{c_symbol(name)}")
        if text is None:
            raise StencilError(f"clang stencil {name}: no section .text.{c_symbol(name)}")
        code = bytearray(text.data())
        holes = []
        rela = elf.get_section_by_name(f".rela.text.{c_symbol(name)}")
        for r in (rela.iter_relocations() if isinstance(rela, RelocationSection) else ()):
            sym = symtab.get_symbol(r["r_info_sym"]).name
            rtype = _reloc_name(r["r_info_type"])
            kind = HOLE_SYMBOLS.get(sym)
            if kind is None:
                raise StencilError(f"clang stencil {name}: refers to {sym} ({rtype}), "
                                   "which is no hole: it would need linking")
            if rtype in REL32:
                if r["r_addend"] != -4:
                    raise StencilError(f"clang stencil {name}: jump to {sym} with addend "
                                       f"{r['r_addend']}")
                holes.append(Hole(r["r_offset"], 4, kind))
            elif rtype in ABS and r["r_addend"] == 0:
                holes.append(Hole(r["r_offset"], ABS[rtype], kind))
            else:
                raise StencilError(f"clang stencil {name}: relocation {rtype} against {sym} "
                                   f"(addend {r['r_addend']}) has no hole kind")
        holes.sort(key=lambda h: h.offset)
        last = holes[-1] if holes else None
        if last and last.kind == "continue" and last.offset == len(code) - 4 \
                and code[last.offset - 1] == 0xE9:
            del code[last.offset - 1:]
            holes.pop()
        result[name] = (bytes(code), tuple(holes))
    return result


def _reloc_name(rtype: int) -> str:
    from elftools.elf.enums import ENUM_RELOC_TYPE_x64
    return next((k for k, v in ENUM_RELOC_TYPE_x64.items() if v == rtype), str(rtype))


def _input_hash(cc: toolchain.Compiler, text: str) -> str:
    h = sha256()
    for part in (text, cc.path, cc.version, " ".join(FLAGS), (CSRC / "vm.h").read_text(),
                 Path(__file__).read_text()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def load(cc: str | None = None) -> dict:
    """name -> Stencil for every instruction stencil, compiled by
    `cc` (a clang with preserve_none; default: the preferred one)."""
    compiler = toolchain.get_compiler(cc, need={"preserve_none", "musttail"})
    if compiler.family != "clang":
        raise StencilError(f"{compiler.name}: compiler-built stencils need clang")
    text, names = source()
    key = _input_hash(compiler, text)
    path = build_root() / f"clang-stencils-{compiler.name}-{key}.json"
    cached = _read_cache(path)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix="shimlab-clang-stencils-") as tmp:
        (Path(tmp) / "stencils.c").write_text(text)
        proc = subprocess.run([compiler.path, *FLAGS, "-I", str(CSRC), "stencils.c", "-o",
                               "stencils.o"], capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            raise StencilError(f"{compiler.name} failed on the C stencils: "
                               f"{proc.stderr.strip()[:500]}")
        obj = (Path(tmp) / "stencils.o").read_bytes()
    out = {}
    for name, (code, holes) in _extract(obj, names).items():
        out[name] = Stencil(name, code, holes, f"{isa.BY_NAME[name.split(':')[0]].doc} "
                            f"({compiler.name})", disassemble(code, holes))
    _write_cache(path, json.dumps({n: s.to_json() for n, s in out.items()}))
    return out


def _read_cache(path: Path) -> dict | None:
    """The cached stencils, or None to build them (no entry, or one that does
    not parse: it is rebuilt and replaced)."""
    try:
        data = json.loads(path.read_text())
        return {n: Stencil.from_json(d) for n, d in data.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_cache(path: Path, text: str) -> None:
    """Write the entry under a temporary name of this writer's own, then
    rename it into place: concurrent writers (several `stencils test` on an
    empty cache) each replace the entry whole, and a reader sees either no
    entry or a complete one, never another writer's half."""
    write_atomic(path, text)
