"""Your own CPython variants, built, checked and timed:

    python -m shimlab.census.variants --cpython ~/src/cpython [--quick]
    python -m shimlab.census.variants --standin [--quick]

With --cpython, each variant (computed goto under GCC, clang 19 and 22; the
tail-call interpreter under clang 19 and 22; --without-computed-gotos) is
configured and built out of tree under build/cpython/VARIANT, `census` reads
its eval loop, and the timing programs of examples/cpython-timing run on it
under pyperf; times are reported as ratios to the computed-goto build with
shimlab's bootstrap intervals.  --standin does the same with the CPython
stand-in (csrc/standin) in place of CPython, timed as a command under pyperf:
the path without a CPython checkout (and how it is tested).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import toolchain
from ..bench import stats
from ..bench.table import table
from ..errors import BuildError, ShimlabError
from ..paths import EXAMPLES, build_root
from . import census, standin

PROGRAMS = EXAMPLES / "cpython-timing"
STANDIN_N = 2_000_000           # the stand-in's loop count per run (its own main())


@dataclass(frozen=True)
class Variant:
    name: str
    cc: str
    configure: tuple[str, ...]
    style: str                  # the stand-in's style for the same build


VARIANTS = (
    Variant("computed-goto", "gcc-12", ("--with-computed-gotos",), "computed-goto"),
    Variant("computed-goto-clang-19", "clang-19", ("--with-computed-gotos",), "computed-goto"),
    Variant("computed-goto-clang-22", "clang-22", ("--with-computed-gotos",), "computed-goto"),
    Variant("tail-call-clang-19", "clang-19", ("--with-tail-call-interp",), "tail-call"),
    Variant("tail-call-clang-22", "clang-22", ("--with-tail-call-interp",), "tail-call"),
    Variant("switch", "gcc-12", ("--without-computed-gotos",), "switch"),
)
BASELINE = "computed-goto"


def _run(cmd: list[str], cwd: Path, what: str, env=None) -> None:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        tail = (p.stderr.strip() or p.stdout.strip()).splitlines()[-1:] or ["?"]
        raise BuildError(f"{what} failed (exit {p.returncode}): {tail[0]}")


def build_cpython(checkout: Path, v: Variant, optimize: bool, jobs: int = 2) -> Path:
    """CPython from `checkout` configured as variant `v`, built out of tree
    (an existing build is reused); returns its ./python."""
    configure = checkout / "configure"
    if not configure.is_file():
        raise ShimlabError(f"--cpython {checkout}: no configure script there (a CPython "
                           f"checkout has one at its top)")
    cc = toolchain.get_compiler(v.cc)
    out = build_root() / "cpython" / v.name
    python = out / "python"
    if not python.exists():
        out.mkdir(parents=True, exist_ok=True)
        flags = list(v.configure) + (["--enable-optimizations", "--with-lto"] if optimize else [])
        _run([str(configure), f"CC={cc.path}", *flags], out, f"configure {v.name}")
        _run(["make", f"-j{jobs}"], out, f"make {v.name}")
    return python


def _pyperf_env(extra: dict) -> dict:
    import pyperf
    path = [str(Path(pyperf.__file__).parent.parent), str(PROGRAMS)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), **extra}


def _runs(out: Path) -> list[list[float]]:
    import pyperf
    bench = pyperf.Benchmark.load(str(out))
    return [list(r.values) for r in bench.get_runs() if r.values]


def _pyperf_options(quick: bool) -> list[str]:
    return ["-p", "3", "-n", "3", "-w", "1", "-l", "1"] if quick else ["-p", "10", "-n", "5"]


def time_python(python: Path, program: Path, out: Path, quick: bool) -> list[list[float]]:
    """Seconds per run of one timing program under `python`, one list per worker process."""
    out.unlink(missing_ok=True)
    env = _pyperf_env({"SHIMLAB_TIMING_N": "2000" if quick else "20000"})
    _run([str(python), str(program), "-o", str(out), "--quiet", *_pyperf_options(quick)],
         program.parent, f"{program.name} under {python}", env=env)
    return _runs(out)


def time_command(cmd: list[str], out: Path, quick: bool) -> list[list[float]]:
    out.unlink(missing_ok=True)
    _run([sys.executable, "-m", "pyperf", "command", "-o", str(out), "--quiet",
          *_pyperf_options(quick), "--", *cmd], out.parent, f"{cmd[0]} under pyperf",
         env=_pyperf_env({}))
    return _runs(out)


def run(checkout: Path | None, names: list[str], quick: bool, optimize: bool,
        output: Path) -> dict:
    """Builds, checks and times each variant; returns (and writes) the results."""
    chosen = [v for v in VARIANTS if v.name in names] if names else list(VARIANTS)
    if names and len(chosen) != len(set(names)):
        unknown = sorted(set(names) - {v.name for v in VARIANTS})
        raise ShimlabError(f"unknown variant(s) {', '.join(unknown)} (known: "
                           f"{', '.join(v.name for v in VARIANTS)})")
    work = build_root() / "cpython" / ("standin" if checkout is None else "timings")
    work.mkdir(parents=True, exist_ok=True)
    rows, notes = {}, []
    for v in chosen:
        if checkout is None and not standin.can_build(v.style, v.cc):
            notes.append(f"{v.name}: {v.cc} is not here or cannot build it; left out")
            continue
        try:
            binary = (standin.build(v.style, v.cc) if checkout is None
                      else build_cpython(checkout, v, optimize))
        except (toolchain.ToolchainError, BuildError) as e:
            notes.append(f"{v.name}: {e}; left out")
            continue
        report = census(binary)
        if checkout is None:
            times = {"stand-in loop": time_command([str(binary), str(STANDIN_N)],
                                                   work / f"{v.name}.json", quick)}
        else:
            times = {p.stem: time_python(binary, p, work / f"{v.name}-{p.stem}.json", quick)
                     for p in sorted(PROGRAMS.glob("[!_]*.py"))}
        rows[v.name] = {"variant": v.name, "cc": v.cc, "binary": str(binary),
                        "census": report.to_json(), "times": times}
    if BASELINE not in rows:
        raise ShimlabError(f"the baseline variant {BASELINE} could not be built "
                           f"({'; '.join(notes) or 'not chosen'})")
    for row in rows.values():
        row["vs_baseline"] = {}
        for prog, groups in row["times"].items():
            r, lo, hi = stats.ratio_ci(groups, rows[BASELINE]["times"][prog])
            row["vs_baseline"][prog] = {"ratio": r, "ci95": [lo, hi],
                                        "verdict": stats.verdict(r, lo, hi)}
    result = {"checkout": str(checkout) if checkout else None, "standin": checkout is None,
              "quick": quick, "baseline": BASELINE, "variants": list(rows.values()),
              "notes": notes}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1) + "\n")
    return result


def format_result(result: dict) -> str:
    progs = list(result["variants"][0]["vs_baseline"]) if result["variants"] else []
    rows = []
    for row in result["variants"]:
        c = row["census"]
        jumps = c["handler_jumps"] if c["kind"] == "tail call" else c["indirect_jumps"]
        cells = [row["variant"], c["compiler"], c["kind"], jumps,
                 "MERGED" if c["merged"] else "ok"]
        for p in progs:
            x = row["vs_baseline"][p]
            cells.append(f"{x['ratio']:.3f} [{x['ci95'][0]:.3f}, {x['ci95'][1]:.3f}]")
        rows.append(cells)
    head = ["variant", "compiler", "kind", "dispatch jumps", "check"] + \
        [f"{p} vs {result['baseline']}" for p in progs]
    text = table(rows, head)
    return text + "".join(f"\nnote: {n}" for n in result["notes"]) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m shimlab.census.variants",
                                 description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--cpython", type=Path, metavar="CHECKOUT",
                     help="a CPython source checkout to build each variant from")
    src.add_argument("--standin", action="store_true",
                     help="the CPython stand-in (csrc/standin) instead: no checkout needed")
    ap.add_argument("--variants", default="", help="comma-separated names (default: all)")
    ap.add_argument("--quick", action="store_true", help="few pyperf processes and values")
    ap.add_argument("--optimize", action="store_true",
                    help="--enable-optimizations --with-lto (PGO; each build takes long)")
    ap.add_argument("-o", "--output", type=Path, default=Path("results/cpython-variants.json"),
                    help="where the results JSON goes")
    args = ap.parse_args(argv)
    try:
        result = run(None if args.standin else args.cpython.expanduser(),
                     [n for n in args.variants.split(",") if n], args.quick, args.optimize,
                     args.output)
    except ShimlabError as e:
        print(f"shimlab: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(format_result(result))
    print(f"results: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
