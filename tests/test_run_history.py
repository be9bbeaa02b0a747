"""The earlier runs' lengths kept for the JIT's payback wait
(jit/run_history.py): kept and read under their exact key (options,
program), what a run with and without the JIT adds, rewritten only when a
length moved by more than a quarter, a damaged or foreign file read as
nothing, an unwritable folder harmless; a JIT made with the trace cache on
and a payback wait takes its wait from them, one with the cache off
neither reads nor writes them, and a run writes its own."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import get_build
from shimlab import isolate, vm
from shimlab.frontend import compile_text
from shimlab.jit import policy, run_history
from shimlab.jit.run_history import Lengths, RunHistory
from test_jit import CHILD_TIMEOUT, JIT_CC, _alarm

MS = 1_000_000
CODE, CONSTS = [(1, 2), (3, 4)], [7]


@pytest.fixture(autouse=True)
def runs_folder(monkeypatch, tmp_path):
    folder = tmp_path / "runs"
    monkeypatch.setattr(run_history, "folder", lambda: folder)
    # this process's draw of policy.EXPLORE: none here (a forked run inherits it)
    monkeypatch.setattr(policy, "_EXPLORING", False)
    return folder


def test_lengths_are_read_back_only_under_their_key(runs_folder):
    h = RunHistory(("jit-direct", 3), CODE, CONSTS)
    assert h.last == Lengths()
    h.save(20 * MS)
    assert RunHistory(("jit-direct", 3), CODE, CONSTS).last == Lengths(20 * MS, True)
    assert RunHistory(("jit-direct", 2), CODE, CONSTS).last == Lengths()
    assert RunHistory(("jit-direct", 3), CODE + [(5, 6)], CONSTS).last == Lengths()
    assert RunHistory(("jit-direct", 3), CODE, [8]).last == Lengths()


def test_what_a_run_with_and_without_the_jit_adds():
    # without the JIT: the interpreter's exact length, the JIT's run kept
    assert Lengths().after(20 * MS, None, 0, True) == Lengths(20 * MS, True)
    assert Lengths(9 * MS, False, 40 * MS, 15 * MS).after(20 * MS, None, 0, False) == \
        Lengths(20 * MS, True, 40 * MS, 15 * MS)
    # with the JIT at the wait asked: the JIT's run, and the interpreter ran
    # at least to where the JIT started, unless a longer length is known
    assert Lengths().after(40 * MS, 10 * MS, 15 * MS, True) == \
        Lengths(10 * MS, False, 40 * MS, 15 * MS)
    assert Lengths(20 * MS, True).after(40 * MS, 10 * MS, 15 * MS, True) == \
        Lengths(20 * MS, True, 40 * MS, 15 * MS)
    # the program grew past the known length: only a lower bound again
    assert Lengths(20 * MS, True).after(60 * MS, 30 * MS, 15 * MS, True) == \
        Lengths(30 * MS, False, 60 * MS, 15 * MS)
    # a wait longer than asked (the history's): the JIT's run is not a usual one
    assert Lengths(10 * MS, False, 40 * MS, 15 * MS).after(90 * MS, 60 * MS, 15 * MS, False) \
        == Lengths(60 * MS, False, 40 * MS, 15 * MS)


def test_a_small_change_is_not_written_a_large_one_is(runs_folder):
    RunHistory(("o",), CODE, CONSTS).save(20 * MS)
    RunHistory(("o",), CODE, CONSTS).save(24 * MS)        # within a quarter
    assert RunHistory(("o",), CODE, CONSTS).last.interp_ns == 20 * MS
    RunHistory(("o",), CODE, CONSTS).save(30 * MS)
    assert RunHistory(("o",), CODE, CONSTS).last.interp_ns == 30 * MS
    RunHistory(("o",), CODE, CONSTS).save(40 * MS, 10 * MS, 15 * MS)     # a JIT run: new
    assert RunHistory(("o",), CODE, CONSTS).last == Lengths(30 * MS, True, 40 * MS, 15 * MS)
    RunHistory(("o",), CODE, CONSTS).save(45 * MS, 10 * MS, 18 * MS)     # within a quarter
    assert RunHistory(("o",), CODE, CONSTS).last.jit_ns == 40 * MS
    RunHistory(("o",), CODE, CONSTS).save(45 * MS, 10 * MS, 25 * MS)     # its own work moved
    assert RunHistory(("o",), CODE, CONSTS).last.jit_own_ns == 25 * MS
    RunHistory(("o",), CODE, CONSTS).save(45 * MS, 35 * MS, 25 * MS)     # exact -> at least
    assert RunHistory(("o",), CODE, CONSTS).last == Lengths(35 * MS, False, 45 * MS, 25 * MS)


@pytest.mark.parametrize("damage", ["flip", "truncate", "other format", "bad value"])
def test_a_damaged_file_reads_as_no_history(runs_folder, damage):
    h = RunHistory(("o",), CODE, CONSTS)
    if damage == "bad value":       # sealed, but not lengths
        run_history.keep_sealed(h.path, run_history.FORMAT, (h.key, (-1, True, None, 0)), 9)
    else:
        h.save(20 * MS)
        blob = Path(h.path).read_bytes()
        Path(h.path).write_bytes({"flip": blob[:-1] + bytes([blob[-1] ^ 1]), "truncate": blob[:7],
                            "other format": b"SLRH1" + blob[5:]}[damage])
    assert RunHistory(("o",), CODE, CONSTS).last == Lengths()


def test_an_unwritable_folder_keeps_nothing_and_fails_nothing(runs_folder):
    runs_folder.parent.mkdir(parents=True, exist_ok=True)
    runs_folder.write_text("a file where the folder would be")
    RunHistory(("o",), CODE, CONSTS).save(20 * MS)
    assert RunHistory(("o",), CODE, CONSTS).last == Lengths()


SHORT = "s = 0\ni = 0\nwhile i < 300:\n    s = s + i\n    i += 1\nprint(s)\n"


def _jit(program, **opts):
    """The JIT of a loaded program, made in a forked child: its wait, and
    what its history holds after one run (None: no history)."""
    b = get_build("jit-direct", JIT_CC)

    def child():
        _alarm(CHILD_TIMEOUT)
        with vm.Loaded(b, program, jit={"opt": 3, **opts}) as loaded:
            wait = loaded.jit.payback_ns
            loaded.run()
            history = loaded.jit.history
        if history is None:
            return wait, None, None
        options = history.key[0]
        return wait, options, RunHistory(options, program.code, program.consts).last
    return isolate.call("a JIT with a history", child)


def test_a_jit_takes_its_wait_from_the_last_run_and_keeps_this_ones(runs_folder):
    program = compile_text(SHORT, "history.py", "minipy")
    wait, options, kept = _jit(program, payback_ms=10, trace_cache="on")
    # no history yet: as asked; the run ended before the JIT started
    assert wait == 10 * MS and kept.interp_exact and kept.interp_ns > 0 and kept.jit_ns is None
    assert options[:2] == ("jit-direct", 3)
    for last, want in ((Lengths(22 * MS, True), 33 * MS), (Lengths(1000 * MS, True), 0),
                       (Lengths(35 * MS, True), 10 * MS),
                       (Lengths(22 * MS, True, 36 * MS, 14 * MS), 33 * MS),
                       (Lengths(10 * MS, False, 36 * MS, 14 * MS), 54 * MS)):
        key = RunHistory(options, program.code, program.consts)
        Path(key.path).unlink(missing_ok=True)
        key.last = Lengths()
        run_history.keep_sealed(key.path, run_history.FORMAT, (key.key, tuple(last)), 9)
        wait, _, _ = _jit(program, payback_ms=10, trace_cache="on")
        assert wait == want, (last, wait)


def test_a_run_whose_jit_starts_keeps_its_length_and_the_jits_own_work(runs_folder):
    program = compile_text(SHORT, "history-jit.py", "minipy")
    wait, _, kept = _jit(program, payback_ms=0.001, trace_cache="on")
    assert wait == 1000
    assert not kept.interp_exact and 0 < kept.interp_ns <= kept.jit_ns
    assert 0 < kept.jit_own_ns < kept.jit_ns


def test_with_the_trace_cache_off_or_no_wait_there_is_no_history(runs_folder):
    program = compile_text(SHORT, "history-off.py", "minipy")
    assert _jit(program, payback_ms=10, trace_cache="off") == (10 * MS, None, None)
    assert _jit(program, payback_ms=0, trace_cache="on") == (0, None, None)
    assert not runs_folder.exists() or not list(runs_folder.iterdir())


def test_a_run_sits_the_jit_out_where_its_history_says_it_loses(runs_folder, tmp_path, capfd):
    """`shimlab run` of a program whose JIT run took longer than the
    interpreter alone runs the tail-call interpreter instead (jit/sit_out.py)
    and keeps its length, as it does where no run started the JIT and the
    last was too short for it to pay; a history where the JIT won,
    --jit-threshold, --no-trace-cache, --stencil or --check run the JIT
    (--perf-map too)."""
    from shimlab.cli import main
    from shimlab.jit.run_history import run_options
    path = tmp_path / "sit.py"
    path.write_text(SHORT)
    program = compile_text(SHORT, str(path), "minipy")
    want = f"{sum(range(300))}\n"
    key = RunHistory(run_options("jit-direct", 3, 0, True, 30000), program.code, program.consts)

    def run(last, *extra):
        Path(key.path).unlink(missing_ok=True)
        run_history.keep_sealed(key.path, run_history.FORMAT, (key.key, tuple(last)), 9)

        def child():
            _alarm(CHILD_TIMEOUT)
            return main(["run", str(path), "--mode", "jit-direct", "--stats", "--no-isolate",
                         *extra])
        assert isolate.call("shimlab run", child) == 0
        out, err = capfd.readouterr()
        assert out == want
        kept = RunHistory(key.key[0], program.code, program.consts).last
        return err, kept
    err, kept = run(Lengths(20 * MS, True))     # never a JIT run, too short for one to pay
    assert "sat this run out on the tailcall interpreter: its last run took 20.0 ms" in err, err
    loses = Lengths(20 * MS, True, 36 * MS, 14 * MS)
    err, kept = run(loses)
    assert "sat this run out on the tailcall interpreter" in err and "36.0 ms" in err, err
    # its own length, exact (this program runs for well under a millisecond)
    assert kept.interp_exact and kept.interp_ns < 20 * MS and kept.jit_ns == 36 * MS
    # a process that explores (one in policy.EXPLORE) runs the JIT where the
    # two are close, and sits it out where the JIT won by little
    policy._EXPLORING = True
    err, _ = run(loses)
    assert "sat this run out" not in err and "payback: nothing compiled before the run had " \
        "spent 10 ms" in err, err
    err, _ = run(Lengths(50 * MS, True, 45 * MS, 14 * MS))
    assert "sat this run out on the tailcall interpreter (to measure it again" in err, err
    err, _ = run(Lengths(20 * MS, True, 90 * MS, 14 * MS))      # far apart: no exploring
    assert "sat this run out" in err, err
    policy._EXPLORING = False
    for last, extra in ((Lengths(60 * MS, True, 45 * MS, 14 * MS), ()),
                        (Lengths(35 * MS, True), ()),
                        (loses, ("--jit-threshold", "64")), (loses, ("--no-trace-cache",)),
                        (loses, ("--stencil", "LOAD_CONST=LOAD_CONST")), (loses, ("--check",))):
        err, _ = run(last, *extra)
        assert "sat this run out" not in err and "\njit (jit-direct): " in "\n" + err, \
            (extra, err)
