"""The random minipy generator (tests/minipy_gen.py) stays as rich as the
differential tests need, and check() turns away what CPython and minipy would
run differently."""
from __future__ import annotations

import ast
import re

import pytest

import minipy_gen
from shimlab.frontend import compile_text

SEEDS = range(150)
NONCOMMUTATIVE = {ast.Sub: "-", ast.FloorDiv: "//", ast.Mod: "%", ast.LShift: "<<",
                  ast.RShift: ">>", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _shape(node) -> str:
    return "const" if isinstance(node, ast.Constant) else \
        "name" if isinstance(node, ast.Name) else "expr"


def features(src: str) -> set[str]:
    """What a program holds, as names."""
    tree = ast.parse(src)
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef):
            calls = {c.func.id for c in ast.walk(n) if isinstance(c, ast.Call)
                     and isinstance(c.func, ast.Name)}
            if n.name in calls:
                out.add("recursion")
            body = n.body
            loops = [i for i, s in enumerate(body) if isinstance(s, (ast.While, ast.For))]
            if loops and loops[-1] < len(body) - 2:
                out.add("statements between a loop and the return")
            if loops and isinstance(body[loops[-1] + 1], ast.Return):
                out.add("a return right after a loop")
        elif isinstance(n, (ast.While, ast.For)):
            if any(isinstance(m, (ast.While, ast.For)) for b in n.body for m in ast.walk(b)):
                out.add("nested loops")
        elif isinstance(n, (ast.Break, ast.Continue)):
            out.add(type(n).__name__.lower())
        elif isinstance(n, ast.Compare):
            if len(n.ops) > 1:
                out.add("comparison chain")
            elif type(n.ops[0]) in NONCOMMUTATIVE:
                out.add(f"{_shape(n.left)} {NONCOMMUTATIVE[type(n.ops[0])]} "
                        f"{_shape(n.comparators[0])}")
        elif isinstance(n, ast.BinOp) and type(n.op) in NONCOMMUTATIVE:
            out.add(f"{_shape(n.left)} {NONCOMMUTATIVE[type(n.op)]} {_shape(n.right)}")
        elif isinstance(n, ast.AugAssign):
            out.add(f"{type(n.op).__name__}=")
        elif isinstance(n, ast.Assign):
            if any(isinstance(t, (ast.Tuple, ast.List)) for t in n.targets):
                out.add("tuple assignment")
            if len(n.targets) > 1:
                out.add("chained assignment")
    if any(int(m) > 64 for m in re.findall(r"^for i in range\((\d+)\):", src, re.M)):
        out.add("a function called past the JIT's default threshold")
    return out


def test_the_sample_holds_every_shape_the_jit_must_get_right():
    count: dict[str, int] = {}
    for seed in SEEDS:
        src = minipy_gen.sample(seed)
        compile_text(src, f"sample{seed}.py", "minipy")       # inside minipy's subset
        for f in features(src):
            count[f] = count.get(f, 0) + 1
    want = ["recursion", "statements between a loop and the return",
            "a return right after a loop", "nested loops", "break", "continue",
            "comparison chain", "tuple assignment", "chained assignment",
            "a function called past the JIT's default threshold"]
    want += [f"{op}=" for op in ("Add", "Sub", "Mult", "FloorDiv", "Mod", "LShift", "RShift",
                                 "BitAnd", "BitOr", "BitXor")]
    want += [f"{a} {op} {b}" for op in NONCOMMUTATIVE.values()
             for a, b in (("const", "name"), ("name", "const"), ("name", "name"))]
    rare = {f: count.get(f, 0) for f in want if count.get(f, 0) < len(SEEDS) // 30}
    assert not rare, f"shapes (almost) never generated in {len(SEEDS)} programs: {rare}"


def test_the_sample_is_fixed():
    assert minipy_gen.sample(7) == minipy_gen.sample(7)
    assert minipy_gen.sample(7) != minipy_gen.sample(8)


@pytest.mark.parametrize("src,why", [
    ("x = 1 << 62\nprint(x + x)\n", "outside int64"),
    ("x = -(1 << 62)\nprint(x * 4)\n", "outside int64"),
    ("x = 0\nprint(5 // x)\n", "ZeroDivisionError"),
    ("x = 0\nx %= x\n", "ZeroDivisionError"),
    ("x = -1\nprint(1 << x)\n", "ValueError"),
    ("x = 0\nwhile True:\n    x += 1\n", "too long"),
    ("def f(n):\n    return f(n + 1)\n\nprint(f(0))\n", "RecursionError"),
])
def test_check_turns_away_what_would_run_differently(src, why):
    with pytest.raises(minipy_gen.Unfit, match=why):
        minipy_gen.check(src)


def test_check_gives_cpythons_output_and_counts_statements():
    out, statements = minipy_gen.check("s = 0\nfor i in range(3):\n    s += i\nprint(s, s > 2)\n")
    assert out == "3 True\n" and statements == 1 + 1 + 3 + 1
