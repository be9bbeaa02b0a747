"""The compiled-program cache (frontend/program_cache.py): a program read
from it is the program the front end makes, field for field; anything that
could make it another program (its bytes, the front end's code, a damaged
file) compiles again; an unsettled front end or SHIMLAB_PROGRAM_CACHE=0
keeps nothing; a build directory that cannot be written costs a compile."""
from __future__ import annotations

import os
import shutil

import pytest

from conftest import EXAMPLES
from shimlab import cachefile
from shimlab.errors import FrontendError
from shimlab.frontend import compile_text, load_program, program_cache
from shimlab.paths import CORPUS


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.delenv("SHIMLAB_PROGRAM_CACHE", raising=False)
    monkeypatch.setattr(cachefile, "SETTLED_NS", -10**12)    # every file settled
    return tmp_path / "build" / "programs"


def _fields(p) -> tuple:
    return (p.name, [tuple(c) for c in p.code], list(p.consts),
            [(f.name, f.entry, f.nargs, f.nlocals, list(f.local_names), f.max_stack)
             for f in p.functions], list(p.positions), p.language, p.verified)


def _fresh(path, level: int):
    text = path.read_text()
    language = {".bf": "bf", ".b": "bf", ".py": "minipy", ".slbc": "bytecode"}[path.suffix]
    return compile_text(text, str(path), language, level)


PROGRAMS = sorted([*EXAMPLES.glob("bf/*.bf"), *EXAMPLES.glob("minipy/*.py"),
                   *CORPUS.glob("bf/*.bf"), *CORPUS.glob("minipy/*.py")])


def test_a_kept_program_is_the_compiled_one_at_every_level(cache_dir):
    assert PROGRAMS
    for path in PROGRAMS:
        levels = (0, 1, 2) if path.suffix == ".bf" else (0,)
        for level in levels:
            first = load_program(path, bf_opt=level)            # compiles, keeps
            kept = program_cache.Entry(str(path), first.language, level,
                                       path.read_bytes()).get()
            assert kept is not None, path
            again = load_program(path, bf_opt=level)             # from the cache
            want = _fields(_fresh(path, level))
            assert _fields(first) == want and _fields(kept) == want \
                and _fields(again) == want, (path, level)
            assert again.position(len(again.code) - 1) == want[4][-1]
    # one file a program and level
    assert len(list(cache_dir.glob("*.bin"))) == sum(
        3 if p.suffix == ".bf" else 1 for p in PROGRAMS)


def test_new_bytes_at_the_same_path_compile_again(cache_dir, tmp_path):
    path = tmp_path / "p.bf"
    path.write_text("++++++++[>++++++++<-]>+.")
    a = load_program(path)
    path.write_text("++++++++[>++++++++<-]>++.")
    b = load_program(path)
    assert _fields(b) == _fields(_fresh(path, 0)) and _fields(a) != _fields(b)


def test_a_damaged_file_is_compiled_again_and_written_over(cache_dir):
    path = EXAMPLES / "bf" / "hello.bf"
    load_program(path)
    (kept,) = cache_dir.glob("*.bin")
    blob = bytearray(kept.read_bytes())
    blob[-3] ^= 0xFF
    kept.write_bytes(bytes(blob))
    assert _fields(load_program(path)) == _fields(_fresh(path, 0))
    assert kept.read_bytes() != bytes(blob)         # written again
    kept.write_bytes(b"SLPC")                        # truncated
    assert _fields(load_program(path)) == _fields(_fresh(path, 0))


def test_an_edit_to_the_front_end_makes_every_entry_stale(cache_dir, tmp_path, monkeypatch):
    src = tmp_path / "src"
    for rel in program_cache._SOURCES:
        (src / "shimlab" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(program_cache.SRC_DIR, "shimlab", rel), src / "shimlab" / rel)
    monkeypatch.setattr(program_cache, "SRC_DIR", str(src))
    path = EXAMPLES / "bf" / "hello.bf"
    load_program(path)

    def entry():
        return program_cache.Entry(str(path), "bf", 0, path.read_bytes())
    assert entry().get() is not None
    bf = src / "shimlab" / "frontend" / "bf.py"
    with open(bf, "a") as f:
        f.write("# an edit\n")
    old = bf.stat().st_mtime - 5
    os.utime(bf, (old, old))        # even with its mtime set back: the size, the ctime
    assert entry().get() is None
    load_program(path)
    assert entry().get() is not None


def test_an_unsettled_front_end_or_the_switch_keeps_nothing(cache_dir, monkeypatch):
    path = EXAMPLES / "bf" / "hello.bf"
    monkeypatch.setattr(cachefile, "SETTLED_NS", 10**18)      # every file just written
    assert _fields(load_program(path)) == _fields(_fresh(path, 0))
    assert not cache_dir.exists() or not list(cache_dir.glob("*.bin"))
    monkeypatch.setattr(cachefile, "SETTLED_NS", -10**12)
    monkeypatch.setenv("SHIMLAB_PROGRAM_CACHE", "0")
    load_program(path)
    assert not cache_dir.exists() or not list(cache_dir.glob("*.bin"))


def test_an_unwritable_build_directory_costs_a_compile(cache_dir, monkeypatch):
    cache_dir.parent.mkdir(parents=True)
    cache_dir.write_text("a file where the folder would be")
    path = EXAMPLES / "minipy" / "fib.py"
    assert _fields(load_program(path)) == _fields(_fresh(path, 0))


def test_a_program_that_fails_to_compile_fails_every_time(cache_dir, tmp_path):
    path = tmp_path / "bad.bf"
    path.write_text("+[")
    for _ in range(2):
        with pytest.raises(FrontendError, match="bad.bf"):
            load_program(path)
    assert not cache_dir.exists() or not list(cache_dir.glob("*.bin"))


def test_a_huge_program_is_not_kept(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(program_cache, "MAX_INSTRUCTIONS", 10)
    path = tmp_path / "big.bf"
    path.write_text("+>" * 20 + ".")
    assert _fields(load_program(path)) == _fields(_fresh(path, 0))
    assert not cache_dir.exists() or not list(cache_dir.glob("*.bin"))
