"""Builds the Lua interpreters from source.py's folders into the build directory,
one entry per build, keyed by the content of the sources, the compiler and
the flags (a changed input is a new entry; an unchanged build is never
rebuilt, and an entry whose binary no longer matches build.json is rebuilt).

Lua 5.4 and 5.5: every .c of the interpreter, lua.c as main, compiled in one
command with the flags of Lua's makefile (-O2 -std=c99 -DLUA_USE_LINUX
-fno-stack-protector -fno-common; left out: its -march=native, which would
tie a build to the CPU it was made on, its warnings, readline and the
test-only ltests.c), with LUA_USE_JUMPTABLE=1 (computed goto, ljumptab.h) or
=0 (the switch).  LuaJIT 2.1: its own makefile in a copy of its tree (the
host tools minilua and buildvm generate the interpreter from vm_x64.dasc),
CC set to the compiler, the binary not stripped so the baseline check can
read its handlers.  The shimclock module (csrc/lua/shimclock.c), which the
timing driver loads, is built once per Lua API.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import toolchain
from ..digest import sha256
from ..errors import BuildError, ToolchainError
from ..interp.build import discard, entry_ok, fingerprint
from ..paths import CSRC
from . import source

PUC = ("lua54", "lua55")
LUAJIT = "luajit21"
DISPATCH = {"goto": 1, "switch": 0}         # LUA_USE_JUMPTABLE
FLAGS = ("-O2", "-std=c99", "-DLUA_USE_LINUX", "-fno-stack-protector", "-fno-common")
LINK = ("-Wl,-E", "-ldl", "-lm")
LEFT_OUT = ("ltests.c", "onelua.c", "luac.c")
# the compilers the lab builds with, in the order the tables show them
COMPILERS = ("clang-19", "clang-22", "gcc-11", "gcc-12")
LUAJIT_COMPILERS = ("gcc-12", "clang-19")
CLOCK_SOURCE = CSRC / "lua" / "shimclock.c"
DRIVER = CSRC / "lua" / "driver.lua"
EXIT_COUNTER = CSRC / "lua" / "count_exits.lua"
LOG_TAIL = 3


@dataclass(frozen=True)
class LuaBuild:
    flavour: str            # lua54, lua55, luajit21
    dispatch: str           # goto, switch; "asm" for LuaJIT's hand-written interpreter
    compiler: str
    compiler_version: str
    path: Path              # the interpreter binary
    key: str
    command: str

    @property
    def name(self) -> str:
        return f"{self.flavour}-{self.dispatch}-{self.compiler}"

    @property
    def is_luajit(self) -> bool:
        return self.flavour == LUAJIT

    def describe(self) -> dict:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


def targets(compilers=None, flavours=PUC + (LUAJIT,)) -> list[tuple[str, str, str]]:
    """(flavour, dispatch, compiler) of every build: each Lua version in both
    dispatches with every compiler, LuaJIT with gcc and clang."""
    out = []
    for flavour in flavours:
        if flavour == LUAJIT:
            out += [(flavour, "asm", cc) for cc in (compilers or LUAJIT_COMPILERS)]
        else:
            out += [(flavour, d, cc) for cc in (compilers or COMPILERS) for d in DISPATCH]
    return out


def _files_digest(h, root: Path, files) -> None:
    for f in sorted(files):
        h.update(str(f.relative_to(root)).encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")


def _key(parts, root: Path | None = None, files=()) -> str:
    h = sha256()
    for p in parts:
        h.update(str(p).encode() + b"\0")
    if root is not None:
        _files_digest(h, root, files)
    return h.hexdigest()[:16]


def _entry(kind: str, name: str, key: str) -> Path:
    return source.cache_dir() / kind / f"{name}-{key}"


def _tail(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-LOG_TAIL:]) or "no output"


def _run(cmd: list[str], cwd: Path, log: Path, what: str, cc: str) -> None:
    """A build step under nice (the machine is shared), its output kept in
    `log`; a failure is one line with the log's last lines."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                              preexec_fn=lambda: os.nice(10))
    except OSError as e:
        raise ToolchainError(f"cannot run {cmd[0]} to build {what}: {e.strerror}") from None
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        raise BuildError(f"{cc} failed to build {what} (exit status {proc.returncode}); the "
                         f"log's last lines: {_tail(proc.stdout + proc.stderr)} (log: {log})")


def _compiler(name: str) -> toolchain.Compiler:
    """The compiler by name; ToolchainError (one line, the apt package) if missing."""
    return toolchain.get_compiler(name)


