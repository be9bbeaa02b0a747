#!/usr/bin/env bash
# Sets up everything shimlab needs on Debian 12 (bookworm), idempotently:
#   1. apt packages (compilers, valgrind, perf, PeachPy, capstone), only the missing ones;
#   2. .venv from Debian's python3 (/usr/bin/python3, >= 3.11), `pip install -e '.[test,kernel]'`
#      (the kernel extra: ipykernel and nbclient, which a test runs a notebook with);
#   3. Debian's PeachPy and capstone made importable from .venv (a symlink
#      each + a .pth file, NOT all of /usr/lib/python3/dist-packages, whose
#      old numpy/matplotlib would shadow PyPI's).
# A second run is fast: a stamp (.venv/.shimlab-setup) keyed on a hash of
# pyproject.toml and this script short-circuits everything once the required
# packages are installed and the venv imports shimlab and PeachPy.
#
# Environment (for testing and unusual machines):
#   SHIMLAB_PYTHON=/usr/bin/python3 interpreter to make the venv from
#   SHIMLAB_VENV=<repo>/.venv      where the venv lives
#   SHIMLAB_FORCE=1                ignore the stamp, check everything again
#   SHIMLAB_FAKE_MISSING="pkg ..." pretend these apt packages are not installed
#   SHIMLAB_FAKE_NOROOT=1          pretend we are neither root nor allowed sudo
#   SHIMLAB_DRY_RUN=1              print apt-get commands instead of running them
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Debian's own python3, not the first python3 on PATH: python3-peachpy and
# python3-capstone are built for it, a fresh Debian 12 has it, and a user's
# time is measured with it.  A pyenv build on PATH (no PGO, no LTO, libpython
# shared) made every `shimlab run` ~20% slower in CPU (mandel.bf, JIT: 255 ->
# 206 ms, Zen 3, December 2026); docs/findings.md has the A/B.
PYTHON="${SHIMLAB_PYTHON:-/usr/bin/python3}"
VENV="${SHIMLAB_VENV:-$ROOT/.venv}"
STAMP="$VENV/.shimlab-setup"
PEACHPY_LINKDIR="$VENV/debian-peachpy"
PTH_NAME="shimlab-debian-peachpy.pth"

REQUIRED_PKGS=(python3 python3-venv clang-19 gcc-12 valgrind python3-peachpy python3-capstone binutils make)
OPTIONAL_PKGS=(clang-22 gcc-11 linux-perf)

