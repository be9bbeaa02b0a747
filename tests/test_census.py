"""`shimlab census`: the baseline check on binaries shimlab did not build.

It must agree with `dis --native` on shimlab's own builds (one reader), tell
the CPython stand-in's three styles apart with and without symbols, read the
real CPython here, and answer bad input with one line and exit status 1."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from shimlab import disasm, elf, toolchain
from shimlab.census import census, fetch, standin
from shimlab.cli import main
from shimlab.interp import build, dispatch_check


def run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["census", *argv])
    return rc, out.getvalue(), err.getvalue()


def one_line(rc, out, err, needle):
    assert rc == 1 and not out, (rc, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("shimlab: ") and needle in err, err


def compilers(mode: str) -> list[str]:
    return [c.name for c in toolchain.find_compilers() if c.can_build(mode)]


# -- shimlab's own builds: census and dis --native read them alike --------------------

@pytest.mark.parametrize("cc", ["clang-19", "clang-22", "gcc-12"])
def test_census_and_dis_native_agree_on_each_goto_build(cc):
    if cc not in compilers("goto"):
        pytest.skip(f"{cc} is not here")
    b = build.build("goto", cc)
    mine, theirs = census(b.path), dispatch_check.analyze(b)
    assert mine.runtime == "shimlab" and mine.kind == "computed goto"
    assert mine.merged is theirs.flagged
    assert mine.indirect_jumps == theirs.dispatch_sites
    assert mine.merged is (cc in toolchain.MERGES_COMPUTED_GOTO), mine.verdict
    assert mine.compiler.split()[0].lower() == cc.split("-")[0]


def test_the_table_read_from_the_file_is_where_the_handlers_start_at_run_time():
    """The labels census reads statically (relocations applied) are the
    addresses the build itself reports when run (sl_handler_addrs)."""
    b = build.build("goto", compilers("goto")[0])
    report = census(b.path)
    funcs = disasm.function_code(b.path, ["sl_interpret"])
    at_run_time = set(dispatch_check._file_addresses(b, funcs))
    assert report.table["distinct"] == len(at_run_time)
    assert report.handlers == len(at_run_time)


def test_tailcall_and_switch_builds():
    cc = (compilers("tailcall") or [None])[0]
    if cc is None:
        pytest.skip("no compiler here builds tailcall")
    r = census(build.build("tailcall", cc).path)
    assert r.kind == "tail call" and not r.merged
    assert r.handlers_own >= r.handlers - 2, r.verdict        # HALT returns
    r = census(build.build("switch", compilers("switch")[0]).path)
    assert r.kind == "switch" and r.indirect_jumps >= 1 and not r.merged


def test_eh_frame_extents_are_the_symbols_sizes():
    image = elf.Image(build.build("tailcall" if compilers("tailcall") else "goto").path)
    named = [s for s in image.functions.values() if s.size and s.name.startswith("sl_")]
    assert named
    for s in named:
        assert image.extent_of(s.addr) == (s.addr, s.size), s
        assert image.extent_of(s.addr + s.size - 1) == (s.addr, s.size), s


# -- the CPython stand-in, with and without symbols ---------------------------------

STANDINS = [(style, cc) for style in standin.STYLES for cc in ("clang-19", "clang-22", "gcc-12")]


@pytest.mark.parametrize("stripped", [False, True], ids=["symbols", "stripped"])
@pytest.mark.parametrize("style,cc", STANDINS, ids=[f"{s}-{c}" for s, c in STANDINS])
def test_the_standin_tells_each_style_and_the_merged_build(style, cc, stripped):
    if not standin.can_build(style, cc):
        pytest.skip(f"{cc} cannot build the {style} stand-in here")
    path = standin.build(style, cc, stripped)
    p = subprocess.run([str(path), "1000"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout.strip() == "1502868", p     # a real program
    r = census(path)
    assert r.runtime == "CPython" and r.stripped is stripped
    assert r.kind == {"computed-goto": "computed goto", "tail-call": "tail call",
                      "switch": "switch"}[style], (r.kind, r.evidence)
    if style == "tail-call":
        assert r.handlers >= 29 and r.handlers_own >= 28 and not r.merged
        assert any("_TAIL_CALL_*" in e for e in r.evidence) is not stripped
    if style == "computed-goto":
        # clang 19 merges the stand-in's dispatch jumps as it merged CPython's
        assert r.merged is (cc in toolchain.MERGES_COMPUTED_GOTO), (r.verdict, r.indirect_jumps)
        assert r.table["entries"] == 256


# -- real interpreters on this machine -------------------------------------------------

def test_debians_python311_is_cpython_gcc12_about_228_jumps_not_merged():
    path = Path("/usr/bin/python3.11")
    if not path.exists():
        pytest.skip("/usr/bin/python3.11 is not on this machine")
    r = census(path)
    assert r.runtime == "CPython" and r.compiler.startswith("GCC 12"), r.compiler
    assert r.function == "_PyEval_EvalFrameDefault" and r.stripped
    assert 200 <= r.indirect_jumps <= 260 and r.kind == "computed goto" and not r.merged
    assert r.table["entries"] == 256


def _links_libpython(path) -> bool:
    return any(n.startswith("libpython") for n in elf.Image(path).dynamic["DT_NEEDED"])


def test_a_python_that_links_libpython_is_followed_to_it(tmp_path):
    """sys.executable where it links libpython (an --enable-shared build);
    else, as Debian's python3.11 has libpython linked in, a launcher linked
    against this Python's shared libpython, as an embedding program is."""
    exe = sys.executable
    if not _links_libpython(exe):
        lib = Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("INSTSONAME")
        cc = shutil.which("gcc-12") or shutil.which("cc")
        if not lib.is_file() or cc is None:
            pytest.skip(f"{exe} does not link libpython and {lib} (or a C compiler) is missing")
        (tmp_path / "launch.c").write_text("int Py_BytesMain(int, char **);\n"
                                           "int main(int c, char **v) { return Py_BytesMain(c, v); }\n")
        exe = str(tmp_path / "launch")
        subprocess.run([cc, str(tmp_path / "launch.c"), "-o", exe, str(lib)], check=True)
        assert _links_libpython(exe)
    r = census(exe)
    assert r.file != r.binary and "libpython" in r.file
    assert r.runtime == "CPython" and r.indirect_jumps > 100 and not r.merged


