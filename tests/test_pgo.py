"""Profile-guided builds: training, the profile in the cache key, correct
programs from PGO builds, the harness carrying a profile, clear errors."""
from __future__ import annotations

import dataclasses

import pytest

from conftest import EXAMPLES, compiler_for, interpreter_configs
from shimlab import toolchain, vm
from shimlab.interp import build
from shimlab.interp import pgo
from shimlab.bench import harness
from shimlab.errors import BuildError, ToolchainError
from shimlab.frontend import load_program

CCS = sorted({cc for _, cc in interpreter_configs()})
SMALL = ["bf/hello.bf", "minipy/gcd_lcm.py"]
# what a profile-guided build passes its compiler, per family
PROFILE_USE = {"clang": "-fprofile-instr-use=", "gcc": "-fprofile-use="}




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
    cc = compiler_for("switch")
    a = pgo.train("switch", cc, workloads=["bf/hello.bf"])
    b = pgo.train("switch", cc, workloads=["bf/fib.bf"])
    assert a != b
    assert pgo.train("switch", cc, workloads=["bf/hello.bf"]) == a    # cached
    assert build.build("switch", cc, profile=a).key != build.build("switch", cc, profile=b).key


def test_profile_digest_follows_content(tmp_path):
    d = tmp_path / "gcda"
    (d / "x").mkdir(parents=True)
    (d / "x" / "a.gcda").write_bytes(b"1")
    first = build._profile_digest(d)
    (d / "x" / "a.gcda").write_bytes(b"2")
    assert build._profile_digest(d) != first


def test_missing_profile_is_one_clear_error(tmp_path):
    with pytest.raises(BuildError, match="no such profile"):
        build.build("goto", compiler_for("goto"), profile=tmp_path / "nope.profdata")


def test_llvm_profdata_matches_the_clang_version():
    for cc in toolchain.find_compilers():
        if cc.family == "clang":
            path = pgo.llvm_profdata(cc)
            assert f"llvm-{cc.short_version.split('.')[0]}" in path or \
                path.endswith(cc.short_version.split(".")[0])


def test_missing_llvm_profdata_says_what_to_install():
    fake = toolchain.Compiler(name="clang-98", path="/nonexistent/clang-98",
                              version="Debian clang version 98.0.1", family="clang",
                              features=frozenset())
    with pytest.raises(ToolchainError, match=r"llvm-profdata for clang-98 not found.*llvm-98"):
        pgo.llvm_profdata(fake)


def test_unknown_training_program_is_named():
    with pytest.raises(Exception, match="nope.bf: no such training program"):
        pgo.train("goto", compiler_for("goto"), workloads=["nope.bf"])


@pytest.mark.parametrize("family", sorted(PROFILE_USE))
def test_harness_config_carries_flags_profile_and_tag(tmp_path, family):
    # per family: clang's profile is one .profdata file, gcc's a directory of .gcda
    cc = compiler_for("goto", family)
    profile = pgo.train("goto", cc, workloads=SMALL)
    plain = harness.Config("t", str(EXAMPLES / "bf" / "hello.bf"), "goto", cc)
    guided = dataclasses.replace(plain, profile=str(profile), tag="pgo")
    assert plain.key == f"t/hello.bf/goto/{cc}"            # unchanged for existing files
    assert guided.key == f"t/hello.bf/goto/{cc}/pgo"
    assert "profile" not in plain.describe() and "tag" not in plain.describe()
    assert guided.describe()["profile"] == str(profile)
    out = harness.run_worker(guided.job(warmup=0, samples=2, cpu=None), timeout=120)
    assert PROFILE_USE[family] in out["flags"] and len(out["ns"]) == 2
