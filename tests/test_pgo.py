"""Profile-guided builds: training, the profile in the cache key, correct
programs from PGO builds, the harness carrying a profile, clear errors."""
from __future__ import annotations

import dataclasses

import pytest

from conftest import EXAMPLES, interpreter_configs
from shimlab import build, pgo, toolchain, vm
from shimlab.bench import harness
from shimlab.errors import BuildError, ToolchainError
from shimlab.frontend import load_program

CCS = sorted({cc for _, cc in interpreter_configs()})
SMALL = ["bf/hello.bf", "minipy/gcd_lcm.py"]


@pytest.mark.parametrize("cc", CCS)
def test_pgo_build_runs_programs_correctly(cc):
    b = pgo.build("goto", cc, workloads=SMALL)
    assert b.profile is not None and b.path.exists()
    assert b.key != build.build("goto", cc).key
    assert any("profile" in f for f in b.command_flags)
    for name in ("bf/nested.bf", "minipy/collatz.py"):
        path = EXAMPLES / name
        expected = path.with_suffix(".out").read_bytes() if path.with_suffix(".out").exists() \
            else None
        result = vm.run(b, load_program(str(path)))
        assert result.status == 0
        if expected is not None:
            assert result.output == expected


def test_the_profile_is_part_of_the_key():
    a = pgo.train("switch", "clang-19", workloads=["bf/hello.bf"])
    b = pgo.train("switch", "clang-19", workloads=["bf/fib.bf"])
    assert a != b
    assert pgo.train("switch", "clang-19", workloads=["bf/hello.bf"]) == a    # cached
    assert build.build("switch", "clang-19", profile=a).key != \
        build.build("switch", "clang-19", profile=b).key


def test_profile_digest_follows_content(tmp_path):
    d = tmp_path / "gcda"
    (d / "x").mkdir(parents=True)
    (d / "x" / "a.gcda").write_bytes(b"1")
    first = build._profile_digest(d)
    (d / "x" / "a.gcda").write_bytes(b"2")
    assert build._profile_digest(d) != first


def test_missing_profile_is_one_clear_error(tmp_path):
    with pytest.raises(BuildError, match="no such profile"):
        build.build("goto", "clang-19", profile=tmp_path / "nope.profdata")


def test_llvm_profdata_matches_the_clang_version():
    for cc in toolchain.find_compilers():
        if cc.family == "clang":
            path = pgo.llvm_profdata(cc)
            assert f"llvm-{cc.short_version.split('.')[0]}" in path or \
                path.endswith(cc.short_version.split(".")[0])


def test_missing_llvm_profdata_says_what_to_install():
    real = toolchain.get_compiler("clang-19")
    fake = dataclasses.replace(real, name="clang-98", path="/nonexistent/clang-98",
                               version="Debian clang version 98.0.1")
    with pytest.raises(ToolchainError, match=r"llvm-profdata for clang-98 not found.*llvm-98"):
        pgo.llvm_profdata(fake)


def test_unknown_training_program_is_named():
    with pytest.raises(Exception, match="nope.bf: no such training program"):
        pgo.train("goto", "clang-19", workloads=["nope.bf"])


def test_harness_config_carries_flags_profile_and_tag(tmp_path):
    profile = pgo.train("goto", "gcc-12", workloads=SMALL)
    plain = harness.Config("t", str(EXAMPLES / "bf" / "hello.bf"), "goto", "gcc-12")
    guided = dataclasses.replace(plain, profile=str(profile), tag="pgo")
    assert plain.key == "t/hello.bf/goto/gcc-12"            # unchanged for existing files
    assert guided.key == "t/hello.bf/goto/gcc-12/pgo"
    assert "profile" not in plain.describe() and "tag" not in plain.describe()
    assert guided.describe()["profile"] == str(profile)
    out = harness.run_worker(guided.job(warmup=0, samples=2, cpu=None), timeout=120)
    assert "-fprofile-use" in out["flags"] and len(out["ns"]) == 2
