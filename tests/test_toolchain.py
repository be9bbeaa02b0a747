"""The toolchain probes and `shimlab doctor` (fast: probe results are cached)."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil

import pytest

from shimlab import doctor, toolchain
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


@pytest.mark.skipif(shutil.which("gcc-12") is None, reason="gcc-12 not installed")
def test_gcc_has_no_preserve_none():
    gcc = toolchain.get_compiler("gcc-12")
    assert gcc.family == "gcc"
    assert gcc.supports("computed_goto")
    assert not gcc.supports("preserve_none")
    assert not gcc.supports("preserve_none_musttail")
    assert not gcc.can_build("tailcall") and gcc.can_build("goto")
    with pytest.raises(ToolchainError) as err:
        toolchain.get_compiler("gcc-12", need=toolchain.MODE_FEATURES["tailcall"])
    msg = str(err.value)
    assert "gcc-12 cannot build the tailcall interpreter" in msg
    assert "preserve_none" in msg and "apt-get install clang-19" in msg


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 not installed")
def test_clang19_has_every_feature():
    clang = toolchain.get_compiler("clang-19", need=set(toolchain.FEATURES))
    assert clang.family == "clang"
    assert clang.features == frozenset(toolchain.FEATURES)
    assert clang.modes == tuple(toolchain.MODE_FEATURES)
    for mode, need in toolchain.MODE_FEATURES.items():
        assert toolchain.default_compiler(need).name == "clang-19", mode
    assert toolchain.get_compiler(None).name == "clang-19"


def test_default_compiler_has_what_it_is_asked_for():
    for need in toolchain.MODE_FEATURES.values():
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
    seeded = toolchain.cache_path()
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(tmp_path))
    assert toolchain.cache_path() == tmp_path / "toolchain.json"
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
        for need in toolchain.MODE_FEATURES.values():
            toolchain.default_compiler(need)
    except ToolchainError:
        assert rc == 1 and "apt-get install" in lines[-1]
    else:
        assert rc == 0, text
