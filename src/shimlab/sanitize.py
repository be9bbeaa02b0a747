"""AddressSanitizer + UBSan runs of the interpreters, inside CPython.

An instrumented shared object cannot be dlopen'ed into a plain python: the
sanitizer runtime must be loaded first (LD_PRELOAD), and it must be the
runtime of the compiler that built the object.  This module finds that
runtime, tells which one the current process has loaded (so tests use only
the compilers that match it), and is the launcher `make test-sanitize` uses:

    python -m shimlab.sanitize --cc clang-19 -- python -m pytest tests/...

which runs the command with SHIMLAB_SANITIZE=1 (build.py then adds
build.SANITIZE_FLAGS), the runtime preloaded and reports written to
build/sanitize/, and fails if any report was written.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from . import toolchain
from .errors import ToolchainError
from .paths import ROOT

REPORT_DIR = ROOT / "build" / "sanitize"

# The shared runtime each compiler family links ASan (and for clang, UBSan)
# against; gcc's libasan pulls libubsan in as a DT_NEEDED of the object.
_RUNTIME_NAME = {"clang": "libclang_rt.asan-x86_64.so", "gcc": "libasan.so"}

# CPython and numpy allocate for the life of the process: leak reports would
# be noise.  abort_on_error turns a report into SIGABRT, which isolate.call
# names as a crash instead of a bare "exit status 1".
ASAN_OPTIONS = "detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1"
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"


@lru_cache(maxsize=None)
def runtime(cc: toolchain.Compiler) -> Path | None:
    """The sanitizer runtime to preload for objects built by cc, or None."""
    name = _RUNTIME_NAME.get(cc.family)
    if name is None:
        return None
    try:
        out = subprocess.run([cc.path, f"-print-file-name={name}"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    # a compiler that lacks the file prints the bare name back
    path = Path(out)
    return path.resolve() if path.is_absolute() and path.exists() else None


def loaded_runtime() -> Path | None:
    """The sanitizer runtime mapped into this process (preloaded), if any."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return None
    for line in maps.splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        name = os.path.basename(path)
        if name.startswith("libclang_rt.asan") or name.startswith("libasan.so"):
            return Path(path).resolve()
    return None


def usable_compilers(compilers) -> list:
    """Those of compilers whose sanitized builds this process can load."""
    here = loaded_runtime()
    return [cc for cc in compilers if here is not None and runtime(cc) == here]


def child_env(cc: toolchain.Compiler, base: dict | None = None,
              report_dir: Path | None = REPORT_DIR) -> dict:
    """Environment for a process that loads cc's sanitized builds."""
    rt = runtime(cc)
    if rt is None:
        raise ToolchainError(f"{cc.name} has no AddressSanitizer runtime here "
                             f"(looked for {_RUNTIME_NAME.get(cc.family, '?')})")
    env = dict(os.environ if base is None else base)
    env["LD_PRELOAD"] = str(rt)
    env["SHIMLAB_SANITIZE"] = "1"
    asan, ubsan = ASAN_OPTIONS, UBSAN_OPTIONS
    if report_dir is not None:
        # reports go to files: pytest's output capture would lose the
        # stderr of a process that a sanitizer aborts
        asan += f":log_path={report_dir}/asan"
        ubsan += f":log_path={report_dir}/ubsan"
    env["ASAN_OPTIONS"], env["UBSAN_OPTIONS"] = asan, ubsan
    return env


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m shimlab.sanitize",
                                 description="run a command with sanitized interpreter builds")
    ap.add_argument("--cc", default=toolchain.PREFERRED,
                    help="compiler whose builds (and runtime) to use")
    ap.add_argument("--if-present", action="store_true",
                    help="skip (exit 0) when the compiler is not installed")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given")
    if args.if_present and args.cc not in {c.name for c in toolchain.find_compilers()}:
        # clang-22 is an optional package (scripts/setup.sh): no pass, not a failure
        print(f"sanitize: {args.cc} is not installed; skipped", file=sys.stderr)
        return 0
    try:
        cc = toolchain.get_compiler(args.cc)
        env = child_env(cc)
    except ToolchainError as e:
        print(f"shimlab.sanitize: {e}", file=sys.stderr)
        return 1
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    for old in REPORT_DIR.glob("*san.*"):
        old.unlink()
    print(f"sanitize: {cc.name}, LD_PRELOAD={env['LD_PRELOAD']}", file=sys.stderr, flush=True)
    rc = subprocess.run(cmd, env=env).returncode
    reports = sorted(REPORT_DIR.glob("*san.*"), key=lambda p: p.stat().st_mtime)
    if reports:
        # a shrinking fuzzer writes one report per attempt: the first in
        # full, then each distinct summary line once
        print(f"\n==== sanitizer report {reports[0]} ====\n"
              f"{reports[0].read_text(errors='replace')}", file=sys.stderr)
        summaries: dict[str, int] = {}
        for r in reports:
            for line in r.read_text(errors="replace").splitlines():
                if line.startswith("SUMMARY:"):
                    summaries[line] = summaries.get(line, 0) + 1
        print(f"==== {len(reports)} sanitizer reports in {REPORT_DIR}:", file=sys.stderr)
        for line, n in summaries.items():
            print(f"  {n} x {line}", file=sys.stderr)
        if rc == 0:
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
