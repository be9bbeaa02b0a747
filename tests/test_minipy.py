"""The minipy front end: what it accepts runs like CPython, what it rejects says why.

Programs here stay inside int64 and print no booleans, so the reference
evaluator's output must equal CPython's byte for byte.
"""
from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shimlab import isa
from shimlab.bytecode import disassemble
from shimlab.errors import FrontendError, ShimlabError
from shimlab.frontend.minipy import compile_source
from shimlab.frontend.verify import verify

oracle = pytest.importorskip("shimlab.oracle")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "minipy"
MAX_STEPS = 5_000_000


def compile_ok(src: str, filename: str = "t.py"):
    return verify(compile_source(src, filename))


def run_minipy(src: str) -> bytes:
    program = compile_ok(src)
    result = oracle.run(program, max_steps=MAX_STEPS)
    assert result.status is isa.Error.OK, (result.status, disassemble(program))
    return result.output


def run_cpython(src: str) -> bytes:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(src, "<minipy-test>", "exec"), {"__name__": "__main__"})
    return buf.getvalue().encode()


def same_as_cpython(src: str) -> bytes:
    expected = run_cpython(src)
    got = run_minipy(src)
    assert got == expected, f"\n--- source\n{src}\n--- minipy\n{got!r}\n--- CPython\n{expected!r}"
    return got


def ops(program) -> list[str]:
    return [isa.INSTRUCTIONS[op].name for op, _ in program.code]


# --- every supported construct runs like CPython --------------------------------------

