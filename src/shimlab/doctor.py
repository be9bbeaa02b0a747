"""`shimlab doctor`: what this machine can build and measure.

Prints the compilers and their probed features, the modes each can build,
PeachPy, valgrind/callgrind, hardware performance counters and the CPU facts
that matter for timing.  Returns 0 when the default toolchain builds every
dispatch mode, 1 otherwise (after a last line naming the package to install).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import modes, perfcounter, toolchain
from .errors import ShimlabError, ToolchainError

PEACHPY_MISSING = "PeachPy missing: apt-get install python3-peachpy (then make setup)"


# ------------------------------------------------------------------ sections

def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip()]
    lines += [fmt.format(*r).rstrip() for r in rows]
    return lines


def compilers_section(compilers) -> list[str]:
    if not compilers:
        return ["  no C compiler found on PATH "
                f"(looked for {', '.join(toolchain.CANDIDATES)})"]
    header = ["name", "version", "path", *toolchain.FEATURES]
    rows = [[cc.name, cc.short_version, cc.path,
             *("yes" if cc.supports(f) else "no" for f in toolchain.FEATURES)]
            for cc in compilers]
    lines = ["  " + ln for ln in _table(rows, header)]
    lines.append("")
    lines.append("  modes each compiler can build:")
    width = max(len(cc.name) for cc in compilers)
    for cc in compilers:
        lines.append(f"    {cc.name:<{width}}  {', '.join(cc.modes) or '(none)'}")
    return lines


def default_section() -> tuple[list[str], list[str]]:
    """Lines for the default compiler per mode, and the packages that would fix a gap."""
    lines, fixes = [], []
    width = max(map(len, modes.NAMES))
    for mode in modes.NAMES:
        need = modes.get(mode).features
        try:
            cc = toolchain.default_compiler(need)
            lines.append(f"  {mode:<{width}} {cc.name}" + baseline_note(mode, cc))
        except ToolchainError as e:
            lines.append(f"  {mode:<{width}} NONE: {e}")
            # clang-19 builds every mode, whichever one is missing
            if toolchain.PREFERRED not in fixes:
                fixes.append(toolchain.PREFERRED)
    return lines, fixes


def baseline_note(mode: str, cc) -> str:
    """For the goto mode, the baseline check of its default build: the default
    is chosen to keep one dispatch jump per handler, and this says whether it does."""
    if mode != "goto":
        return ""
    skipped = sorted(toolchain.MERGES_COMPUTED_GOTO - {cc.name})
    why = f"; {', '.join(skipped)} skipped: its goto dispatch merges" if skipped else ""
    from .interp import build, dispatch_check
    try:
        report = dispatch_check.analyze(build.build(mode, cc.name))
    except ShimlabError as e:
        return f"  (baseline check failed to run: {e})"
    if report.flagged:
        return ("  (baseline check: MERGED, a broken goto baseline; install gcc-12 or "
                "clang-22 for one that keeps a dispatch jump per handler)")
    own = sum(1 for h in report.handlers if h.own_sites)
    return (f"  (baseline check passes: {own} of {len(report.handlers)} handlers dispatch "
            f"on their own{why})")


def capstone_section() -> list[str]:
    """The disassembler of `dis --native`, the stencil listings and the contract probe."""
    from . import disasm
    try:
        insn = disasm.disassemble(bytes([0x41, 0xff, 0x24, 0xc6]))[0]   # jmp [r14 + rax*8]
    except ShimlabError as e:
        return [f"  {e}"]
    import capstone
    where = os.path.dirname(capstone.__file__)
    check = "(ok)" if insn.indirect_jump else "(WRONG: not seen as an indirect jump)"
    return [f"  capstone {capstone.__version__} importable from {where}",
            f"  reads {insn.text} as an indirect jump {check}"]


def peachpy_section() -> list[str]:
    try:
        import peachpy  # noqa: F401
        from peachpy.x86_64 import ADD, r13
    except Exception as e:  # ImportError, or a missing dependency such as six
        detail = f" ({type(e).__name__}: {e})" if not isinstance(e, ModuleNotFoundError) \
            or getattr(e, "name", "") != "peachpy" else ""
        return [f"  {PEACHPY_MISSING}{detail}"]
    where = os.path.dirname(peachpy.__file__)
    real = os.path.realpath(where)
    via = f" -> {real}" if real != where else ""
    try:
        code = bytes(ADD(r13, 1).encode()).hex()
        check = "encodes ADD r13, 1 as " + code + (" (ok)" if code == "4983c501" else " (WRONG)")
    except Exception as e:
        check = f"cannot encode: {type(e).__name__}: {e}"
    return [f"  PeachPy importable from {peachpy.__file__}{via}", f"  {check}"]


def _run(cmd, timeout=30) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def valgrind_section() -> list[str]:
    path = shutil.which("valgrind")
    if path is None:
        return ["  valgrind: missing (apt-get install valgrind)",
                "  callgrind: missing (apt-get install valgrind)"]
    proc = _run([path, "--version"])
    version = proc.stdout.strip() if proc and proc.returncode == 0 else "?"
    lines = [f"  valgrind: {version} ({path})"]
    true = shutil.which("true") or "/bin/true"
    proc = _run([path, "--tool=callgrind", "--callgrind-out-file=/dev/null", "-q", true],
                timeout=60)
    if proc is not None and proc.returncode == 0:
        lines.append("  callgrind: works")
    else:
        err = (proc.stderr.strip().splitlines() or ["?"])[-1] if proc else "did not run"
        lines.append(f"  callgrind: does not work ({err})")
    return lines


def perf_section() -> tuple[list[str], bool]:
    lines, works = [], False
    perf = shutil.which("perf")
    if perf is None:
        lines.append("  perf: missing (apt-get install linux-perf)")
    else:
        proc = _run([perf, "stat", "-x,", "-e", "instructions", "true"])
        if proc is None:
            lines.append("  perf stat -e instructions: did not run")
        else:
            row = next((ln for ln in proc.stderr.splitlines() if "instructions" in ln), "")
            value = row.split(",")[0] if row else ""
            if proc.returncode == 0 and value.strip().isdigit():
                works = True
                lines.append(f"  perf stat -e instructions: works ({value} for `true`)")
            elif "not supported" in row:
                lines.append("  perf stat -e instructions: not supported")
            elif "not counted" in row:
                lines.append("  perf stat -e instructions: not counted")
            else:
                last = (proc.stderr.strip().splitlines() or ["?"])[-1]
                lines.append(f"  perf stat -e instructions: fails ({last})")
    ok, desc = perfcounter.probe()
    works = works or ok
    lines.append(f"  perf_event_open(PERF_COUNT_HW_INSTRUCTIONS): {desc}")
    lines.append("  hardware counters: " + (
        "available" if works else
        "not supported here; instruction counts come from valgrind --tool=callgrind"))
    return lines, works


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_section() -> list[str]:
    info = _read("/proc/cpuinfo") or ""
    model = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
    flags_m = re.search(r"^flags\s*:\s*(.+)$", info, re.M)
    flags = set(flags_m.group(1).split()) if flags_m else set()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 0
    governor = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") \
        or "n/a (no cpufreq)"
    aslr = _read("/proc/sys/kernel/randomize_va_space")
    aslr_desc = {"0": "0 (off)", "1": "1 (partial: stack, mmap, vdso)",
                 "2": "2 (full: also the heap)"}.get(aslr or "", aslr or "n/a")
    tsc = ", ".join(f"{f} {'yes' if f in flags else 'no'}"
                    for f in ("constant_tsc", "nonstop_tsc", "rdtscp"))
    return [f"  model: {model.group(1).strip() if model else 'unknown'}",
            f"  CPUs: {os.cpu_count()} ({usable} usable by this process)",
            f"  frequency governor: {governor}",
            f"  ASLR (kernel.randomize_va_space): {aslr_desc}",
            f"  TSC: {tsc}"]


# ------------------------------------------------------------------ the report

def run(out=sys.stdout) -> int:
    def emit(lines=()):
        for ln in lines:
            print(ln, file=out)

    compilers = toolchain.find_compilers()
    emit(["shimlab doctor", "", "C compilers (features probed by compiling, cached in "
          f"{toolchain.cache_path()}):"])
    emit(compilers_section(compilers))
    emit(["", "default compiler per dispatch mode:"])
    default_lines, fixes = default_section()
    emit(default_lines)
    emit(["", "PeachPy (stencils):"])
    emit(peachpy_section())
    emit(["", "capstone (dis --native, stencil listings):"])
    emit(capstone_section())
    emit(["", "valgrind:"])
    emit(valgrind_section())
    emit(["", "hardware performance counters:"])
    perf_lines, _ = perf_section()
    emit(perf_lines)
    emit(["", "CPU:"])
    emit(cpu_section())
    emit([""])
    if fixes:
        emit([f"NOT OK: the default toolchain cannot build every mode; "
              f"install: apt-get install {' '.join(fixes)}"])
        return 1
    emit(["OK: the default toolchain builds every dispatch mode "
          f"({', '.join(modes.NAMES)})"])
    return 0


if __name__ == "__main__":
    sys.exit(run())
