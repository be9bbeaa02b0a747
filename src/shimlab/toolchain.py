"""Finds the C compilers on this machine and probes what each one can build.

Nothing is assumed from a version number: every feature is established by
compiling a tiny C snippet to an object file.  The results are cached in
memory and on disk (``build/toolchain.json``, keyed by the compiler's resolved
path, mtime and size, and by the probe sources), so the CLI does not re-probe.

Features:

``computed_goto``           labels as values and ``goto *p`` (gcc, clang)
``asm_goto``                ``asm goto`` with a label operand
``musttail``                ``__attribute__((musttail)) return f(x);`` in C
``preserve_none``           ``__attribute__((preserve_none))`` on a function
                            (clang >= 19; older clangs only *warn*, which
                            counts as unsupported)
``preserve_none_musttail``  an indirect musttail call through a table of
                            preserve_none handlers taking 6 arguments: what
                            the tail-call interpreter needs
``rdtscp``                  ``<x86intrin.h>`` and ``__rdtscp``
"""
from __future__ import annotations

import json
import os
import re
import _thread

from . import modes
from .atomicfile import write_atomic
from .digest import sha256
from .errors import ToolchainError
from .lazy_pattern import LazyPattern
from .paths import build_dir
from .record import Frozen

# Most specific first within each family: when several names resolve to the
# same binary (cc -> gcc -> gcc-12), the first one in this order is kept.
CANDIDATES = ("clang-22", "clang-21", "clang-20", "clang-19", "clang-18", "clang",
              "gcc-14", "gcc-13", "gcc-12", "gcc-11", "gcc", "cc")

FEATURES = ("computed_goto", "asm_goto", "musttail", "preserve_none",
            "preserve_none_musttail", "rdtscp")

# The compiler every experiment prefers, and where to get it.
PREFERRED = "clang-19"

# Compilers whose computed-goto interpreter is a broken baseline: clang 19
# merges every handler's dispatch jump into one shared indirect jump (`shimlab
# dis --native --mode goto --cc clang-19` shows it; tests/test_goto_default.py
# holds it).  Computed-goto builds therefore default to another compiler when
# there is one, and `shimlab doctor` runs the baseline check on that default.
MERGES_COMPUTED_GOTO = frozenset({"clang-19"})

PROBES: dict[str, str] = {
    "computed_goto": r"""
int probe(int n) {
    static void *table[] = { &&even, &&odd };
    int acc = 0;
    void *target = table[n & 1];
    goto *target;
even:
    acc += 2;
    return acc;
odd:
    acc += 1;
    return acc;
}
""",
    "asm_goto": r"""
int probe(int x) {
    __asm__ goto ("testl %0, %0\n\tjz %l[zero]" : : "r"(x) : "cc" : zero);
    return 1;
zero:
    return 0;
}
""",
    "musttail": r"""
int callee(int x);
int probe(int x) {
    __attribute__((musttail)) return callee(x + 1);
}
""",
    "preserve_none": r"""
__attribute__((preserve_none)) long probe(long a, long b, long c) {
    return a + b * c;
}
""",
    "preserve_none_musttail": r"""
#include <stdint.h>
typedef struct vmstate vmstate;
typedef int64_t (__attribute__((preserve_none)) *handler)(
    const uint32_t *ip, int64_t *sp, int64_t *fp, const void *table, vmstate *vm, int64_t acc);
extern const handler dispatch_table[256];

__attribute__((preserve_none)) int64_t op_add(
        const uint32_t *ip, int64_t *sp, int64_t *fp, const void *table, vmstate *vm, int64_t acc) {
    sp[-2] += sp[-1];
    sp -= 1;
    ip += 1;
    __attribute__((musttail)) return ((const handler *)table)[*ip & 255](ip, sp, fp, table, vm, acc);
}

__attribute__((preserve_none)) int64_t op_jump(
        const uint32_t *ip, int64_t *sp, int64_t *fp, const void *table, vmstate *vm, int64_t acc) {
    ip += (int32_t)ip[1];
    __attribute__((musttail)) return dispatch_table[*ip & 255](ip, sp, fp, table, vm, acc + 1);
}
""",
    "rdtscp": r"""
#include <x86intrin.h>
unsigned long long probe(void) {
    unsigned int aux;
    return __rdtscp(&aux);
}
""",
}

# Changing a probe (or the flags) invalidates the disk cache.
_PROBE_FLAGS = ("-std=gnu11", "-O2", "-c")
_FAMILY_FLAGS = {
    # Unknown or ignored attributes are only warnings: make them errors.
    "clang": ("-Werror=unknown-attributes", "-Werror=ignored-attributes"),
    "gcc": ("-Werror=attributes",),
}
_PROBE_VERSION = sha256(
    json.dumps([PROBES, _PROBE_FLAGS, _FAMILY_FLAGS], sort_keys=True).encode()).hexdigest()[:16]