# -- the command: table, JSON, bad input ----------------------------------------------

def test_table_and_json():
    path = str(build.build("goto", compilers("goto")[0]).path)
    rc, out, err = run(path)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["binary", "runtime", "compiler"]
    assert path in lines[2] and "how sure:" in out and "found:" in out
    rc, out, err = run("--json", path, path)
    assert rc == 0, err
    data = json.loads(out)
    assert len(data) == 2 and data[0]["binary"] == path
    for key in ("compiler", "size", "indirect_jumps", "kind", "merged", "found_by",
                "confidence", "dispatch_code", "table"):
        assert key in data[0]


def test_missing_file(tmp_path):
    one_line(*run(str(tmp_path / "nope")), "no such file")


def test_not_elf(tmp_path):
    (tmp_path / "t.txt").write_text("hello\n")
    one_line(*run(str(tmp_path / "t.txt")), "not an ELF file")
    one_line(*run(str(tmp_path)), "is a directory")


def _cc() -> str:
    cc = shutil.which("clang-19") or shutil.which("clang-22") or shutil.which("clang")
    if cc is None:
        pytest.skip("no clang here to make a foreign binary")
    return cc


def test_another_architecture(tmp_path):
    (tmp_path / "f.c").write_text("int f(int x) { return x + 1; }\n")
    obj = tmp_path / "f.o"
    p = subprocess.run([_cc(), "--target=aarch64-linux-gnu", "-c", str(tmp_path / "f.c"),
                        "-o", str(obj)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"clang cannot target AArch64 here: {p.stderr.strip()[:100]}")
    one_line(*run(str(obj)), "a binary for AArch64")


def test_no_dispatch_code(tmp_path):
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    exe = tmp_path / "m"
    subprocess.run([_cc(), str(tmp_path / "m.c"), "-o", str(exe)], check=True)
    one_line(*run(str(exe)), "no interpreter dispatch code found")
    one_line(*run(str(exe), "--function", "luaV_execute"), "no function 'luaV_execute'")
    subprocess.run(["strip", "--strip-all", str(exe)], check=True)
    one_line(*run(str(exe)), "stripped")


def test_no_binary_named():
    one_line(*run(), "name a binary")


def test_a_damaged_elf_file(tmp_path):
    good = build.build("goto", compilers("goto")[0]).path.read_bytes()
    (tmp_path / "cut.so").write_bytes(good[:3000])
    rc, out, err = run(str(tmp_path / "cut.so"))
    one_line(rc, out, err, "cut.so")


# -- fetching real interpreters ---------------------------------------------------------

def test_fetch_without_the_archive_is_one_line(tmp_path, monkeypatch):
    if shutil.which("apt-get") is None:
        pytest.skip("no apt-get here")
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(tmp_path))
    monkeypatch.setattr(fetch, "_archive", lambda: "http://127.0.0.1:9/debian")
    monkeypatch.setattr(fetch, "TIMEOUT", 60)
    one_line(*run("--fetch", "python3.14"), "census --fetch")