say()  { printf 'setup: %s\n' "$*"; }
warn() { printf 'setup: warning: %s\n' "$*" >&2; }
die()  { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- apt packages

# Prints the packages among "$@" that are not installed.
missing_pkgs() {
    local pkg status fake=" ${SHIMLAB_FAKE_MISSING:-} "
    for pkg in "$@"; do
        if [[ "$fake" == *" $pkg "* ]]; then
            echo "$pkg"; continue
        fi
        status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
        [[ "$status" == "install ok installed" ]] || echo "$pkg"
    done
}

# Sets SUDO to the prefix that runs a command as root ("" when we are root);
# returns 1 when we cannot become root without a password.
SUDO=""
can_be_root() {
    if [[ -n "${SHIMLAB_FAKE_NOROOT:-}" ]]; then return 1; fi
    if [[ "$(id -u)" == 0 ]]; then SUDO=""; return 0; fi
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"; return 0
    fi
    return 1
}

apt_run() {
    if [[ -n "${SHIMLAB_DRY_RUN:-}" ]]; then
        say "dry run: ${SUDO:+$SUDO }$*"; return 0
    fi
    # shellcheck disable=SC2086
    $SUDO env DEBIAN_FRONTEND=noninteractive "$@"
}

APT_UPDATED=""
apt_update_once() {
    [[ -n "$APT_UPDATED" ]] && return 0
    say "apt-get update"
    apt_run apt-get update -q >/dev/null || warn "apt-get update failed; trying the install anyway"
    APT_UPDATED=1
}

ensure_apt_packages() {
    local -a miss_req miss_opt
    mapfile -t miss_req < <(missing_pkgs "${REQUIRED_PKGS[@]}")
    mapfile -t miss_opt < <(missing_pkgs "${OPTIONAL_PKGS[@]}")
    if (( ${#miss_req[@]} == 0 && ${#miss_opt[@]} == 0 )); then
        return 0
    fi
    if ! can_be_root; then
        if (( ${#miss_req[@]} > 0 )); then
            printf 'setup: error: missing required Debian packages: %s\n' "${miss_req[*]}" >&2
            printf 'setup: run as root (or with passwordless sudo), or install them yourself:\n' >&2
            printf '    sudo apt-get install -y %s\n' "${miss_req[*]}${miss_opt[*]:+ ${miss_opt[*]}}" >&2
            printf 'setup: then run `make setup` again.\n' >&2
            exit 1
        fi
        warn "optional packages missing (some experiments will be skipped): ${miss_opt[*]}"
        warn "to install them: sudo apt-get install -y ${miss_opt[*]}"
        return 0
    fi
    apt_update_once
    if (( ${#miss_req[@]} > 0 )); then
        say "apt-get install ${miss_req[*]}"
        apt_run apt-get install -y -q "${miss_req[@]}" \
            || die "could not install required packages; run: apt-get install -y ${miss_req[*]}"
    fi
    # Optional packages one by one: clang-22 may simply not exist on an older mirror.
    local pkg
    for pkg in "${miss_opt[@]}"; do
        say "apt-get install $pkg (optional)"
        apt_run apt-get install -y -q "$pkg" \
            || warn "optional package $pkg could not be installed (continuing without it)"
    done
    if [[ -z "${SHIMLAB_DRY_RUN:-}" ]]; then
        mapfile -t miss_req < <(missing_pkgs "${REQUIRED_PKGS[@]}")
        if (( ${#miss_req[@]} > 0 )); then
            die "still missing after apt-get: ${miss_req[*]} (apt-get install -y ${miss_req[*]})"
        fi
    fi
}

# ------------------------------------------------------------------- the venv

stamp_key() {
    # The repo path is part of the key: a moved repo breaks the venv's scripts.
    { cat "$ROOT/pyproject.toml" "$ROOT/scripts/setup.sh"; echo "$ROOT"; } | sha256sum | cut -d' ' -f1
}

VERIFY_PEACHPY='from peachpy.x86_64 import ADD, r13; assert bytes(ADD(r13, 1).encode()).hex() == "4983c501"'
# through shimlab's own loader of it (shimlab.disasm), which the dis commands use
VERIFY_CAPSTONE='from shimlab import disasm; assert disasm.disassemble(bytes([0xff, 0xe0]))[0].indirect_jump'

venv_ok() {
    [[ -x "$VENV/bin/python" ]] \
        && "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

# The interpreter a venv was made from, resolved (its bin/python is a symlink to it).
realpython() { "$1" -c 'import os, sys; print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))' 2>/dev/null; }

venv_base_ok() {
    [[ "$(realpython "$VENV/bin/python")" == "$(realpython "$PYTHON")" ]]
}

ensure_venv() {
    command -v "$PYTHON" >/dev/null 2>&1 \
        || die "$PYTHON not found (apt-get install python3 python3-venv, or set SHIMLAB_PYTHON to a Python >= 3.11)"
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        die "$PYTHON is $("$PYTHON" -c 'import sys; print(sys.version.split()[0])') ($(command -v "$PYTHON")); shimlab needs Python >= 3.11 (set SHIMLAB_PYTHON or fix PATH)"
    fi
    if venv_ok && ! venv_base_ok; then
        warn "$VENV was made from $(realpython "$VENV/bin/python"), not $(realpython "$PYTHON"); recreating it"
        rm -rf "$VENV"
    fi
    if ! venv_ok; then
        if [[ -e "$VENV" ]]; then
            warn "$VENV is broken or too old; recreating it"
            rm -rf "$VENV"
        fi
        say "creating $VENV from $(command -v "$PYTHON") ($("$PYTHON" -c 'import sys; print(sys.version.split()[0])'))"
        "$PYTHON" -m venv "$VENV"
    fi
    say "pip install -e '.[test,kernel]'"
    "$VENV/bin/python" -m pip install -qq --disable-pip-version-check -e "$ROOT[test,kernel]" \
        || die "pip install -e '.[test,kernel]' failed (see above)"
}

link_peachpy() {
    local src=""
    # Where python3-peachpy put the package (dpkg is the authority; fall back to the usual place).
    src="$(dpkg-query -L python3-peachpy 2>/dev/null | grep -m1 '/peachpy/__init__\.py$' || true)"
    src="${src%/__init__.py}"
    [[ -n "$src" ]] || src=/usr/lib/python3/dist-packages/peachpy
    if [[ " ${SHIMLAB_FAKE_MISSING:-} " == *" python3-peachpy "* ]]; then src=/nonexistent/peachpy; fi
    if [[ ! -f "$src/__init__.py" ]]; then
        die "PeachPy missing: apt-get install python3-peachpy (then make setup)"
    fi
    mkdir -p "$PEACHPY_LINKDIR"
    ln -sfn "$src" "$PEACHPY_LINKDIR/peachpy"
    local purelib
    purelib="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    printf '%s\n' "$PEACHPY_LINKDIR" > "$purelib/$PTH_NAME"
    if ! "$VENV/bin/python" -c "$VERIFY_PEACHPY" 2>/tmp/shimlab-peachpy-err.$$; then
        cat /tmp/shimlab-peachpy-err.$$ >&2; rm -f /tmp/shimlab-peachpy-err.$$
        die "PeachPy is not importable from $VENV (python3-peachpy installed? apt-get install python3-peachpy; six from PyPI?)"
    fi
    rm -f /tmp/shimlab-peachpy-err.$$
    say "PeachPy linked from $src"
}

# Debian's python3-capstone (the disassembler of `shimlab dis --native` and the
# stencil listings) into the same folder as PeachPy: the .pth above covers it.
link_capstone() {
    local src=""
    src="$(dpkg-query -L python3-capstone 2>/dev/null | grep -m1 '/capstone/__init__\.py$' || true)"
    src="${src%/__init__.py}"
    [[ -n "$src" ]] || src=/usr/lib/python3/dist-packages/capstone
    if [[ " ${SHIMLAB_FAKE_MISSING:-} " == *" python3-capstone "* ]]; then src=/nonexistent/capstone; fi
    if [[ ! -f "$src/__init__.py" ]]; then
        die "capstone missing: apt-get install python3-capstone (then make setup)"
    fi
    mkdir -p "$PEACHPY_LINKDIR"
    ln -sfn "$src" "$PEACHPY_LINKDIR/capstone"
    "$VENV/bin/python" -c "$VERIFY_CAPSTONE" \
        || die "capstone is not importable from $VENV (apt-get install python3-capstone)"
    say "capstone linked from $src"
}

# Python's bytecode for shimlab's own modules, written now: a session (or CI)
# that sets PYTHONDONTWRITEBYTECODE never writes it, and every `shimlab`
# process (the tests start hundreds) then compiled ~100 modules from source.
# compileall skips what is current (~0.3 s) and honours no such variable.
compile_bytecode() {
    "$VENV/bin/python" -m compileall -q -j 0 "$ROOT/src" "$ROOT/peachpy_stencils" >/dev/null \
        || warn "compileall failed: shimlab's modules are compiled as they are imported"
}

# ------------------------------------------------------------------- fast path

fast_path_ok() {
    [[ -z "${SHIMLAB_FORCE:-}" ]] || return 1
    [[ -f "$STAMP" ]] || return 1
    [[ "$(head -n1 "$STAMP")" == "$(stamp_key)" ]] || return 1
    [[ -z "$(missing_pkgs "${REQUIRED_PKGS[@]}")" ]] || return 1
    [[ -x "$VENV/bin/shimlab" ]] || return 1
    venv_base_ok || return 1
    "$VENV/bin/python" -c "import shimlab; $VERIFY_PEACHPY" 2>/dev/null || return 1
    "$VENV/bin/python" -c "$VERIFY_CAPSTONE" 2>/dev/null || return 1
}

if fast_path_ok; then
    missing_opt="$(missing_pkgs "${OPTIONAL_PKGS[@]}" | tr '\n' ' ')"
    [[ -z "${missing_opt// /}" ]] || warn "optional packages missing: ${missing_opt}(sudo apt-get install -y ${missing_opt% })"
    compile_bytecode
    say "up to date ($VENV)"
    exit 0
fi

ensure_apt_packages
ensure_venv
link_peachpy
link_capstone
compile_bytecode
stamp_key > "$STAMP"
say "done: $VENV ready (try: make demo, make test)"
