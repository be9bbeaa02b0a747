"""Builds one interpreter per (mode, compiler, flags) into a content-keyed cache.

The sources are rendered from isa.py into the build directory (never read
back from csrc/generated), compiled with exactly the flags given into a
shared object, and loaded through cffi.  An unchanged build is never rebuilt.
"""
from __future__ import annotations

import json
import os

from .. import cachefile, modes, toolchain
from ..abi import contract
from ..atomicfile import write_atomic
from ..digest import sha256
from ..errors import BuildError
from ..modes import Mode
from ..paths import CSRC_DIR, build_dir
from ..record import Frozen
from . import generate

HAND_WRITTEN = ("vm.h", "driver.c")
ASM_SOURCE = "asm_handlers.s"


DEFAULT_FLAGS = ("-O3",)
# Flags every build gets: position-independent shared object with symbols
# (debug info does not change code generation; DWARF 4 because valgrind 3.19
# cannot read the DWARF 5 that clang 19 writes by default).
BASE_FLAGS = ("-std=gnu11", "-fPIC", "-shared", "-gdwarf-4", "-Wall", "-Wno-unused-label")
# Sanitizer builds (make test-sanitize): ASan and UBSan, every report fatal,
# frame pointers for readable stacks.  Loading one needs the compiler's
# runtime preloaded (see sanitize.py).  SHIMLAB_SANITIZE=1 makes every build
# a sanitizer build, so the same tests run either way.
SANITIZE_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                  "-fno-omit-frame-pointer")


def sanitize_flags(mode: str, cc, cache: int = 0) -> tuple[str, ...]:
    """SANITIZE_FLAGS, and for the JIT modes on clang no -fsanitize=function:
    it checks a signature stored just before every indirect callee, which
    generated traces do not have (and reading before a trace's page faults).
    With cached values (cache > 0) on clang, no use-after-return fake stack:
    its dynamic alloca needs a stack realignment that clang 19's backend
    refuses in a preserve_none function ("Stack realignment in presence of
    dynamic allocas is not supported with this calling convention")."""
    flags = SANITIZE_FLAGS
    if modes.get(mode).jit and cc.family == "clang":
        flags += ("-fno-sanitize=function",)
    if cache and cc.family == "clang":
        flags += ("-fsanitize-address-use-after-return=never",)
    return flags


def sanitize_requested() -> bool:
    return os.environ.get("SHIMLAB_SANITIZE", "") not in ("", "0")


def profile_use_flags(cc: toolchain.Compiler, profile: os.PathLike) -> tuple[str, ...]:
    """Flags that compile with a PGO profile (made by pgo.py); a stale or
    missing profile is an error."""
    if cc.family == "clang":
        return (f"-fprofile-instr-use={profile}", "-Werror=profile-instr-out-of-date")
    return (f"-fprofile-use={profile}", "-dumpdir", f"{profile}/", "-Werror=missing-profile")


class Build(Frozen):
    mode: str
    compiler: toolchain.Compiler
    flags: tuple[str, ...]
    count: bool
    so: str              # the shared object
    key: str
    profile: os.PathLike | None = None    # the PGO profile it was built with (a Path)
    sanitize: bool = False
    code_layout: int = 0                  # 0: the compiler's placement; else a shifted one
    cache: int = 0                        # operand-stack values kept in registers (--cache K)

    @property
    def path(self) -> os.PathLike:
        """The shared object, as a Path (a run itself uses `so`: docs/cli.md's start-up)."""
        from pathlib import Path
        return Path(self.so)

    @property
    def spec(self) -> Mode:
        return modes.get(self.mode)

    @property
    def command_flags(self) -> tuple[str, ...]:
        extra = self.spec.family_flags.get(self.compiler.family, ())
        if self.profile is not None:
            extra += profile_use_flags(self.compiler, self.profile)
        return self.flags + extra + (sanitize_flags(self.mode, self.compiler, self.cache)
                                     if self.sanitize else ())

    def describe(self) -> dict:
        d = {"mode": self.mode, "compiler": self.compiler.name,
             "compiler_version": self.compiler.version,
             "flags": " ".join(self.command_flags), "count": self.count,
             "sanitize": self.sanitize, "key": self.key}
        if self.cache:
            d["cache"] = self.cache
        if self.code_layout:
            d["code_layout"] = self.code_layout
            d["code_shift"] = code_shift(self.code_layout)
        if self.profile is not None:
            d["profile"] = str(self.profile)
        return d


# Where the hot code sits decides which of its jumps share branch-predictor
# entries, cross a 32-byte boundary or alias in 4K: the same machine code can
# run 30% apart at two addresses.  A code layout shifts all of the
# interpreter's code by a multiple of 16 bytes (functions stay aligned as the
# compiler wants) below one page, by padding at the start of .text.  Layouts
# 1, 2, 3, 4 put the code at the four 16-byte offsets in a 64-byte line (then
# again from 5): drawn at random, three layouts could share one offset, and
# they did (December 2026: 1 to 4 all at 32), so "over three layouts" had moved
# the code between pages and predictor entries but never within its lines,
# where a 24-byte handler crosses a line or not.
CODE_SHIFT_STEP, CODE_SHIFT_SPAN, CODE_LINE = 16, 4096, 64


