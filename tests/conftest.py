"""Shared fixtures: which (mode, compiler) interpreters this machine can build."""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

from shimlab import modes

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@functools.lru_cache(maxsize=None)
def interpreter_configs() -> list[tuple[str, str]]:
    """Every (mode, compiler) pair the toolchain can build here.

    The one list every differential test iterates: a new execution mode
    joins the tests by joining this list."""
    from shimlab import sanitize, toolchain
    from shimlab.interp import build
    compilers = toolchain.find_compilers()
    if build.sanitize_requested():
        # sanitizer builds load only next to their own compiler's runtime
        compilers = sanitize.usable_compilers(compilers)
        if not compilers:
            raise RuntimeError("SHIMLAB_SANITIZE is set but no sanitizer runtime is preloaded: "
                               "run through `python -m shimlab.sanitize --cc CC --`")
    configs = []
    for cc in compilers:
        for mode in modes.INTERPRETERS:
            if cc.features >= set(modes.get(mode).features):
                configs.append((mode, cc.name))
    return configs


@functools.lru_cache(maxsize=None)
def execution_configs() -> list[tuple[str, str]]:
    """interpreter_configs() and the JIT modes on every compiler that builds
    them: what the differential tests hold to the oracle."""
    from shimlab import toolchain
    ccs = dict.fromkeys(cc for _, cc in interpreter_configs())
    jit = [(mode, cc) for cc in ccs for mode in modes.JIT
           if toolchain.get_compiler(cc).features >= set(modes.get(mode).features)]
    return interpreter_configs() + jit


@functools.lru_cache(maxsize=None)
def get_build(mode: str, cc: str, count: bool = False, cache: int = 0):
    from shimlab.interp import build
    return build.build(mode, cc, count=count, cache=cache)


def pytest_generate_tests(metafunc):
    if "interp" in metafunc.fixturenames:
        configs = interpreter_configs()
        metafunc.parametrize("interp", configs, ids=[f"{m}-{c}" for m, c in configs])


@pytest.fixture
def run_all():
    """run_all(program, input) -> {(mode, cc): Result} over every interpreter."""
    from shimlab import vm

    def go(program, data=b""):
        return {cfg: vm.run(get_build(*cfg, count=True), program, data)
                for cfg in interpreter_configs()}
    return go


def compiler_for(mode: str, family: str | None = None) -> str:
    """The compiler the CLI would pick for `mode` if the tests may use it (and it
    is of `family`), else another here that builds it; skips the test when none
    can.  Tests name no compiler of their own, so they run on any machine."""
    from shimlab import toolchain
    from shimlab.errors import ToolchainError
    usable = [cc for m, cc in execution_configs() if m == mode
              and (family is None or toolchain.get_compiler(cc).family == family)]
    if not usable:
        pytest.skip(f"no {family or 'C'} compiler here builds the {mode} mode")
    try:
        default = toolchain.get_compiler(None, need=modes.get(mode).features).name
    except ToolchainError:
        return usable[0]
    return default if default in usable else usable[0]
