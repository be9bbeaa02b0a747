"""Loads the stencil artifact that peachpy_stencils/build.py writes, rebuilding it
when any of its inputs changed (the artifact is headed by their hash), and
the prototype modules one by one (peachpy_stencils/'s other files, $SHIMLAB_STENCILS),
each cached apart, so a broken one fails only the runs that select it.

A prototype can also be registered at run time (register, extra_stencils):
it lives in this process and the children forked from it, never in the
artifact or the source tree, and the JIT and `stencil_check` find it by name
like a built stencil.  This is how a notebook tries a stencil out."""
from __future__ import annotations

import json
import marshal
import os
import sys
from collections.abc import Mapping
from functools import lru_cache

import peachpy_stencils.build

from .. import cachefile, isa
from ..abi import contract
from ..digest import sha1, sha256
from ..paths import build_dir
from ..record import field, record, replace
from ..stencil import PLACEHOLDER, Hole, Stencil, StencilError, disassemble


def artifact_path(state: dict | None = None) -> os.PathLike:
    """The artifact's file, as a Path (the JIT itself uses artifact_file)."""
    from pathlib import Path
    return Path(artifact_file(state))


def artifact_file(state: dict | None = None) -> str:
    k = contract.key(state or contract.STATE)
    return os.path.join(build_dir(), f"stencils-{k}.json" if k else "stencils.json")


SOURCES = ("peachpy", "clang")


def load(state: dict | None = None, source: str = "peachpy", cc: str | None = None) -> Mapping:
    """name -> shimlab.stencil.Stencil (with .disassembly), current with its
    sources, written against the register assignment `state` (default: the
    static contract; contract.state_of(cc) for a compiler's own): the
    standard stencils, the prototypes that built (problems() has the others)
    and those registered at run time.  With source "clang" the instruction
    stencils are compiled from C by `cc` (jit/clang_stencils.py) and the exits
    and counters stay PeachPy's.  A read-only mapping, shared (every trace's
    compile asks for it), whose stencils are made as they are first looked
    up: dict() of it for a copy (which makes them all)."""
    items = _items(state)
    peachpy = _merged(items)
    if source == "peachpy":
        return peachpy
    if source != "clang":
        raise StencilError(f"unknown stencil source {source!r} (choose from {', '.join(SOURCES)})")
    from . import clang_stencils     # compiler-built stencils: imported when asked for
    return overlay(peachpy, clang_stencils.load(cc))


def _items(state: dict | None) -> tuple:
    return tuple((state or contract.STATE).items())


# Stencils registered at run time, by name (see register).
_extra: dict = {}
# state items -> (the standard and prototype dicts, the registered ones, their merge)
_MERGED: dict = {}


def _merged(items: tuple) -> Mapping:
    """The standard stencils, the prototypes and the registered ones as one
    mapping, made again only when one of them changed."""
    parts = (_load(items), _prototypes(items).stencils)
    extra = tuple(_extra.items())
    hit = _MERGED.get(items)
    if hit is None or hit[0][0] is not parts[0] or hit[0][1] is not parts[1] or hit[1] != extra:
        hit = _MERGED[items] = (parts, extra, overlay(parts[0], {**parts[1], **_extra}))
    return hit[2]


class _Overlay(Mapping):
    """`base` with the names of `top` added, as one mapping, base not copied
    (a copy made all ~600 stencils of a lazy base).  Iterates as the dict
    {**base, **top} would."""
    __slots__ = ("_base", "_top")

    def __init__(self, base: Mapping, top: dict):
        self._base, self._top = base, top

    def __getitem__(self, name):
        s = self._top.get(name)
        return self._base[name] if s is None else s

    def __contains__(self, name) -> bool:
        return name in self._top or name in self._base

    def __iter__(self):
        yield from self._base
        yield from (n for n in self._top if n not in self._base)

    def __len__(self) -> int:
        return len(self._base) + sum(n not in self._base for n in self._top)


def overlay(base: Mapping, top: dict) -> Mapping:
    """name -> Stencil: those of `top`, and of `base` for every other name."""
    return _Overlay(base, top) if top else base


