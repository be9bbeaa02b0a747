"""The last run's length kept for the JIT's payback wait (jit/run_history.py):
kept and read under its exact key (options, program), rewritten only when
the length moved by more than a quarter, a damaged or foreign file read as
nothing, an unwritable folder harmless; a JIT made with the trace cache on
and a payback wait takes its wait from it, one with the cache off neither
reads nor writes it, and a run writes its length."""
from __future__ import annotations

import pytest

from conftest import get_build
from shimlab import isolate, vm
from shimlab.frontend import compile_text
from shimlab.jit import run_history
from shimlab.jit.run_history import RunHistory
from test_jit import CHILD_TIMEOUT, JIT_CC, _alarm

MS = 1_000_000
CODE, CONSTS = [(1, 2), (3, 4)], [7]


@pytest.fixture(autouse=True)
def runs_folder(monkeypatch, tmp_path):
    folder = tmp_path / "runs"
    monkeypatch.setattr(run_history, "folder", lambda: folder)
    return folder


def test_a_length_is_read_back_only_under_its_key(runs_folder):
    h = RunHistory(("jit-direct", 3), CODE, CONSTS)
    assert h.last_ns is None
    h.save(20 * MS)
    assert RunHistory(("jit-direct", 3), CODE, CONSTS).last_ns == 20 * MS
    assert RunHistory(("jit-direct", 2), CODE, CONSTS).last_ns is None
    assert RunHistory(("jit-direct", 3), CODE + [(5, 6)], CONSTS).last_ns is None
    assert RunHistory(("jit-direct", 3), CODE, [8]).last_ns is None


def test_a_small_change_is_not_written_a_large_one_is(runs_folder):
    RunHistory(("o",), CODE, CONSTS).save(20 * MS)
    RunHistory(("o",), CODE, CONSTS).save(24 * MS)        # within a quarter
    assert RunHistory(("o",), CODE, CONSTS).last_ns == 20 * MS
    RunHistory(("o",), CODE, CONSTS).save(30 * MS)
    assert RunHistory(("o",), CODE, CONSTS).last_ns == 30 * MS


@pytest.mark.parametrize("damage", ["flip", "truncate", "other format"])
def test_a_damaged_file_reads_as_no_history(runs_folder, damage):
    h = RunHistory(("o",), CODE, CONSTS)
    h.save(20 * MS)
    blob = h.path.read_bytes()
    h.path.write_bytes({"flip": blob[:-1] + bytes([blob[-1] ^ 1]), "truncate": blob[:7],
                        "other format": b"SLRH0" + blob[5:]}[damage])
    assert RunHistory(("o",), CODE, CONSTS).last_ns is None


def test_an_unwritable_folder_keeps_nothing_and_fails_nothing(runs_folder):
    runs_folder.parent.mkdir(parents=True, exist_ok=True)
    runs_folder.write_text("a file where the folder would be")
    RunHistory(("o",), CODE, CONSTS).save(20 * MS)
    assert RunHistory(("o",), CODE, CONSTS).last_ns is None


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
        return wait, options, RunHistory(options, program.code, program.consts).last_ns
    return isolate.call("a JIT with a history", child)


def test_a_jit_takes_its_wait_from_the_last_run_and_keeps_this_ones(runs_folder):
    program = compile_text(SHORT, "history.py", "minipy")
    wait, options, kept = _jit(program, payback_ms=10, trace_cache="on")
    assert wait == 10 * MS and kept is not None and kept > 0       # no history yet: as asked
    assert options[:2] == ("jit-direct", 3)
    for last, want in ((22 * MS, 33 * MS), (1000 * MS, 0), (35 * MS, 10 * MS)):
        key = RunHistory(options, program.code, program.consts)
        key.path.unlink(missing_ok=True)
        key.last_ns = None
        key.save(last)
        wait, _, _ = _jit(program, payback_ms=10, trace_cache="on")
        assert wait == want, (last, wait)


def test_with_the_trace_cache_off_or_no_wait_there_is_no_history(runs_folder):
    program = compile_text(SHORT, "history-off.py", "minipy")
    assert _jit(program, payback_ms=10, trace_cache="off") == (10 * MS, None, None)
    assert _jit(program, payback_ms=0, trace_cache="on") == (0, None, None)
    assert not runs_folder.exists() or not list(runs_folder.iterdir())
