"""The Lua sources: lupa's source distribution from PyPI, downloaded once into
the build directory, checked against a pinned SHA-256 and unpacked (only the
interpreters' folders under third-party/), never built or installed.

`pip download` prepares the package's metadata (it runs lupa's build
backend), so the file is fetched as pip would find it: PyPI's simple index
(the JSON form, PEP 691) names its URL and hash.  SHIMLAB_LUPA_SDIST=FILE
uses a copy already on disk instead (offline machines, and the tests).
"""
from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from ..errors import ShimlabError
from ..interp.build import sha256_file
from ..paths import build_root

PACKAGE, VERSION = "lupa", "2.8"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
SHA256 = "d8022641b9ec8ecf2c5ecbe9f47e5a70e0b87c4b5ae921b92cb02a638e0acd08"
INDEX = "https://pypi.org/simple"
TIMEOUT = 60.0
# the folders of the sdist's third-party/ that shimlab builds
FLAVOURS = ("lua54", "lua55", "luajit21")


class SourceError(ShimlabError):
    """The sources cannot be had or are not the pinned ones."""


class Unreachable(SourceError):
    """No network, or the index does not answer: tests skip on this one."""


def cache_dir() -> Path:
    return build_root() / "lua"


def sdist_path() -> Path:
    return cache_dir() / "download" / SDIST


def third_party() -> Path:
    """Where the unpacked interpreters' folders are (after fetch())."""
    return cache_dir() / "src" / f"{PACKAGE}-{VERSION}" / "third-party"


def _unpacked() -> bool:
    stamp = third_party().parent / ".unpacked"
    return stamp.is_file() and stamp.read_text().strip() == SHA256 and \
        all((third_party() / f).is_dir() for f in FLAVOURS)


def _open_url(url: str, accept: str | None = None):
    import urllib.request
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT)
    except OSError as e:       # URLError, timeouts and refused connections are all OSErrors
        why = getattr(e, "reason", None) or e
        raise Unreachable(f"cannot reach {url} ({why}): the Lua sources come from {SDIST} "
                          f"on PyPI; on a machine without it, set SHIMLAB_LUPA_SDIST to a "
                          f"copy of that file") from None


def sdist_url() -> str:
    """The sdist's URL as PyPI's simple index lists it; the index's hash for it
    must be the pinned one."""
    with _open_url(f"{INDEX}/{PACKAGE}/", "application/vnd.pypi.simple.v1+json") as r:
        try:
            files = json.loads(r.read())["files"]
        except (ValueError, KeyError, TypeError):
            raise SourceError(f"{INDEX}/{PACKAGE}/: not a simple index page in JSON") from None
    entry = next((f for f in files if f.get("filename") == SDIST), None)
    if entry is None:
        raise SourceError(f"{INDEX}/{PACKAGE}/ does not list {SDIST}")
    listed = (entry.get("hashes") or {}).get("sha256")
    if listed != SHA256:
        raise SourceError(f"{SDIST}: the index lists sha256 {listed}, shimlab pins {SHA256} "
                          f"(shimlab/lua/source.py)")
    return entry["url"]


def _download(dest: Path) -> None:
    url = sdist_url()
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out, _open_url(url) as r:
            shutil.copyfileobj(r, out, 1 << 20)
        _check(Path(tmp), url)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _check(path: Path, origin) -> None:
    got = sha256_file(path)
    if got != SHA256:
        raise SourceError(f"{origin}: sha256 {got}, expected {SHA256} for {SDIST} "
                          f"(pinned in shimlab/lua/source.py); not used")


def _extract(tar: tarfile.TarFile, members: list, dest: Path) -> None:
    """tarfile's "data" filter where this Python has it (3.11.4 and later);
    before that (Debian 12's 3.11.2) the same refusals made here: only files
    and folders, no name that leaves dest."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=members, filter="data")
        return
    for m in members:
        if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in m.name.split("/"):
            raise tarfile.TarError(f"refusing member {m.name!r} (not a plain file or folder "
                                   "inside the archive's root)")
        m.mode = (m.mode | 0o600) & 0o755 if m.isfile() else 0o755
    tar.extractall(dest, members=members)


def _unpack(archive: Path) -> None:
    """Only the interpreters' folders, without any .git file, into a temporary
    folder renamed into place (a concurrent fetch sees all of it or none)."""
    top = f"{PACKAGE}-{VERSION}/third-party/"
    wanted = tuple(f"{top}{f}/" for f in FLAVOURS)
    dest = third_party().parent
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest.parent))
    try:
        try:
            with tarfile.open(archive, "r:gz") as tar:
                members = [m for m in tar.getmembers()
                           if m.name.startswith(wanted) and "/.git" not in m.name]
                _extract(tar, members, tmp)
        except (tarfile.TarError, OSError, EOFError) as e:
            raise SourceError(f"{archive}: cannot unpack ({e})") from None
        unpacked = tmp / f"{PACKAGE}-{VERSION}"
        missing = [f for f in FLAVOURS if not (unpacked / "third-party" / f).is_dir()]
        if missing:
            raise SourceError(f"{archive}: no third-party/{', '.join(missing)} in it")
        (unpacked / ".unpacked").write_text(SHA256 + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(unpacked, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fetch() -> Path:
    """The unpacked third-party/ folder: from the cache, else from the cached
    sdist, else downloaded.  SHIMLAB_LUPA_SDIST names a local copy to use."""
    if _unpacked():
        return third_party()
    local = os.environ.get("SHIMLAB_LUPA_SDIST")
    if local:
        archive = Path(local)
        if not archive.is_file():
            raise SourceError(f"SHIMLAB_LUPA_SDIST={local}: no such file")
        _check(archive, archive)
    else:
        archive = sdist_path()
        if not archive.is_file() or sha256_file(archive) != SHA256:
            _download(archive)
    _unpack(archive)
    return third_party()