class _Prepared(Mapping):
    """The standard stencils as the prepared form holds them, each made (a
    Stencil) when first asked for: making all ~600 took 3-5 ms of the JIT's
    start (Zen 3), where a program's traces use a few dozen."""
    __slots__ = ("_blobs", "_made")

    def __init__(self, blobs: dict):
        self._blobs, self._made = blobs, {}      # name -> marshal data; name -> Stencil

    def __getitem__(self, name):
        s = self._made.get(name)
        if s is None:
            code, holes, doc, listing, flags = marshal.loads(self._blobs[name])
            s = self._made[name] = Stencil(name, code, tuple(map(_hole, holes)), doc,
                                           listing, flags)
        return s

    def __contains__(self, name) -> bool:
        return name in self._blobs

    def __iter__(self):
        return iter(self._blobs)

    def __len__(self) -> int:
        return len(self._blobs)


@lru_cache(maxsize=None)
def _hole(fields: tuple) -> Hole:
    """One (immutable) Hole for the same hole in many stencils."""
    return Hole(*fields)


@lru_cache(maxsize=None)
def _load(items: tuple) -> dict:
    """The standard stencils (peachpy_stencils/'s families), from the artifact
    (through its prepared form when that is current: _from_prepared)."""
    state = dict(items)
    build = peachpy_stencils.build
    path = artifact_file(state)
    stamp = _stamp(path, state)
    hit = _from_prepared(path, stamp=stamp) if stamp is not None else None
    if hit is not None:
        st, _DIGESTS[items], _ = hit
        return st
    want = build.input_hash(state)
    raw = _read(path)
    if raw is not None:
        digest = sha1(raw).digest()
        hit = _from_prepared(path, digest, want)
        if hit is not None:
            st, _DIGESTS[items], _ = hit
            if hit[2] != stamp:         # current, but its files were touched: stamp it again
                _write_prepared(path, digest, want, st, stamp)
            return st
    data = None
    if raw is not None:
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
    if not isinstance(data, dict) or data.get("hash") != want:
        try:
            data = build.write(path, state)
        except StencilError as e:
            raise StencilError(f"stencil build failed: {e}") from None
        raw = _read(path)
    st = {name: Stencil.from_json(d) for name, d in data["stencils"].items()}
    if raw is not None:
        digest = sha1(raw).digest()
        _write_prepared(path, digest, want, st, _stamp(path, state))
        _DIGESTS[items] = digest.hex()
    return st


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


# state items -> SHA-1 of the artifact's bytes the standard stencils were read from
_DIGESTS: dict = {}


def digest(state: dict | None = None) -> str | None:
    """Which artifact the standard stencils came from (the SHA-1 of its bytes;
    None if unknown): what jit/trace_cache.py's traces were made with."""
    items = _items(state)
    _load(items)
    return _DIGESTS.get(items)


def registered() -> bool:
    """Whether any stencil is registered at run time (register)."""
    return bool(_extra)


# -- the artifact's prepared form ----------------------------------------------------
# Parsing the JSON artifact and making its ~600 stencils took ~4.5 ms of every
# JIT process's start (issue 24).  Beside it, stencils-*.prepared holds the
# same stencils as marshal data, made from the JSON by this module: current
# when it names the JSON's exact bytes (their SHA-1: an artifact rebuilt, or
# edited, is seen) and the inputs' hash, and whole (a CRC of its payload:
# a damaged file is made again from the JSON, never read as stencils).

_PREPARED_MAGIC = b"SLSTP3" + bytes(sys.version_info[:2])   # the format; marshal's Python


def prepared_path(path: str | os.PathLike) -> str:
    """The prepared form's file beside the artifact at `path`."""
    return os.path.splitext(os.fspath(path))[0] + ".prepared"


# A prepared form also holds the stamps (cachefile.stamp) of the files it
# was made from, the artifact and input_files(), and the state: while they
# are as stamped, neither the artifact nor the inputs are read and hashed
# (~3.5 ms of the JIT's start, with Python's own SHA-1).

def _stamp(path: str, state: dict) -> tuple | None:
    """The artifact's and its inputs' identity as stat sees it, or None when
    one is missing."""
    out: list = [json.dumps(state, sort_keys=True)]
    for p in [path, *peachpy_stencils.build.input_files()]:
        s = cachefile.stamp(p)
        if s is None:
            return None
        out.append((str(p), *s))
    return tuple(out)


def _from_prepared(path: str, digest: bytes | None = None, want: str | None = None,
                   stamp: tuple | None = None) -> tuple | None:
    """(the stencils, the artifact's SHA-1 in hex, the stamp kept) from the
    prepared form, if it is of the artifact whose bytes have SHA-1 `digest`
    made for the inputs' hash `want`, or (given `stamp`) if it was stamped
    so; None when it is missing, stale or damaged."""
    try:
        made_of, hash_, blobs, kept = cachefile.read_sealed(prepared_path(path), _PREPARED_MAGIC)
    except (TypeError, ValueError):     # nothing there, or not these values
        return None
    if stamp is not None:
        if kept != stamp:
            return None
    elif made_of != digest or hash_ != want:
        return None
    if not isinstance(blobs, dict):
        return None
    return _Prepared(blobs), made_of.hex(), kept


