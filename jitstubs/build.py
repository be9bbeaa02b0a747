"""Builds every stencil and writes the artifact the JIT loads.

The artifact (JSON) holds each stencil's bytes, its hole table and an
annotated disassembly, headed by a hash of everything that went into it;
it is written atomically so a crash never leaves half a file.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

from . import asm

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("stack", "arith", "branch", "tape", "exits")   # then any other module here


def families() -> list[str]:
    """The stencil modules: the standard families, then any module a user
    adds to jitstubs/ (a prototype needs no registration beyond the file)."""
    extra = sorted(p.stem for p in Path(__file__).parent.glob("*.py")
                   if p.stem not in FAMILIES + ("__init__", "asm", "build"))
    return list(FAMILIES) + extra


def input_hash(state: dict | None = None) -> str:
    """Hash of the stencil sources, the VM layout and the register contract."""
    from shimlab import contract
    h = hashlib.sha256(json.dumps(state or contract.STATE, sort_keys=True).encode())
    paths = sorted(Path(__file__).parent.glob("*.py")) + [
        ROOT / "csrc" / "vm.h", ROOT / "src" / "shimlab" / "contract.py"] + user_modules()
    for p in paths:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def user_modules() -> list[Path]:
    """Prototype stencil modules outside the tree: every *.py in the
    directories named by $SHIMLAB_STENCILS (separated like PATH)."""
    out = []
    for d in filter(None, os.environ.get("SHIMLAB_STENCILS", "").split(os.pathsep)):
        out += sorted(Path(d).glob("*.py"))
    return out


def _load_user_module(path: Path, reload: bool) -> None:
    import importlib.util
    import sys
    name = f"jitstubs_user.{path.stem}"
    if name in sys.modules and not reload:
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


def load_families(state: dict | None = None) -> dict:
    """The registry, its stencils written against `state` (default: the
    static contract).  The family modules bind the contract registers when
    imported, so a different assignment re-imports them."""
    import importlib
    import sys
    from shimlab import contract
    changed = asm.use_contract(state or contract.STATE)
    if changed:
        asm.REGISTRY.clear()
    for fam in families():
        name = f"jitstubs.{fam}"
        if changed and name in sys.modules:
            importlib.reload(sys.modules[name])
        else:
            importlib.import_module(name)
    for path in user_modules():
        _load_user_module(path, reload=changed)
    return asm.REGISTRY


def disassemble(code: bytes, holes=()) -> str:
    """objdump's listing of raw stencil bytes, hole bytes marked."""
    if not code:
        return "    (empty: emits no code)\n"
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(code)
        f.flush()
        out = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                              "-M", "intel", "--insn-width=12", f.name], capture_output=True, text=True)
    if out.returncode != 0:
        return f"    (objdump failed: {out.stderr.strip()})\n"
    lines = []
    for line in out.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not parts[0].strip().rstrip(":").strip():
            continue
        try:
            start = int(parts[0].strip().rstrip(":"), 16)
        except ValueError:
            continue
        size = len(parts[1].split())
        text = parts[2] if len(parts) > 2 else ""
        marks = [f"{h.kind}@{h.offset}" for h in holes if start <= h.offset < start + size]
        lines.append(f"    {start:4x}: {parts[1].strip():<32} {text.strip()}"
                     + (f"    <- hole {', '.join(marks)}" if marks else ""))
    return "\n".join(lines) + "\n"


def build_all(state: dict | None = None) -> dict:
    registry = load_families(state)
    stencils = {}
    for name, (fn, doc) in registry.items():
        s = asm.assemble(name, fn, doc)
        d = s.to_json()
        d["disassembly"] = disassemble(s.code, s.holes)
        stencils[name] = d
    return {"generated_by": "jitstubs.build -- do not edit", "hash": input_hash(state),
            "contract": asm.STATE,
            "placeholders": {k: hex(v) for k, v in asm.PLACEHOLDER.items()},
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
    import sys
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "stencils.json"
    a = write(out)
    print(f"{len(a['stencils'])} stencils -> {out} (inputs {a['hash']})")
