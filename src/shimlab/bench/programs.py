"""`shimlab bench programs`: whole programs under the tail-call interpreter
and the JIT modes.  Their inner loops get traces and their outer loops
mostly do not, so they cross often: this shows how much of a crossing's cost
survives in a real program.  Ratios are time against `tailcall`."""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from .. import isa, toolchain
from .. import modes as mode_registry
from ..errors import ShimlabError
from ..paths import EXAMPLES
from ..frontend import bf
from ..jit import optimize
from ..jit.defaults import PAYBACK_MS
from . import harness, stats
from .results import ResultFile, machine_line
from .table import table

MODES = ("tailcall",) + mode_registry.JIT
WORKLOADS = {"quick": ["bf/nested.bf", "minipy/nested_loops.py"],
             "full": ["bf/heavy.bf", "bf/mandel.bf", "bf/nested.bf", "bf/squares.bf", "minipy/heavy.py",
                      "minipy/nested_loops.py", "minipy/sieve.py"]}


def configs_for(workloads: list[str], cc: str, modes=MODES, caches=(0,), jit_opts=(0,),
                bf_opts=(0,)) -> list[harness.Config]:
    """Each workload (a path; its .in file, if any, is the input) in each mode,
    at each number of cached values K in `caches` (--cache), each trace
    optimizer level in `jit_opts` (JIT modes) and each BF front end level in
    `bf_opts` (BF workloads)."""
    configs = []
    for w in workloads:
        if not Path(w).exists():
            raise ShimlabError(f"{w}: no such workload")
        inp = Path(w).with_suffix(".in")
        levels = bf_opts if _is_bf(w) else (0,)
        configs += [harness.Config("programs", w, m, cc, str(inp) if inp.exists() else None,
                                   cache=k, jit_opt=o, bf_opt=b)
                    for b in levels for k in caches for m in modes
                    for o in (jit_opts if mode_registry.is_jit(m) else (0,))]
    return configs


def _is_bf(workload: str) -> bool:
    return Path(workload).suffix.lower() in (".b", ".bf")


def ratios(results: ResultFile, workloads: list[str], cc: str, modes=MODES,
           caches=(0,), jit_opts=(0,), bf_opts=(0,)) -> list[dict]:
    """One record per measured (workload, BF level, K, mode, trace optimizer
    level): median cycles per VM instruction and time against the same
    workload under tailcall at the first K of `caches` and the first BF level
    of `bf_opts` (K = 0 and --bf-opt 0 unless asked otherwise), with its 95%
    bootstrap interval and verdict.  A workload without that baseline has no
    records."""
    out = []
    for w in workloads:
        name = Path(w).name
        levels = bf_opts if _is_bf(w) else (0,)
        base = harness.Config("programs", w, "tailcall", cc, cache=caches[0],
                              bf_opt=levels[0]).key
        if base not in results:
            continue
        bg = results.get(base).cycles_groups()
        for b in levels:
            for k in caches:
                for m in modes:
                    for o in (jit_opts if mode_registry.is_jit(m) else (0,)):
                        key = harness.Config("programs", w, m, cc, cache=k, jit_opt=o,
                                             bf_opt=b).key
                        if key not in results:
                            continue
                        res = results.get(key)
                        g = res.cycles_groups()
                        n = res.runs[0].vm_instructions
                        r, lo, hi = stats.ratio_ci(g, bg)
                        crossings = [x.crossings for x in res.runs if x.crossings is not None]
                        per_s = (stats.median(crossings) / (stats.median(
                            [v for ns in res.ns_groups() for v in ns]) / 1e9)
                            if crossings else None)
                        out.append({"workload": name, "mode": m, "cache": k, "jit_opt": o,
                                    "bf_opt": b, "crossings_per_run": (stats.median(crossings)
                                                                       if crossings else None),
                                    "crossings_per_s": per_s,
                                    "cycles_per_instr": stats.median(g) / n,
                                    "vs_tailcall": r, "ci95": [lo, hi],
                                    "verdict": "baseline" if key == base
                                    else stats.verdict(r, lo, hi)})
    return out


# -- --stencil OP=NAME: prototype stencils against the standard ones ---------

@dataclass(frozen=True)
class StencilConfig(harness.Config):
    """A JIT configuration with prototype stencils in place of standard ones;
    its key ends in the overrides (the tag), its job carries them to the
    worker, and `base` is the key of the same configuration without them."""
    stencils: tuple = ()              # ((OP, NAME), ...)
    base: str = ""

    def job(self, warmup: int, samples: int, cpu: int | None) -> dict:
        return {**super().job(warmup, samples, cpu), "stencils": dict(self.stencils)}

    def describe(self) -> dict:
        d = super().describe()
        d.pop("base", None)
        return {**d, "stencils": stencil_tag(dict(self.stencils))}


def stencil_tag(overrides: dict) -> str:
    return "+".join(f"{op}={name}" for op, name in overrides.items())


def _load(c: harness.Config):
    """The program as the worker loads it for configuration c."""
    from ..frontend import load_program
    return load_program(c.workload, bf_opt=getattr(c, "bf_opt", 0))


