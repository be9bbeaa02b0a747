"""Per-handler profiles: the callgrind parser on a hand-written file, and a
real callgrind count that adds up to the run's total."""
from __future__ import annotations

import pytest

from conftest import EXAMPLES, compiler_for
from shimlab.bench import counters, hotspots

SAMPLE = """\
# callgrind format
version: 1
positions: line
events: Ir
summary: 1000

ob=(1) /usr/lib/libc.so.6
fn=(1) memset
0 400

ob=(2) /cache/interp/tailcall-clang-19-abc/libshimlab.so
fl=(1) cases_tailcall.c
fn=(2) sl_op_MOVE
0 100
cfn=(3) sl_op_ADD'2
calls=5 0
0 99999
0 20

fn=(3)
0 30

fn=(4) sl_op_MOVE'2
0 7
fn=(5) sl_print_int
+2 11
"""




def test_parser_counts_self_cost_of_the_interpreter_only():
    costs = hotspots.parse_callgrind(SAMPLE)
    # the cost line after calls= is the callee's inclusive cost: not MOVE's own
    assert costs == {"sl_op_MOVE": 127, "sl_op_ADD": 30, "sl_print_int": 11}
    assert hotspots.by_handler(costs) == {"MOVE": 127, "ADD": 30, "sl_print_int()": 11}


def test_callgrind_per_function_adds_up_to_the_total():
    job = {"mode": "tailcall", "cc": compiler_for("tailcall"), "program": str(EXAMPLES / "bf" / "hello.bf"),
           "input": None}
    per_function = hotspots.callgrind_functions(job)
    assert sum(per_function.values()) == counters.callgrind_instructions(job)
    assert any(name.startswith("sl_op_") for name in per_function)


def test_perf_probe_answers_with_a_reason():
    ok, why = hotspots.perf_available()
    assert isinstance(ok, bool) and why
    if ok:
        job = {"mode": "tailcall", "cc": compiler_for("tailcall"),
               "program": str(EXAMPLES / "bf" / "nested.bf"), "warmup": 0, "samples": 30}
        samples = hotspots.perf_functions(job)
        assert sum(samples.values()) > 0
    else:
        pytest.skip(why)


# -- JIT runs ---------------------------------------------------------------------

MAP = """\
7f0000001000 40 shimlab:trace0:examples/bf/x.bf:pc12
7f0000001000 8 shimlab:trace0:CELL_ADD@pc12
7f0000001008 1e shimlab:trace0:MOVE@pc13
7f0000001026 10 shimlab:trace0:exit->pc15
7f0000002000 10 shimlab:trace1:x.bf:pc3
7f0000002000 10 shimlab:trace1:JUMP_IF_CELL_ZERO:fallthrough@pc3
55aa00000000 20 python:some_function
"""


def test_perf_map_names_the_innermost_stencil(tmp_path):
    path = tmp_path / "perf-1.map"
    path.write_text(MAP)
    entries = hotspots.read_perf_map(path)
    assert len(entries) == 6                        # only shimlab's lines
    assert hotspots.resolve(entries, 0x7f0000001009) == "trace0:MOVE@pc13"
    assert hotspots.resolve(entries, 0x7f0000001030) == "trace0:exit->pc15"
    assert hotspots.resolve(entries, 0x7f000000103f) == "trace0:examples/bf/x.bf:pc12"
    assert hotspots.resolve(entries, 0x7f0000003000) is None
    assert hotspots.trace_headers(entries) == {0: 12, 1: 3}
    assert hotspots.split_jit_name("trace0:MOVE@pc13") == (0, "MOVE", 13)
    assert hotspots.split_jit_name("trace1:JUMP_IF_CELL_ZERO:fallthrough@pc3") == \
        (1, "JUMP_IF_CELL_ZERO:fallthrough", 3)
    assert hotspots.split_jit_name("trace0:exit->pc15") == (0, "exit", 15)
    assert hotspots.split_jit_name("trace0:examples/bf/x.bf:pc12") == (0, "trace", 12)


def _jit_job(samples):
    return {"mode": "jit-direct", "cc": compiler_for("jit-direct"),
            "program": str(EXAMPLES / "bf" / "squares.bf"),
            "input": None, "samples": samples, "quiet_runs": 3}


def test_jit_perf_profile_names_traces_in_steady_state():
    ok, why = hotspots.perf_available()
    if not ok:
        pytest.skip(why)
    p = hotspots.jit_perf_profile(_jit_job(300))
    assert p["run"]["warmup_runs"] >= 3 and p["run"]["traces"] > 0
    assert sum(p["jit"].values()) > sum(p["interpreter"].values())   # traces run the loops
    names = [hotspots.split_jit_name(n) for n in p["jit"]]
    assert all(i in p["traces"] for i, _, _ in names)
    assert not list(__import__("pathlib").Path("/tmp").glob(f"perf-{p['run']['pid']}.map"))


def test_jit_callgrind_profile_counts_the_measured_runs_only():
    """The recorder (sl_rec) runs during warm-up only: its instructions are
    gone when the warm-up is subtracted; JIT code is counted, unnamed."""
    p = hotspots.jit_callgrind_profile(_jit_job(2))
    assert p["run"]["recordings_measured"] == 0
    assert p["jit"]["???"] > 0
    assert "sl_rec" not in p["interpreter"] and p["interpreter"]
