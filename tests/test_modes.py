"""Every execution mode gives the same result as the Python oracle.

Same output bytes, same status, same failing pc, same final tape and head,
same count of every opcode executed: on the example corpus and on random
BF and minipy programs (hypothesis).
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, get_build, interpreter_configs
from shimlab import reference, vm
from shimlab.frontend import compile_text, load_program

ORACLE_LIMIT = 2_000_000   # steps; heavier examples are checked against their .out


def _examples():
    files = sorted(EXAMPLES.glob("bf/*.bf")) + sorted(EXAMPLES.glob("minipy/*.py"))
    return [p for p in files if "gen" not in p.parts]


def _input_for(path):
    inp = path.with_suffix(".in")
    return inp.read_bytes() if inp.exists() else b""


def _same(a, b):
    assert a.output == b.output
    assert a.status == b.status
    assert a.err_pc == b.err_pc
    assert a.tape == b.tape and a.head == b.head
    if a.counts and b.counts:
        assert a.counts == b.counts


@pytest.mark.parametrize("path", _examples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_same_output_in_every_mode(path, interp):
    program = load_program(path)
    data = _input_for(path)
    result = vm.run(get_build(*interp, count=True), program, data)
    assert result.status == 0
    expected = path.with_suffix(".out")
    if expected.exists():
        assert result.output == expected.read_bytes()
    _same(result, _expected(str(path)))


@functools.lru_cache(maxsize=None)
def _expected(path):
    """The oracle's result, or for programs too heavy for it, gcc's switch build's."""
    program = load_program(path)
    data = _input_for(Path(path))
    try:
        return reference.run(program, data, max_steps=ORACLE_LIMIT)
    except TimeoutError:
        return vm.run(get_build("switch", "gcc-12", count=True), program, data)


def test_corpus_is_not_empty():
    names = {p.name for p in _examples()}
    assert len([n for n in names if n.endswith(".bf")]) >= 5
    assert len([n for n in names if n.endswith(".py")]) >= 5


# ---- random programs -------------------------------------------------------

@st.composite
def bf_programs(draw, depth=0):
    parts = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from("+-<>.,[" if depth < 3 else "+-<>.,"))
        if kind == "[":
            parts.append("[" + draw(bf_programs(depth + 1)) + "]")
        elif kind in "+-<>":
            parts.append(kind * draw(st.integers(1, 300 if kind in "+-" else 3)))
        else:
            parts.append(kind)
    return "".join(parts)


def _check_all_modes(program, data, max_steps=200_000):
    try:
        ref = reference.run(program, data, max_steps=max_steps)
    except TimeoutError:
        assume(False)
    for cfg in interpreter_configs():
        _same(vm.run(get_build(*cfg, count=True), program, data), ref)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=bf_programs(), data=st.binary(max_size=8))
def test_random_bf_same_in_every_mode(src, data):
    assume(src.strip())
    # start right of cell 0 so that not every program dies on its first '<'
    program = compile_text(">>" + src, "random.bf", "bf")
    _check_all_modes(program, data)


_OPS = ["+", "-", "*", "//", "%", "<<", ">>", "&", "|", "^", "<", "<=", "==", "!=", ">", ">=",
        "and", "or"]


@st.composite
def expressions(draw, names, depth=0):
    if depth >= 3 or draw(st.booleans()):
        if draw(st.booleans()):
            return str(draw(st.integers(-(1 << 40), 1 << 40)))
        return draw(st.sampled_from(names))
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return f"(-{draw(expressions(names, depth + 1))})"
    if kind == 1:
        return f"(not {draw(expressions(names, depth + 1))})"
    if kind == 2:
        return f"({draw(expressions(names, depth + 1))} if {draw(expressions(names, depth + 1))} else {draw(expressions(names, depth + 1))})"
    a = draw(expressions(names, depth + 1))
    b = draw(expressions(names, depth + 1))
    op = draw(st.sampled_from(_OPS))
    if op in ("<<", ">>"):
        b = f"({b} & 63)"
    return f"({a} {op} {b})"


@st.composite
def minipy_programs(draw):
    names = ["a", "b", "c"]
    lines = ["def g(x, y):", f"    return {draw(expressions(['x', 'y']))}",
             "a = 1", "b = 2", "c = 3"]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 4))
        target = draw(st.sampled_from(names))
        if kind == 0:
            lines.append(f"{target} = {draw(expressions(names))}")
        elif kind == 1:
            lines.append(f"{target} = g({draw(expressions(names))}, {draw(expressions(names))})")
        elif kind == 2:
            lines += [f"if {draw(expressions(names))}:", f"    {target} += 1", "else:",
                      f"    {target} = {draw(expressions(names))}"]
        elif kind == 3:
            lines += [f"for i in range({draw(st.integers(0, 20))}):",
                      f"    {target} = ({target} * 3 + i) ^ {draw(expressions(names))}"]
        else:
            lines += ["k = 0", f"while k < {draw(st.integers(0, 15))}:", "    k += 1",
                      f"    {target} = {target} + k * {draw(expressions(names))}"]
        lines.append(f"print({', '.join(names)})")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=minipy_programs())
def test_random_minipy_same_in_every_mode(src):
    program = compile_text(src, "random.py", "minipy")
    _check_all_modes(program, b"")


@pytest.mark.parametrize("seed", [0, 1, 0xDEADBEEF])
def test_memory_layout_changes_nothing_but_addresses(seed):
    path = EXAMPLES / "bf" / "squares.bf"
    program = load_program(path)
    for cfg in interpreter_configs():
        with vm.Loaded(get_build(*cfg, count=True), program, layout_seed=seed) as loaded:
            _same(loaded.run(), _expected(str(path)))


def test_benchmark_relayout_between_runs_keeps_results():
    """sl_bench moves code, stack and tape to a new layout for every run."""
    path = EXAMPLES / "minipy" / "gcd_lcm.py"
    program = load_program(path)
    for cfg in interpreter_configs():
        with vm.Loaded(get_build(*cfg, count=True), program, layout_seed=7) as loaded:
            cycles, ns = loaded.bench(1, 4)
            assert len(cycles) == 4 and min(ns) > 0
            _same(loaded.run(), _expected(str(path)))
