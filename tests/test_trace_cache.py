"""The trace cache (jit/trace_cache.py): a trace recorded again is placed
from the plan an earlier run kept, and that must be exactly what compiling
it would place; a plan is used only under the key it was made under; a
damaged or stale file is replaced, never read as plans; off is off.

JIT code runs in forked children (isolate.call), as in test_jit.py; every
test keeps its plans in a folder of its own."""
from __future__ import annotations

import marshal
import os
import secrets
import subprocess
import sys
import zlib

import pytest

from conftest import EXAMPLES, get_build, interpreter_configs
from shimlab import isolate, oracle, vm
from shimlab.frontend import compile_text, load_program
from shimlab.jit import install, stencil_store, trace_cache

TAIL = sorted({cc for mode, cc in interpreter_configs() if mode == "tailcall"})
JIT_CC = TAIL[0] if TAIL else None
pytestmark = pytest.mark.skipif(JIT_CC is None, reason="no compiler here builds the JIT modes")

BASE = 0x7F00_1234_0000
LOOPS_BF = (EXAMPLES / "bf" / "nested.bf").read_text()     # loops hot by default
MANDEL = EXAMPLES / "bf" / "mandel.bf"
SIEVE_PY = EXAMPLES / "minipy" / "sieve.py"


@pytest.fixture(autouse=True)
def plans_folder(monkeypatch, tmp_path):
    """Plans kept in the test's own folder (the forked runs inherit it)."""
    folder = tmp_path / "traces"
    monkeypatch.setattr(trace_cache, "folder", lambda: folder)
    return folder


def _runs(program, runs, data=b"", count=False):
    """runs: [(mode, jit options)], one after another in one forked child (as
    separate processes would, each its own Loaded); returns per run (its
    Result, traces, traces placed from plans, the cache file or None)."""
    builds = [get_build(mode, JIT_CC, count=count, cache=opts.get("_k", 0))
              for mode, opts in runs]

    def child():
        out = []
        for b, (_, opts) in zip(builds, runs):
            opts = {k: v for k, v in opts.items() if k != "_k"}
            with vm.Loaded(b, program, data, jit=opts) as loaded:
                result = loaded.run()
                tc = loaded.jit.trace_cache
                out.append((result, len(loaded.jit.stats.traces), tc.hits if tc else None,
                            str(tc.path) if tc else None))
        return out
    return isolate.call(f"trace cache runs of {program.name}", child, timeout=120)


def _same(a, b):
    assert (a.output, a.status, a.err_pc, a.tape, a.head, a.counts) == \
        (b.output, b.status, b.err_pc, b.tape, b.head, b.counts)


def _bf(src=LOOPS_BF):
    return compile_text(src, "loops.bf", "bf", 1)


# ---- a plan places what compiling places -----------------------------------------------

CONFIGS = [("jit-direct", {"opt": 3}), ("jit-direct", {"opt": 0}), ("jit-direct", {"opt": 1}),
           ("jit-direct", {"opt": 3, "stats": True}), ("jit-trampoline", {"opt": 3}),
           ("jit-table", {"opt": 2}), ("jit-shim", {"opt": 3}),
           ("jit-direct-handler", {"opt": 3}), ("jit-direct", {"opt": 3, "_k": 2}),
           ("jit-trampoline", {"opt": 2, "_k": 3, "stats": True})]


@pytest.mark.parametrize("mode, opts", CONFIGS)
@pytest.mark.parametrize("path", [MANDEL, SIEVE_PY])
def test_a_plan_places_exactly_what_compiling_places(mode, opts, path):
    """Every trace of a run, laid out as the JIT does it, then through its
    plan (marshal and back, as a file keeps it): placed at two addresses,
    the code, exits, links, symbols and tallies are the same."""
    program = load_program(path)
    build = get_build(mode, JIT_CC, count=bool(opts.get("stats")), cache=opts.get("_k", 0))
    jit = {k: v for k, v in opts.items() if k != "_k"}

    def child():
        checked = []
        orig = install.Installer._lay_out

        def lay_out(self, trace, ctx, jit_compile):
            compiled, ns = orig(self, trace, ctx, jit_compile)
            plan = jit_compile.plan_of(compiled, trace)
            assert plan is not None, f"trace at pc {trace.start} has no plan"
            again = jit_compile.from_plan(marshal.loads(marshal.dumps(plan)), trace, ctx)
            for base in (BASE, BASE + 0x2_3440):
                a, b = jit_compile.place(compiled, base), jit_compile.place(again, base)
                for name in ("code", "body_size", "slot_size", "exits", "symbols", "patch_at",
                             "linked", "folded", "entry_tally", "block_ops", "retakes",
                             "entry_stub", "slot_at"):
                    assert getattr(a, name) == getattr(b, name), (trace.start, name)
            checked.append(len(trace.ops))
            return compiled, ns
        install.Installer._lay_out = lay_out
        with vm.Loaded(build, program, b"", jit=jit) as loaded:
            result = loaded.run()
        return result, checked
    result, checked = isolate.call(f"{mode} {path.name}", child, timeout=120)
    assert checked, "no trace was compiled"
    assert result.output == path.with_suffix(".out").read_bytes()


