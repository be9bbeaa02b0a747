"""Every execution mode gives the same result as the Python oracle on the
example corpus, whatever the memory layout.

Same output bytes, same status, same failing pc, same final tape, head and
locals, same count of every opcode executed.  Random programs (BF, minipy,
raw bytecode) are in test_differential.py.
"""
from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import pytest

from conftest import EXAMPLES, get_build, interpreter_configs
from differential import differences, result_to_json
from shimlab import oracle, vm
from shimlab.frontend import load_program

ORACLE_LIMIT = 2_000_000   # steps; heavier examples are checked against their .out
# hundreds of millions of instructions each: in `make test` on one
# interpreter of each mode, in `make test-all` on every one
HEAVY = ("heavy.bf", "heavy.py")


def _examples(heavy: bool | None = None):
    """The corpus (heavy=None), or only its heavy examples, or all but those."""
    files = sorted(EXAMPLES.glob("bf/*.bf")) + sorted(EXAMPLES.glob("minipy/*.py"))
    return [p for p in files if "gen" not in p.parts
            and (heavy is None or (p.name in HEAVY) == heavy)]


def _input_for(path):
    inp = path.with_suffix(".in")
    return inp.read_bytes() if inp.exists() else b""


def _same(a, b):
    assert not differences(result_to_json(b), result_to_json(a))


def _one_of_each_mode() -> set[tuple[str, str]]:
    """Every interpreter mode once, each on the compiler used least so far (the
    modes fewest compilers build first): every mode, and every compiler too
    where there are as many modes."""
    by_mode: dict[str, list[str]] = {}
    for mode, cc in interpreter_configs():
        by_mode.setdefault(mode, []).append(cc)
    used: Counter = Counter()
    out = set()
    for mode, ccs in sorted(by_mode.items(), key=lambda item: len(item[1])):
        cc = min(ccs, key=lambda c: used[c])
        used[cc] += 1
        out.add((mode, cc))
    return out


def _heavy_params():
    one = _one_of_each_mode()
    return [pytest.param(path, cfg, id=f"{path.parent.name}/{path.name}-{cfg[0]}-{cfg[1]}",
                         marks=() if cfg in one else pytest.mark.slow)
            for path in _examples(heavy=True) for cfg in interpreter_configs()]


@pytest.mark.parametrize("path", _examples(heavy=False), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_same_output_in_every_mode(path, interp):
    _check_example(path, interp)


@pytest.mark.parametrize("path,config", _heavy_params())
def test_heavy_example_same_output_in_every_mode(path, config):
    _check_example(path, config)


def _check_example(path, interp):
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
    """The oracle's result, or for programs too heavy for it, a switch build's."""
    program = load_program(path)
    data = _input_for(Path(path))
    try:
        return oracle.run(program, data, max_steps=ORACLE_LIMIT)
    except TimeoutError:
        cc = next(cc for mode, cc in interpreter_configs() if mode == "switch")
        return vm.run(get_build("switch", cc, count=True), program, data)


def test_corpus_is_not_empty():
    names = {p.name for p in _examples()}
    assert len([n for n in names if n.endswith(".bf")]) >= 5
    assert len([n for n in names if n.endswith(".py")]) >= 5


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
