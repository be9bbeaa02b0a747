"""Random minipy programs that CPython runs the same way: the one generator
behind the differential property (tests/differential.py, against the oracle
in every configuration) and the comparison with CPython (tests/against_cpython.py).

The shapes are the ones a JIT gets wrong: functions whose loops are followed by
more statements and a return, called a few times or more than the JIT's
default threshold (so traces, side exits and side traces after the loop all
happen), bounded recursion, nested loops with break/continue, comparison
chains, tuple and augmented assignment, and every non-commutative operation
with a constant on either side or between locals.  Every local is assigned
before it is read, every function returns a value, and check() runs the
program in this CPython with each arithmetic result held to int64 and its
statements counted, so a program that would overflow, divide by zero, shift by
a negative count or run long is never used.

The code draws through a Chooser, so hypothesis (which shrinks a failure) and
random.Random (a fixed sample: sample()) drive the same generator.
"""
from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field

from hypothesis import reject
from hypothesis import strategies as st

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# statements a program may execute in check(): with a handful of VM
# instructions each, well under the oracle's 300k steps (differential.ORACLE_STEPS)
MAX_STATEMENTS = 12_000
# what the generator aims for (its estimate is rough; check() is exact)
BUDGET = 8_000
VAR_BITS = 24          # the magnitude an expression assumes of a local
WIDE = 40              # a subexpression estimated wider than this is folded

NONCOMMUTATIVE = ("-", "//", "%", "<<", ">>", "<", "<=", ">", ">=")
ARITH = ("+", "-", "*", "//", "%", "<<", ">>", "&", "|", "^")
COMPARE = ("<", "<=", "==", "!=", ">", ">=")


# ---- choosers -------------------------------------------------------------------

