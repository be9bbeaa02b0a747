"""Builds every stencil and writes the artifact the JIT loads.

The artifact (JSON) holds each stencil's bytes, its hole table and an
annotated disassembly, headed by a hash of everything that went into it;
it is written atomically so a crash never leaves half a file.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

from shimlab import paths
from shimlab.abi import contract
from shimlab.stencil import PLACEHOLDER, disassemble

from . import asm

FAMILIES = ("stack", "arith", "branch", "tape", "exits")   # then any other module here


def families() -> list[str]:
    """The stencil modules: the standard families, then any module a user
    adds to jitstubs/ (a prototype needs no registration beyond the file)."""
    extra = sorted(p.stem for p in Path(__file__).parent.glob("*.py")
                   if p.stem not in FAMILIES + ("__init__", "asm", "build"))
    return list(FAMILIES) + extra


def input_hash(state: dict | None = None) -> str:
    """Hash of the stencil sources, the VM layout and the register contract."""
    h = hashlib.sha256(json.dumps(state or contract.STATE, sort_keys=True).encode())
    inputs = sorted(Path(__file__).parent.glob("*.py")) + [
        paths.CSRC / "vm.h", Path(contract.__file__), paths.SRC / "shimlab" / "stencil.py",
    ] + user_modules()
    for p in inputs:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def user_modules() -> list[Path]:
    """Prototype stencil modules outside the tree: every *.py in the
    directories named by $SHIMLAB_STENCILS (separated like PATH)."""
    out = []
    for d in filter(None, os.environ.get("SHIMLAB_STENCILS", "").split(os.pathsep)):
        out += sorted(Path(d).glob("*.py"))
    return out


def _load_user_module(path: Path) -> None:
    name = f"jitstubs_user.{path.stem}"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except asm.AsmError:
        raise
    except Exception as e:       # a prototype's own error: name the file, not a traceback
        del sys.modules[name]
        raise asm.AsmError(f"{path}: {type(e).__name__}: {e}") from None


class PeachPyMissing(asm.AsmError):
    pass


def require_peachpy() -> None:
    if importlib.util.find_spec("peachpy") is None:
        raise PeachPyMissing("PeachPy is not importable: install Debian's python3-peachpy "
                             "(apt-get install python3-peachpy), then run make setup")


def load_families() -> dict:
    """The registry: every family module and user module imported once.  The
    stencil functions take the registers as an argument, so one registry
    serves every register assignment."""
    require_peachpy()
    for fam in families():
        importlib.import_module(f"jitstubs.{fam}")
    for path in user_modules():
        _load_user_module(path)
    return asm.REGISTRY


def build_all(state: dict | None = None) -> dict:
    registry = load_families()
    regs = asm.Regs.of(state)
    stencils = {}
    for name, (fn, doc) in registry.items():
        s = asm.assemble(name, fn, doc, regs)
        d = s.to_json()
        d["disassembly"] = disassemble(s.code, s.holes)
        stencils[name] = d
    return {"generated_by": "jitstubs.build -- do not edit", "hash": input_hash(state),
            "contract": dict(state or contract.STATE),
            "placeholders": {k: hex(v) for k, v in PLACEHOLDER.items()},
            "stencils": stencils}


def write(path: Path, state: dict | None = None) -> dict:
    artifact = build_all(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".stencils-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(artifact, f, indent=1)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return artifact


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else paths.cache_root() / "stencils.json"
    a = write(out)
    print(f"{len(a['stencils'])} stencils -> {out} (inputs {a['hash']})")
