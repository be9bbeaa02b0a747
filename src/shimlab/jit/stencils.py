"""Loads the stencil artifact that jitstubs/build.py writes, rebuilding it
when any of its inputs changed (the artifact is headed by their hash)."""
from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

from .. import contract
from ..build import ROOT, cache_root
from ..errors import ShimlabError


class StencilError(ShimlabError):
    pass


def _jitstubs():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        import peachpy  # noqa: F401
    except ImportError:
        raise StencilError("PeachPy is not importable: install Debian's python3-peachpy "
                           "(apt-get install python3-peachpy), then run make setup") from None
    import jitstubs.build
    return jitstubs.build


def artifact_path(state: dict | None = None) -> Path:
    k = contract.key(state or contract.STATE)
    return cache_root() / (f"stencils-{k}.json" if k else "stencils.json")


SOURCES = ("peachpy", "clang")


def load(state: dict | None = None, source: str = "peachpy", cc: str | None = None) -> dict:
    """name -> jitstubs.asm.Stencil (with .disassembly), current with its
    sources, written against the register assignment `state` (default: the
    static contract; contract.state_of(cc) for a compiler's own).  With
    source "clang" the instruction stencils are compiled from C by `cc`
    (jit/cstencils.py) and the exits and counters stay PeachPy's."""
    peachpy = _load(tuple((state or contract.STATE).items()))
    if source == "peachpy":
        return peachpy
    if source != "clang":
        raise StencilError(f"unknown stencil source {source!r} (choose from {', '.join(SOURCES)})")
    from . import cstencils
    return {**peachpy, **cstencils.load(cc)}


@lru_cache(maxsize=None)
def _load(items: tuple) -> dict:
    state = dict(items)
    build = _jitstubs()
    from jitstubs.asm import AsmError, Stencil
    path = artifact_path(state)
    want = build.input_hash(state)
    data = None
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = None
    if not isinstance(data, dict) or data.get("hash") != want:
        try:
            data = build.write(path, state)
        except AsmError as e:
            raise StencilError(f"stencil build failed: {e}") from None
    return {name: Stencil.from_json(d) for name, d in data["stencils"].items()}


load.cache_clear = _load.cache_clear      # forget loaded artifacts (tests, a changed build dir)


def placeholders() -> dict[str, int]:
    _jitstubs()
    from jitstubs.asm import PLACEHOLDER
    return dict(PLACEHOLDER)


def hole_widths() -> dict[str, int]:
    _jitstubs()
    from jitstubs.asm import HOLE_WIDTH
    return dict(HOLE_WIDTH)