PROGRAMS = {
    "literals": "print(0, 7, -3, 2147483647, 2147483648, -2147483649)\n"
                "print(9223372036854775807, -9223372036854775808, True + 0, False + 0)\n",
    "arith": "a = 17\nb = -5\n"
             "print(a + b, a - b, a * b, a // b, a % b, -a // 5, -a % 5, a // -5)\n"
             "print(a << 3, a >> 2, b >> 1, a & b, a | b, a ^ b, ~a, -b, +b)\n"
             "print((not a) + 0, (not 0) + 0)\n",
    "precedence": "x = 3\nprint(1 + 2 * x - 8 // 3 % 2 << 1 | 4 & x ^ 1)\n",
    "compare": "a = 3\nb = 4\n"
               "print((a < b) + 0, (a <= b) + 0, (a == b) + 0, (a != b) + 0, "
               "(a > b) + 0, (a >= b) + 0)\n",
    "truth_tables": "for a in range(-1, 3):\n    for b in range(-1, 3):\n"
                    "        print((a < b) + 0, (a <= b) + 0, (a == b) + 0, (a != b) + 0, "
                    "(a > b) + 0, (a >= b) + 0, (a < b <= 1) + 0, (0 <= a != b) + 0, "
                    "(a > b >= 0 == a - 1) + 0)\n"
                    "        print(a and b, a or b, (not a) + 0, (a and not b) + 0, "
                    "a & b, a | b, a ^ b, 5 if a == b else 6)\n",
    "division_signs": "for a in range(-9, 10, 4):\n    for b in range(-3, 4):\n"
                      "        if b != 0:\n"
                      "            print(a, b, a // b, a % b, a << (b + 3), a >> (b + 3))\n",
    "chained": "a = 1\nb = 2\nc = 3\n"
               "print((a < b < c) + 0, (a < c < b) + 0, (c > b > a >= 1) + 0, "
               "(a == 1 != b) + 0)\n"
               "x = a < b <= c\nprint(x + 0)\n"
               "if a < b < c:\n    print(1)\nif not a < c < b:\n    print(2)\n",
    "chained_once": "def f(x):\n    print(x)\n    return x\n\n"
                    "print(1 if 1 < f(2) < 3 else 0)\n"
                    "print(1 if 5 < f(2) < f(3) else 0)\n"
                    "t = 1 < f(4) < f(5) < 9\nprint(t + 0)\n",
    "and_or_values": "a = 0\nb = 5\nc = 7\n"
                     "print(a or b, b or c, a and b, b and c, a or a or c, b and c and a)\n"
                     "print((a or 0) + 0, (b and c) + 1)\n",
    "and_or_short_circuit": "def f(x):\n    print(x)\n    return x\n\n"
                            "v = f(0) and f(1)\nw = f(2) or f(3)\nu = f(0) or f(4) and f(5)\n"
                            "print(v, w, u)\n"
                            "if f(6) and f(0) or f(7):\n    print(8)\n",
    "ifexp": "a = 3\nprint(1 if a > 2 else 2, 1 if a > 5 else 2, 10 if 0 else 20 if a else 30)\n",
    "assign": "a = b = c = 4\nb += 1\nc *= 3\nd: int = 9\nprint(a, b, c, d)\n"
              "x = 100\nx -= 1\nx //= 7\nx %= 5\nx <<= 3\nx >>= 1\nx &= 6\nx |= 9\nx ^= 3\n"
              "print(x)\n",
    "if_elif_else": "for n in range(6):\n"
                    "    if n == 0:\n        print(100)\n"
                    "    elif n == 1 or n == 3:\n        print(200)\n"
                    "    elif n < 5:\n        pass\n"
                    "    else:\n        print(300, n)\n",
    "while_break_continue": "i = 0\ns = 0\nwhile i < 100:\n    i += 1\n"
                            "    if i % 3 == 0:\n        continue\n"
                            "    if i > 50:\n        break\n    s += i\nprint(i, s)\n"
                            "while True:\n    s -= 7\n    if s < 0:\n        break\nprint(s)\n",
    "for_range": "for i in range(3):\n    print(i)\n"
                 "for i in range(2, 5):\n    print(i)\n"
                 "for i in range(10, -3, -4):\n    print(i)\n"
                 "for i in range(0, 10, 3):\n    print(i)\n"
                 "print(i)\n",
    "for_semantics": "i = 42\nfor i in range(5, 5):\n    print(999)\nprint(i)\n"
                     "n = 3\nfor i in range(n):\n    n += 1\n    i = i * 100\n    print(i, n)\n"
                     "print(i, n)\n"
                     "for k in range(10):\n    if k == 2:\n        continue\n"
                     "    if k == 5:\n        break\n    print(k)\nprint(k)\n",
    "nested_loops": "t = 0\nfor a in range(4):\n    b = 0\n    while b < 3:\n"
                    "        for c in range(a, 0, -1):\n            if c == 2:\n"
                    "                continue\n            t += a * b + c\n"
                    "        b += 1\n        if t > 40:\n            break\nprint(t, a, b)\n",
    "functions": "def add(a, b):\n    return a + b\n\n"
                 "def fact(n):\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n\n"
                 "def nothing(x):\n    x += 1\n\n"
                 "def bare():\n    return\n\n"
                 "def later():\n    return defined_after(3)\n\n"
                 "def defined_after(y):\n    return y * 2\n\n"
                 "print(add(2, 3), fact(10), later())\n"
                 "print((nothing(1) or 0), (bare() or 0))\n"
                 "add(1, 2)\n",
    "recursion": "def fib(n):\n    if n < 2:\n        return n\n"
                 "    return fib(n - 1) + fib(n - 2)\n\nprint(fib(15))\n",
    "function_locals_are_separate": "def f(a):\n    x = a * 2\n    return x\n\n"
                                    "x = 5\nprint(f(3), x)\n",
    "print_forms": "print()\nprint(1)\nprint(1, 2, 3)\n",
    "print_evaluates_all_first": "def f(x):\n    print(x)\n    return x + 1\n\n"
                                 "print(1, f(2), f(3))\nprint(f(4), 5)\n"
                                 "a = 7\nprint(a, f(a) + a, a * 2, f(8), 9)\n",
    "main_guard": "def main():\n    print(7)\n\nif __name__ == \"__main__\":\n    main()\n",
    "docstrings": "\"\"\"module doc\"\"\"\n\ndef f():\n    \"\"\"function doc\"\"\"\n"
                  "    return 1\n\n\"ignored\"\nprint(f())\n",
    "dead_code": "def f(x):\n    return x\n    print(99)\n\n"
                 "def g(x):\n    while True:\n        if x > 3:\n            return x\n"
                 "        x += 1\n\n"
                 "for i in range(3):\n    break\n    print(98)\n"
                 "if 0:\n    print(97)\nprint(f(1), g(0), i)\n",
    "expression_statement": "def f(x):\n    print(x)\n    return x\n\nf(3)\n1 + 2\n",
    "wrap_free_big": "x = 1 << 40\ny = x * 1000 + 12345678901\nprint(x, y, y // 7, y % 1000)\n",
    "tuple_assignment": "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n\n"
                        "a, b = 1, 2\na, b = b, a\nprint(a, b, gcd(1071, 462))\n"
                        "f0, f1 = 0, 1\nfor i in range(20):\n    f0, f1 = f1, f0 + f1\n"
                        "x, (y, z) = f0, (f1, a)\n[p, q] = [y, x]\n(r, s), t = [q, p], 9\n"
                        "print(f0, x, y, z, p, q, r, s, t)\n",
    "tuple_assignment_repeats_a_name": "a, a = 1, 2\nb, c, b = 3, 4, 5\nprint(a, b, c)\n",
    "tuple_assignment_chained": "a, b = c, d = 1, 2\ne = f = 3\nprint(a, b, c, d, e, f)\n"
                                "a, b = b, a = a + 10, b + 20\nprint(a, b)\n",
    "calls_of_defs_that_ran_before": "def f(n):\n    return g(n) + 1 if n else 0\n\n"
                                     "def g(n):\n    return f(n - 1)\n\n"
                                     "print(f(3))\n\ndef h():\n    return f(2)\n\n"
                                     "print(h())\n",
    "tuple_values_all_before_stores": "def f(x):\n    print(x)\n    return x * 2\n\n"
                                      "a, b = f(1), f(2)\na, b = f(b), f(a)\nprint(a, b)\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_construct_runs_like_cpython(name):
    same_as_cpython(PROGRAMS[name])


def test_a_utf8_byte_order_mark_is_accepted_as_python_accepts_it(tmp_path):
    data = b"\xef\xbb\xbfx = 6\nprint(x * 7)\n"
    expected = subprocess.run([sys.executable, "-c", data.decode("utf-8-sig")],
                              capture_output=True).stdout
    path = tmp_path / "bom.py"
    path.write_bytes(data)
    from shimlab.frontend import load_program
    result = oracle.run(load_program(path), max_steps=MAX_STEPS)
    assert result.output == expected == b"42\n"
    # only at the very start, as in Python
    with pytest.raises(FrontendError, match="syntax error"):
        compile_source("x = 1\n\ufeffprint(x)\n")


def test_semantics_that_differ_from_python_are_the_documented_ones():
    # ints wrap at 64 bits
    out = run_minipy("x = 9223372036854775807\nx += 1\nprint(x)\nprint(-x)\n")
    assert out == b"-9223372036854775808\n-9223372036854775808\n"
    # booleans are ints
    assert run_minipy("print(1 < 2, not 3, True)\n") == b"1 0 1\n"
    # locals start at 0
    assert run_minipy("if 0:\n    y = 5\nprint(y)\n") == b"0\n"
    # a function falling off its end returns 0
    assert run_minipy("def f():\n    pass\n\nprint(f())\n") == b"0\n"


def test_print_fails_before_printing_anything():
    program = compile_ok("x = 0\nprint(1, 2, 3 // x)\n")
    result = oracle.run(program)
    assert result.status is isa.Error.ZERO_DIVISION and result.output == b""


def test_runtime_errors_point_at_the_source_line():
    program = compile_ok("x = 0\ny = 3\nz = y // x\nprint(z)\n")
    result = oracle.run(program)
    assert result.status is isa.Error.ZERO_DIVISION
    assert program.position(result.err_pc)[0] == 3
    program = compile_ok("def f(a):\n    return 1 << a\n\nprint(f(-1))\n")
    result = oracle.run(program)
    assert result.status is isa.Error.NEGATIVE_SHIFT
    assert program.position(result.err_pc)[0] == 2


# --- the shape of the program ----------------------------------------------------------

def test_function_table_and_local_layout():
    src = ("def f(p, q):\n    z = p\n    if p < q < 3:\n        y = 1\n    z = y\n"
           "    for i in range(q):\n        z += i\n    return z\n\n"
           "b = 1\na = f(b, 2)\nprint(a)\n\n"
           "def g():\n    return 0\n")
    p = compile_ok(src)
    assert p.language == "minipy"
    names = [f.name for f in p.functions]
    assert names == ["<module>", "f", "g"]
    main, f, g = p.functions
    assert (main.entry, main.nargs) == (0, 0)
    assert main.local_names == ["b", "a"] and main.nlocals == 2
    assert f.nargs == 2 and f.local_names[:5] == ["p", "q", "z", "y", "i"]
    assert all(n.startswith("$") for n in f.local_names[5:]) and f.nlocals == len(f.local_names)
    assert g.nargs == 0
    code = ops(p)
    assert code[f.entry - 1] == "HALT" and code[g.entry - 1] == "RETURN"
    assert code[-1] == "RETURN"
    assert main.entry < f.entry < g.entry


def test_every_instruction_has_a_source_position():
    src = PROGRAMS["nested_loops"] + PROGRAMS["functions"]
    p = compile_ok(src)
    nlines = src.count("\n")
    assert len(p.positions) == len(p.code)
    for line, col in p.positions:
        assert 1 <= line <= nlines and col >= 1


def test_while_loop_shape_and_backward_jumps():
    p = compile_ok("i = 0\nwhile i < 10:\n    i += 1\nprint(i)\n")
    assert ops(p) == ["LOAD_INT", "STORE_LOCAL",
                      "LOAD_LOCAL", "LOAD_INT", "LT", "JUMP_IF_FALSE",
                      "LOAD_LOCAL", "LOAD_INT", "ADD", "STORE_LOCAL",
                      "LOOP", "LOAD_LOCAL", "PRINT", "HALT"]
    for op, arg in p.code:
        ins = isa.INSTRUCTIONS[op]
        if ins.name in ("JUMP", "JUMP_IF_FALSE", "JUMP_IF_TRUE"):
            assert arg > 0
        if ins.name == "LOOP":
            assert arg < 0


def test_while_true_has_no_test():
    p = compile_ok("i = 0\nwhile True:\n    i += 1\n    if i > 5:\n        break\nprint(i)\n")
    assert "LOAD_INT" in ops(p) and ops(p).count("JUMP_IF_FALSE") == 1


def test_big_literals_use_the_constant_pool():
    p = compile_ok("print(1 << 2, 5000000000, -9223372036854775808)\n")
    assert 5000000000 in p.consts and -9223372036854775808 in p.consts


# --- rejections --------------------------------------------------------------------------

REJECT = [
    ("x = 1.5\n", "unsupported float literal"),
    ("x = 'a'\n", "unsupported string literal"),
    ("print('hi')\n", "unsupported string literal"),
    ("x = None\n", "unsupported None"),
    ("x = [1, 2]\n", "unsupported expression: list"),
    ("x = (1, 2)\n", "unsupported expression: tuple"),
    ("x = {}\n", "unsupported expression: dict"),
    ("x = 1\ny = x[0]\n", "unsupported expression: subscript"),
    ("x = lambda: 1\n", "unsupported expression: lambda"),
    ("x = 1\ny = x.real\n", "unsupported expression: attribute"),
    ("x = [i for i in range(3)]\n", "unsupported expression: list comprehension"),
    ("x = f'{1}'\n", "unsupported expression: f-string"),
    ("x = (y := 2)\n", "unsupported expression"),
    ("class A:\n    pass\n", "unsupported statement: class"),
    ("import os\n", "unsupported statement: import"),
    ("from os import path\n", "unsupported statement: import"),
    ("try:\n    pass\nexcept Exception:\n    pass\n", "unsupported statement: try"),
    ("x = 1\ndel x\n", "unsupported statement: del"),
    ("assert 1\n", "unsupported statement: assert"),
    ("def f():\n    global x\n", "unsupported statement: global"),
    ("def f():\n    def g():\n        pass\n", "unsupported nested function"),
    ("x = 2 ** 3\n", "unsupported operator: **"),
    ("x = 7 / 2\n", "unsupported operator: /"),
    ("x = 1\ny = x is 1\n", "unsupported comparison operator: is"),
    ("x = 1\ny = x in 1\n", "unsupported comparison operator: in"),
    ("def f(a=1):\n    return a\n", "unsupported default"),
    ("def f(*a):\n    return 0\n", "unsupported *args"),
    ("def f(**k):\n    return 0\n", "unsupported **kwargs"),
    ("def f(*, a):\n    return 0\n", "unsupported keyword-only"),
    ("def d(x):\n    return x\n\n@d\ndef f():\n    return 0\n", "unsupported decorator"),
    ("print(1, end='')\n", "unsupported keyword argument"),
    ("def f(a):\n    return a\n\nf(a=1)\n", "unsupported keyword argument"),
    ("while 1:\n    pass\nelse:\n    pass\n", "unsupported else clause"),
    ("for i in range(2):\n    pass\nelse:\n    pass\n", "unsupported else clause"),
    ("for i in 5:\n    pass\n", "unsupported for loop"),
    ("for i, j in range(3):\n    pass\n", "unsupported for-loop target"),
    ("n = 1\nfor i in range(0, 5, n):\n    pass\n", "unsupported range() step"),
    ("for i in range(0, 5, 0):\n    pass\n", "unsupported range() step"),
    ("x = range(3)\n", "unsupported expression: range()"),
    ("x = print(1)\n", "unsupported expression: print()"),
    ("x = abs(-1)\n", "unsupported builtin function: abs()"),
    ("a, b = 7\n", "unsupported unpacking of a value that is not a tuple or list literal"),
    ("a, *b = 1, 2\n", "unsupported starred assignment target"),
    ("a, b = 1, *(2,)\n", "unsupported starred expression"),
    ("a, b = c = 1, 2\n", "unsupported value: a tuple assigned to 'c'"),
    ("x, y.z = 1, 2\n", "unsupported assignment target: attribute"),
    ("def f():\n    return 0\n\nx = f\n", "unsupported expression: function 'f'"),
    ("x = 1\nx.y = 2\n", "unsupported assignment target: attribute"),
    ("print(__name__)\n", "unsupported use of __name__"),
    ("with open('f') as g:\n    pass\n", "unsupported statement: with"),
    ("async def f():\n    pass\n", "unsupported statement: async def"),
]


@pytest.mark.parametrize("src,needle", REJECT, ids=[n for _, n in REJECT])
def test_rejections_are_one_unsupported_line(src, needle):
    with pytest.raises(FrontendError) as info:
        compile_source(src, "prog.py")
    msg = str(info.value)
    assert "\n" not in msg
    assert re.match(r"^prog\.py:\d+:\d+: unsupported ", msg), msg
    assert needle in msg, msg
    assert isinstance(info.value, ShimlabError)


PROBLEMS = [
    ("print(y)\n", "1:7: name 'y' is not defined"),
    ("x = 1\ndef f():\n    return x\n", "3:12: name 'x' is not defined"),
    ("x = foo(1)\n", "1:5: name 'foo' is not defined"),
    ("def f(a, b):\n    return a\n\nf(1)\n", "4:1: f() missing 1 required positional argument"),
    ("def f(a):\n    return a\n\nf(1, 2)\n", "4:1: f() takes 1 positional argument but 2 were"),
    ("x = 99999999999999999999\n", "1:5: integer literal out of 64-bit range"),
    ("x = -9223372036854775809\n", "1:5: integer literal out of 64-bit range"),
    ("x = (\n", "syntax error"),
    ("if 1:\nprint(1)\n", "2:1: syntax error"),
    ("return 1\n", "1:1: 'return' outside function"),
    ("break\n", "1:1: 'break' outside loop"),
    ("def f():\n    continue\n", "2:5: 'continue' not properly in loop"),
    ("def f(a, a):\n    return a\n", "duplicate argument 'a'"),
    ("def f():\n    return 0\n\ndef f():\n    return 1\n", "4:1: function 'f' is already defined"),
    ("def f():\n    return 0\n\nf = 2\n", "4:1: cannot assign to 'f'"),
    ("x = 1\nx(2)\n", "2:1: 'x' is a variable, not a function"),
    ("a, b = 1, 2, 3\n", "1:1: too many values to unpack (expected 2, got 3)"),
    ("a, (b, c) = 1, (2,)\n", "1:4: not enough values to unpack (expected 2, got 1)"),
    # Python runs a module's statements in order: a def not run yet is a NameError
    ("print(f(1))\n\ndef f(x):\n    return x\n",
     "1:7: function 'f' is called before its def on line 3 has run"),
    ("def g():\n    return h()\n\nx = 1 + g()\n\ndef h():\n    return 1\n",
     "4:9: function 'h' (called through 'g') is called before its def on line 6 has run"),
    ("def a(n):\n    return b(n - 1) if n else c()\n\ndef b(n):\n    return a(n)\n\n"
     "if __name__ == '__main__':\n    print(b(2))\n    def c():\n        return 0\n",
     "8:11: function 'c' (called through 'b') is called before its def on line 9"),
]


@pytest.mark.parametrize("src,needle", PROBLEMS, ids=[n for _, n in PROBLEMS])
def test_problems_are_one_positioned_line(src, needle):
    with pytest.raises(FrontendError) as info:
        compile_source(src, "prog.py")
    msg = str(info.value)
    assert "\n" not in msg
    assert re.match(r"^prog\.py:\d+:\d+: \S", msg), msg
    assert needle in msg, msg


def test_errors_in_unreachable_code_are_still_reported():
    with pytest.raises(FrontendError, match="unsupported float literal"):
        compile_source("def f():\n    return 1\n    x = 1.5\n")


def test_default_filename():
    with pytest.raises(FrontendError, match=r"^<minipy>:1:5: "):
        compile_source("x = 1.5\n")


# --- the example programs ---------------------------------------------------------------

EXAMPLE_FILES = ["fib.py", "sieve.py", "collatz.py", "nested_loops.py", "gcd_lcm.py",
                 "heavy.py"]


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_examples_compile_and_verify(name):
    src = (EXAMPLES / name).read_text()
    p = compile_ok(src, str(EXAMPLES / name))
    assert p.verified and p.language == "minipy"


def test_nested_loops_prints_a_lot():
    out = run_minipy((EXAMPLES / "nested_loops.py").read_text())
    assert out.count(b"\n") >= 2000


@pytest.mark.parametrize("name", ["gcd_lcm.py", "nested_loops.py"])
def test_light_examples_run_like_cpython(name):
    path = EXAMPLES / name
    expected = subprocess.run([sys.executable, str(path)], capture_output=True,
                              check=True, timeout=60).stdout
    assert run_minipy(path.read_text()) == expected


# --- property: random programs run like CPython --------------------------------------------
#
# Values are kept small so that int64 wrapping never kicks in: assignments fold their value
# into [-32768, 32767], products and left shifts are masked, divisors are forced into 1..7
# and shift counts into 0..7.  Prints add 0 so booleans print as ints in CPython too.

MAIN_VARS = ("a", "b", "c", "d")
FUNC_PARAMS = ("x", "y")


def _fold(e: str) -> str:
    return f"((({e}) & 0xFF) - 0x80)"


@st.composite
def expressions(draw, names: tuple[str, ...], funcs: tuple[str, ...], depth: int = 3) -> str:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        if names and draw(st.booleans()):
            return draw(st.sampled_from(names))
        return str(draw(st.one_of(st.integers(-2, 3), st.integers(-20, 40))))
    sub = lambda: draw(expressions(names, funcs, depth - 1))  # noqa: E731
    kind = draw(st.sampled_from(["add", "sub", "mul", "bit", "div", "mod", "shl", "shr",
                                 "unary", "cmp", "cmp", "chain", "chain", "bool", "ifexp",
                                 "call"]))
    if kind == "add":
        return f"({sub()} + {sub()})"
    if kind == "sub":
        return f"({sub()} - {sub()})"
    if kind == "mul":
        return f"(({sub()} * {sub()}) & 0xFFFFF)"
    if kind == "bit":
        return f"({sub()} {draw(st.sampled_from(['&', '|', '^']))} {sub()})"
    if kind == "div":
        return f"({sub()} // (({sub()}) % 7 + 1))"
    if kind == "mod":
        return f"({sub()} % (({sub()}) % 7 + 1))"
    if kind == "shl":
        return f"(({sub()} << (({sub()}) & 7)) & 0xFFFFF)"
    if kind == "shr":
        return f"({sub()} >> (({sub()}) & 7))"
    if kind == "unary":
        return f"({draw(st.sampled_from(['-', '~', 'not ', '+']))}{sub()})"
    cmp = lambda: draw(st.sampled_from(["<", "<=", "==", "!=", ">", ">="]))  # noqa: E731
    # comparisons of values folded into 0..2 are often equal: <= and < differ there
    small = lambda: (f"(({sub()}) % 3)" if draw(st.booleans())  # noqa: E731
                     else str(draw(st.integers(0, 2))))
    if kind == "cmp":
        if draw(st.booleans()):
            return f"({small()} {cmp()} {small()})"
        return f"({sub()} {cmp()} {sub()})"
    if kind == "chain":
        if draw(st.booleans()):
            return f"({small()} {cmp()} {small()} {cmp()} {small()})"
        return f"({sub()} {cmp()} {sub()} {cmp()} {sub()})"
    if kind == "bool":
        return f"({sub()} {draw(st.sampled_from(['and', 'or']))} {sub()})"
    if kind == "ifexp":
        return f"({sub()} if {sub()} else {sub()})"
    if funcs:
        return f"{draw(st.sampled_from(funcs))}({sub()}, {sub()})"
    return f"({sub()} + 1)"


@st.composite
def blocks(draw, names, funcs, indent: int, depth: int, loop_names: tuple[str, ...] = (),
           in_loop: bool = False) -> list[str]:
    pad = "    " * indent
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        readable = names + loop_names
        expr = lambda: draw(expressions(readable, funcs, 2))  # noqa: E731

        def test() -> str:   # conditions are mostly comparisons, as in real code
            if draw(st.booleans()):
                return expr()
            e = draw(expressions(readable, funcs, 1))
            return f"{e} {draw(st.sampled_from(['<', '<=', '==', '!=', '>', '>=']))} " \
                   f"{draw(st.integers(-2, 3))}"
        kind = draw(st.sampled_from(["assign", "aug", "print", "if", "while", "for", "jump",
                                     "unpack"] if depth > 0 else ["assign", "aug", "print",
                                                                  "jump", "unpack"]))
        if kind == "assign":
            lines.append(f"{pad}{draw(st.sampled_from(names))} = {_fold(expr())}")
        elif kind == "unpack":
            # names may repeat (the last one wins) and values read the names
            # being assigned: every value is computed before any store
            targets = draw(st.lists(st.sampled_from(names), min_size=2, max_size=3))
            values = [_fold(expr()) for _ in targets]
            if draw(st.booleans()):   # a swap or rotation: `a, b = b, a`
                values = [draw(st.sampled_from(names)) for _ in targets]
            if len(targets) == 3 and draw(st.booleans()):   # nested: a, (b, c) = x, (y, z)
                lines.append(f"{pad}{targets[0]}, ({targets[1]}, {targets[2]}) = "
                             f"{values[0]}, ({values[1]}, {values[2]})")
            else:
                lines.append(f"{pad}{', '.join(targets)} = {', '.join(values)}")
        elif kind == "aug":
            v = draw(st.sampled_from(names))
            op = draw(st.sampled_from(["+=", "-=", "*=", "^=", "|=", "&="]))
            lines.append(f"{pad}{v} {op} {expr()}")
            lines.append(f"{pad}{v} = {_fold(v)}")
        elif kind == "print":
            args = [f"({expr()}) + 0" for _ in range(draw(st.integers(0, 3)))]
            lines.append(f"{pad}print({', '.join(args)})")
        elif kind == "jump":
            if in_loop:
                word = draw(st.sampled_from(["break", "continue"]))
                lines.append(f"{pad}if {test()}:")
                lines.append(f"{pad}    {word}")
            else:
                lines.append(f"{pad}pass")
        elif kind == "if":
            lines.append(f"{pad}if {test()}:")
            lines += draw(blocks(names, funcs, indent + 1, depth - 1, loop_names, in_loop))
            if draw(st.booleans()):
                lines.append(f"{pad}elif {test()}:")
                lines += draw(blocks(names, funcs, indent + 1, depth - 1, loop_names, in_loop))
            if draw(st.booleans()):
                lines.append(f"{pad}else:")
                lines += draw(blocks(names, funcs, indent + 1, depth - 1, loop_names, in_loop))
        elif kind == "while":
            w = f"w{indent}"
            lines.append(f"{pad}{w} = 0")
            lines.append(f"{pad}while {w} < {draw(st.integers(0, 5))}:")
            lines.append(f"{pad}    {w} += 1")
            lines += draw(blocks(names, funcs, indent + 1, depth - 1, loop_names + (w,), True))
        elif kind == "for":
            i = f"i{indent}"
            step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
            start = f"({expr()}) % 6"
            stop = f"({expr()}) % 9" if step > 0 else f"({expr()}) % 3 - 4"
            args = stop if step == 1 and draw(st.booleans()) else f"{start}, {stop}, {step}"
            lines.append(f"{pad}for {i} in range({args}):")
            lines += draw(blocks(names, funcs, indent + 1, depth - 1, loop_names + (i,), True))
    return lines


@st.composite
def programs(draw) -> str:
    lines: list[str] = []
    funcs: tuple[str, ...] = ()
    for k in range(draw(st.integers(0, 2))):
        name = f"f{k}"
        lines.append(f"def {name}(x, y):")
        lines += draw(blocks(FUNC_PARAMS, funcs, 1, 1))
        lines.append(f"    return {_fold(draw(expressions(FUNC_PARAMS, funcs, 2)))}")
        lines.append("")
        funcs += (name,)   # only earlier functions are called: no unbounded recursion
    for v in MAIN_VARS:
        lines.append(f"{v} = {draw(st.integers(-9, 9))}")
    lines += draw(blocks(MAIN_VARS, funcs, 0, 2))
    lines.append(f"print({', '.join(MAIN_VARS)})")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_programs_run_like_cpython(src):
    same_as_cpython(src)


# --- big modules are parsed in pieces: the same program and the same errors ---------------

def _both_ways(src: str, monkeypatch, piece: int = 64):
    """(whole, in pieces): compile_source with the module parsed whole and cut
    into pieces of about `piece` characters."""
    from shimlab.frontend import minipy

    def compile_with(size):
        monkeypatch.setattr(minipy, "_PIECE", size)
        try:
            p = compile_source(src, "big.py")
            return ("ok", p.code, p.consts, p.functions, list(p.positions))
        except FrontendError as e:
            return ("error", str(e))
    return compile_with(1 << 40), compile_with(piece)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(programs(), st.integers(8, 200))
def test_a_module_in_pieces_compiles_to_the_same_program(monkeypatch, src, piece):
    whole, pieces = _both_ways(src, monkeypatch, piece)
    assert pieces == whole


TRICKY = [
    # cuts that fall inside a construct: a string, brackets, a backslash, else
    'a = 1\ns = """\nb = 2\n"""\nc = (1 +\n2)\nd = 1 + \\\n3\nif a:\n    a = 2\nelse:\n    a = 3\n'
    'print(a, c, d)\n',
    # defs under the main guard, a decorator, a function used before its def
    'def f(x):\n    return g(x) + 1\n\ndef g(y):\n    return y * 2\n\n'
    'if __name__ == "__main__":\n    def h(z):\n        return f(z)\n    print(h(3))\n',
    # errors: positions must be absolute, and a syntax error anywhere wins
    'x = 1\n' * 30 + 'y = x.real\n',
    'x = 1\n' * 30 + 'def f():\n    return 0\n\ndef f():\n    return 1\n',
    'def f():\n    return 0\n\n@f\ndef g():\n    return 1\n' + 'x = 1\n' * 30 + 'x = (\n',
    'x = 1\n' * 30 + 'print = 3\n',
    'x = 1\n' * 30 + 'a, b = 1, 2, 3\n',
    'def g():\n    return h()\n\n' + 'x = 1\n' * 30 + 'print(g())\n' + 'x = 1\n' * 30
    + 'def h():\n    return 1\n',
]


@pytest.mark.parametrize("src", TRICKY, ids=range(len(TRICKY)))
def test_cuts_inside_constructs_and_errors_match_the_whole_module(monkeypatch, src):
    for piece in (1, 5, 17, 40):
        whole, pieces = _both_ways(src, monkeypatch, piece)
        assert pieces == whole, piece


@pytest.mark.slow     # a minute: 180,000 statements compiled
def test_a_big_module_parses_in_pieces_with_bounded_memory(tmp_path):
    """A 4 MB module: Python's parser alone needs about 1 GB for it whole;
    in pieces the front end stays within a few hundred MB (RLIMIT_AS)."""
    src = "x = 0\ny = 1\n" + "".join(f"x = (x + {i % 1000} * y) % 1000003\ny = y ^ (x & {i % 255})\n"
                                     for i in range(90_000)) + "print(x, y)\n"
    path = tmp_path / "big.py"
    path.write_text(src)
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (900 << 20, 900 << 20))\n"
            "from shimlab.frontend import load_program\n"
            "p = load_program(sys.argv[1])\n"
            "print(len(p.code))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert int(proc.stdout) > 1_000_000
