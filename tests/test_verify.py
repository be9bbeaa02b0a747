"""The verifier refuses every kind of malformed bytecode with a clear error."""
from __future__ import annotations

import pytest

from shimlab import isa
from shimlab.bytecode import Function, Program
from shimlab.errors import VerifyError
from shimlab.frontend.verify import verify


def prog(*code, consts=(), functions=None):
    ops = [(isa.opcode(n), a) if isinstance(n, str) else (n, a) for n, a in code]
    return Program("t", ops, list(consts), functions or [Function("main", 0, 0, 1)])


def test_a_good_program_passes_and_gets_max_stack():
    p = verify(prog(("LOAD_INT", 1), ("LOAD_INT", 2), ("ADD", 0), ("STORE_LOCAL", 0),
                    ("HALT", 0)))
    assert p.verified and p.functions[0].max_stack == 2


@pytest.mark.parametrize("code,needle", [
    ([(99, 0), ("HALT", 0)], "opcode 99 out of range"),
    ([(-1, 0), ("HALT", 0)], "out of range"),
    ([("JUMP", 5), ("HALT", 0)], "forward jump to 5"),
    ([("JUMP", -1), ("HALT", 0)], "forward jump"),
    ([("LOOP", 1), ("HALT", 0)], "backward jump"),
    ([("ADD", 0), ("HALT", 0)], "pops 2 from a stack of depth 0"),
    ([("LOAD_INT", 1), ("HALT", 0)], "HALT with stack depth 1"),
    ([("LOAD_INT", 1)], "falls off the end"),
    ([("LOAD_LOCAL", 3), ("POP", 0), ("HALT", 0)], "local 3 out of range"),
    ([("LOAD_CONST", 0), ("POP", 0), ("HALT", 0)], "constant 0 out of range"),
    ([("RETURN", 0)], "RETURN outside a function"),
    ([("CALL", 1), ("HALT", 0)], "function 1 out of range"),
    ([("LOAD_INT", 1), ("JUMP_IF_TRUE", 2), ("LOAD_INT", 2), ("HALT", 0)],
     "depending on the path"),
    ([("LOAD_INT", 1 << 40), ("HALT", 0)], "not a 32-bit integer"),
    ([("LOAD_INT", 1), ("LOOP", -1)], "depending on the path"),
    ([("WALK_ADD_AT", isa.pack_walk("CELL_ADD_AT", isa.pack_cell(1, 1), 3) & ~0xFF),
      ("HALT", 0)], "WALK_ADD_AT: a walk by 0 cells"),
    ([("WALK_MOVE_AT", isa.pack_walk("CELL_MOVE_AT", isa.pack_move_at(1, 1, 1), 2)),
      ("HALT", 0)], "a target cell (+1) is the counter"),
])
def test_bad_bytecode(code, needle):
    with pytest.raises(VerifyError, match="invalid bytecode") as e:
        verify(prog(*code))
    assert needle in str(e.value)


def test_empty_program():
    with pytest.raises(VerifyError, match="no instructions"):
        verify(Program("t", [], [], [Function("main", 0, 0, 0)]))


def test_return_depth_and_halt_in_function():
    fs = [Function("main", 0, 0, 0), Function("f", 1, 2, 1)]
    with pytest.raises(VerifyError, match="nargs"):
        verify(prog(("HALT", 0), ("LOAD_INT", 0), ("RETURN", 0), functions=fs))
    fs = [Function("main", 0, 0, 0), Function("f", 1, 0, 0)]
    with pytest.raises(VerifyError, match="HALT inside function f"):
        verify(prog(("HALT", 0), ("HALT", 0), functions=fs))


def test_c_side_refuses_bad_code_on_its_own():
    """Code that skipped the verifier never reaches the C dispatch loop."""
    from conftest import get_build, interpreter_configs
    from shimlab import vm
    from shimlab.errors import RunError
    ccs = [cc for mode, cc in interpreter_configs() if mode == "switch"]
    if not ccs:
        pytest.skip("no compiler here builds the switch interpreter")
    p = prog(("JUMP", 7), ("HALT", 0))
    p.verified = True     # pretend
    with pytest.raises(RunError, match="refused instruction 0"):
        vm.run(get_build("switch", ccs[0]), p)


def test_stack_depth_is_bounded():
    with pytest.raises(VerifyError, match="stack deeper than"):
        verify(prog(*[("LOAD_INT", 1)] * 5000, *[("POP", 0)] * 5000, ("HALT", 0)))
