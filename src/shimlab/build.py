"""Builds one interpreter per (mode, compiler, flags) into a content-keyed cache.

The sources are rendered from isa.py into the build directory (never read
back from csrc/generated), compiled with exactly the flags given into a
shared object, and loaded through cffi.  An unchanged build is never rebuilt.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import cases, toolchain
from .errors import BuildError

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
HAND_WRITTEN = ("vm.h", "driver.c")

DEFAULT_FLAGS = ("-O3",)
# Flags every build gets: position-independent shared object with symbols
# (debug info does not change code generation; DWARF 4 because valgrind 3.19
# cannot read the DWARF 5 that clang 19 writes by default).
BASE_FLAGS = ("-std=gnu11", "-fPIC", "-shared", "-gdwarf-4", "-Wall", "-Wno-unused-label")
# gcc factors all computed gotos into one and duplicates them back unless
# told not to: the goto-merged variant asks it not to.  clang gets the same
# effect from the asm goto in the generated source.
MODE_FLAGS = {("goto-merged", "gcc"): ("--param=max-goto-duplication-insns=0",)}
# Sanitizer builds (make test-sanitize): ASan and UBSan, every report fatal,
# frame pointers for readable stacks.  Loading one needs the compiler's
# runtime preloaded (see sanitize.py).  SHIMLAB_SANITIZE=1 makes every build
# a sanitizer build, so the same tests run either way.
SANITIZE_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                  "-fno-omit-frame-pointer")


def sanitize_requested() -> bool:
    return os.environ.get("SHIMLAB_SANITIZE", "") not in ("", "0")


def cache_root() -> Path:
    return Path(os.environ.get("SHIMLAB_BUILD_DIR", ROOT / "build"))


@dataclass(frozen=True)
class Build:
    mode: str
    compiler: toolchain.Compiler
    flags: tuple[str, ...]
    count: bool
    path: Path           # the shared object
    key: str
    sanitize: bool = False

    @property
    def command_flags(self) -> tuple[str, ...]:
        return (self.flags + MODE_FLAGS.get((self.mode, self.compiler.family), ())
                + (SANITIZE_FLAGS if self.sanitize else ()))

    def describe(self) -> dict:
        return {"mode": self.mode, "compiler": self.compiler.name,
                "compiler_version": self.compiler.version,
                "flags": " ".join(self.command_flags), "count": self.count,
                "sanitize": self.sanitize, "key": self.key}


def _sources(mode: str) -> dict[str, str]:
    rendered = cases.render()
    files = {f"generated/{name}": text for name, text in rendered.items()
             if name == "opcodes.h" or name == f"cases_{cases.c_name(mode)}.c"}
    for name in HAND_WRITTEN:
        files[name] = (CSRC / name).read_text()
    return files


def build(mode: str, compiler: str | None = None, flags: tuple[str, ...] = DEFAULT_FLAGS,
          count: bool = False, sanitize: bool | None = None) -> Build:
    """The cached build; sanitize=None follows SHIMLAB_SANITIZE."""
    if mode not in cases.VARIANTS:
        raise BuildError(f"unknown mode {mode!r} (choose from {', '.join(cases.VARIANTS)})")
    cc = toolchain.get_compiler(compiler, need=set(toolchain.MODE_FEATURES[mode]))
    flags = tuple(flags)
    extra = MODE_FLAGS.get((mode, cc.family), ())
    defines = ("-DSL_COUNT_OPS",) if count else ()
    sanitize = sanitize_requested() if sanitize is None else bool(sanitize)
    san = SANITIZE_FLAGS if sanitize else ()
    sources = _sources(mode)
    h = hashlib.sha256()
    for part in (json.dumps(sources, sort_keys=True), cc.path, cc.version, mode,
                 " ".join(BASE_FLAGS + flags + extra + san + defines)):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()[:16]
    tags = ("count-" if count else "") + ("asan-" if sanitize else "")
    out_dir = cache_root() / "interp" / f"{mode}-{cc.name}-{tags}{key}"
    so = out_dir / "libshimlab.so"
    result = Build(mode, cc, flags, count, so, key, sanitize)
    if so.exists():
        return result
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out_dir.parent))
    try:
        for name, text in sources.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)
        cmd = [cc.path, *BASE_FLAGS, *flags, *extra, *san, *defines, "-I", str(tmp),
               str(tmp / "driver.c"), str(tmp / "generated" / f"cases_{cases.c_name(mode)}.c"),
               "-o", str(tmp / "libshimlab.so")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            first = "; ".join(ln for ln in proc.stderr.splitlines() if "error" in ln)[:500]
            raise BuildError(f"{cc.name} failed to build the {mode} interpreter: "
                             f"{first or proc.stderr.strip()[:500]}")
        (tmp / "build.json").write_text(json.dumps({**result.describe(), "command": cmd},
                                                   indent=1))
        try:
            os.replace(tmp, out_dir)
        except OSError:
            if not so.exists():   # lost a race with an identical build: theirs is as good
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result