def _install(tmp: Path, out_dir: Path, artifact: str, meta: dict) -> None:
    (tmp / "build.json").write_text(json.dumps({**meta, **fingerprint(tmp / artifact)},
                                               indent=1))
    try:
        os.replace(tmp, out_dir)
    except OSError:
        if not (out_dir / artifact).exists():   # not a lost race with an identical build
            raise


def _cached(kind: str, name: str, key: str, artifact: str, make) -> Path:
    """The cache entry's artifact, made by make(tmp_dir) -> dict (what
    build.json records) when the entry is missing or damaged."""
    out_dir = _entry(kind, name, key)
    if entry_ok(out_dir, artifact):
        return out_dir / artifact
    if out_dir.exists():
        discard(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out_dir.parent))
    try:
        meta = make(tmp)
        _install(tmp, out_dir, artifact, meta)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir / artifact


def _puc(flavour: str, dispatch: str, cc: toolchain.Compiler) -> LuaBuild:
    src = source.fetch() / flavour
    c_files = sorted(p for p in src.glob("*.c") if p.name not in LEFT_OUT)
    inputs = c_files + sorted(src.glob("*.h"))
    flags = FLAGS + (f"-DLUA_USE_JUMPTABLE={DISPATCH[dispatch]}",)
    cmd = [cc.path, *flags, *(str(p) for p in c_files), "-o", "lua", *LINK]
    key = _key((cc.path, cc.version, *flags, *LINK), src, inputs)
    name = f"{flavour}-{dispatch}-{cc.name}"

    def make(tmp: Path) -> dict:
        _run(cmd, tmp, source.cache_dir() / "logs" / f"{name}.log", name, cc.name)
        return {"name": name, "command": " ".join(cmd), "compiler_version": cc.version}

    path = _cached("bin", name, key, "lua", make)
    return LuaBuild(flavour, dispatch, cc.name, cc.version, path, key,
                    " ".join([cc.name, *flags, "*.c", *LINK]))


def _luajit(cc: toolchain.Compiler) -> LuaBuild:
    tree = source.fetch() / LUAJIT
    make_prog = toolchain.find_program("make")
    if make_prog is None:
        raise ToolchainError("make not found (apt-get install make): LuaJIT builds with its "
                             "own makefile")
    files = [p for p in tree.rglob("*") if p.is_file()]
    args = [f"CC={cc.path}", "TARGET_STRIP=:"]
    key = _key((cc.path, cc.version, *args), tree, files)
    name = f"{LUAJIT}-asm-{cc.name}"

    def make(tmp: Path) -> dict:
        work = tmp / "tree"
        shutil.copytree(tree, work)
        cmd = [make_prog, "-j2", *args]
        _run(cmd, work, source.cache_dir() / "logs" / f"{name}.log", name, cc.name)
        shutil.copy2(work / "src" / "luajit", tmp / "luajit")
        shutil.rmtree(work)
        return {"name": name, "command": " ".join(cmd), "compiler_version": cc.version}

    path = _cached("bin", name, key, "luajit", make)
    return LuaBuild(LUAJIT, "asm", cc.name, cc.version, path, key,
                    f"make {' '.join(args).replace(cc.path, cc.name)}")


def build(flavour: str, dispatch: str, compiler: str) -> LuaBuild:
    """One interpreter, from the cache or built now."""
    if flavour not in PUC + (LUAJIT,):
        raise BuildError(f"no Lua flavour {flavour!r} (known: {', '.join(PUC + (LUAJIT,))})")
    if flavour == LUAJIT:
        return _luajit(_compiler(compiler))
    if dispatch not in DISPATCH:
        raise BuildError(f"{flavour}: no dispatch {dispatch!r} (goto or switch)")
    return _puc(flavour, dispatch, _compiler(compiler))


def headers(flavour: str) -> Path:
    """The folder with the flavour's lua.h and lauxlib.h."""
    root = source.fetch() / flavour
    return root / "src" if flavour == LUAJIT else root


def clock_module(flavour: str) -> Path:
    """csrc/lua/shimclock.c built against the flavour's headers (its Lua API)."""
    cc = toolchain.default_compiler()
    inc = headers(flavour)
    deps = [inc / n for n in ("lua.h", "luaconf.h", "lauxlib.h")]
    cmd = [cc.path, "-O2", "-fPIC", "-shared", "-I", str(inc), str(CLOCK_SOURCE),
           "-o", "shimclock.so"]
    key = _key((cc.path, cc.version, *cmd[1:4], CLOCK_SOURCE.read_text()), inc, deps)
    name = f"shimclock-{flavour}"

    def make(tmp: Path) -> dict:
        _run(cmd, tmp, source.cache_dir() / "logs" / f"{name}.log", name, cc.name)
        return {"name": name, "command": " ".join(cmd)}

    return _cached("clock", name, key, "shimclock.so", make)