# ---- a warm run ----------------------------------------------------------------------

@pytest.mark.parametrize("mode, opts", [c for c in CONFIGS if c[0] != "jit-direct"
                                        or c[1] in ({"opt": 3}, {"opt": 3, "stats": True})])
def test_a_warm_run_places_every_trace_from_plans_and_verify_agrees(mode, opts, plans_folder):
    program = load_program(MANDEL)
    cold, warm, checked = _runs(program, [(mode, {**opts, "trace_cache": "on"}),
                                          (mode, {**opts, "trace_cache": "on"}),
                                          (mode, {**opts, "trace_cache": "verify"})],
                                count=bool(opts.get("stats")))
    assert cold[1] > 10 and cold[2] == 0 and cold[3] and os.path.exists(cold[3])
    # every trace of the cold run from its plan (installed when the JIT
    # starts, its side exits may heat up earlier: a new trace or two)
    assert cold[1] <= warm[2] <= warm[1] <= cold[1] + 3
    assert warm[1] <= checked[2] <= checked[1]    # and each plan what compiling makes
    want = MANDEL.with_suffix(".out").read_bytes()
    for r in (cold, warm, checked):
        assert r[0].output == want
    _same(cold[0], warm[0])


def test_plans_hold_for_random_bf_programs_against_the_oracle():
    """Small programs, cold then warm then verify, each held to the oracle."""
    import random
    rng = random.Random(24)
    for n in range(6):
        body = "".join(rng.choice(["+", "-", ">+<", ">-<", ">>++<<"])     # (moves balanced)
                       for _ in range(rng.randrange(3, 12)))
        src = f"{'+' * (5 + n)}[>{body}>+<<-]>>[-<+>]<." + LOOPS_BF
        program = compile_text(src, f"r{n}.bf", "bf", 1)
        want = oracle.run(program, b"")
        runs = _runs(program, [("jit-direct", {"trace_cache": "on", "threshold": 2})] * 2
                     + [("jit-direct", {"trace_cache": "verify", "threshold": 2})], count=True)
        for result, traces, hits, _ in runs:
            assert result.output == want.output and result.tape == want.tape
        # every trace of the cold run from its plan, warm and verified
        assert runs[0][1] <= runs[1][2] <= runs[1][1] and runs[1][1] <= runs[2][2]


# ---- the key decides -------------------------------------------------------------------

def test_other_options_or_another_program_use_no_plans(plans_folder):
    program = _bf()
    base = {"trace_cache": "on", "opt": 3}
    runs = _runs(program, [("jit-direct", base), ("jit-direct", base),
                           ("jit-direct", {**base, "opt": 2}),
                           ("jit-trampoline", base), ("jit-direct", {**base, "stats": True})])
    assert runs[0][2] == 0 and runs[1][2] >= runs[0][1] > 0
    assert [r[2] for r in runs[2:]] == [0, 0, 0]
    assert len({r[3] for r in runs[2:]} | {runs[0][3]}) == 4          # a file each
    other = _bf(LOOPS_BF + "+.")                                      # another program
    (r,) = _runs(other, [("jit-direct", base)])
    assert r[2] == 0 and r[3] != runs[0][3]


def test_a_program_run_on_a_longer_tape_uses_no_plans():
    program = _bf()
    builds = get_build("jit-direct", JIT_CC)

    def child():
        hits = []
        for tape in (30000, 30000, 40000):
            with vm.Loaded(builds, program, b"", tape_len=tape,
                           jit={"trace_cache": "on"}) as loaded:
                loaded.run()
                hits.append(loaded.jit.trace_cache.hits)
        return hits
    hits = isolate.call("tapes", child, timeout=60)
    assert hits[0] == 0 and hits[1] > 0 and hits[2] == 0


