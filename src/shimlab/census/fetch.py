"""`shimlab census --fetch NAME`: real interpreters from Debian's archive,
downloaded as .deb files by Debian's own package tools and unpacked with
`dpkg -x`, never installed.

apt runs with a configuration of shimlab's own under the build directory
(build/census/apt/SUITE: a sources list, package lists and an empty state),
so the machine's apt configuration and installed packages are untouched.
The archive's address and keyring are the ones this machine's apt already
uses; only the suite differs (unstable for the newest CPython, stable for
the rest).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import ShimlabError
from ..paths import build_root

KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
APT_SOURCES = (Path("/etc/apt/sources.list.d"), Path("/etc/apt/sources.list"))
TIMEOUT = 600


class FetchError(ShimlabError):
    pass


@dataclass(frozen=True)
class Wanted:
    suite: str
    package: str                 # a package, or a metapackage to resolve ...
    resolve: tuple[str, ...]     # ... through dependencies matching these, in turn
    binary: str                  # the interpreter's path in the unpacked tree (a regex)


WANTED = {
    "python3.14": Wanted("unstable", "python3.14-minimal", (), r"usr/bin/python3\.14"),
    "python3.13": Wanted("unstable", "python3.13-minimal", (), r"usr/bin/python3\.13"),
    "lua5.4": Wanted("stable", "lua5.4", (), r"usr/bin/lua5\.4"),
    "ruby": Wanted("stable", "ruby", (r"ruby\d+\.\d+", r"libruby\d+\.\d+"),
                   r"usr/bin/ruby\d+\.\d+"),
    "perl": Wanted("stable", "perl-base", (), r"usr/bin/perl"),
    "php": Wanted("stable", "php-cli", (r"php\d+\.\d+-cli",), r"usr/bin/php\d+\.\d+"),
}


def names() -> str:
    return ", ".join(WANTED)


def _archive() -> str:
    """The Debian archive's address, as this machine's apt has it."""
    files = []
    for p in APT_SOURCES:
        files += sorted(p.glob("*.sources")) + sorted(p.glob("*.list")) if p.is_dir() else [p]
    for f in files:
        try:
            text = f.read_text()
        except OSError:
            continue
        for uri in re.findall(r"^URIs:\s*(\S+)", text, re.M) + \
                re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return uri.rstrip("/")
    raise FetchError("census --fetch: this machine's apt has no Debian archive configured "
                     "(no /debian URI in /etc/apt/sources.list*)")


class Apt:
    """apt-get and apt-cache on one suite, with shimlab's own configuration."""

    def __init__(self, suite: str):
        for tool in ("apt-get", "apt-cache", "dpkg"):
            if shutil.which(tool) is None:
                raise FetchError(f"census --fetch needs Debian's package tools ({tool} is "
                                 f"missing)")
        if not KEYRING.exists():
            raise FetchError(f"census --fetch: {KEYRING} missing (apt-get install "
                             f"debian-archive-keyring)")
        self.suite = suite
        self.dir = build_root() / "census" / "apt" / suite
        lists = self.dir / "lists"
        (lists / "partial").mkdir(parents=True, exist_ok=True)
        (self.dir / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        self.sources = self.dir / "sources.list"
        self.sources.write_text(f"deb [signed-by={KEYRING}] {_archive()} {suite} main\n")
        (self.dir / "status").touch()
        self.options = [
            "-o", f"Dir::Etc::sourcelist={self.sources}", "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State={self.dir}", "-o", f"Dir::State::Lists={lists}",
            "-o", f"Dir::State::status={self.dir / 'status'}",
            "-o", f"Dir::Cache={self.dir}", "-o", f"Dir::Cache::archives={self.dir / 'archives'}",
            "-o", "Dir::Etc::preferencesparts=-", "-o", f"Dir::Etc::preferences={self.dir}/none",
            "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root",
            "-o", "Acquire::Retries=0", "-o", "Acquire::http::Timeout=30"]

    def _run(self, tool: str, *args, cwd=None) -> str:
        try:
            p = subprocess.run([tool, *self.options, *args], capture_output=True, text=True,
                               timeout=TIMEOUT, cwd=cwd)
        except subprocess.TimeoutExpired:
            raise FetchError(f"census --fetch: {tool} {args[0]} gave no answer in "
                             f"{TIMEOUT} s (no network?)") from None
        if p.returncode != 0:
            raise FetchError(f"census --fetch: {tool} {' '.join(args)} failed: "
                             f"{_last(p.stderr or p.stdout)}")
        return p.stdout

    def update(self) -> None:
        out = self._run("apt-get", "update")
        if re.search(r"^Err", out, re.M) or not any(
                (self.dir / "lists").glob("*Packages*")):
            raise FetchError(f"census --fetch: Debian's archive cannot be reached "
                             f"(apt-get update of {self.suite}: {_last(out)})")

    def depends(self, package: str, pattern: str) -> str:
        out = self._run("apt-cache", "depends", package)
        for m in re.finditer(r"Depends:\s*<?([\w.+-]+)>?", out):
            if re.fullmatch(pattern, m.group(1)):
                return m.group(1)
        raise FetchError(f"census --fetch: {package} in {self.suite} depends on nothing "
                         f"like {pattern}")

    def download(self, packages: list[str], into: Path) -> list[Path]:
        if into.exists():
            shutil.rmtree(into)
        into.mkdir(parents=True)
        self._run("apt-get", "download", *packages, cwd=into)
        return sorted(into.glob("*.deb"))


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def _binary(root: Path, w: Wanted) -> Path | None:
    found = sorted(p for p in root.rglob("*") if p.is_file()
                   and re.fullmatch(w.binary, str(p.relative_to(root)))) if root.is_dir() else []
    return found[0] if found else None


def fetched(name: str) -> Path | None:
    """Interpreter `name` as an earlier fetch left it unpacked, if it did."""
    return _binary(build_root() / "census" / "root" / name, WANTED[name])


def packages(name: str) -> list[str]:
    """The .deb files (name_version_arch) the last fetch of `name` unpacked."""
    return sorted(p.name for p in (build_root() / "census" / "debs" / name).glob("*.deb"))


def fetch(name: str) -> Path:
    """Downloads and unpacks interpreter `name`; returns its binary's path."""
    if name not in WANTED:
        raise FetchError(f"census --fetch: unknown interpreter {name!r} (known: {names()})")
    w = WANTED[name]
    apt = Apt(w.suite)
    apt.update()
    packages, current = [], w.package
    for pattern in w.resolve:
        current = apt.depends(current if not packages else packages[0], pattern)
        packages.append(current)
    packages = packages or [w.package]
    root = build_root() / "census" / "root" / name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    debs = apt.download(packages, build_root() / "census" / "debs" / name)
    for deb in debs:
        p = subprocess.run(["dpkg", "-x", str(deb), str(root)], capture_output=True, text=True)
        if p.returncode != 0:
            raise FetchError(f"census --fetch: dpkg -x {deb.name} failed: {_last(p.stderr)}")
    found = _binary(root, w)
    if found is None:
        raise FetchError(f"census --fetch: {', '.join(d.name for d in debs)} holds no "
                         f"{w.binary}")
    return found
