"""The registry of execution modes (src/shimlab/modes.py) against what it
names: C defines and sources that exist, features the toolchain probes,
exit stencils the JIT has, and no mode list anywhere else."""
from __future__ import annotations

import re

import pytest

from conftest import ROOT
from shimlab import modes, toolchain
from shimlab.errors import BuildError
from shimlab.paths import CSRC


def test_every_mode_names_things_that_exist():
    c_text = "".join(p.read_text() for p in list(CSRC.glob("*.[ch]")) +
                     list((CSRC / "generated").glob("*.[ch]")))
    for m in modes.MODES.values():
        assert m.variant in modes.VARIANTS, m.name
        assert m.features <= set(toolchain.FEATURES), m.name
        for f in m.c_sources + m.headers:
            assert (CSRC / f).is_file(), (m.name, f)
        for d in m.defines:
            name = d[2:].split("=")[0]
            assert re.search(rf"\b{name}\b", c_text), (m.name, d)
            if "=" in d:
                assert re.search(rf"#define {d.split('=')[1]}\b", c_text), (m.name, d)
        assert bool(m.jit) == bool(m.exit_stencil) == bool(m.entry), m.name
        assert m.exits_to_handler in ("all", "deopt", "none"), m.name


def test_exit_stencils_of_the_jit_modes_exist():
    pytest.importorskip("peachpy")
    from peachpy_stencils.build import load_families
    registry = load_families()
    for name in modes.JIT:
        m = modes.get(name)
        assert m.exit_stencil in registry and m.count_exit_stencil in registry, name


def test_modes_sharing_a_binary_build_the_same_thing():
    by_binary = {}
    for m in modes.MODES.values():
        by_binary.setdefault(m.build_name, []).append(m)
    for group in by_binary.values():
        assert len({(g.variant, g.defines, g.c_sources, g.features) for g in group}) == 1, \
            [g.name for g in group]


def test_an_unknown_mode_is_a_build_error_listing_the_known_ones():
    with pytest.raises(BuildError, match="unknown mode 'nope'.*jit-table"):
        modes.get("nope")


def test_no_other_module_lists_the_modes():
    """Three or more mode names spelled out in a list or tuple outside
    modes.py are a second registry in waiting (CLI choices, bench suites and
    the JIT take their lists from modes.py)."""
    names = "|".join(re.escape(n) for n in modes.NAMES)
    pattern = re.compile(rf'[(\[{{]\s*"({names})",\s*"({names})",\s*"({names})"')
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "src" / "shimlab").rglob("*.py")
                 if p.name != "modes.py" and pattern.search(p.read_text())]
    assert not offenders, offenders


def test_the_shims_are_the_modes_entered_by_a_c_call_that_the_trace_returns_to():
    """Mode.shim tells the shims apart (what the benchmarks price against the
    direct crossings); it agrees with how their traces leave: by returning."""
    shims = {m.name for m in modes.MODES.values() if m.shim}
    assert shims == {m.name for m in modes.MODES.values() if m.exit_stencil == "exit:shim"}
    assert "jit-shim" in shims and "jit-direct" not in shims
    assert not any(m.shim for m in modes.MODES.values() if not m.jit)