@pytest.mark.parametrize("what", ["code", "stencils"])
def test_an_edit_to_the_compiler_or_the_stencils_makes_every_plan_stale(monkeypatch, what):
    """The modules' source and the artifact's bytes are in the key: changed,
    no plan is used, and the file is made again under the new key."""
    program = _bf()
    runs = _runs(program, [("jit-direct", {"trace_cache": "on"})] * 2)
    assert runs[1][2] == runs[1][1] > 0
    if what == "code":
        monkeypatch.setattr(trace_cache, "code_digest", lambda: "an edited compile.py")
    else:
        real = stencil_store.digest
        monkeypatch.setattr(stencil_store, "digest",
                            lambda state=None: "rebuilt " + str(real(state)))
    again = _runs(program, [("jit-direct", {"trace_cache": "on"})] * 2)
    assert again[0][2] == 0 and again[1][2] == again[1][1]
    assert again[0][3] != runs[0][3]


@pytest.mark.parametrize("settled", [True, False], ids=["stamps", "bytes"])
def test_the_code_key_changes_with_any_module_that_decides_a_plan(tmp_path, monkeypatch,
                                                                    settled):
    """code_digest: the modules' stat stamps while all are settled (no file
    read), their bytes hashed otherwise; an edit to any one changes it."""
    import shutil
    from shimlab import cachefile
    for rel in trace_cache._SOURCES:
        (tmp_path / "shimlab" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(trace_cache.SRC_DIR, "shimlab", rel), tmp_path / "shimlab" / rel)
    monkeypatch.setattr(trace_cache, "SRC_DIR", str(tmp_path))
    monkeypatch.setattr(cachefile, "SETTLED_NS", -10**12 if settled else 10**15)
    keys = []
    for rel in (None, *trace_cache._SOURCES):
        if rel:
            with open(tmp_path / "shimlab" / rel, "a") as f:
                f.write("# edited\n")
        trace_cache.code_digest.cache_clear()
        keys.append(trace_cache.code_digest())
    trace_cache.code_digest.cache_clear()
    assert isinstance(keys[0], tuple if settled else str)
    assert len(set(keys)) == len(keys)


def test_a_plan_held_under_another_traces_key_is_not_used(plans_folder):
    """Each plan holds its trace's key whole: a plan filed under another
    trace's hash (swapped by hand here) is not used, and the run is right."""
    program = load_program(MANDEL)
    (cold,) = _runs(program, [("jit-direct", {"trace_cache": "on"})])
    path = cold[3]
    key, plans, replay = _read(path)
    names = list(plans)
    swapped = {names[i]: plans[names[(i + 1) % len(names)]] for i in range(len(names))}
    _write(path, key, swapped, replay)
    (warm,) = _runs(program, [("jit-direct", {"trace_cache": "on"})])
    assert warm[2] == 0 and warm[0].output == MANDEL.with_suffix(".out").read_bytes()


# ---- the replay list: a warm run installs the last run's traces when its JIT starts ----

def _runs_on(program, runs, count=False):
    """runs: [(mode, jit options, input)], one after another in one forked
    child; per run (its Result, traces, placed from plans, installed from
    the replay list, the tailcall interpreter's Result on that input)."""
    builds = [get_build(mode, JIT_CC, count=count, cache=opts.get("_k", 0))
              for mode, opts, _ in runs]
    plain = get_build("tailcall", JIT_CC, count=count)

    def child():
        out = []
        for b, (_, opts, data) in zip(builds, runs):
            opts = {k: v for k, v in opts.items() if k != "_k"}
            with vm.Loaded(b, program, data, jit=opts) as loaded:
                result = loaded.run()
                tc = loaded.jit.trace_cache
                out.append((result, len(loaded.jit.stats.traces), tc.hits, tc.replayed,
                            vm.run(plain, program, data)))
        return out
    return isolate.call(f"replayed runs of {program.name}", child, timeout=120)


@pytest.mark.parametrize("mode, opts", [("jit-direct", {"opt": 3}), ("jit-shim", {"opt": 3}),
                                        ("jit-table", {"opt": 2}),
                                        ("jit-trampoline", {"opt": 3, "_k": 3, "stats": True}),
                                        ("jit-direct", {"opt": 2, "_k": 2})])
