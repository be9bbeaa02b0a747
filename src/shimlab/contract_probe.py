"""Reads preserve_none's argument registers from a compiler instead of assuming them.

A probe function takes twelve arguments and stores each into its own global;
in the object file's disassembly every store names the register the argument
arrived in and carries a relocation naming the global, so the order falls out
without interpreting any instruction beyond `mov %reg, <global>`.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from . import toolchain
from .contract import PRESERVE_NONE_ARGS, ContractError

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


def derive_order(cc: str | None = None) -> tuple[str, ...]:
    compiler = toolchain.get_compiler(cc, need={"preserve_none"})
    return _derive_path(compiler.path)