# Warnings that mean "this attribute did nothing", whatever the flags did.
_IGNORED_RE = LazyPattern(r"unknown attribute|attribute (directive )?ignored|"
                         r"attribute.*ignored|ignoring attribute", re.IGNORECASE)


class Compiler(Frozen):
    name: str                 # as found on PATH, e.g. "clang-19"
    path: str                 # find_program(name)
    version: str              # first line of `--version`, for display
    family: str               # "clang" or "gcc"
    features: frozenset[str]

    def supports(self, feature: str) -> bool:
        if feature not in FEATURES:
            raise ValueError(f"unknown compiler feature {feature!r} "
                             f"(known: {', '.join(FEATURES)})")
        return feature in self.features

    def can_build(self, mode: str) -> bool:
        """True when this compiler has every feature the dispatch mode needs."""
        return modes.get(mode).features <= self.features

    @property
    def modes(self) -> tuple[str, ...]:
        """The dispatch modes this compiler can build."""
        return tuple(m for m in modes.NAMES if self.can_build(m))

    @property
    def short_version(self) -> str:
        """The version number alone, e.g. "19.1.7" or "12.2.0"."""
        return short_version(self.version)


def short_version(version_line: str) -> str:
    m = re.search(r"version\s+(\d+(?:\.\d+)*)", version_line)
    if m is None:
        m = re.search(r"\)\s+(\d+(?:\.\d+)+)", version_line) or \
            re.search(r"(\d+\.\d+(?:\.\d+)*)", version_line)
    return m.group(1) if m else version_line


def apt_package(name: str) -> str:
    """The Debian package that provides compiler `name`."""
    base = os.path.basename(name)
    if re.fullmatch(r"(clang|gcc)-\d+", base):
        return base
    if base in ("cc", "gcc"):
        return "gcc"
    if base == "clang":
        return PREFERRED
    return base


# --------------------------------------------------------------------- probing

def cache_path() -> str:
    return os.path.join(build_dir(), "toolchain.json")


def _file_key(real: str) -> str:
    st = os.stat(real)
    return f"{st.st_mtime_ns}:{st.st_size}"


def _version_line(path: str) -> str:
    # subprocess and tempfile are imported where a compiler is probed: a run
    # answered from the disk cache never needs them, and they are not cheap
    import subprocess
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0].strip() if lines else ""


def _family(name: str, version_line: str) -> str | None:
    if "clang" in version_line.lower():
        return "clang"
    if re.search(r"gcc|\bGCC\b|Free Software Foundation", version_line) or \
            os.path.basename(name).startswith(("gcc", "cc")):
        return "gcc"
    return None


def _probe_feature(path: str, family: str, feature: str) -> bool:
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="shimlab-probe-") as tmp:
        src, obj = os.path.join(tmp, f"{feature}.c"), os.path.join(tmp, f"{feature}.o")
        with open(src, "w") as f:
            f.write(PROBES[feature])
        cmd = [path, *_PROBE_FLAGS, *_FAMILY_FLAGS.get(family, ()), src, "-o", obj]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if proc.returncode != 0 or _IGNORED_RE.search(proc.stderr):
            return False
        return os.path.exists(obj)


def _probe(path: str, name: str) -> dict | None:
    version = _version_line(path)
    family = _family(name, version)
    if family is None:
        return None
    # imported here: probing is rare (the disk cache answers), and the import is not cheap
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(len(FEATURES), max(2, os.cpu_count() or 2))) as ex:
        found = list(ex.map(lambda f: _probe_feature(path, family, f), FEATURES))
    return {"version": version, "family": family,
            "features": sorted(f for f, ok in zip(FEATURES, found) if ok)}