def _write_prepared(path: str, digest: bytes, want: str, st: dict,
                    stamp: tuple | None) -> None:
    kept = stamp if stamp is not None and cachefile.settled(*(f[1:] for f in stamp[1:])) \
        else None
    # each stencil's fields as marshal data of their own (_Prepared reads one
    # when a trace first uses it), in the artifact's order
    blobs = st._blobs if isinstance(st, _Prepared) else {
        name: marshal.dumps((s.code, tuple((h.offset, h.width, h.kind) for h in s.holes),
                             s.doc, s.disassembly, s.flags_in)) for name, s in st.items()}
    try:
        cachefile.write_sealed(prepared_path(path), _PREPARED_MAGIC, (digest, want, blobs, kept))
    except OSError:
        pass            # a read-only build dir: the JSON again next time


# -- prototypes from files: peachpy_stencils/'s other modules and $SHIMLAB_STENCILS ---------

@record
class Prototypes:
    stencils: dict = field(default_factory=dict)   # name -> Stencil, the usable ones
    origin: dict = field(default_factory=dict)     # name -> "file:line"
    problems: dict = field(default_factory=dict)   # name -> one line: why it is not usable
    broken: list = field(default_factory=list)     # (one line, names it declares) per module


def _prototype_cache(path: str | os.PathLike, state: dict) -> os.PathLike:
    from pathlib import Path        # (prototypes only: a plain JIT run has none)
    k = contract.key(state) or "default"
    return Path(build_dir(), "prototypes",
                f"{sha256(str(path).encode()).hexdigest()[:12]}-{Path(path).stem}-{k}.json")


def _build_module(path: str | os.PathLike, state: dict) -> dict:
    """One module's stencils and errors, from its cache file when current."""
    build = peachpy_stencils.build
    cache = _prototype_cache(path, state)
    try:
        want = build.prototype_hash(path, state)
        data = json.loads(cache.read_text())
        if isinstance(data, dict) and data.get("hash") == want:
            return data
    except (OSError, ValueError):
        pass
    data = build.build_prototypes(path, state)
    try:
        _prune(cache.parent)
        build.write_json(cache, data)
    except OSError:
        pass            # a read-only build dir: build again next time
    return data


def _prune(folder: os.PathLike) -> None:
    """Drops the cache files of modules that are gone (a test's temporary
    folder, a moved prototype), so the cache does not grow with each."""
    for f in folder.glob("*.json") if folder.is_dir() else ():
        try:
            if not os.path.isfile(json.loads(f.read_text()).get("module", "")):
                f.unlink()
        except (OSError, ValueError, AttributeError):
            pass


@lru_cache(maxsize=None)
def _prototypes(items: tuple) -> Prototypes:
    """Every prototype module, each loaded on its own: one that fails (or a
    stencil of it that fails) is recorded, named by file and line, and only
    a run that selects one of its stencils fails with that line."""
    state = dict(items)
    out = Prototypes()
    seen: dict = {}
    for path in peachpy_stencils.build.prototype_modules():
        try:
            data = _build_module(path, state)
        except StencilError as e:
            out.broken.append((str(e), peachpy_stencils.build.declared_names(path)))
            continue
        for name, why in data["errors"].items():
            out.problems[name] = why
        for name, d in data["stencils"].items():
            out.origin[name] = f"{path}:{d.get('line', '')}".rstrip(":")
            seen.setdefault(name, []).append(path)
            out.stencils[name] = Stencil.from_json(d)
    standard = _load(items)
    for name in list(out.stencils):
        where = out.origin[name]
        base, _, variant = name.partition(":")
        why = None
        if name in standard:
            why = (f"peachpy_stencils/ has a stencil of this name already: name the prototype "
                   f"{base}:mine or the like")
        elif base not in isa.BY_NAME or not variant:
            why = ("name it INSTRUCTION:variant (e.g. DUP:mine) after the VM instruction "
                   "it implements")
        elif len(seen[name]) > 1:
            why = f"{' and '.join(map(str, seen[name]))} both define it"
        if why:
            del out.stencils[name]
            out.problems[name] = f"{where}: stencil {name}: {why}"
    return out