def test_fetch_unknown_name_is_one_line():
    one_line(*run("--fetch", "cobol"), "unknown interpreter 'cobol'")


@pytest.mark.slow
def test_debian_unstables_python314_without_symbols_for_its_loop():
    """The hard case: the eval loop of Debian's 3.14 is code without a symbol."""
    try:
        path = fetch.fetch("python3.14")
    except fetch.FetchError as e:
        pytest.skip(f"Debian's archive cannot be reached: {e}")
    r = census(path)
    assert r.runtime == "CPython" and r.stripped
    assert r.kind in ("computed goto", "switch", "tail call")
    assert r.confidence.startswith(("sure", "certain")), r.confidence
    assert r.indirect_jumps > 100 or r.kind == "tail call"
    assert any(d["name"] is None for d in r.dispatch_code) and r.found_by


# -- the "build your CPython variants" path, on the stand-in --------------------------

def _variants(*argv):
    return subprocess.run([sys.executable, "-m", "shimlab.census.variants", *argv],
                          capture_output=True, text=True, timeout=600)


def test_the_variants_path_runs_on_the_standin_and_reports_ratios(tmp_path):
    from shimlab.census import variants
    names = [v.name for v in variants.VARIANTS
             if v.name in ("computed-goto", "computed-goto-clang-19")
             and standin.can_build(v.style, v.cc)]
    if "computed-goto" not in names:
        pytest.skip("gcc-12 (the baseline's compiler) is not here")
    out = tmp_path / "v.json"
    p = _variants("--standin", "--quick", "--variants", ",".join(names), "-o", str(out))
    assert p.returncode == 0, p.stderr
    result = json.loads(out.read_text())
    assert result["standin"] and result["baseline"] == "computed-goto"
    rows = {r["variant"]: r for r in result["variants"]}
    assert set(rows) == set(names)
    for r in rows.values():
        groups = r["times"]["stand-in loop"]
        assert len(groups) == 3 and all(len(g) == 3 and min(g) > 0 for g in groups)
        x = r["vs_baseline"]["stand-in loop"]
        assert x["ci95"][0] <= x["ratio"] <= x["ci95"][1]
        assert r["census"]["kind"] == "computed goto"
    if "computed-goto-clang-19" in rows:
        assert rows["computed-goto-clang-19"]["census"]["merged"] is True
        assert "MERGED" in p.stdout
    assert f"results: {out}" in p.stdout


def test_the_variants_path_without_a_checkout_is_one_line(tmp_path):
    p = _variants("--cpython", str(tmp_path), "--variants", "computed-goto")
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "no configure script" in p.stderr
    p = _variants("--standin", "--variants", "computed-goto,nope")
    assert p.returncode == 1 and "unknown variant(s) nope" in p.stderr


def test_a_timing_program_runs_under_pyperf_on_a_python(tmp_path):
    """What --cpython runs on each build, here on this Python, tiny."""
    from shimlab.census import variants
    groups = variants.time_python(Path(sys.executable), variants.PROGRAMS / "loops.py",
                                  tmp_path / "loops.json", quick=True)
    assert len(groups) == 3 and all(len(g) == 3 and min(g) > 0 for g in groups)
    assert {p.stem for p in variants.PROGRAMS.glob("[!_]*.py")} == {"loops", "calls", "objects"}