def find_program(name: str) -> str | None:
    """shutil.which for a command name (a path is taken as it is): shutil
    imports its archive modules, a tenth of `shimlab run`'s start-up."""
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    for folder in os.get_exec_path():
        path = os.path.join(folder or os.curdir, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


_lock = _thread.RLock()     # (threading itself costs start-up time; this is its lock)
_memory: list[Compiler] | None = None
_extra: dict[str, Compiler] = {}      # compilers asked for by a name outside CANDIDATES


def _load_disk() -> dict:
    try:
        with open(cache_path()) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("probe_version") != _PROBE_VERSION:
        return {}
    entries = data.get("compilers")
    return entries if isinstance(entries, dict) else {}


def _save_disk(entries: dict) -> None:
    try:
        write_atomic(cache_path(), json.dumps({"probe_version": _PROBE_VERSION,
                                               "compilers": entries}, indent=1, sort_keys=True))
    except OSError:
        pass    # a read-only tree just means probing again next time


def _resolve(names, refresh: bool) -> list[Compiler]:
    """Probes (or loads from the disk cache) each distinct binary among `names`."""
    seen: dict[str, str] = {}           # real path -> first (most specific) name
    which: dict[str, str] = {}
    for name in names:
        path = find_program(name)
        if path is None:
            continue
        real = os.path.realpath(path)
        if real not in seen:
            seen[real] = name
            which[real] = path
    disk = {} if refresh else _load_disk()
    entries = dict(_load_disk()) if refresh else dict(disk)
    changed = False
    out = []
    for real, name in seen.items():
        try:
            key = _file_key(real)
        except OSError:
            continue
        entry = disk.get(real)
        if entry is None or entry.get("key") != key:
            probed = _probe(which[real], name)
            if probed is None:
                continue
            entry = {"key": key, **probed}
            entries[real] = entry
            changed = True
        out.append(Compiler(name=name, path=which[real], version=entry["version"],
                            family=entry["family"],
                            features=frozenset(entry["features"]) & frozenset(FEATURES)))
    if changed:
        _save_disk(entries)
    return out


def find_compilers(refresh: bool = False) -> list[Compiler]:
    """The C compilers on PATH among CANDIDATES, one per distinct binary,
    in CANDIDATES order, each with its probed features."""
    global _memory
    with _lock:
        if _memory is None or refresh:
            _memory = _resolve(CANDIDATES, refresh)
            if refresh:
                _extra.clear()
        return list(_memory)


def _lookup(name: str) -> Compiler | None:
    compilers = find_compilers()
    for cc in compilers:
        if cc.name == name:
            return cc
    path = find_program(name)
    if path is None:
        return None
    real = os.path.realpath(path)
    for cc in compilers:                 # "gcc" or "cc" when found as "gcc-12"
        if os.path.realpath(cc.path) == real:
            return cc
    with _lock:                          # a compiler outside CANDIDATES: probe it now
        if name not in _extra:
            found = _resolve([name], refresh=False)
            if not found:
                return None
            _extra[name] = found[0]
        return _extra[name]


# --------------------------------------------------------------------- choosing

def _what(need: set[str]) -> str:
    """ "the tailcall interpreter" when `need` is exactly what a mode needs, else ""."""
    for mode in modes.MODES.values():
        if mode.features and mode.features == set(need):
            return f"the {mode.name} interpreter"
    return ""


def _hint(missing: set[str]) -> str:
    return f"use {PREFERRED} or newer: apt-get install {PREFERRED}"


def _sorted_features(feats) -> list[str]:
    return [f for f in FEATURES if f in feats]


def _check_need(need) -> set[str]:
    need = set(need)
    unknown = need - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown compiler feature(s) {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(FEATURES)})")
    return need


def default_compiler(need=frozenset()) -> Compiler:
    """clang-19 when it has the needed features, then any clang that has them
    (newest first), then gcc-12, then any compiler that has them; for a
    computed-goto build, a compiler in MERGES_COMPUTED_GOTO only when no other
    one has the features."""
    need = _check_need(need)
    compilers = find_compilers()
    if not compilers:
        raise ToolchainError(f"no C compiler found (apt-get install {PREFERRED} gcc-12)")
    ok = [cc for cc in compilers if need <= cc.features]
    if "computed_goto" in need:
        ok = [cc for cc in ok if cc.name not in MERGES_COMPUTED_GOTO] or ok
    for pick in ([cc for cc in ok if cc.name == PREFERRED],
                 [cc for cc in ok if cc.family == "clang"],
                 [cc for cc in ok if cc.name == "gcc-12"],
                 ok):
        if pick:
            return pick[0]
    raise ToolchainError(
        f"no compiler here can build {_what(need) or 'this'}: none has "
        f"{', '.join(_sorted_features(need))} "
        f"(found {', '.join(cc.name for cc in compilers)}; {_hint(need)})")


def get_compiler(name: str | None = None, need=frozenset()) -> Compiler:
    """The compiler called `name` (None: the default for `need`), checked to
    have every feature in `need`; ToolchainError naming the apt package otherwise."""
    need = _check_need(need)
    if name is None:
        return default_compiler(need)
    cc = _lookup(name)
    if cc is None:
        raise ToolchainError(f"compiler {name} not found (apt-get install {apt_package(name)})")
    missing = need - cc.features
    if missing:
        what = _what(need)
        head = f"{cc.name} cannot build {what}: no" if what else f"{cc.name} lacks"
        raise ToolchainError(f"{head} {', '.join(_sorted_features(missing))} "
                             f"({_hint(missing)})")
    return cc


def clear_cache() -> None:
    """Forgets the in-memory probe results (the disk cache stays)."""
    global _memory
    with _lock:
        _memory = None
        _extra.clear()