def _clear() -> None:
    _load.cache_clear()
    _DIGESTS.clear()
    _prototypes.cache_clear()
    _MERGED.clear()


load.cache_clear = _clear     # forget loaded artifacts and prototypes (tests, an edited module)


def standard(state: dict | None = None) -> Mapping:
    """The standard stencils only (peachpy_stencils/'s families), name -> Stencil."""
    return _load(_items(state))


def problems(state: dict | None = None) -> list[str]:
    """One line for each prototype stencil, or module, that cannot be used."""
    p = _prototypes(_items(state))
    return list(p.problems.values()) + [why for why, _ in p.broken]


def origin(name: str, state: dict | None = None) -> str | None:
    """file:line of a prototype stencil from a file; None for any other."""
    return _prototypes(_items(state)).origin.get(name)


def lookup(name: str, state: dict | None = None, source: str = "peachpy",
           cc: str | None = None):
    """The stencil `name`, or a StencilError of one line saying why there is
    none: its own error (file, line, stencil) when a prototype of that name
    failed, the module's when the module that declares it did not load."""
    st = load(state, source, cc)
    if name in st:
        return st[name]
    p = _prototypes(_items(state))
    if name in p.problems:
        raise StencilError(p.problems[name])
    for why, names in p.broken:
        if name in names:
            raise StencilError(f"{why} (the module declaring stencil {name} did not load)")
    close = [n for n in st if n.split(":")[0] == name.split(":")[0].upper()]
    hint = f" (did you mean {', '.join(close)}?)" if close else \
        " (shimlab stencils list shows them all)"
    if p.broken:
        hint += f"; a prototype module did not load: {p.broken[0][0]}"
    raise StencilError(f"no stencil named {name!r}{hint}")


def instruction_of(name: str) -> str | None:
    """The VM instruction a stencil implements (its name before the first ':')."""
    base = name.split(":")[0]
    return base if base in isa.BY_NAME else None


def replaces(name: str, state: dict | None = None) -> str | None:
    """The standard stencil a stencil stands in for: itself when standard,
    else its name with trailing :parts dropped until one is standard
    (CELL_ADD:rmw -> CELL_ADD, JUMP_IF_FALSE:taken:mine -> JUMP_IF_FALSE:taken)."""
    std = standard(state)
    parts = name.split(":")
    while parts:
        n = ":".join(parts)
        if n in std and instruction_of(n):
            return n
        parts.pop()
    return None


def parse_overrides(specs, state: dict | None = None) -> dict:
    """--stencil OP=NAME, repeatable (`run`, `bench programs`): {OP: NAME},
    checked by check_overrides; every error one line starting --stencil."""
    out = {}
    for spec in specs or ():
        op, sep, name = (x.strip() for x in spec.partition("="))
        if not sep or not op or not name:
            raise StencilError(f"--stencil {spec}: expected OP=NAME, e.g. DUP=DUP:mine")
        if op in out:
            raise StencilError(f"--stencil {spec}: {op} is replaced twice (by {out[op]} too)")
        out[op] = name
    for op, name in out.items():
        try:
            check_overrides({op: name}, state)
        except StencilError as e:
            raise StencilError(f"--stencil {e}") from None
    return out


# Holes the JIT fills for any instruction it traces (compile.py): the
# operand, a local's offset, the next stencil, and the deopt exit.
_ANY_OP_HOLES = {"oparg", "local", "continue", "deopt"}


