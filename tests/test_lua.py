"""shimlab lua (issue 27): the sources by pinned hash, the builds, the
baseline check on them and the timing driver; one line for each failure.

The fast tests build one Lua 5.4 interpreter pair (cached in build/ after the
first run) or skip with one line when lupa's sdist cannot be reached; the
builds of every compiler and the benchmarks are the slow tests."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from shimlab import toolchain
from shimlab.errors import BuildError, RunError
from shimlab import dispatch_sites
from shimlab.bench.results import ResultFile, RunSamples
from shimlab.lua import baseline, bench, exits, oracles, runner, source
from shimlab.lua import build as lua_build



def _shimlab(*argv, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *argv], capture_output=True,
                          text=True, timeout=600, env=env)


def _one_line(p: subprocess.CompletedProcess, needle: str) -> str:
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], p.stderr
    return lines[0]


@pytest.fixture(scope="module")
def sources():
    try:
        return source.fetch()
    except source.Unreachable as e:
        pytest.skip(f"lupa's sdist cannot be reached: {e}")


@pytest.fixture(scope="module")
def goto_compiler():
    """A compiler whose computed goto the lab trusts (not clang 19), as for its own builds."""
    return toolchain.default_compiler({"computed_goto"}).name


@pytest.fixture(scope="module")
def pair(sources, goto_compiler):
    return {d: lua_build.build("lua54", d, goto_compiler) for d in lua_build.DISPATCH}


# -- the sources ----------------------------------------------------------------------

def _fake_sdist(path, payload=b"not lua"):
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("lupa-2.8/third-party/lua54/lua.h")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return path


def test_a_wrong_hash_is_one_line_and_nothing_is_unpacked(tmp_path):
    env = {**subprocess.os.environ, "SHIMLAB_BUILD_DIR": str(tmp_path / "cache"),
           "SHIMLAB_LUPA_SDIST": str(_fake_sdist(tmp_path / "lupa-2.8.tar.gz"))}
    line = _one_line(_shimlab("lua", "fetch", env=env), "sha256")
    assert source.SHA256 in line and "not used" in line
    assert not (tmp_path / "cache" / "lua" / "src").exists()


def test_no_network_is_one_line_naming_the_way_around(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(tmp_path))
    monkeypatch.delenv("SHIMLAB_LUPA_SDIST", raising=False)
    monkeypatch.setattr(source, "INDEX", "http://127.0.0.1:9/simple")   # nothing listens
    monkeypatch.setattr(source, "TIMEOUT", 5.0)
    with pytest.raises(source.Unreachable) as e:
        source.fetch()
    assert "\n" not in str(e.value) and "SHIMLAB_LUPA_SDIST" in str(e.value)


@pytest.mark.parametrize("with_filter", [True, False])
def test_unpacking_takes_files_and_refuses_links_and_escapes(tmp_path, monkeypatch, with_filter):
    """Both ways of unpacking: tarfile's "data" filter (3.11.4+) and the checks
    made in its place before it (Debian 12's 3.11.2)."""
    if not with_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip(f"this Python's tarfile has no data filter ({sys.version.split()[0]})")

    def unpack(name, *extra):
        path = tmp_path / f"{name}.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            info = tarfile.TarInfo("top/a/file.h")
            info.size = 2
            tar.addfile(info, io.BytesIO(b"ok"))
            for member in extra:
                tar.addfile(member)
        with tarfile.open(path) as tar:
            source._extract(tar, tar.getmembers(), tmp_path / name)

    unpack("plain")
    assert (tmp_path / "plain" / "top" / "a" / "file.h").read_bytes() == b"ok"
    link = tarfile.TarInfo("top/a/link")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    for name, bad in (("link", link), ("escape", tarfile.TarInfo("top/../../escape"))):
        with pytest.raises(tarfile.TarError):
            unpack(name, bad)
    assert not (tmp_path / "escape").exists() and not (tmp_path.parent / "escape").exists()


def test_the_sources_are_the_pinned_ones(sources):
    archive = subprocess.os.environ.get("SHIMLAB_LUPA_SDIST") or source.sdist_path()
    assert source.sha256_file(archive) == source.SHA256
    for flavour in source.FLAVOURS:
        assert (sources / flavour).is_dir()
    assert (sources / "lua54" / "ljumptab.h").is_file()
    assert (sources / "luajit21" / "src" / "vm_x64.dasc").is_file()
    assert not list(sources.rglob(".git"))
    assert baseline.opcodes("lua54") == 83


# -- builds and their failures ------------------------------------------------------------

def test_a_missing_compiler_is_one_line():
    _one_line(_shimlab("lua", "build", "--flavour", "lua54", "--cc", "gcc-99"),
              "compiler gcc-99 not found (apt-get install gcc-99)")


def test_a_failing_build_step_names_the_logs_last_lines(tmp_path):
    cmd = ["sh", "-c", "echo compiling; echo 'lvm.c:1: error: first' >&2; "
                       "echo 'lvm.c:2: error: the last one' >&2; exit 2"]
    with pytest.raises(BuildError) as e:
        lua_build._run(cmd, tmp_path, tmp_path / "x.log", "lua54-goto-cc", "cc")
    text = str(e.value)
    assert "\n" not in text and "exit status 2" in text and "the last one" in text
    assert str(tmp_path / "x.log") in text and "error: first" in (tmp_path / "x.log").read_text()


def test_a_compiler_that_fails_is_one_line_with_the_log_tail(sources, tmp_path):
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'gcc (fake) 12.0'; "
                    "exit 0; fi\necho 'fake.c:1:1: error: this compiler builds nothing' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    cache = tmp_path / "cache"
    cache.mkdir()
    if os.path.isfile(toolchain.cache_path()):   # the real compilers' probes, not made again
        shutil.copy(toolchain.cache_path(), cache / "toolchain.json")
    env = {**subprocess.os.environ, "SHIMLAB_BUILD_DIR": str(cache),
           "SHIMLAB_LUPA_SDIST": subprocess.os.environ.get("SHIMLAB_LUPA_SDIST")
           or str(source.sdist_path())}
    line = _one_line(_shimlab("lua", "build", "--flavour", "lua54", "--cc", str(fake), env=env),
                     "this compiler builds nothing")
    assert "failed to build lua54-goto-" in line and "log:" in line


def test_a_build_is_cached_by_content(pair, goto_compiler):
    again = lua_build.build("lua54", "goto", goto_compiler)
    assert again.path == pair["goto"].path and again.key == pair["goto"].key
    assert pair["goto"].key != pair["switch"].key
    out = subprocess.run([str(again.path), "-v"], capture_output=True, text=True)
    assert out.stdout.startswith("Lua 5.4")


# -- the baseline check --------------------------------------------------------------------

def test_dispatch_sites_reads_a_named_function_of_any_elf(tmp_path):
    src = tmp_path / "t.c"
    src.write_text("int pick(int op, int x) { switch (op) { case 0: return x + 1; "
                   "case 1: return x * 3; case 2: return x - 7; case 3: return x ^ 5; "
                   "case 4: return x << 2; case 5: return ~x; default: return 0; } }\n"
                   "int main(int c, char **v) { (void)v; return pick(c, c); }\n")
    cc = toolchain.default_compiler()
    subprocess.run([cc.path, "-O2", "-fno-inline", str(src), "-o", str(tmp_path / "t")],
                   check=True)
    sites = baseline.dispatch_sites(tmp_path / "t", ["pick", "no_such_function"])
    assert list(sites) == ["pick"]
    insns, size, jumps = sites["pick"]
    assert insns > 0 and size > 0
    assert jumps in (0, 1)     # a jump table, or compares


def test_the_merged_rule_is_the_one_of_dis_native_and_the_census():
    # a Lua goto build's jumps stand for its handlers with their own jump
    assert dispatch_sites.merged(1, 1, 83)
    assert dispatch_sites.merged(8, 8, 83) and not dispatch_sites.merged(9, 9, 83)
    assert not dispatch_sites.merged(35, 35, 83)
    assert dispatch_sites.merged(40, 3, 83)


def test_the_census_of_a_build_counts_luaV_executes_indirect_jumps(pair):
    from shimlab import disasm
    for dispatch, b in pair.items():
        c = baseline.census(b)
        parts = [n for n in disasm.functions(b.path)
                 if n == "luaV_execute" or n.startswith("luaV_execute.")]
        funcs = disasm.function_code(b.path, parts)
        assert c.jumps == sum(i.indirect_jump for n in parts for i in funcs[n]) >= 1
        assert c.opcodes == 83 and c.merged == (dispatch == "goto" and
                                                 dispatch_sites.merged(c.jumps, c.jumps, 83))
        assert b.name in c.line() and c.verdict in c.line()


# -- timing ----------------------------------------------------------------------------------

def test_every_program_has_its_expected_outputs():
    for name, sizes in bench.PROGRAMS.items():
        assert runner.program_path(name).is_file(), name
        for args in sizes:
            assert runner.expected_path(name, args).is_file(), (name, args)
    for m in exits.SIZES["tiny"]["ms"]:
        assert runner.program_path("exits").is_file() and m >= 0


def test_a_wrong_output_fails_the_configuration(pair, tmp_path, monkeypatch):
    wrong = tmp_path / "expected"
    (wrong).mkdir()
    (wrong / "fib.15.out").write_text("fib(15) = 611\n")
    monkeypatch.setattr(runner, "expected_path", lambda n, a: wrong / "fib.15.out")
    c = runner.LuaConfig(pair["goto"], "fib", ("15",))
    with pytest.raises(RunError) as e:
        runner.run_worker(c, 0, 0, 1, 60)
    assert "wrong output" in str(e.value) and "\n" not in str(e.value)


def test_a_worker_times_every_run_and_checks_it(pair):
    c = runner.LuaConfig(pair["switch"], "strings", ("200",))
    out = runner.run_worker(c, 0, 1, 3, 60)
    assert len(out["cycles"]) == len(out["ns"]) == 3 and len(out["warmup_ns"]) == 1
    assert all(v > 0 for v in out["cycles"]) and out["hz"] > 1e8
    # cycles and nanoseconds tell the same time within a run (constant TSC)
    for cyc, ns in zip(out["cycles"], out["ns"]):
        assert 0.5 < cyc / (ns * out["hz"] / 1e9) < 2.0


@pytest.mark.parametrize("program, args", [("exits", ("8", "3")), ("exits", ("32", "2")),
                                           ("exits", ("0", "1")), ("interp", ("16", "50"))])
def test_the_oracles_say_what_the_sized_programs_print(pair, program, args):
    out = subprocess.run([str(pair["switch"].path), str(runner.program_path(program)), *args],
                         capture_output=True, text=True, check=True)
    assert out.stdout == oracles.ORACLES[program](*args)


def test_the_exit_check_takes_m_times_blocks_more_exits_and_nothing_else():
    exits.check_exits({0: 36, 4: 4036, 8: 8037}, 1000)
    with pytest.raises(RunError) as e:
        exits.check_exits({0: 36, 4: 4036, 8: 16036}, 1000)     # an exit per taken branch twice
    assert "m=8" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(RunError):
        exits.check_exits({0: 1280036, 8: 1288036}, 1000)       # every iteration leaves already


def test_cpu_times_round_trip_through_a_results_file(tmp_path):
    rf = ResultFile(tmp_path / "r.json")
    rf.add("lua/x/y", {"workload": "x"}, [RunSamples(cycles=[2600, 5200], ns=[1000, 2000],
                                                      cpu_ns=[500, 2000])])
    rf.save()
    back = ResultFile.load(tmp_path / "r.json").get("lua/x/y")
    assert back.runs[0].cpu_ns == [500, 2000]
    assert back.cpu_cycles_groups() == [[1300.0, 5200.0]]      # at that run's own TSC rate
    with pytest.raises(ValueError):
        rf.add("lua/x/z", {"workload": "x"}, [RunSamples(cycles=[1], ns=[1], cpu_ns=[1, 2])])


def test_bench_tiny_on_one_pair_is_well_formed(pair, goto_compiler, tmp_path):
    out = tmp_path / "lua.json"
    p = _shimlab("lua", "bench", "--size", "tiny", "--flavour", "lua54", "--cc", goto_compiler,
                 "--program", "fib", "--program", "queens", "--cpu", "0", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "goto against switch" in p.stdout and "CPU: " in p.stdout
    summary = json.loads(out.with_name("lua-summary.json").read_text())
    assert summary["programs"] == ["fib", "queens"]
    assert {c["build"] for c in summary["census"].values()} == \
        {f"lua54-{d}-{goto_compiler}" for d in lua_build.DISPATCH}
    (g,) = summary["goto_vs_switch"]
    assert g["geomean"]["ci95"][0] <= g["geomean"]["value"] <= g["geomean"]["ci95"][1]
    again = _shimlab("lua", "report", str(out), "--clock", "cpu")
    assert again.returncode == 0, again.stderr
    assert "CPU time" in again.stdout and "goto against switch" in again.stdout
    _one_line(_shimlab("lua", "report", str(tmp_path / "none.json")), "no such results file")


# -- the slow ones: every build, the benchmarks -------------------------------------------------

@pytest.mark.slow
def test_every_build_and_its_census(sources):
    for flavour, dispatch, cc in lua_build.targets():
        if toolchain.find_program(cc) is None:
            continue
        b = lua_build.build(flavour, dispatch, cc)
        c = baseline.census(b)
        assert c.jumps >= 1, c
        if b.is_luajit:
            assert c.opcodes > 90 and c.with_own >= c.opcodes // 2, c


@pytest.mark.slow
def test_bench_tiny_on_every_build(sources, tmp_path):
    p = _shimlab("lua", "bench", "--size", "tiny", "-o", str(tmp_path / "lua.json"))
    assert p.returncode == 0, p.stderr
    assert "LuaJIT against the best compiled Lua" in p.stdout


@pytest.mark.slow
def test_exits_tiny_beside_shimlabs_sweep(sources, tmp_path):
    p = _shimlab("lua", "exits", "--size", "tiny", "-o", str(tmp_path / "exits.json"))
    assert p.returncode == 0, p.stderr
    assert "shimlab jit-direct" in p.stdout and "LuaJIT, exit not linked" in p.stdout
    summary = json.loads((tmp_path / "exits-summary.json").read_text())
    assert summary["nolink"]["slope"]["value"] > 0
