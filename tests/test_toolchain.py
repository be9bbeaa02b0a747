"""The toolchain probes and `shimlab doctor` (fast: probe results are cached)."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from shimlab import doctor, modes, toolchain
from shimlab.errors import ShimlabError, ToolchainError


@pytest.fixture
def fresh_memory():
    """Forget in-memory probe results before and after (the disk cache stays)."""
    toolchain.clear_cache()
    yield
    toolchain.clear_cache()


def test_probes_find_a_compiler():
    compilers = toolchain.find_compilers()
    assert compilers, "no C compiler found (apt-get install clang-19 gcc-12)"
    names = [cc.name for cc in compilers]
    assert len(set(names)) == len(names)
    reals = [os.path.realpath(cc.path) for cc in compilers]
    assert len(set(reals)) == len(reals), "one entry per distinct binary"
    for cc in compilers:
        assert cc.family in ("clang", "gcc")
        assert cc.version
        assert cc.features <= set(toolchain.FEATURES)
        assert cc.supports("computed_goto"), f"{cc.name}: every gcc and clang has computed goto"


def test_absent_compiler_names_the_package():
    assert shutil.which("clang-3") is None
    with pytest.raises(ToolchainError, match=r"compiler clang-3 not found \(apt-get install clang-3\)"):
        toolchain.get_compiler("clang-3")
    assert issubclass(ToolchainError, ShimlabError)


def test_unknown_feature_is_a_programming_error():
    cc = toolchain.find_compilers()[0]
    with pytest.raises(ValueError):
        cc.supports("preserve_nothing")
    with pytest.raises(ValueError):
        toolchain.get_compiler(None, need={"preserve_nothing"})


def _major(cc) -> int | None:
    m = re.match(r"\d+", cc.short_version)
    return int(m.group()) if m else None


def test_gcc_before_15_has_no_preserve_none():
    """Ground truth for the probes: preserve_none came to gcc in 15, and an
    older gcc only warns that it ignores the attribute."""
    old = [cc for cc in toolchain.find_compilers()
           if cc.family == "gcc" and (_major(cc) or 99) < 15]
    if not old:
        pytest.skip("no gcc older than 15 here")
    for gcc in old:
        assert gcc.supports("computed_goto"), gcc.name
        assert not gcc.supports("preserve_none"), gcc.name
        assert not gcc.supports("preserve_none_musttail"), gcc.name
        assert not gcc.can_build("tailcall") and gcc.can_build("goto"), gcc.name


def test_a_compiler_lacking_a_feature_is_refused_by_name():
    need = modes.get("tailcall").features
    lacking = [cc for cc in toolchain.find_compilers() if not need <= cc.features]
    if not lacking:
        pytest.skip("every compiler here builds the tailcall interpreter: none to refuse")
    for cc in lacking:
        with pytest.raises(ToolchainError) as err:
            toolchain.get_compiler(cc.name, need=need)
        msg = str(err.value)
        assert f"{cc.name} cannot build the tailcall interpreter" in msg
        for feature in need - cc.features:
            assert feature in msg, (feature, msg)
        assert f"apt-get install {toolchain.PREFERRED}" in msg


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 not installed")
def test_clang19_has_every_feature():
    clang = toolchain.get_compiler("clang-19", need=set(toolchain.FEATURES))
    assert clang.family == "clang"
    assert clang.features == frozenset(toolchain.FEATURES)
    assert clang.modes == modes.NAMES
    others = [cc for cc in toolchain.find_compilers()
              if cc.name != "clang-19" and cc.supports("computed_goto")]
    for mode in modes.MODES.values():
        # computed-goto builds avoid clang 19's merged dispatch when they can
        goto = "computed_goto" in mode.features and others
        assert (toolchain.default_compiler(mode.features).name != "clang-19") == bool(goto), \
            mode.name
    assert toolchain.get_compiler(None).name == "clang-19"


def test_default_compiler_has_what_it_is_asked_for():
    for need in (m.features for m in modes.MODES.values()):
        try:
            cc = toolchain.default_compiler(need)
        except ToolchainError as e:
            assert "apt-get install" in str(e)
        else:
            assert need <= cc.features


def test_a_warning_counts_as_unsupported(monkeypatch):
    """clang < 19 only warns about preserve_none: a warning must not pass."""
    cc = toolchain.find_compilers()[0]
    monkeypatch.setitem(toolchain.PROBES, "bogus",
                        "__attribute__((no_such_attribute_here)) long probe(long a) { return a; }\n")
    monkeypatch.setitem(toolchain.PROBES, "plain", "long probe(long a) { return a + 1; }\n")
    assert toolchain._probe_feature(cc.path, cc.family, "plain")
    assert not toolchain._probe_feature(cc.path, cc.family, "bogus")


def test_probe_cache_round_trips(tmp_path, monkeypatch, fresh_memory):
    real = toolchain.find_compilers()
    seeded = Path(toolchain.cache_path())
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(tmp_path))
    assert toolchain.cache_path() == str(tmp_path / "toolchain.json")
    if seeded.exists():                      # avoid probing everything again
        shutil.copy(seeded, tmp_path / "toolchain.json")
    toolchain.clear_cache()
    assert toolchain.find_compilers() == real
    data = json.loads((tmp_path / "toolchain.json").read_text())
    assert data["probe_version"] == toolchain._PROBE_VERSION
    entries = data["compilers"]
    victim = real[-1]
    path = os.path.realpath(victim.path)
    assert sorted(entries[path]["features"]) == sorted(victim.features)

    # The results come from the disk: a doctored entry is believed ...
    entries[path]["features"] = []
    (tmp_path / "toolchain.json").write_text(json.dumps(data))
    toolchain.clear_cache()
    assert next(cc for cc in toolchain.find_compilers() if cc.path == victim.path).features \
        == frozenset()
    # ... and the in-memory cache answers without reading it again
    (tmp_path / "toolchain.json").write_text("garbage")
    assert next(cc for cc in toolchain.find_compilers() if cc.path == victim.path).features \
        == frozenset()

    # ... until the compiler binary (mtime, size) no longer matches: then it is probed again.
    entries[path]["key"] = "0:0"
    (tmp_path / "toolchain.json").write_text(json.dumps(data))
    toolchain.clear_cache()
    assert toolchain.find_compilers() == real
    again = json.loads((tmp_path / "toolchain.json").read_text())["compilers"][path]
    assert again["key"] != "0:0" and sorted(again["features"]) == sorted(victim.features)


def test_doctor_reports(fresh_memory):
    out = io.StringIO()
    rc = doctor.run(out)
    text = out.getvalue()
    lines = text.strip().splitlines()
    for cc in toolchain.find_compilers():
        assert cc.name in text
    if importlib.util.find_spec("peachpy") is not None:
        assert "PeachPy importable from" in text
    else:
        assert doctor.PEACHPY_MISSING in text
    assert "hardware counters:" in text and "ASLR" in text and "TSC:" in text
    try:
        for need in (m.features for m in modes.MODES.values()):
            toolchain.default_compiler(need)
    except ToolchainError:
        assert rc == 1 and "apt-get install" in lines[-1]
    else:
        assert rc == 0, text
