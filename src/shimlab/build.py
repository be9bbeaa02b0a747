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
JIT_HAND_WRITTEN = ("jit_interp.h", "crossing.h", "shim.c", "jitmem.c")

# The JIT modes are the tail-call interpreter built with SL_JIT; the direct
# modes share one binary (their traces' exit stubs differ, and jit-table
# gives the interpreter a dispatch table with a slot per trace).
JIT_MODES = ("jit-shim", "jit-direct", "jit-direct-handler", "jit-table")
JIT_DEFINE = {"jit-shim": "SL_JIT_SHIM", "jit-direct": "SL_JIT_DIRECT",
              "jit-direct-handler": "SL_JIT_DIRECT", "jit-table": "SL_JIT_DIRECT"}
# The asm mode: the tail-call interpreter's C handlers with a PeachPy handler
# in their place for every instruction that has one (asm_interp.py).
ASM_MODE = "asm"
INTERPRETER_MODES = cases.VARIANTS + (ASM_MODE,)   # the non-JIT interpreters
MODES = INTERPRETER_MODES + JIT_MODES
ASM_SOURCE = "asm_handlers.s"


def is_jit(mode: str) -> bool:
    return mode in JIT_MODES

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


def sanitize_flags(mode: str, cc) -> tuple[str, ...]:
    """SANITIZE_FLAGS, and for the JIT modes on clang no -fsanitize=function:
    it checks a signature stored just before every indirect callee, which
    generated traces do not have (and reading before a trace's page faults)."""
    if is_jit(mode) and cc.family == "clang":
        return SANITIZE_FLAGS + ("-fno-sanitize=function",)
    return SANITIZE_FLAGS


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
    profile: Path | None = None           # the PGO profile it was built with
    sanitize: bool = False

    @property
    def command_flags(self) -> tuple[str, ...]:
        extra = MODE_FLAGS.get((self.mode, self.compiler.family), ())
        if self.profile is not None:
            from . import pgo
            extra += pgo.use_flags(self.compiler, self.profile)
        return self.flags + extra + (sanitize_flags(self.mode, self.compiler)
                                     if self.sanitize else ())

    def describe(self) -> dict:
        d = {"mode": self.mode, "compiler": self.compiler.name,
             "compiler_version": self.compiler.version,
             "flags": " ".join(self.command_flags), "count": self.count,
             "sanitize": self.sanitize, "key": self.key}
        if self.profile is not None:
            d["profile"] = str(self.profile)
        return d


def _variant(mode: str) -> str:
    return "tailcall" if is_jit(mode) or mode == ASM_MODE else mode


def _sources(mode: str, cc: toolchain.Compiler, count: bool) -> dict[str, str]:
    rendered = cases.render()
    files = {f"generated/{name}": text for name, text in rendered.items()
             if name == "opcodes.h" or name == f"cases_{cases.c_name(_variant(mode))}.c"}
    for name in HAND_WRITTEN + (JIT_HAND_WRITTEN if is_jit(mode) else ()):
        files[name] = (CSRC / name).read_text()
    if mode == ASM_MODE:
        # PeachPy handlers in the registers this compiler passes preserve_none
        # arguments in (so they meet its C handlers), counting when asked
        from . import asm_interp, contract
        files[ASM_SOURCE] = asm_interp.render(contract.state_of(cc.name), count)
    return files


def _profile_digest(profile: Path) -> str:
    """Hash of a profile's content (a file, or every file under a directory)."""
    if not profile.exists():
        raise BuildError(f"{profile}: no such profile")
    h = hashlib.sha256()
    files = sorted(p for p in profile.rglob("*") if p.is_file()) if profile.is_dir() else [profile]
    for f in files:
        h.update(str(f.relative_to(profile) if profile.is_dir() else f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def build(mode: str, compiler: str | None = None, flags: tuple[str, ...] = DEFAULT_FLAGS,
          count: bool = False, profile: str | os.PathLike | None = None,
          sanitize: bool | None = None) -> Build:
    """The cached interpreter; `profile` (made by pgo.py: a clang .profdata
    file or a gcc profile directory) builds it profile-guided, and the
    profile's content joins the cache key; sanitize=None follows
    SHIMLAB_SANITIZE."""
    if mode not in MODES:
        raise BuildError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    cc = toolchain.get_compiler(compiler, need=set(toolchain.MODE_FEATURES[mode]))
    flags = tuple(flags)
    extra = MODE_FLAGS.get((mode, cc.family), ())
    defines = ("-DSL_COUNT_OPS",) if count else ()
    c_files = ["driver.c", f"generated/cases_{cases.c_name(_variant(mode))}.c"]
    if is_jit(mode):
        defines += (f"-DSL_JIT={JIT_DEFINE[mode]}",)
        c_files += ["shim.c", "jitmem.c"]
    if mode == ASM_MODE:
        defines += ("-DSL_ASM",)
        c_files += [ASM_SOURCE]
    ident = "jit-direct" if JIT_DEFINE.get(mode) == "SL_JIT_DIRECT" else mode
    digest = ""
    if profile is not None:
        from . import pgo
        profile = Path(profile).resolve()
        digest = _profile_digest(profile)
        extra += pgo.use_flags(cc, profile)
    sanitize = sanitize_requested() if sanitize is None else bool(sanitize)
    san = sanitize_flags(mode, cc) if sanitize else ()
    sources = _sources(mode, cc, count)
    h = hashlib.sha256()
    for part in (json.dumps(sources, sort_keys=True), cc.path, cc.version, ident,
                 " ".join(BASE_FLAGS + flags + extra + san + defines)) + ((digest,) if digest else ()):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()[:16]
    tag = ("count-" if count else "") + ("pgo-" if profile is not None else "") + \
        ("asan-" if sanitize else "")
    out_dir = cache_root() / "interp" / f"{ident}-{cc.name}-{tag}{key}"
    so = out_dir / "libshimlab.so"
    result = Build(mode, cc, flags, count, so, key, profile, sanitize)
    if so.exists():
        return result
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out_dir.parent))
    try:
        for name, text in sources.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)
        # Relative source paths, compiled inside tmp: the object code then
        # names no temporary directory, and a gcc profile (whose checksums
        # include each function's file name) matches between the
        # instrumented build and the build that uses it.
        cmd = [cc.path, *BASE_FLAGS, *flags, *extra, *san, *defines, "-I", ".", *c_files,
               "-o", "libshimlab.so"]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
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