def check_overrides(overrides: dict, state: dict | None = None, source: str = "peachpy",
                    cc: str | None = None) -> dict:
    """Refuses, in one line each, an override {OP: NAME} the JIT cannot use:
    OP not an instruction's standard stencil, NAME unknown or broken, NAME a
    stencil of another instruction (which would corrupt the VM: a LOAD_INT in
    place of CELL_ADD grows the stack until it faults), or NAME with a hole
    the JIT does not fill at OP.  Returns the overrides."""
    for op, name in overrides.items():      # by name first: standard() builds the stencils
        if instruction_of(op) is None:
            raise StencilError(f"{op}={name}: {op.split(':')[0]!r} is not a VM instruction")
    std = standard(state)
    for op, name in overrides.items():
        ins = instruction_of(op)
        if op not in std:
            own = [n for n in std if n.split(":")[0] == ins]
            if not own:
                raise StencilError(f"{op}={name}: the JIT has no stencil for {ins} (it never "
                                   "traces it), so none can stand in for it")
            raise StencilError(f"{op}={name}: {ins} has no stencil {op!r}: name the one to "
                               f"replace ({', '.join(own)})")
        try:
            s = lookup(name, state, source, cc)
        except StencilError as e:
            raise StencilError(f"{op}={name}: {e}") from None
        if instruction_of(name) != ins:
            raise StencilError(f"{op}={name}: {name} implements "
                               f"{instruction_of(name) or 'no instruction'}, not {ins}: only "
                               f"a stencil of {ins} can stand in for {op}")
        allowed = _ANY_OP_HOLES | ({"const"} if ins == "LOAD_CONST" else set()) | \
            ({h.kind for h in std[op].holes} & {"branch", "loop"})
        extra = [h.kind for h in s.holes if h.kind not in allowed]
        if extra:
            raise StencilError(f"{op}={name}: hole {extra[0]} of {name} would be left "
                               f"unpatched (the JIT fills {', '.join(sorted(allowed))} "
                               f"at {op})")
    return dict(overrides)


def placeholders() -> dict[str, int]:
    return dict(PLACEHOLDER)


def register(stencil):
    """Adds an assembled stencil (peachpy_stencils.asm.assemble checked its holes) for
    this process and children forked from it; returns it, disassembled.

    Its name is INSTRUCTION:variant, as for a built variant, so that
    `stencil_check` knows what to hold it to and `jit={"stencils": {...}}` can
    put it in place of the standard one.  A name the artifact has is refused:
    a prototype never silently replaces a built stencil.  Registering a name
    again replaces the earlier prototype (a notebook cell run twice)."""
    if not isinstance(stencil, Stencil):
        raise StencilError(f"register wants a shimlab.stencil.Stencil (from peachpy_stencils.asm.assemble), "
                           f"not {type(stencil).__name__}")
    base, _, variant = stencil.name.partition(":")
    if base not in isa.BY_NAME or not variant:
        raise StencilError(f"stencil {stencil.name!r}: name it INSTRUCTION:variant "
                           f"(e.g. DUP:mine) after the VM instruction it implements")
    if stencil.name in _load(_items(None)):
        raise StencilError(f"stencil {stencil.name} is built from peachpy_stencils/ already: register "
                           f"the prototype under another variant name")
    where = origin(stencil.name)
    if where:
        raise StencilError(f"stencil {stencil.name} comes from {where} already: register "
                           f"the prototype under another variant name")
    if not stencil.disassembly:
        stencil = replace(stencil, disassembly=disassemble(stencil.code, stencil.holes))
    _extra[stencil.name] = stencil
    return stencil


def unregister(name: str) -> None:
    _extra.pop(name, None)


class extra_stencils:
    """register() each stencil (a dict name -> Stencil, or an iterable of
    them) for the duration of the with block; yields name -> Stencil.  (A
    class, not contextlib's decorator: contextlib's import cost every JIT
    run ~1 ms.)"""

    def __init__(self, stencils):
        if isinstance(stencils, dict):
            for name, s in stencils.items():
                if getattr(s, "name", name) != name:
                    raise StencilError(f"extra_stencils: key {name!r} names stencil {s.name!r}")
        self._items = list(stencils.values()) if isinstance(stencils, dict) else list(stencils)
        self._added: dict = {}

    def __enter__(self) -> dict:
        try:
            for s in self._items:
                s = register(s)
                self._added[s.name] = s
        except BaseException:
            self.__exit__()
            raise
        return self._added

    def __exit__(self, *exc) -> None:
        for name in self._added:
            unregister(name)


def flags_in(stencil: Stencil) -> bool:
    """Whether the stencil reads flags a piece before it set (the artifact
    says; a clang-built or registered stencil is read here, once)."""
    if stencil.flags_in is not None:
        return stencil.flags_in
    return _flags_in(bytes(stencil.code))


@lru_cache(maxsize=None)
def _flags_in(code: bytes) -> bool:
    from .. import disasm
    return disasm.reads_flags_first(code)


def writes(stencil: Stencil) -> frozenset[str] | None:
    """The registers a stencil's code writes (None: it calls out, so any):
    what the optimizer must move a cached value out of first (--cache K)."""
    return _writes(bytes(stencil.code))


@lru_cache(maxsize=None)
def _writes(code: bytes) -> frozenset[str] | None:
    from .. import disasm      # capstone: only for a trace that keeps cached values
    return disasm.written_registers(code)
