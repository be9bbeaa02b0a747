"""Cached interpreters are checked before use (issue 17): build.json records
the library's size and SHA-256 at build time, and an entry whose library was
truncated or overwritten since is rebuilt instead of dying of SIGBUS."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, compiler_for
from shimlab.interp import build

HELLO = EXAMPLES / "bf" / "hello.bf"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(tmp_path))
    return tmp_path


def _run_hello(cache, cc):
    env = {**os.environ, "SHIMLAB_BUILD_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "shimlab.cli", "run", "--mode", "switch",
                           "--cc", cc, str(HELLO)], capture_output=True, text=True, env=env,
                          timeout=300)


def test_entry_ok_checks_size_and_hash_recorded_at_build_time(tmp_path):
    entry = tmp_path / "switch-cc-key"
    entry.mkdir()
    so = entry / build.SO_NAME
    so.write_bytes(b"\x7fELF" + bytes(range(256)) * 40)
    (entry / "build.json").write_text(json.dumps({"mode": "switch",
                                                  **build.fingerprint(so)}))
    assert build.entry_ok(entry)
    with open(so, "r+b") as f:
        f.truncate(100)
    assert not build.entry_ok(entry)
    so.write_bytes(b"\x7fELF" + bytes(range(255, -1, -1)) * 40)    # same size, other bytes
    assert not build.entry_ok(entry)
    (entry / "build.json").write_text("{")
    assert not build.entry_ok(entry)
    build.discard(entry)
    assert not entry.exists() and os.listdir(tmp_path) == []


def test_a_library_found_whole_is_not_hashed_again_while_unchanged(tmp_path, monkeypatch):
    """entry_ok stamps a settled library (inode, size, mtime, ctime) in
    build.json: a later process does not hash it again until one changes;
    a build.json it cannot write costs a hash, never the entry."""
    from shimlab import cachefile
    entry = tmp_path / "switch-cc-key"
    entry.mkdir()
    so = entry / build.SO_NAME
    so.write_bytes(b"\x7fELF" + bytes(range(256)) * 40)
    (entry / "build.json").write_text(json.dumps({"mode": "switch", **build.fingerprint(so)}))
    monkeypatch.setattr(cachefile, "SETTLED_NS", -10**12)   # every file settled
    hashed = []
    real = build.sha256_file
    monkeypatch.setattr(build, "sha256_file", lambda p: hashed.append(p) or real(p))
    monkeypatch.setattr(build, "_verified", set())
    assert build.entry_ok(entry) and len(hashed) == 1
    assert "so_seen" in json.loads((entry / "build.json").read_text())
    monkeypatch.setattr(build, "_verified", set())    # another process
    assert build.entry_ok(entry) and len(hashed) == 1
    t = so.stat().st_mtime_ns
    os.utime(so, ns=(t, t + 1000))                    # touched: hashed again
    monkeypatch.setattr(build, "_verified", set())
    assert build.entry_ok(entry) and len(hashed) == 2

    def unwritable(path, data):
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(build, "_write_json", unwritable)
    os.utime(so, ns=(t, t + 2000))
    monkeypatch.setattr(build, "_verified", set())
    assert build.entry_ok(entry) and len(hashed) == 3


@pytest.mark.slow     # three interpreter builds in an empty cache
def test_a_truncated_or_overwritten_library_is_rebuilt(cache):
    cc = compiler_for("switch")
    b = build.build("switch", cc)
    meta = json.loads((b.path.parent / "build.json").read_text())
    size, digest = meta["so_size"], meta["so_sha256"]
    assert size == b.path.stat().st_size > 0 and len(digest) == 64
    _run_hello(cache, cc)        # the first run in a new cache also generates cffi glue
    expected = _run_hello(cache, cc)
    assert expected.returncode == 0 and expected.stdout, expected.stderr

    with open(b.path, "r+b") as f:        # truncated: every run died of SIGBUS
        f.truncate(size // 3)
    again = _run_hello(cache, cc)
    assert (again.returncode, again.stdout) == (0, expected.stdout), again.stderr
    assert build.entry_ok(b.path.parent)     # rebuilt, with a fingerprint of its own

    data = bytearray(b.path.read_bytes())   # same size, other bytes
    data[size // 2] ^= 0xFF
    b.path.write_bytes(bytes(data))
    assert not build.entry_ok(b.path.parent)
    assert build.build("switch", cc).path == b.path
    rebuilt = json.loads((b.path.parent / "build.json").read_text())
    assert rebuilt["so_sha256"] == build.sha256_file(b.path) and build.entry_ok(b.path.parent)
    assert rebuilt["so_sha256"] != digest or bytes(data) != b.path.read_bytes()


@pytest.mark.slow
def test_an_entry_built_before_fingerprints_gets_one_without_a_rebuild(cache):
    cc = compiler_for("switch")
    b = build.build("switch", cc)
    record = b.path.parent / "build.json"
    meta = json.loads(record.read_text())
    legacy = {k: v for k, v in meta.items() if not k.startswith("so_")}
    record.write_text(json.dumps(legacy))
    build._verified.clear()
    before = b.path.stat().st_mtime_ns
    assert build.entry_ok(b.path.parent)
    assert json.loads(record.read_text())["so_sha256"] == meta["so_sha256"]
    assert b.path.stat().st_mtime_ns == before
    # a legacy entry that is truncated is not trusted
    record.write_text(json.dumps(legacy))
    build._verified.clear()
    with open(b.path, "r+b") as f:
        f.truncate(b.path.stat().st_size - 100)
    assert not build.entry_ok(b.path.parent)