def code_shift(layout: int) -> int:
    """Bytes of padding of code layout `layout` (0 for layout 0): a line
    drawn from the layout's hash, and offset (layout - 1) mod 4 in it."""
    if not layout:
        return 0
    h = sha256(f"code-layout-{layout}".encode()).digest()
    line = int.from_bytes(h[:4], "little") % (CODE_SHIFT_SPAN // CODE_LINE)
    return CODE_LINE * line + CODE_SHIFT_STEP * ((layout - 1) % (CODE_LINE // CODE_SHIFT_STEP))


def _with_code_shift(driver: str, layout: int) -> str:
    """driver.c (the first file linked) preceded by the padding; #line keeps
    line numbers, which gcc's profiles check, as they were."""
    pad = code_shift(layout)
    if not pad:
        return driver
    return (f'__asm__(".text\\n.p2align 12\\nsl_code_layout_pad:\\n.skip {pad}, 0xcc\\n");\n'
            f'#line 1 "driver.c"\n' + driver)


def _sources(mode: Mode, cc: toolchain.Compiler, count: bool,
             code_layout: int = 0, cache: int = 0) -> dict[str, str]:
    wanted = {"opcodes.h", generate.cases_file(mode.variant, cache)}
    files = {f"generated/{name}": text for name, text in generate.render(only=wanted).items()}
    for name in HAND_WRITTEN + mode.headers + mode.c_sources:
        with open(os.path.join(CSRC_DIR, name)) as f:
            files[name] = f.read()
    files["driver.c"] = _with_code_shift(files["driver.c"], code_layout)
    if mode.asm_handlers:
        # PeachPy handlers in the registers this compiler passes preserve_none
        # arguments in (so they meet its C handlers), counting when asked
        from . import asm_handlers    # PeachPy and the stencils: only the asm mode needs them
        files[ASM_SOURCE] = asm_handlers.render(contract.state_of(cc.name), count)
    return files


def _profile_digest(profile: os.PathLike) -> str:
    """Hash of a profile's content (a file, or every file under a directory)."""
    if not profile.exists():
        raise BuildError(f"{profile}: no such profile")
    h = sha256()
    files = sorted(p for p in profile.rglob("*") if p.is_file()) if profile.is_dir() else [profile]
    for f in files:
        h.update(str(f.relative_to(profile) if profile.is_dir() else f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def check_cache(mode: str, cache: int) -> None:
    """--cache K: 0 for every mode; 1..CACHE_MAX for the modes that can cache."""
    if not isinstance(cache, int) or not 0 <= cache <= generate.CACHE_MAX:
        raise BuildError(f"--cache {cache}: choose 0 to {generate.CACHE_MAX} cached values "
                         f"({6 + generate.CACHE_MAX} preserve_none arguments is the most an "
                         "indirect musttail call compiles with)")
    if cache and not modes.get(mode).cache:
        raise BuildError(f"--cache {cache}: the {mode} mode keeps no values in registers "
                         f"(modes that can: {', '.join(modes.CACHING)})")


# -- cache entries are checked before use ----------------------------------------
#
# A truncated or overwritten libshimlab.so in the cache made every later run
# die of SIGBUS.  build.json records the library's size and SHA-256 when it is
# built; an entry whose library no longer matches is moved aside and rebuilt.

SO_NAME = "libshimlab.so"
_verified: set[tuple] = set()     # (path, inode, size, mtime) hashed once per process


def sha256_file(path: str | os.PathLike) -> str:
    h = sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fingerprint(so: str | os.PathLike) -> dict:
    return {"so_size": os.stat(so).st_size, "so_sha256": sha256_file(so)}


def _elf_complete(so: str, size: int) -> bool:
    """For entries built before fingerprints: an ELF file whose section
    header table (at its end) lies inside the file, i.e. not truncated."""
    with open(so, "rb") as f:
        head = f.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:
        return False
    shoff = int.from_bytes(head[0x28:0x30], "little")
    shentsize = int.from_bytes(head[0x3A:0x3C], "little")
    shnum = int.from_bytes(head[0x3C:0x3E], "little")
    return 0 < shoff and shoff + shentsize * shnum <= size


def _write_json(path: str, data: dict) -> None:
    write_atomic(path, json.dumps(data, indent=1))


def entry_ok(out_dir: str | os.PathLike, artifact: str = SO_NAME) -> bool:
    """Whether the cache entry's library (or other ELF file `artifact`) is the
    one built there (size and hash as recorded in build.json); an older entry
    without a record is checked for truncation and then gets one."""
    so, record = os.path.join(out_dir, artifact), os.path.join(out_dir, "build.json")
    try:
        st = os.stat(so)
        with open(record) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    sig = (so, st.st_ino, st.st_size, st.st_mtime_ns)
    if sig in _verified:
        return True
    # the library's stamp (cachefile.stamp) when it was last hashed and found
    # whole: while it is the same, another process need not hash it again
    # (~1 ms a run with Python's own SHA-256: digest.py)
    seen = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    try:
        if "so_sha256" not in meta:
            if not _elf_complete(so, st.st_size):
                return False
            _write_json(record, {**meta, **fingerprint(so)})
        elif meta.get("so_seen") != seen:
            if meta.get("so_size") != st.st_size or meta.get("so_sha256") != sha256_file(so):
                return False
            if cachefile.settled(seen):
                try:
                    _write_json(record, {**meta, "so_seen": seen})
                except OSError:
                    pass        # a read-only build directory: hashed again next time
    except OSError:
        return False
    _verified.add(sig)
    return True


def discard(out_dir: str | os.PathLike) -> None:
    """Move a bad entry out of the way (one rename, so a concurrent build
    never sees half of it) and delete it; another process may have done so."""
    import shutil
    import tempfile
    out_dir = os.fspath(out_dir)
    aside = tempfile.mkdtemp(prefix=".bad-", dir=os.path.dirname(out_dir))
    try:
        os.replace(out_dir, os.path.join(aside, os.path.basename(out_dir)))
    except FileNotFoundError:
        pass
    shutil.rmtree(aside, ignore_errors=True)


def build(mode: str, compiler: str | None = None, flags: tuple[str, ...] = DEFAULT_FLAGS,
          count: bool = False, profile: str | os.PathLike | None = None,
          sanitize: bool | None = None, code_layout: int = 0, cache: int = 0) -> Build:
    """The cached interpreter; `profile` (made by pgo.py: a clang .profdata
    file or a gcc profile directory) builds it profile-guided, and the
    profile's content joins the cache key; sanitize=None follows
    SHIMLAB_SANITIZE; code_layout > 0 shifts the code (code_shift); cache: K
    operand-stack values in registers (the K-cached tail-call interpreter)."""
    check_cache(mode, cache)
    if code_layout < 0:
        raise BuildError(f"code layout {code_layout}: needs 0 (the compiler's) or more")
    spec = modes.get(mode)
    cc = toolchain.get_compiler(compiler, need=set(spec.features))
    if cache and spec.jit:
        contract.check_cache_stencils(cc.name, cache)
    flags = tuple(flags)
    extra = spec.family_flags.get(cc.family, ())
    defines = (("-DSL_COUNT_OPS",) if count else ()) + spec.defines
    c_files = ["driver.c", f"generated/{generate.cases_file(spec.variant, cache)}",
               *spec.c_sources] + ([ASM_SOURCE] if spec.asm_handlers else [])
    ident = spec.build_name
    digest = ""
    if profile is not None:
        from pathlib import Path     # (a PGO build only)
        profile = Path(profile).resolve()
        digest = _profile_digest(profile)
        extra += profile_use_flags(cc, profile)
    sanitize = sanitize_requested() if sanitize is None else bool(sanitize)
    san = sanitize_flags(mode, cc, cache) if sanitize else ()
    sources = _sources(spec, cc, count, code_layout, cache)
    h = sha256()
    for part in (json.dumps(sources, sort_keys=True), cc.path, cc.version, ident,
                 " ".join(BASE_FLAGS + flags + extra + san + defines)) + ((digest,) if digest else ()):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()[:16]
    tag = ("count-" if count else "") + ("pgo-" if profile is not None else "") + \
        ("asan-" if sanitize else "") + (f"layout{code_layout}-" if code_layout else "") + \
        (f"k{cache}-" if cache else "")
    out_dir = os.path.join(build_dir(), "interp", f"{ident}-{cc.name}-{tag}{key}")
    so = os.path.join(out_dir, SO_NAME)
    result = Build(mode, cc, flags, count, so, key, profile, sanitize, code_layout, cache)
    if entry_ok(out_dir):
        return result
    if os.path.exists(out_dir):
        discard(out_dir)       # truncated or changed since it was built: build it again
    os.makedirs(os.path.dirname(out_dir), exist_ok=True)
    import shutil       # here, as the compiler: a cached build needs neither
    import tempfile
    from pathlib import Path
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(out_dir)))
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
        import subprocess   # here: a cached build (every run but the first) needs no compiler
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            first = "; ".join(ln for ln in proc.stderr.splitlines() if "error" in ln)[:500]
            raise BuildError(f"{cc.name} failed to build the {mode} interpreter: "
                             f"{first or proc.stderr.strip()[:500]}")
        (tmp / "build.json").write_text(json.dumps({**result.describe(), "command": cmd,
                                                    **fingerprint(tmp / SO_NAME)}, indent=1))
        try:
            os.replace(tmp, out_dir)
        except OSError:
            if not os.path.exists(so):   # lost a race with an identical build: theirs is as good
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result
