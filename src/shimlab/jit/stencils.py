"""Loads the stencil artifact that jitstubs/build.py writes, rebuilding it
when any of its inputs changed (the artifact is headed by their hash).

A prototype can also be registered at run time (register, extra_stencils):
it lives in this process and the children forked from it, never in the
artifact or the source tree, and the JIT and `stenciltest` find it by name
like a built stencil.  This is how a notebook tries a stencil out."""
from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import jitstubs.build

from .. import isa
from ..abi import contract
from ..paths import cache_root
from ..stencil import PLACEHOLDER, Stencil, StencilError, disassemble
from . import cstencils


def artifact_path(state: dict | None = None) -> Path:
    k = contract.key(state or contract.STATE)
    return cache_root() / (f"stencils-{k}.json" if k else "stencils.json")


SOURCES = ("peachpy", "clang")


def load(state: dict | None = None, source: str = "peachpy", cc: str | None = None) -> dict:
    """name -> shimlab.stencil.Stencil (with .disassembly), current with its
    sources, written against the register assignment `state` (default: the
    static contract; contract.state_of(cc) for a compiler's own).  With
    source "clang" the instruction stencils are compiled from C by `cc`
    (jit/cstencils.py) and the exits and counters stay PeachPy's."""
    peachpy = _load(tuple((state or contract.STATE).items()))
    if _extra:
        peachpy = {**peachpy, **_extra}
    if source == "peachpy":
        return peachpy
    if source != "clang":
        raise StencilError(f"unknown stencil source {source!r} (choose from {', '.join(SOURCES)})")
    return {**peachpy, **cstencils.load(cc)}


# Stencils registered at run time, by name (see register).
_extra: dict = {}


@lru_cache(maxsize=None)
def _load(items: tuple) -> dict:
    state = dict(items)
    build = jitstubs.build
    build.require_peachpy()
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
        except StencilError as e:
            raise StencilError(f"stencil build failed: {e}") from None
    return {name: Stencil.from_json(d) for name, d in data["stencils"].items()}


load.cache_clear = _load.cache_clear      # forget loaded artifacts (tests, a changed build dir)


def placeholders() -> dict[str, int]:
    return dict(PLACEHOLDER)


def register(stencil):
    """Adds an assembled stencil (jitstubs.asm.assemble checked its holes) for
    this process and children forked from it; returns it, disassembled.

    Its name is INSTRUCTION:variant, as for a built variant, so that
    `stenciltest` knows what to hold it to and `jit={"stencils": {...}}` can
    put it in place of the standard one.  A name the artifact has is refused:
    a prototype never silently replaces a built stencil.  Registering a name
    again replaces the earlier prototype (a notebook cell run twice)."""
    if not isinstance(stencil, Stencil):
        raise StencilError(f"register wants a shimlab.stencil.Stencil (from jitstubs.asm.assemble), "
                           f"not {type(stencil).__name__}")
    base, _, variant = stencil.name.partition(":")
    if base not in isa.BY_NAME or not variant:
        raise StencilError(f"stencil {stencil.name!r}: name it INSTRUCTION:variant "
                           f"(e.g. DUP:mine) after the VM instruction it implements")
    if stencil.name in _load(tuple(contract.STATE.items())):
        raise StencilError(f"stencil {stencil.name} is built from jitstubs/ already: register "
                           f"the prototype under another variant name")
    if not stencil.disassembly:
        stencil = dataclasses.replace(stencil,
                                      disassembly=disassemble(stencil.code, stencil.holes))
    _extra[stencil.name] = stencil
    return stencil


def unregister(name: str) -> None:
    _extra.pop(name, None)


@contextmanager
def extra_stencils(stencils):
    """register() each stencil (a dict name -> Stencil, or an iterable of
    them) for the duration of the with block; yields name -> Stencil."""
    if isinstance(stencils, dict):
        for name, s in stencils.items():
            if getattr(s, "name", name) != name:
                raise StencilError(f"extra_stencils: key {name!r} names stencil {s.name!r}")
    items = list(stencils.values()) if isinstance(stencils, dict) else list(stencils)
    added = {}
    try:
        for s in items:
            s = register(s)
            added[s.name] = s
        yield added
    finally:
        for name in added:
            unregister(name)