class DrawChooser:
    """Choices drawn by hypothesis (each shrinks toward its first/smallest option)."""

    def __init__(self, draw):
        self.draw = draw

    def int(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def flag(self, percent: int) -> bool:
        """True about percent% of the time; shrinks to False."""
        return self.draw(st.integers(0, 99)) >= 100 - percent


class RandomChooser:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def pick(self, options):
        return self.r.choice(list(options))

    def flag(self, percent: int) -> bool:
        return self.r.randrange(100) < percent


# ---- the generator -------------------------------------------------------------------

@dataclass
class E:
    """An expression: its text, the bits its magnitude may reach (an
    estimate), the statements its calls cost, and its value when constant."""
    text: str
    bits: int
    cost: int = 0
    const: int | None = None


@dataclass
class Func:
    name: str
    params: list[str]
    cost: int                    # statements per call (estimate)
    recursive: bool = False      # params[0] is the depth; cost is per level
    tree: bool = False           # two recursive calls a level


@dataclass
class Scope:
    """What a block may use: names to read, names to assign, the loops around it."""
    readable: list[str]
    assignable: list[str]
    in_function: bool
    counters: list[str]                     # loop counters not in use yet
    loops: list[bool] = field(default_factory=list)   # per loop: may `continue`
    depth: int = 0                          # blocks nested
    frozen: list[str] = field(default_factory=list)   # read, never assigned: loop bounds

    def inner(self, counter: str | None, may_continue: bool) -> "Scope":
        readable = self.readable + ([counter] if counter and counter not in self.readable
                                    else [])
        counters = [c for c in self.counters if c != counter]
        return Scope(readable, self.assignable, self.in_function, counters,
                     self.loops + [may_continue], self.depth + 1, self.frozen)

    def nested(self) -> "Scope":
        return Scope(self.readable, self.assignable, self.in_function, self.counters,
                     self.loops, self.depth + 1, self.frozen)


def _bits(v: int) -> int:
    return max(1, abs(v).bit_length())


def _lit(v: int) -> str:
    return f"({v})" if v < 0 else str(v)


class Generator:
    def __init__(self, c):
        self.c = c
        self.funcs: list[Func] = []
        self.for_vars: set[str] = set()   # the for-loop variables of the function being made

    # -- expressions -----------------------------------------------------------
    def const(self) -> E:
        c = self.c
        kind = c.int(0, 9)
        if kind <= 4:
            v = c.int(-3, 9)
        elif kind <= 6:
            v = c.int(-100, 1000)
        elif kind == 7:
            v = c.pick([64, 63, 65, 127, 128, 255, 256, 1 << 20, -(1 << 20), 1 << 31])
        elif kind == 8:
            v = c.int(-(1 << 30), 1 << 30)
        else:
            b = c.pick([True, False])
            return E(str(b), 1, const=int(b))
        return E(_lit(v), _bits(v), const=v)

    def name(self, scope: Scope) -> E:
        return E(self.c.pick(scope.readable), VAR_BITS)

    def leaf(self, scope: Scope) -> E:
        return self.const() if self.c.flag(40) else self.name(scope)

    def operand(self, scope: Scope, depth: int, shape: str) -> E:
        if shape == "const":
            return self.const()
        if shape == "name":
            return self.name(scope)
        return self.expr(scope, depth + 1)

    def expr(self, scope: Scope, depth: int = 0) -> E:
        c = self.c
        if depth >= 3 or c.flag(30 + 15 * depth):
            return self.leaf(scope)
        kind = c.pick(["arith", "arith", "arith", "compare", "compare", "chain", "bool", "not",
                       "unary", "ifexp", "call", "call"])
        if kind == "arith":
            return self.binop(scope, depth, c.pick(ARITH))
        if kind == "compare":
            return self.binop(scope, depth, c.pick(COMPARE))
        if kind == "chain":
            return self.chain(scope, depth)
        if kind == "bool":
            a, b = self.expr(scope, depth + 1), self.expr(scope, depth + 1)
            op = c.pick(["and", "or"])
            return E(f"({a.text} {op} {b.text})", max(a.bits, b.bits), a.cost + b.cost)
        if kind == "not":
            a = self.expr(scope, depth + 1)
            return E(f"(not {a.text})", 1, a.cost)
        if kind == "unary":
            a = self.expr(scope, depth + 1)
            return E(f"({c.pick(['-', '~', '+'])}{a.text})", a.bits + 1, a.cost)
        if kind == "ifexp":
            t, a, b = (self.cond(scope, depth + 1), self.expr(scope, depth + 1),
                       self.expr(scope, depth + 1))
            return E(f"({a.text} if {t.text} else {b.text})", max(a.bits, b.bits),
                     t.cost + max(a.cost, b.cost))
        return self.call(scope, depth) or self.leaf(scope)

    def shapes(self) -> tuple[str, str]:
        """Operand shapes: a constant on either side, two locals, or deeper."""
        return self.c.pick([("const", "name"), ("name", "const"), ("name", "name"),
                            ("expr", "const"), ("const", "expr"), ("expr", "expr"),
                            ("name", "expr")])

    def binop(self, scope: Scope, depth: int, op: str) -> E:
        ls, rs = self.shapes()
        a, b = self.operand(scope, depth, ls), self.operand(scope, depth, rs)
        return self.combine(scope, a, op, b)

    def right(self, a: E, op: str, b: E) -> E:
        """The right operand b made safe for op: no division by zero (as far
        as one can tell here), shift counts small and non-negative, products
        not too wide."""
        c = self.c
        if op in ("//", "%"):
            if b.const == 0:
                v = c.pick([1, -1, 3, 7, -5])
                return E(_lit(v), _bits(v), const=v)
            if b.const is None and not c.flag(12):   # else a plain divisor (check() turns
                return c.pick([E(f"({b.text} | 1)", b.bits, b.cost),     # away a zero)
                               E(f"({b.text} or 1)", b.bits, b.cost),
                               E(f"({b.text} % 7 + 1)", 3, b.cost)])
        elif op == "<<":
            if b.const is not None and not 0 <= b.const <= 12:
                v = c.int(0, 12)
                return E(str(v), 4, const=v)
            if b.const is None and not c.flag(15):
                return E(f"({b.text} & 7)", 3, b.cost)
        elif op == ">>":
            if b.const is not None and b.const < 0:
                v = c.int(0, 70)
                return E(str(v), 7, const=v)
            if b.const is None and not c.flag(15):
                return c.pick([E(f"({b.text} & 63)", 6, b.cost), E(f"({b.text} % 70)", 7, b.cost)])
        elif op == "*" and a.bits + b.bits > WIDE:
            v = c.int(-9, 99)
            return E(_lit(v), _bits(v), const=v)
        return b

    @staticmethod
    def bits(a: E, op: str, b: E) -> int:
        if op in COMPARE:
            return 1
        if op == "<<":
            return a.bits + (b.const if b.const is not None else 12)
        return {"+": max(a.bits, b.bits) + 1, "-": max(a.bits, b.bits) + 1,
                "*": a.bits + b.bits, "//": a.bits, "%": b.bits,
                ">>": a.bits}.get(op, max(a.bits, b.bits))

    def combine(self, scope: Scope, a: E, op: str, b: E) -> E:
        """a op b, its right operand made safe, a wide result folded."""
        b = self.right(a, op, b)
        e = E(f"({a.text} {op} {b.text})", self.bits(a, op, b), a.cost + b.cost)
        return e if op in COMPARE else self.fold(e)

    def fold(self, e: E) -> E:
        """Folds a value that may grow wide into a few bits (& or %)."""
        if e.bits <= WIDE:
            return e
        c = self.c
        if c.flag(50):
            return E(f"({e.text} & {c.pick(['0xFFFF', '0xFFFFF', '1023', '255'])})", 20, e.cost)
        m = c.pick([7, 1000, 10007, 65536, -13, -1000])
        return E(f"({e.text} % {_lit(m)})", _bits(m), e.cost)

    def chain(self, scope: Scope, depth: int) -> E:
        c = self.c
        parts = [self.operand(scope, depth, c.pick(["const", "name", "name", "expr"]))
                 for _ in range(c.int(3, 4))]
        text = parts[0].text
        for p in parts[1:]:
            text += f" {c.pick(COMPARE)} {p.text}"
        return E(f"({text})", 1, sum(p.cost for p in parts))

    def cond(self, scope: Scope, depth: int = 1) -> E:
        """A condition: mostly comparisons, as in real code."""
        c = self.c
        kind = c.int(0, 5)
        if kind <= 2:
            return self.binop(scope, depth, c.pick(COMPARE))
        if kind == 3:
            return self.chain(scope, depth)
        if kind == 4:
            a, b = self.cond(scope, depth + 1), self.cond(scope, depth + 1)
            return E(f"({a.text} {c.pick(['and', 'or'])} {b.text})", 1, a.cost + b.cost)
        return self.expr(scope, depth)

    def call(self, scope: Scope, depth: int) -> E | None:
        """A call of an earlier function (never the current one: its
        recursion is built in by function())."""
        cheap = [f for f in self.funcs if self.call_cost(f) <= BUDGET // 20]
        if not cheap:
            return None
        f = self.c.pick(cheap)
        args = [self.depth_arg() if f.recursive and i == 0 else self.expr(scope, depth + 1)
                for i in range(len(f.params))]
        cost = self.call_cost(f) + sum(a.cost for a in args)
        return E(f"{f.name}({', '.join(a.text for a in args)})", VAR_BITS, cost)

    def depth_arg(self) -> E:
        v = self.c.int(-1, 7)
        return E(_lit(v), _bits(v), const=v)

    @staticmethod
    def call_cost(f: Func) -> int:
        if not f.recursive:
            return f.cost
        levels = 8                                      # depth_arg() is at most 7
        return f.cost * (34 if f.tree else levels)      # fib(8) + 1 calls for a tree

    def stored(self, e: E) -> E:
        """What a store keeps: wide values folded."""
        return self.fold(e) if e.bits <= VAR_BITS + 8 else self.fold(E(e.text, WIDE + 1, e.cost))

    # -- statements: each returns (lines, estimated statements executed) ----------
    def block(self, scope: Scope, indent: int, n: int | None = None) -> tuple[list[str], int]:
        c = self.c
        lines, cost = [], 0
        for _ in range(c.int(1, 3) if n is None else n):
            more, k = self.statement(scope, indent)
            lines += more
            cost += k
        return lines, cost

    def statement(self, scope: Scope, indent: int) -> tuple[list[str], int]:
        c = self.c
        pad = "    " * indent
        kinds = ["assign", "assign", "aug", "aug", "tuple", "print", "if", "guarded"]
        if scope.depth < 3:
            kinds += ["while", "for", "if"]
        if scope.loops:
            kinds += ["jump", "jump"]
        if scope.in_function and scope.depth > 0:
            kinds += ["return"]
        if self.funcs:
            kinds += ["call"]
        kind = c.pick(kinds)
        if kind == "assign":
            e = self.stored(self.expr(scope))
            targets = [c.pick(scope.assignable) for _ in range(c.pick([1, 1, 1, 2]))]
            return [f"{pad}{' = '.join(targets)} = {e.text}"], 1 + e.cost
        if kind == "aug":
            return self.aug(scope, pad)
        if kind == "tuple":
            return self.tuple_assign(scope, pad)
        if kind == "print":
            args = [self.expr(scope) for _ in range(c.int(0, 3))]
            return ([f"{pad}print({', '.join(a.text for a in args)})"],
                    1 + sum(a.cost for a in args))
        if kind == "call":
            e = self.call(scope, 1)
            if e is None:
                return [f"{pad}pass"], 1
            return [f"{pad}{e.text}"], 1 + e.cost
        if kind == "return":
            e = self.stored(self.expr(scope))
            return [f"{pad}if {self.cond(scope).text}:", f"{pad}    return {e.text}"], 2 + e.cost
        if kind == "jump":
            word = "continue" if scope.loops[-1] and c.flag(50) else "break"
            t = self.cond(scope)
            return [f"{pad}if {t.text}:", f"{pad}    {word}"], 1 + t.cost
        if kind == "if":
            return self.if_(scope, pad, indent)
        if kind == "guarded":
            return self.guarded(scope, pad)
        if kind == "while" and scope.counters:
            return self.while_(scope, pad, indent)
        if kind == "for" and scope.counters:
            return self.for_(scope, pad, indent)
        return [f"{pad}pass"], 1

    def aug(self, scope: Scope, pad: str) -> tuple[list[str], int]:
        c = self.c
        target = E(c.pick(scope.assignable), VAR_BITS)
        op = c.pick(ARITH)
        b = self.right(target, op, self.operand(scope, 1, c.pick(["const", "const", "name",
                                                                   "expr"])))
        lines = [f"{pad}{target.text} {op}= {b.text}"]
        if self.bits(target, op, b) > VAR_BITS + 8:   # kept from growing loop after loop
            lines.append(f"{pad}{target.text} = {self.fold(E(target.text, WIDE + 1)).text}")
        return lines, len(lines) + b.cost

    def tuple_assign(self, scope: Scope, pad: str) -> tuple[list[str], int]:
        c = self.c
        n = c.int(2, 3)
        targets = [c.pick(scope.assignable) for _ in range(n)]
        if c.flag(40):                       # a swap or rotation: every value before any store
            values = [E(c.pick(scope.readable), VAR_BITS) for _ in range(n)]
        else:
            values = [self.stored(self.expr(scope, 1)) for _ in range(n)]
        cost = 1 + sum(v.cost for v in values)
        if n == 3 and c.flag(30):
            return [f"{pad}{targets[0]}, ({targets[1]}, {targets[2]}) = "
                    f"{values[0].text}, ({values[1].text}, {values[2].text})"], cost
        if c.flag(20):
            return [f"{pad}[{', '.join(targets)}] = [{', '.join(v.text for v in values)}]"], cost
        return [f"{pad}{', '.join(targets)} = {', '.join(v.text for v in values)}"], cost

    def guarded(self, scope: Scope, pad: str) -> tuple[list[str], int]:
        """A local as the divisor or shift count, under the test that makes it safe."""
        c = self.c
        y = c.pick(scope.readable)
        op = c.pick(["//", "%", "<<", ">>"])
        a = self.name(scope) if c.flag(60) else self.const()
        if op in ("//", "%"):
            test = c.pick([f"{y} != 0", y, f"not {y} == 0", f"0 != {y}"])
        elif op == "<<":
            test = c.pick([f"0 <= {y} < 16", f"{y} >= 0 and {y} <= 12"])
        else:
            test = c.pick([f"{y} >= 0", f"0 <= {y}", f"not {y} < 0"])
        e = self.fold(E(f"({a.text} {op} {y})", a.bits + 16 if op == "<<" else a.bits))
        lines = [f"{pad}if {test}:", f"{pad}    {c.pick(scope.assignable)} = {e.text}"]
        if c.flag(30):
            lines += [f"{pad}else:", f"{pad}    {c.pick(scope.assignable)} = {self.const().text}"]
        return lines, 2

    def if_(self, scope: Scope, pad: str, indent: int) -> tuple[list[str], int]:
        c = self.c
        inner = scope.nested()
        t = self.cond(scope)
        lines = [f"{pad}if {t.text}:"]
        body, cost = self.block(inner, indent + 1)
        lines += body
        if c.flag(30):
            t2 = self.cond(scope)
            body2, cost2 = self.block(inner, indent + 1)
            lines += [f"{pad}elif {t2.text}:"] + body2
            cost = max(cost, cost2 + t2.cost)
        if c.flag(50):
            body3, cost3 = self.block(inner, indent + 1)
            lines += [f"{pad}else:"] + body3
            cost = max(cost, cost3)
        return lines, 1 + t.cost + cost

    def bound(self, scope: Scope) -> tuple[str, int]:
        """A loop bound the loop's body cannot change: a constant, mostly
        small, or a parameter no statement assigns, folded."""
        c = self.c
        if scope.frozen and c.flag(30):
            p = c.pick(scope.frozen)
            return c.pick([(f"({p} & 15)", 16), (f"{p} % 10", 10)])
        v = c.pick([c.int(0, 6), c.int(1, 12), c.int(0, 40)])
        return str(v), v

    def while_(self, scope: Scope, pad: str, indent: int) -> tuple[list[str], int]:
        c = self.c
        i = scope.counters[0]
        limit, trips = self.bound(scope)
        step = c.pick([1, 1, 1, 2, 3])
        form = c.int(0, 5)
        inner = scope.inner(i, form != 4)
        if form == 0:       # count up, the step first (so continue is safe)
            head = [f"{i} = 0", f"while {i} < {limit}:", f"    {i} += {step}"]
        elif form == 1:     # the limit on the left
            head = [f"{i} = 0", f"while {limit} > {i}:", f"    {i} += {step}"]
        elif form == 2:     # count down
            test = c.pick([f"{i} > 0", f"0 < {i}"] + ([i] if step == 1 else []))
            head = [f"{i} = {limit}", f"while {test}:", f"    {i} -= {step}"]
        elif form == 3:     # while True and a break
            head = [f"{i} = 0", "while True:", f"    {i} += {step}",
                    f"    if {i} > {limit}:", "        break"]
        elif form == 4:     # the step last: no continue in this loop
            head = [f"{i} = {c.int(-3, 0)}",
                    f"while {c.pick([f'0 <= {i} < {limit}', f'{i} < {limit}'])}:"]
        else:               # a second condition
            t = self.cond(scope)
            head = [f"{i} = 0", f"while {i} < {limit} and {t.text}:", f"    {i} += {step}"]
        body, cost = self.block(inner, indent + 1)
        lines = [pad + line for line in head] + body
        if form == 4:
            lines.append(f"{pad}    {i} += {step}")
        # counted up from 0 with the step first, the counter ends in 1..43
        counted_up = form in (0, 1, 3) and limit.isdigit() and limit != "0"
        return (lines + self.after_loop(scope, pad, i, counted_up),
                (trips // step + 4) * (cost + 3))

    def for_(self, scope: Scope, pad: str, indent: int) -> tuple[list[str], int]:
        c = self.c
        v = scope.counters[0]
        self.for_vars.add(v)     # read after a loop that may not run: assigned first
        lo, hi = c.int(-3, 3), c.int(0, 20)
        kind = c.int(0, 4)
        if kind == 0:
            args, trips = f"{hi}", hi
        elif kind == 1:
            args, trips = f"{lo}, {hi}", hi - lo
        elif kind == 2:
            step = c.pick([-1, -2, -3])
            args, trips = f"{hi}, {lo}, {step}", (hi - lo) // -step + 1
        elif kind == 3:
            step = c.pick([2, 3])
            args, trips = f"{lo}, {hi}, {step}", (hi - lo) // step + 1
        else:               # bounds read from locals, evaluated once
            a = self.name(scope).text
            args, trips = c.pick([(f"{a} & 15", 16), (f"{a} % 9", 9),
                                  (f"{lo}, ({a} & 7) + {lo}", 8)])
        inner = scope.inner(v, True)
        if c.flag(30):
            # the loop variable assigned in the body: the next iteration counts on
            inner.assignable = inner.assignable + [v]
        body, cost = self.block(inner, indent + 1)
        lines = [f"{pad}for {v} in range({args}):"] + body
        return lines + self.after_loop(scope, pad, v, False), max(trips, 0) * (cost + 2) + 2

    def after_loop(self, scope: Scope, pad: str, counter: str, counted_up: bool) -> list[str]:
        """Code right after a loop, where a trace exits: often a
        non-commutative operation of the loop's counter and a constant.
        counted_up: the counter ends in 1..43 (a plain divisor or shift count)."""
        c = self.c
        if not c.flag(60):
            return []
        op = c.pick(NONCOMMUTATIVE)
        k = self.const()
        ctr = E(counter, VAR_BITS)
        if c.flag(50):
            # the constant on the left: LOAD_INT; LOAD_LOCAL; op
            if op == "<<" and k.const is not None and abs(k.const) >= 1 << 12:
                k = E("3", 2, const=3)
            if op in ("<<", ">>", "//", "%") and not counted_up:
                ctr = self.right(k, op, ctr)
            e = E(f"({k.text} {op} {ctr.text})", self.bits(k, op, E(ctr.text, 6)))
        else:
            e = self.combine(scope, ctr, op, k)
        e = self.stored(e) if op not in COMPARE else e
        where = c.int(0, 2)
        if where == 0 and scope.in_function and scope.depth == 0:
            return [f"{pad}return {e.text}"]       # the rest of the body never runs
        if where == 1:
            return [f"{pad}print({e.text})"]
        return [f"{pad}{c.pick(scope.assignable)} = {e.text}"]

    # -- functions and the module ------------------------------------------------
    def function(self, index: int) -> list[str]:
        c = self.c
        name = f"f{index}"
        recursive = c.flag(30)
        params = ["n"] if recursive else []
        params += ["a", "b", "c"][:c.int(0, 2) if recursive else c.int(1, 3)]
        local = ["x", "y", "z"][:c.int(1, 3)]
        # the recursion depth n is never assigned, nor sometimes a parameter
        # that loops then read as a bound
        frozen = params[:1] if recursive or c.flag(40) else []
        scope = Scope(params + local, [p for p in params if p not in frozen] + local,
                      True, ["i", "j", "k"], frozen=frozen)
        self.for_vars = set()
        init, cost = [], 0
        for v in local:
            e = self.stored(self.expr(Scope(params, [], True, []), 1)) \
                if params and c.flag(50) else self.const()
            init.append(f"    {v} = {e.text}")
            cost += 1 + e.cost
        if recursive:
            test = c.pick(["n <= 0", "n < 1", "0 >= n", "not n > 0", "1 > n"])
            base = self.stored(self.expr(scope, 1))
            body = [f"    if {test}:", f"        return {base.text}"]
            cost += 2 + base.cost
            if c.flag(50):       # one loop at most, small: the cost multiplies by the calls
                more, k = self.block(Scope(scope.readable, scope.assignable, True,
                                           scope.counters, frozen=frozen, depth=2), 1)
                body += more
                cost += k
            tree = c.flag(30)
            args = [f"n - {c.pick([1, 1, 2])}"] + [self.expr(scope, 2).text for _ in params[1:]]
            rec = f"{name}({', '.join(args)})"
            if tree:
                args2 = ["n - 2"] + [self.expr(scope, 2).text for _ in params[1:]]
                rec = f"({rec} + {name}({', '.join(args2)}))"
            rec_e = E(rec, VAR_BITS + 6)
            e = self.combine(scope, rec_e, c.pick(ARITH), self.leaf(scope)) if c.flag(50) \
                else self.combine(scope, self.leaf(scope), c.pick(ARITH), rec_e)
            body.append(f"    return {self.stored(e).text}")
            f = Func(name, params, cost + 1, True, tree)
        else:
            # a loop, then more statements, then the return: what a trace leaves to
            before, k0 = self.block(scope, 1, c.int(0, 2))
            loop, k = (self.while_ if c.flag(50) else self.for_)(scope, "    ", 1)
            after, k1 = self.block(scope, 1, c.int(0, 2))
            ret = self.stored(self.expr(scope))
            body = before + loop + after + [f"    return {ret.text}"]
            f = Func(name, params, cost + k0 + k + k1 + 1 + ret.cost)
        self.funcs.append(f)        # later functions may call it
        counters = [f"    {v} = 0" for v in sorted(self.for_vars)]
        return [f"def {name}({', '.join(params)}):"] + init + counters + body

    def calls_in_a_loop(self, scope: Scope, budget: int) -> tuple[list[str], int]:
        """A function called from a loop: a few times, or past the JIT's
        default threshold (64) when it is cheap enough."""
        c = self.c
        f = c.pick(self.funcs)
        per_call = self.call_cost(f) + 2
        want = c.pick([c.int(1, 6), c.int(60, 150)])
        # the estimate is a worst case (every loop to its bound, the costlier
        # branch): a third of it is nearer what runs; check() has the last word
        n = max(1, min(want, budget * 3 // per_call))
        acc = c.pick(scope.assignable)
        args = []
        for k in range(len(f.params)):
            kind = c.int(0, 2)
            args.append(self.depth_arg().text if f.recursive and k == 0 else
                        "i" if kind == 0 else self.name(scope).text if kind == 1 else
                        self.const().text)
        call = f"{f.name}({', '.join(args)})"
        line = c.pick([f"    {acc} += {call}", f"    {acc} = ({acc} + {call}) % 1000003",
                       f"    {acc} = {acc} ^ {call}", f"    {acc} -= {call}"])
        lines = [f"for i in range({n}):", line]
        if "+=" in line or "-=" in line:
            lines.append(f"    {acc} = {acc} % 1000000007")
        return lines + [f"print({acc})"], n * per_call

    def program(self) -> str:
        c = self.c
        lines: list[str] = []
        for index in range(c.int(1, 3)):
            lines += self.function(index)
            lines.append("")
        names = ["s", "t", "u"]
        scope = Scope(names + ["i"], names, False, ["j", "k"])
        self.for_vars = set()
        body, cost = self.block(scope, 0, c.int(1, 3))
        for v in names + ["i", "j", "k"]:
            lines.append(f"{v} = {self.const().text if v in names else 0}")
        lines += body
        for _ in range(c.int(1, 2)):
            more, k = self.calls_in_a_loop(scope, max(BUDGET - cost, 0))
            lines += more
            cost += k
        lines.append(f"print({', '.join(names)})")
        return "\n".join(lines) + "\n"


def generate(chooser) -> str:
    return Generator(chooser).program()


# ---- the program checked in this CPython ------------------------------------------------

class Unfit(Exception):
    """The program is not one to test with: it would overflow int64, fail,
    or run too long."""


class _Instrument(ast.NodeTransformer):
    """Every arithmetic result through _v (int64 or Unfit), every statement
    counted by _t."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("_v", ast.Load()), [node], [])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return node
        return ast.Call(ast.Name("_v", ast.Load()), [node], [])

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in ("body", "orelse"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                out = []
                for s in stmts:
                    out.append(ast.Expr(ast.Call(ast.Name("_t", ast.Load()), [], [])))
                    out.append(s)
                    if isinstance(s, ast.AugAssign):
                        out.append(ast.Expr(ast.Call(ast.Name("_v", ast.Load()),
                                                     [ast.Name(s.target.id, ast.Load())], [])))
                setattr(node, name, out)
        return node


def check(src: str) -> tuple[str, int]:
    """(what the program prints, statements executed) in this CPython, or
    Unfit.  Output is CPython's own (True/False as Python prints them)."""
    tree = ast.fix_missing_locations(_Instrument().visit(ast.parse(src)))
    out: list[str] = []
    steps = [0]

    def v(x):
        if not INT64_MIN <= x <= INT64_MAX:
            raise Unfit("outside int64")
        return x

    def t():
        steps[0] += 1
        if steps[0] > MAX_STATEMENTS:
            raise Unfit("too long")

    def pr(*args):
        out.append(" ".join(str(a) for a in args) + "\n")

    try:
        exec(compile(tree, "<generated>", "exec"), {"_v": v, "_t": t, "print": pr,
                                                    "__name__": "__main__"})
    except (ArithmeticError, ValueError, RecursionError) as e:
        raise Unfit(f"{type(e).__name__}: {e}") from None
    return "".join(out), steps[0]


@st.composite
def programs(draw) -> str:
    """The hypothesis strategy: a program check() accepts."""
    src = generate(DrawChooser(draw))
    try:
        check(src)
    except Unfit:
        reject()
    return src


def sample(seed: int) -> str:
    """A fixed program for a seed (the first from it that check() accepts)."""
    for attempt in range(100):
        src = generate(RandomChooser(seed * 1000 + attempt))
        try:
            check(src)
            return src
        except Unfit:
            continue
    raise RuntimeError(f"no fit program from seed {seed}")