def stencil_configs(configs: list[harness.Config], overrides: dict
                    ) -> tuple[list[StencilConfig], list[str]]:
    """A twin with the prototypes of each JIT configuration whose program
    runs an instruction of `overrides`; and a note for each workload left
    out (its rows would compare the standard stencils with themselves)."""
    wanted = {op.split(":")[0] for op in overrides}
    tag = stencil_tag(overrides)
    out, runs, notes = [], {}, []
    for c in configs:
        if not mode_registry.is_jit(c.mode):
            continue
        level = getattr(c, "bf_opt", 0)
        if (c.workload, level) not in runs:
            ops = {isa.INSTRUCTIONS[op].name for op, _ in _load(c).code}
            runs[c.workload, level] = bool(ops & wanted)
            if not runs[c.workload, level]:
                notes.append(f"{c.workload_name}" + (f" at --bf-opt {level}" if level else "")
                             + f" runs no {' or '.join(sorted(wanted))}: measured with the "
                             "standard stencils only")
        if runs[c.workload, level]:
            same = {f.name: getattr(c, f.name) for f in fields(harness.Config)}
            same["tag"] = "/".join(filter(None, (c.tag, tag)))
            out.append(StencilConfig(**same, stencils=tuple(overrides.items()), base=c.key))
    return out, notes


def stencil_ratios(results: ResultFile, configs: list[StencilConfig]) -> list[dict]:
    """Each measured prototype configuration against the same configuration
    with the standard stencils: time ratio, 95% bootstrap interval, verdict."""
    out = []
    for c in configs:
        if c.key not in results or c.base not in results:
            continue
        g, bg = results.get(c.key).cycles_groups(), results.get(c.base).cycles_groups()
        r, lo, hi = stats.ratio_ci(g, bg)
        out.append({"workload": c.workload_name, "mode": c.mode, "cache": c.cache,
                    "jit_opt": getattr(c, "jit_opt", 0), "bf_opt": getattr(c, "bf_opt", 0),
                    "stencils": stencil_tag(dict(c.stencils)), "vs_standard": r,
                    "ci95": [lo, hi], "verdict": stats.verdict(r, lo, hi)})
    return out


def _stencil_table(records: list[dict]) -> None:
    rows = [(r["workload"], str(r["bf_opt"]), r["mode"], str(r["jit_opt"]), str(r["cache"]),
             f"{r['vs_standard']:.3f}", f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]",
             r["verdict"]) for r in records]
    print(f"\nwith --stencil {records[0]['stencils']}, against the standard stencils "
          "(time ratio, same configuration):")
    print(table(rows, ["workload", "bf-opt", "mode", "jit-opt", "K", "vs standard", "95% CI",
                       "verdict"], align="lrlrrrll"))


# Options of one design only: given with the other one they would be ignored.
_CORPUS_ONLY = (("--mode", "mode"), ("--no-whole", "no_whole"), ("--before", "before"),
                ("--trace-cache", "trace_cache"))
_NOT_CORPUS = (("--quick", "quick"), ("--cache", "cache"), ("--stencil", "stencil"))


def check_options(args) -> None:
    """Every refusal of bench programs' options, before a compiler is probed
    or anything built: options of the other design, missing workloads,
    --before without a checkout, the results file's options."""
    corpus = getattr(args, "corpus", False)
    for flag, name in _NOT_CORPUS if corpus else _CORPUS_ONLY:
        if getattr(args, name, None):
            raise ShimlabError(f"{flag} does not apply to --corpus" if corpus
                               else f"{flag} applies to --corpus only")
    if corpus:
        from . import corpus_report
        corpus_report.entries_for(args.workload)
        before = getattr(args, "before", None)
        if before and not (Path(before) / ".venv" / "bin" / "python").exists():
            raise ShimlabError(f"--before {before}: no .venv/bin/python there (make setup in it)")
    else:
        harness.check_workloads(args.workload)
    harness.check_file_options(args)


