"""Profile-guided builds of the interpreters.

An instrumented build is trained on workloads in a child process (the
profile is written when that process exits normally), the profile is cached
under build/pgo/ by everything it depends on, and build.build(profile=...)
compiles with it.  clang: -fprofile-instr-generate, llvm-profdata merge,
-fprofile-instr-use; gcc: -fprofile-generate, -fprofile-use.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .. import childpy, modes, toolchain
from ..digest import sha256
from ..errors import BuildError, RunError, ToolchainError
from ..frontend import load_program
from ..paths import CSRC, EXAMPLES, build_root
from ..result import describe_error
from . import build as build_mod
from . import generate, loader

# Training programs, deliberately not the workloads the experiments measure
# (bf/nested.bf, minipy/nested_loops.py, ...): a profile should describe
# typical programs, not the benchmark.
TRAINING = ("bf/fib.bf", "bf/rot13.bf", "minipy/sieve.py", "minipy/fib.py")


def llvm_profdata(cc: toolchain.Compiler) -> str:
    """The llvm-profdata of the same LLVM version as clang `cc`."""
    major = cc.short_version.split(".")[0]
    real = Path(os.path.realpath(cc.path))
    candidates = [real.parent / "llvm-profdata", Path(f"/usr/lib/llvm-{major}/bin/llvm-profdata")]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which(f"llvm-profdata-{major}")
    if found:
        return found
    raise ToolchainError(f"llvm-profdata for {cc.name} not found (looked for "
                         f"{', '.join(map(str, dict.fromkeys(candidates)))} and "
                         f"llvm-profdata-{major} on PATH; apt-get install llvm-{major})")


def generate_flags(cc: toolchain.Compiler, directory: Path) -> tuple[str, ...]:
    """Flags of the instrumented build whose profile goes to `directory`."""
    if cc.family == "clang":
        return ("-fprofile-instr-generate",)     # where to: LLVM_PROFILE_FILE at run time
    # gcc names each .gcda after the object's auxiliary path; a fixed
    # -dumpdir makes that name the same in the instrumented and the final build
    return (f"-fprofile-generate={directory}", "-fprofile-update=single",
            "-dumpdir", f"{directory}/")


def _workloads(workloads) -> list[tuple[str, str | None]]:
    """(program, input or None) for each training program."""
    out = []
    for w in workloads or TRAINING:
        path = Path(w) if Path(w).is_absolute() else EXAMPLES / w
        if not path.exists():
            raise RunError(f"{w}: no such training program")
        inp = path.with_suffix(".in")
        out.append((str(path), str(inp) if inp.exists() else None))
    return out


def _profile_dir(mode: str, cc: toolchain.Compiler, flags, training) -> Path:
    h = sha256()
    parts = [json.dumps(generate.render(), sort_keys=True), cc.path, cc.version, mode,
             " ".join(flags), (CSRC / "driver.c").read_text(),
             (CSRC / "vm.h").read_text()]
    for prog, inp in training:
        parts += [Path(prog).name, Path(prog).read_text(errors="replace"),
                  Path(inp).read_text(errors="replace") if inp else ""]
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return build_root() / "pgo" / f"{mode}-{cc.name}-{h.hexdigest()[:16]}"


def train(mode: str, compiler: str | None = None, flags=build_mod.DEFAULT_FLAGS,
          workloads=None, timeout: float = 600) -> Path:
    """The profile of `mode` built by `compiler` with `flags`, trained on
    `workloads` (default TRAINING); cached, so training happens once."""
    cc = toolchain.get_compiler(compiler, need=set(modes.get(mode).features))
    flags = tuple(flags)
    profdata = llvm_profdata(cc) if cc.family == "clang" else None   # fail before any work
    training = _workloads(workloads)
    d = _profile_dir(mode, cc, flags, training)
    profile = d / ("merged.profdata" if cc.family == "clang" else "gcda")
    done = d / "training.json"
    d.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{d}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # another process may be training the same
        if done.exists():
            return profile
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        gen = flags + generate_flags(cc, profile)
        build_mod.build(mode, cc.name, gen)        # built here, so the child only loads it
        job = {"mode": mode, "cc": cc.name, "flags": list(gen), "training": training}
        try:
            proc = childpy.run_module("shimlab.interp.pgo", job, timeout,
                                      LLVM_PROFILE_FILE=str(d / "raw" / "train-%p.profraw"))
        except subprocess.TimeoutExpired:
            raise RunError(f"PGO training of {mode}/{cc.name} timed out") from None
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            raise RunError(f"PGO training of {mode}/{cc.name} failed: {tail}")
        if cc.family == "clang":
            raws = sorted(str(p) for p in (d / "raw").glob("*.profraw"))
            if not raws:
                raise BuildError(f"PGO training of {mode}/{cc.name} wrote no profile")
            merge = subprocess.run([profdata, "merge", "-o", str(profile), *raws],
                                   capture_output=True, text=True)
            if merge.returncode != 0:
                raise BuildError(f"llvm-profdata merge failed: {merge.stderr.strip()[:300]}")
            shutil.rmtree(d / "raw", ignore_errors=True)
        elif not any(profile.rglob("*.gcda")):
            raise BuildError(f"PGO training of {mode}/{cc.name} wrote no .gcda profile")
        done.write_text(json.dumps({"mode": mode, "compiler": cc.name, "flags": list(flags),
                                    "training": [Path(p).name for p, _ in training]}, indent=1))
    return profile


def build(mode: str, compiler: str | None = None, flags=build_mod.DEFAULT_FLAGS,
          workloads=None) -> build_mod.Build:
    """The profile-guided build (training first if there is no profile yet)."""
    profile = train(mode, compiler, flags, workloads)
    return build_mod.build(mode, compiler, tuple(flags), profile=profile)


def profile_summary(profile: Path, cc: toolchain.Compiler | None = None) -> str:
    """One line on what a profile holds (for notebooks and reports)."""
    profile = Path(profile)
    if profile.is_dir():
        return f"{len(list(profile.rglob('*.gcda')))} .gcda file(s)"
    if cc is not None and cc.family == "clang":
        show = subprocess.run([llvm_profdata(cc), "show", str(profile)], capture_output=True,
                              text=True)
        funcs = re.search(r"Total functions:\s*(\d+)", show.stdout)
        top = re.search(r"Maximum function count:\s*(\d+)", show.stdout)
        if funcs and top:
            return f"{funcs.group(1)} functions, hottest entered {int(top.group(1)):,} times"
    return f"{profile.stat().st_size} bytes of .profdata"


def _train_child() -> int:
    """In the child: run every training program once on the instrumented
    build, then exit normally so the runtime writes the profile."""
    job = json.loads(sys.stdin.read())
    b = build_mod.build(job["mode"], job["cc"], tuple(job["flags"]))
    for prog, inp in job["training"]:
        data = Path(inp).read_bytes() if inp else b""
        program = load_program(prog)
        result = loader.run(b, program, data)
        if result.status:
            print(f"{Path(prog).name}: {describe_error(program, result)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(_train_child())
