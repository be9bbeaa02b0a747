"""Random programs on every execution mode against the oracle (hypothesis).

BF and minipy source and raw bytecode (tests/strategies.py), compared by
tests/differential.py; a failing example is shrunk and saved to
tests/regression/.  `make fuzz` runs the same properties for longer.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import differential
import strategies
from shimlab.frontend import slbc
from shimlab.frontend.verify import verify

# examples per property in `make test`: each runs in about 250
# configurations (every mode at every JIT optimizer level, two Ks, two
# thresholds, replayed traces; BF at both front end levels), a minipy one in
# 2-6 s (since traces run through calls; Zen 3 is the slow end), so CI runs
# a few and `make test-all` (slow) many more; `make fuzz` runs the same
# properties for as long as asked
test_random_bf_same_in_every_mode = differential.property_test("bf", max_examples=10)
test_random_minipy_same_in_every_mode = differential.property_test("minipy", max_examples=6)
test_random_bytecode_same_in_every_mode = differential.property_test("bytecode",
                                                                     max_examples=15)
test_random_bf_more = pytest.mark.slow(differential.property_test("bf", max_examples=200))
test_random_minipy_more = pytest.mark.slow(differential.property_test("minipy", max_examples=200))
test_random_bytecode_more = pytest.mark.slow(differential.property_test("bytecode",
                                                                        max_examples=400))


@settings(max_examples=300, deadline=None)
@given(program=strategies.bytecode_programs())
def test_generated_bytecode_verifies_and_round_trips_through_slbc(program):
    verify(program)
    again = verify(slbc.compile_source(json.dumps(slbc.to_dict(program)), "x.slbc"))
    assert again.code == program.code and again.consts == program.consts
    assert [(f.entry, f.nargs, f.nlocals, f.max_stack) for f in again.functions] == \
        [(f.entry, f.nargs, f.nlocals, f.max_stack) for f in program.functions]


@given(tape=st.binary(max_size=200) | st.builds(lambda a, n, b: a + bytes(n) + b,
                                                st.binary(max_size=20), st.integers(0, 30_000),
                                                st.binary(max_size=20)))
def test_the_tape_is_compared_as_every_non_zero_cell_in_order(tape):
    want = {str(i): b for i, b in enumerate(tape) if b}
    assert list(differential.nonzero_cells(tape).items()) == list(want.items())
