"""Per-handler profiles: the callgrind parser on a hand-written file, and a
real callgrind count that adds up to the run's total."""
from __future__ import annotations

import pytest

from conftest import EXAMPLES
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
    job = {"mode": "tailcall", "cc": "clang-19", "program": str(EXAMPLES / "bf" / "hello.bf"),
           "input": None}
    per_function = hotspots.callgrind_functions(job)
    assert sum(per_function.values()) == counters.callgrind_instructions(job)
    assert any(name.startswith("sl_op_") for name in per_function)


def test_perf_probe_answers_with_a_reason():
    ok, why = hotspots.perf_available()
    assert isinstance(ok, bool) and why
    if ok:
        job = {"mode": "tailcall", "cc": "clang-19",
               "program": str(EXAMPLES / "bf" / "nested.bf"), "warmup": 0, "samples": 30}
        samples = hotspots.perf_functions(job)
        assert sum(samples.values()) > 0
    else:
        pytest.skip(why)
