"""Builds the stencils: the standard families into the artifact the JIT
loads, and each prototype module (peachpy_stencils/'s other files, $SHIMLAB_STENCILS)
on its own, so that a broken prototype fails only the runs that select it.

The artifact (JSON) holds each stencil's bytes, its hole table and an
annotated disassembly, headed by a hash of everything that went into it;
it is written atomically so a crash never leaves half a file.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys
import types

from shimlab import paths
from shimlab.atomicfile import write_atomic
from shimlab.abi import contract
from shimlab.digest import sha256
from shimlab.stencil import PLACEHOLDER, AsmError, disassemble

# The assembler (and with it PeachPy, dataclasses, typing), capstone and
# traceback are imported by the functions that build: a JIT run whose
# artifact is current only hashes the inputs and lists the prototypes.  So
# is pathlib (~6 ms of a JIT run's start on Zen 3): the paths here are strings.

# this folder, as one path however the package was imported (src/peachpy_stencils
# links here): the stamps of input_files() name it
HERE = os.path.dirname(os.path.realpath(__file__))

FAMILIES = ("stack", "arith", "branch", "tape", "idioms", "opt", "fused", "exits", "trampoline",
            "cache", "frames")
_NOT_STENCILS = ("__init__", "asm", "build")


class PeachPyMissing(AsmError):
    pass


class PrototypeError(AsmError):
    """A prototype module that did not load: one line, file and line first."""


def families() -> list[str]:
    """The standard stencil modules, which the artifact is built from."""
    return list(FAMILIES)


def input_files() -> list[str]:
    """The files the standard stencils are made from (besides the state)."""
    return sorted(os.path.join(HERE, f"{m}.py") for m in FAMILIES + _NOT_STENCILS) + [
        os.path.join(paths.CSRC_DIR, "vm.h"), os.path.realpath(contract.__file__),
        os.path.join(paths.SRC_DIR, "shimlab", "stencil.py"),
    ]


def input_hash(state: dict | None = None) -> str:
    """Hash of the standard stencils' sources, the VM layout and the register contract."""
    h = sha256(json.dumps(state or contract.STATE, sort_keys=True).encode())
    for p in input_files():
        with open(p, "rb") as f:
            h.update(os.path.basename(p).encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()[:16]


def prototype_modules() -> list[str]:
    """Prototype stencil modules: any other *.py in peachpy_stencils/, then every *.py
    in the directories $SHIMLAB_STENCILS names (separated like PATH; a file
    there counts as itself).  A name that is neither is kept, so that loading
    it says what is wrong with it."""
    out = [p for p in _python_files(HERE)
           if os.path.basename(p)[:-3] not in FAMILIES + _NOT_STENCILS]
    for d in filter(None, os.environ.get("SHIMLAB_STENCILS", "").split(os.pathsep)):
        d = os.path.expanduser(d)
        out += _python_files(d) if os.path.isdir(d) else [d]
    return out


def _python_files(folder: str) -> list[str]:
    """The *.py files of `folder`, sorted (as Path.glob("*.py") would find them)."""
    with os.scandir(folder) as entries:
        return sorted(e.path for e in entries if e.name.endswith(".py"))


def require_peachpy() -> None:
    import importlib.util
    if importlib.util.find_spec("peachpy") is None:
        raise PeachPyMissing("PeachPy is not importable: install Debian's python3-peachpy "
                             "(apt-get install python3-peachpy), then run make setup")


def load_families() -> dict:
    """The standard stencils, name -> (fn, doc): every family module imported
    once.  The stencil functions take the registers as an argument, so one
    registry serves every register assignment.  Prototypes are not in it."""
    require_peachpy()
    from . import asm
    mods = {f"peachpy_stencils.{fam}" for fam in FAMILIES}
    for fam in FAMILIES:
        importlib.import_module(f"peachpy_stencils.{fam}")
    return {name: entry for name, entry in asm.REGISTRY.items() if entry[0].__module__ in mods}


# -- prototypes: each module loaded on its own, so a broken one fails alone ------

_loaded: dict[Path, tuple[str, dict]] = {}     # path -> (hash of its source, its registry)


def _where(path: Path, e: BaseException, fallback: int | None = None) -> str:
    """path:line of the innermost frame of `e` in `path` (a SyntaxError's own line)."""
    import traceback
    line = e.lineno if isinstance(e, SyntaxError) and e.filename == str(path) else None
    chain = []
    while e is not None and len(chain) < 8:       # an error re-raised `from None` too
        chain.append(e)
        e = e.__cause__ or e.__context__
    for err in reversed(chain):
        for frame in traceback.extract_tb(err.__traceback__):
            if frame.filename == str(path):
                line = frame.lineno
    line = line or fallback
    return f"{path}:{line}" if line else str(path)


def _describe(e: BaseException) -> str:
    if isinstance(e, SyntaxError):
        return f"SyntaxError: {e.msg}"
    text = " ".join(str(e).split())      # one line, whatever the message
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def declared_names(path: str | os.PathLike) -> list[str]:
    """The stencil names a module's decorators spell out, read from its text
    (so a module that does not even import still says what it would define)."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    return re.findall(r"@\s*(?:\w+\.)*stencil\(\s*[\"']([^\"']+)[\"']", text)


def load_prototype(path: Path) -> dict:
    """The stencils one prototype module registers, name -> (fn, doc).

    The module runs as peachpy_stencils.<something> (so `from .asm import stencil`
    works as in peachpy_stencils/ itself, and so does `from peachpy_stencils.asm import ...`)
    against a registry of its own: its names never collide with another
    module's at import, and a module that fails leaves nothing behind.
    Loaded again only when its source changed (a notebook editing it)."""
    from pathlib import Path
    path = Path(path)
    try:
        source = path.read_bytes()
    except OSError as e:
        what = "is not a directory or a .py file" if not path.exists() else \
            f"cannot be read: {e.strerror}"
        raise PrototypeError(f"{path} (from $SHIMLAB_STENCILS) {what}") from None
    digest = sha256(source).hexdigest()[:16]
    if path in _loaded and _loaded[path][0] == digest:
        return _loaded[path][1]
    require_peachpy()
    from . import asm
    here = Path(HERE)
    name = f"peachpy_stencils.{path.stem}" if path.parent == here else \
        f"peachpy_stencils._prototype_{sha256(str(path).encode()).hexdigest()[:8]}_{path.stem}"
    module = types.ModuleType(name)
    module.__file__, module.__package__ = str(path), "peachpy_stencils"
    own: dict = {}
    saved, asm.REGISTRY = asm.REGISTRY, own     # @stencil registers into asm.REGISTRY
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    except (Exception, SystemExit) as e:     # its own error: file and line, no traceback
        del sys.modules[name]
        raise PrototypeError(f"{_where(path, e)}: {_describe(e)}") from None
    finally:
        asm.REGISTRY = saved
    _loaded[path] = (digest, own)
    return own


def prototype_hash(path: Path, state: dict | None = None) -> str:
    """What a prototype module's stencils depend on: its source and the standard inputs."""
    with open(path, "rb") as f:
        return sha256(f.read() + input_hash(state).encode()).hexdigest()[:16]


def build_prototypes(path: Path, state: dict | None = None) -> dict:
    """{"hash", "stencils": name -> stencil JSON, "errors": name -> one line}
    for one prototype module; PrototypeError when the module does not load.
    A stencil that does not assemble is an error of that stencil only."""
    from . import asm
    registry = load_prototype(path)
    regs = asm.Regs.of(state)
    stencils, errors = {}, {}
    for name, (fn, doc) in registry.items():
        line = fn.__code__.co_firstlineno
        try:
            s = asm.assemble(name, fn, doc, regs)
        except asm.AsmError as e:     # raised after the body ran: the stencil's own line
            errors[name] = f"{_where(path, e, line)}: {e}"
            continue
        except Exception as e:
            errors[name] = f"{_where(path, e, line)}: stencil {name}: {_describe(e)}"
            continue
        d = _described(s)
        d["line"] = line
        stencils[name] = d
    return {"hash": prototype_hash(path, state), "module": str(path), "stencils": stencils,
            "errors": errors}


def _described(s) -> dict:
    """A stencil's JSON with what is read off its code once, at build time."""
    from shimlab import disasm
    d = s.to_json()
    d["disassembly"] = disassemble(s.code, s.holes)
    d["flags_in"] = disasm.reads_flags_first(s.code)
    return d


def build_all(state: dict | None = None) -> dict:
    from . import asm
    registry = load_families()
    regs = asm.Regs.of(state)
    stencils = {}
    for name, (fn, doc) in registry.items():
        s = asm.assemble(name, fn, doc, regs)
        d = _described(s)
        stencils[name] = d
    return {"generated_by": "peachpy_stencils.build -- do not edit", "hash": input_hash(state),
            "contract": dict(state or contract.STATE),
            "placeholders": {k: hex(v) for k, v in PLACEHOLDER.items()},
            "stencils": stencils}


def write(path: Path, state: dict | None = None) -> dict:
    artifact = build_all(state)
    write_json(path, artifact)
    return artifact


def write_json(path: Path, data: dict) -> None:
    """Atomically: a reader sees the old file or the new one, never half of one."""
    write_atomic(path, json.dumps(data, indent=1))


if __name__ == "__main__":
    from pathlib import Path
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else paths.build_root() / "stencils.json"
    a = write(out)
    print(f"{len(a['stencils'])} stencils -> {out} (inputs {a['hash']})")