def main(args) -> int:
    check_options(args)
    cc = toolchain.get_compiler(args.cc, need=set(mode_registry.get("jit-direct").features)).name
    if getattr(args, "corpus", False):
        return corpus_main(args, cc)
    workloads = args.workload or [str(EXAMPLES / w)
                                  for w in WORKLOADS["quick" if args.quick else "full"]]
    caches = sorted(set(getattr(args, "cache", None) or [0]))
    jit_opts = sorted(set(getattr(args, "jit_opt", None) or optimize.LEVELS))
    bf_opts = sorted(set(getattr(args, "bf_opt", None) or bf.LEVELS))
    configs = configs_for(workloads, cc, caches=caches, jit_opts=jit_opts, bf_opts=bf_opts)
    opts = harness.Options(processes=args.processes or (3 if args.quick else 5), warmup=2,
                           samples=args.samples or (10 if args.quick else 5), cpu=args.cpu,
                           code_layouts=getattr(args, "code_layouts", None) or 0,
                           tape_len=getattr(args, "tape_size", None) or harness.Options.tape_len)
    with_stencils, notes = [], []
    if getattr(args, "stencil", None):
        from ..abi import contract
        from ..jit import stencil_store
        overrides = stencil_store.parse_overrides(args.stencil, contract.state_of(cc))
        with_stencils, notes = stencil_configs(configs, overrides)
        configs += with_stencils     # (a wrong prototype fails its worker's check, untimed)
    results = harness.open_results(args, "programs", configs)
    path = results.path
    outcome = harness.measure_and_tell(configs, results, opts)
    if outcome.interrupted:
        return 130
    rows = []
    for w in workloads:
        records = ratios(results, [w], cc, caches=caches, jit_opts=jit_opts, bf_opts=bf_opts)
        for r in records:
            lo, hi = r["ci95"]
            per_s = r["crossings_per_s"]
            rows.append((r["workload"], str(r["bf_opt"]) if _is_bf(w) else "-", r["mode"],
                         str(r["jit_opt"]) if mode_registry.is_jit(r["mode"]) else "-",
                         str(r["cache"]), f"{r['cycles_per_instr']:.3f}",
                         f"{r['vs_tailcall']:.3f}", f"[{lo:.3f}, {hi:.3f}]", r["verdict"],
                         "-" if per_s is None else f"{per_s / 1e6:.3f}"))
        if records:
            rows.append(None)
    print(table(rows[:-1], ["workload", "bf-opt", "mode", "jit-opt", "K", "cycles/VM instr",
                            "vs tailcall", "95% CI", "verdict", "M crossings/s"],
                align="lrlrrlrllr"))
    print("M crossings/s: entries into traces from the interpreter and exits back to it, "
          "per second (counted in an untimed run; from --jit-opt 1 on, hot side exits are "
          "linked to traces and cross no more)")
    print(f"bf-opt, jit-opt: the BF front end's and the trace optimizer's levels; vs tailcall: "
          f"time against tailcall at --bf-opt {bf_opts[0]} (cycles/VM instr counts each "
          f"level's own instructions)")
    if caches != [0]:
        print(f"K: operand-stack values in registers (--cache); vs tailcall: time against "
              f"tailcall at K = {caches[0]}")
    print(f"({cc}; two warm-up runs first; a loop that gets hot later stops the timed runs,\n"
          f" is compiled, and the samples start over, so no sample holds a compile)")
    records = stencil_ratios(results, with_stencils)
    if records:
        _stencil_table(records)
    for note in notes:
        print(f"({note})")
    print(f"\nresults: {path}")
    return 1 if outcome.failures else 0


def corpus_main(args, cc: str) -> int:
    """--corpus: every program of corpus/corpus.toml (or of it, those
    --workload names), tailcall and the JIT (default: jit-direct at the
    default levels), steady state and whole process; the distributions."""
    from ..jit import defaults
    from . import corpus_report
    entries = corpus_report.entries_for(args.workload)
    modes_ = list(dict.fromkeys(["tailcall"] + (getattr(args, "mode", None) or ["jit-direct"])))
    jit_opts = sorted(set(getattr(args, "jit_opt", None) or [defaults.DEFAULT_LEVEL]))
    bf_opts = sorted(set(getattr(args, "bf_opt", None) or bf.LEVELS))
    before = getattr(args, "before", None)      # (check_options checked it)
    configs = corpus_report.configs(entries, cc, modes_, jit_opts, bf_opts,
                                    whole=not getattr(args, "no_whole", False),
                                    before=str(Path(before).resolve()) if before else None,
                                    trace_cache=bool(getattr(args, "trace_cache", False)))
    opts = harness.Options(processes=args.processes or 3, warmup=1, samples=args.samples or 3,
                           cpu=args.cpu, code_layouts=getattr(args, "code_layouts", None) or 3,
                           tape_len=getattr(args, "tape_size", None) or harness.Options.tape_len)
    results = harness.open_results(args, "programs", configs)
    outcome = harness.measure_and_tell(configs, results, opts)
    if outcome.interrupted:
        return 130
    print("\n".join(corpus_report.report(results, configs, entries)))
    print(f"({cc}; steady: one warm-up run, then {opts.samples} timed runs in each of "
          f"{opts.processes} worker processes over {opts.code_layouts} code layouts, a loop "
          "that gets hot later restarts the samples; "
          "whole: the same numbers of `shimlab run` processes, as a user's Python starts them, "
          f"bytecode cached, the JIT at run's defaults (nothing compiled before {PAYBACK_MS} ms "
          "in the interpreter), its trace cache off: every process records, optimizes and "
          "lays out every trace" + ("; tc, trace cache: with it on, each process after the "
                                    "first installs the last one's traces when its JIT starts, "
                                    "from the plans kept, and waits as long as the last "
                                    "one's length suggests)"
                                    if getattr(args, "trace_cache", False) else ")"))
    print(f"machine: {machine_line(results.environment)}")
    print(f"\nresults: {results.path}")
    return 1 if outcome.failures else 0
