"""Level 2's walks (isa.WALKS, frontend/bf.py Optimizing.walks): a loop of
one instruction at offsets and a move runs as one instruction, made from its
body's row of the table, and every interpreter agrees with the oracle on it,
at the tape's ends too."""
from __future__ import annotations

import pytest

from conftest import get_build
from shimlab import isa, oracle, vm
from shimlab.frontend import bf
from shimlab.frontend.verify import verify

WALK_LOOPS = {
    "WALK_SET_AT": "[>[-]+++<>>>>]",
    "WALK_ADD_AT": "[>++<>>>>]",
    "WALK_MOVE_AT": "[>[->+<]<>>>>]",
    "WALK_COPY_AT": "[>[->+>+<<]>>[-<<+>>]<<<>>>>]",      # (the stride past the spare cell)
}


def _compile(src: str, level: int):
    return verify(bf.compile_source(src, "t", level))


def _names(program):
    return [isa.INSTRUCTIONS[op].name for op, _ in program.code]


def test_pack_and_unpack_walk_round_trip():
    for body, arg in (("CELL_SET_AT", isa.pack_cell(-300, 7)), ("CELL_ADD_AT", isa.pack_cell(5, 255)),
                      ("CELL_MOVE_AT", isa.pack_move_at(-3, 4, 2)),
                      ("CELL_COPY_AT", isa.pack_move_at(1, -2, 0, 3))):
        walk = next(w for w, (b, _) in isa.WALKS.items() if b == body)
        for stride in (-128, -1, 1, 14, 127):
            assert isa.unpack_walk(walk, isa.pack_walk(body, arg, stride)) == (body, arg, stride)
        assert isa.pack_walk(body, arg, 0) is None and isa.pack_walk(body, arg, 128) is None
    assert isa.pack_walk("CELL_SET_AT", isa.pack_cell(1 << 16, 1), 1) is None   # 16-bit offsets
    assert isa.pack_walk("CELL_MULADD", 1, 1) is None                          # not a body


@pytest.mark.parametrize("walk", sorted(WALK_LOOPS))
def test_level_2_makes_each_walk_and_level_1_none(walk):
    src = ",>" * 8 + "<" * 8 + WALK_LOOPS[walk] + ".<.<.<."    # (cells the front end cannot know)
    assert walk in _names(_compile(src, 2))
    assert not set(_names(_compile(src, 1))) & set(isa.WALKS)


@pytest.mark.parametrize("mode", ["switch", "goto", "tailcall", "asm"])
@pytest.mark.parametrize("walk", sorted(WALK_LOOPS))
def test_every_interpreter_agrees_with_the_oracle_on_walks(mode, walk):
    """Input bytes in records of 4 cells, the walk
    from either end of a short tape: it stops at a zero cell, or runs off the
    tape (the same error, pc and value)."""
    b = get_build(mode, "clang-19")
    loop, left = WALK_LOOPS[walk], WALK_LOOPS[walk].replace(">>>>]", "<<<<]")
    fill = ",>,>,>,>"
    statuses = []
    for src, data in ((fill * 5 + "<<<<" * 5 + loop + ".>.", b"\1\2\3\4" * 5),   # stops at a zero
                      (fill * 7 + "," + "<<<<" * 7 + loop, b"\1\2\3\4" * 7 + b"\1"),  # off the right
                      (">" * 24 + ",<<<<" * 6 + ",>>>>" + left, b"\5" * 7)):         # and the left
        program = _compile(src, 2)
        assert walk in _names(program), src
        want = oracle.run(program, data, tape_len=30)
        got = vm.run(b, program, data, tape_len=30)
        assert (got.output, got.status, got.err_pc, got.err_value, got.tape, got.head) == \
            (want.output, want.status, want.err_pc, want.err_value, want.tape, want.head), src
        statuses.append(want.status)
        at1 = oracle.run(_compile(src, 1), data, tape_len=30)
        assert (at1.output, at1.status, at1.tape) == (want.output, want.status, want.tape), src
    assert statuses[0] == 0 and statuses[1] == statuses[2] != 0, statuses