def test_a_warm_run_installs_every_trace_of_the_last_run_when_its_jit_starts(mode, opts):
    program = load_program(MANDEL)
    on = {**opts, "trace_cache": "on"}
    cold, warm = _runs_on(program, [(mode, on, b""), (mode, on, b"")],
                          count=bool(opts.get("stats")))
    assert cold[1] > 10 and cold[3] == 0
    assert warm[3] == cold[1] and warm[2] >= cold[1]       # all of them, from their plans
    assert warm[0].output == MANDEL.with_suffix(".out").read_bytes()
    _same(cold[0], warm[0])


BFI_PROGRAM = b"++++++++[>++++++++<-]>+.+.+.>++++++++++.!"      # prints ABC


@pytest.mark.parametrize("name, other", [
    ("bfi.bf", BFI_PROGRAM),
    ("sort.bf", None),                 # the second half of its input
    ("countsort.bf", None),
])
def test_traces_replayed_on_another_input_are_right(name, other):
    """A trace is a guarded path, right wherever its start is reached: the
    traces recorded on one input, installed at once on another, give what
    the interpreter gives, tape and counts included."""
    path = EXAMPLES.parent / "corpus" / "bf" / name
    program = load_program(path)
    first = path.with_suffix(".in").read_bytes()
    second = other if other is not None else first[len(first) // 2:]
    on = {"opt": 3, "trace_cache": "on", "stats": True}
    cold, warm = _runs_on(program, [("jit-direct", on, first), ("jit-direct", on, second)],
                          count=True)
    assert cold[1] > 0 and warm[3] > 0
    assert cold[0].output == path.with_suffix(".out").read_bytes()
    _same(warm[0], warm[4])
    assert warm[0].output != cold[0].output            # (the other input did something else)


@pytest.mark.parametrize("spoil", ["another instruction", "not a list of traces"])
def test_a_replay_list_that_is_not_this_programs_is_not_installed(spoil):
    """Each listed instruction must be the program's at its pc (a list
    under a right key and CRC, but spoiled: nothing of it is installed)."""
    program = load_program(MANDEL)
    on = {"opt": 3, "trace_cache": "on"}
    (cold,) = _runs(program, [("jit-direct", on)])
    key, plans, replay = _read(cold[3])
    if spoil == "another instruction":
        start, ops, *rest = replay[-1]
        pc, op, arg, *more = ops[0]
        replay = replay[:-1] + [(start, ((pc, op, arg + 1, *more),) + ops[1:], *rest)]
    else:
        replay = [("a trace",)]
    _write(cold[3], key, plans, replay)
    (warm,) = _runs_on(program, [("jit-direct", on, b"")])
    assert warm[3] == 0 and warm[1] > 10
    assert warm[0].output == MANDEL.with_suffix(".out").read_bytes()


# ---- damaged files ---------------------------------------------------------------------

def _read(path):
    blob = open(path, "rb").read()
    return marshal.loads(blob[len(trace_cache.FORMAT) + 4:])


def _write(path, key, plans, replay):
    payload = marshal.dumps((key, plans, replay))
    with open(path, "wb") as f:
        f.write(trace_cache.FORMAT + zlib.crc32(payload).to_bytes(4, "little") + payload)


@pytest.mark.parametrize("damage", ["empty", "garbage", "truncated", "bit flip", "other format"])
def test_a_damaged_file_is_replaced_never_read(damage):
    program = load_program(MANDEL)
    (cold,) = _runs(program, [("jit-direct", {"trace_cache": "on"})])
    path = cold[3]
    blob = open(path, "rb").read()
    bad = {"empty": b"", "garbage": b"\x00not a trace cache" * 50,
           "truncated": blob[:len(blob) // 3],
           # a byte of the plans: marshal still reads it, only the CRC tells
           "bit flip": blob[:-300] + bytes([blob[-300] ^ 0x10]) + blob[-299:],
           "other format": b"SLTC0" + blob[5:]}[damage]
    open(path, "wb").write(bad)
    damaged, warm = _runs(program, [("jit-direct", {"trace_cache": "on"})] * 2)
    want = MANDEL.with_suffix(".out").read_bytes()
    assert damaged[2] == 0 and damaged[0].output == want
    assert warm[2] == warm[1] and warm[0].output == want           # made again


@pytest.mark.parametrize("change", ["unknown stencil", "sizes", "hole values"])
def test_a_plan_that_does_not_fit_its_stencils_is_compiled_again(change):
    """A well-formed plan (its CRC made to match) that names a stencil the
    artifact lacks, or sizes or holes not its stencils': the trace is
    compiled, the plan made anew."""
    program = load_program(MANDEL)
    (cold,) = _runs(program, [("jit-direct", {"trace_cache": "on"})])
    key, plans, replay = _read(cold[3])
    h, blob = next(iter(plans.items()))
    tkey, plan = marshal.loads(blob)
    plan = list(plan)
    if change == "unknown stencil":
        plan[0] = ("NO_SUCH_STENCIL",) + tuple(plan[0][1:])
    elif change == "sizes":
        plan[3] += 8
    else:
        plan[2] = (plan[2][0] + (1,),) + tuple(plan[2][1:])
    plans[h] = marshal.dumps((tkey, tuple(plan)))
    _write(cold[3], key, plans, replay)
    bad, warm = _runs(program, [("jit-direct", {"trace_cache": "on"})] * 2)
    want = MANDEL.with_suffix(".out").read_bytes()
    assert bad[2] == bad[1] - 1 and bad[0].output == want
    assert warm[2] == warm[1] and warm[0].output == want


def test_verify_fails_on_a_plan_that_differs_from_compiling():
    """A plan that fits but says another thing (a hole value: what only a
    wrong key could bring) is caught by verify, which compiles too."""
    program = load_program(MANDEL)
    (cold,) = _runs(program, [("jit-direct", {"trace_cache": "on"})])
    key, plans, replay = _read(cold[3])
    for h, blob in plans.items():
        tkey, plan = marshal.loads(blob)
        held = plan[2]
        k = next((i for i, v in enumerate(held) if v and all(isinstance(x, int) for x in v)),
                 None)
        if k is not None:
            held = held[:k] + ((held[k][0] + 1,) + held[k][1:],) + held[k + 1:]
            plans[h] = marshal.dumps((tkey, (plan[0], plan[1], held) + tuple(plan[3:])))
            break
    _write(cold[3], key, plans, replay)
    with pytest.raises(Exception, match="is not what compiling it makes"):
        _runs(program, [("jit-direct", {"trace_cache": "verify"})])


# ---- off, and what keeps no plans ----------------------------------------------------------

def test_off_keeps_and_reads_no_plans(plans_folder, monkeypatch):
    program = _bf()
    runs = _runs(program, [("jit-direct", {})] * 2 + [("jit-direct", {"trace_cache": False})])
    assert [r[3] for r in runs] == [None] * 3 and not plans_folder.exists()
    monkeypatch.setenv("SHIMLAB_TRACE_CACHE", "0")
    assert _runs(program, [("jit-direct", {"trace_cache": None})])[0][3] is None
    monkeypatch.setenv("SHIMLAB_TRACE_CACHE", "verify")
    assert _runs(program, [("jit-direct", {"trace_cache": None})])[0][3] is not None


def test_a_registered_or_overriding_stencil_keeps_no_plans():
    """A trace whose stencils are not all the artifact's has no key to be
    kept under: a stencil registered at run time, or --stencil's, turns
    the cache off for the run."""
    from shimlab.record import replace
    program = _bf()
    build = get_build("jit-direct", JIT_CC)

    def child():
        std = stencil_store.standard()
        mine = replace(std["CELL_ADD"], name="CELL_ADD:mine")
        out = []
        with stencil_store.extra_stencils([mine]):
            for stencils in ({}, {"CELL_ADD": "CELL_ADD:mine"}):
                with vm.Loaded(build, program, b"", jit={"trace_cache": "on",
                                                         "stencils": stencils}) as loaded:
                    loaded.run()
                    out.append((loaded.jit.trace_cache, len(loaded.jit.stats.traces)))
        return [(tc is None, n) for tc, n in out]
    (off, n), (off2, n2) = isolate.call("overrides", child, timeout=60)
    assert off and off2 and n > 0 and n2 > 0


def test_the_folder_keeps_the_latest_files(plans_folder, monkeypatch):
    monkeypatch.setattr(trace_cache, "MAX_FILES", 2)
    for n in range(4):
        _runs(_bf(LOOPS_BF + "+" * (n + 1) + "."), [("jit-direct", {"trace_cache": "on"})])
    assert len(list(plans_folder.glob("*.bin"))) == 2


def test_a_bad_setting_is_one_line_before_any_work():
    from shimlab.errors import JitError
    from shimlab.jit.defaults import trace_cache_setting
    with pytest.raises(JitError, match="SHIMLAB_TRACE_CACHE=maybe: choose on, off or verify"):
        trace_cache_setting("maybe")
    env = {**os.environ, "SHIMLAB_TRACE_CACHE": "maybe"}
    p = subprocess.run([sys.executable, "-m", "shimlab.cli", "run", str(EXAMPLES / "bf" /
                        "hello.bf"), "--mode", "jit-direct"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "shimlab: SHIMLAB_TRACE_CACHE=maybe: choose on, off or verify (or 1, 0)"]


def test_run_keeps_plans_by_default_and_stats_says_so(tmp_path):
    """`shimlab run`: on unless told; --stats names the plans used; a second
    run of the same program places every trace from them."""
    prog = tmp_path / "p.bf"
    # a program of its own, whose plans no earlier test run kept
    prog.write_text(LOOPS_BF + "+" * (7 + secrets.randbelow(1000)) + "[>+++<-]>.")
    env = {k: v for k, v in os.environ.items() if k != "SHIMLAB_TRACE_CACHE"}

    def run(*extra):
        # (a threshold: the default payback would outlast this short run)
        p = subprocess.run([sys.executable, "-m", "shimlab.cli", "run", str(prog), "--mode",
                            "jit-direct", "--stats", "--jit-threshold", "64", *extra],
                           capture_output=True, text=True, errors="replace", env=env,
                           timeout=120)     # (its one output byte is any byte)
        assert p.returncode == 0, p.stderr
        return [line for line in p.stderr.splitlines() if "trace cache" in line]
    first, second = run(), run()
    assert "trace cache (on): 0 of" in first[0] and ", 0 installed when the JIT" in first[0]
    made = int(first[0].split(" of ")[1].split(" trace(s)")[0])
    placed = int(second[0].split("trace cache (on): ")[1].split(" of ")[0])
    assert made > 0 and placed >= made and f", {made} installed when the JIT" in second[0]
    assert run("--no-trace-cache") == ["  trace cache: off (every trace optimized and laid out)"]
    import pathlib
    pathlib.Path(second[0].rsplit("(", 1)[1].rstrip(")")).unlink()


# ---- the benchmarks say whether it was on ------------------------------------------------

def test_bench_whole_processes_run_with_the_cache_as_configured(monkeypatch):
    """bench programs --corpus: whole processes with the trace cache off
    (every process compiles every trace), and with --trace-cache also with
    it on, side by side; a JIT configuration with it on has a key and a
    label of its own."""
    from shimlab.bench import corpus_report, harness, whole
    entries = corpus_report.entries_for(["mandel.bf"])
    for on in (False, True):
        cfgs = corpus_report.configs(entries, "cc", ["tailcall", "jit-direct"], [3], [0, 1],
                                     whole=True, trace_cache=on)
        jit_whole = [c for c in cfgs if c.mode == "jit-direct" and c.whole]
        assert [c.trace_cache for c in jit_whole] == ([False, True] if on else [False])
        assert not any(c.trace_cache for c in cfgs if c.mode == "tailcall" or not c.whole)
        assert [c.key.endswith("/tc") for c in jit_whole] == [c.trace_cache for c in jit_whole]
        assert [("tc" in corpus_report.label(c)) for c in jit_whole] == \
            [c.trace_cache for c in jit_whole]
        assert ("trace_cache" in jit_whole[-1].describe()) == on
        seen = {}

        def one(cmd, stdin, env, cwd=None):
            seen["env"], seen["cwd"], seen["cmd"] = env.get("SHIMLAB_TRACE_CACHE"), cwd, cmd
            return 1, 1, b""
        monkeypatch.setattr(whole, "_one", one)
        for c in jit_whole:
            whole.run_job({**c.job(0, 1, None)})
            assert seen["env"] == ("1" if c.trace_cache else "0") and seen["cwd"] is None
    # another checkout's processes start in its root (its peachpy_stencils, not
    # this one's from the working directory), the program named absolutely
    whole.run_job({**jit_whole[0].job(0, 1, None), "checkout": "/elsewhere",
                   "program": "corpus/bf/x.bf"})
    assert seen["cwd"] == "/elsewhere" and os.path.isabs(seen["cmd"][4])
    assert harness.Config("programs", "x.bf", "jit-direct", "cc").trace_cache is False
