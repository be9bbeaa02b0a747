"""minipy: a small subset of Python compiled to shimlab bytecode.

The source is read with the `ast` module; everything outside the subset is
rejected with one line `file:line:col: unsupported <what>` (columns count
from 1), never silently miscompiled.

Supported:
  * module level: `def` functions with positional parameters (annotations are
    ignored; defaults, *args, **kwargs, keyword-only parameters and decorators
    are rejected) and ordinary statements, which form the entry function
    "<module>" (function 0, ends in HALT).  `if __name__ == "__main__":` at
    module level is accepted and treated as always true (its body may hold
    defs; an else branch is never compiled).  Docstrings and any
    other bare string statement are ignored.
  * int literals, True/False, local variables, the operators
    + - * // % << >> & | ^, unary - + ~ not, comparisons < <= == != > >=
    including chains (`a < b < c` evaluates b once and short-circuits),
    `and`/`or` with Python's value semantics, `x if c else y`.
  * statements: `x = e`, `a = b = e`, tuple assignment of tuple or list
    literals (`a, b = b, a % b`, `(a, (b, c)) = 1, (2, 3)`: every value on
    the right is evaluated, left to right, before any name is stored, as in
    Python), `x op= e`, `x: T = e`, `if/elif/else`,
    `while`, `for x in range(stop | start, stop | start, stop, step)` with a
    nonzero integer-constant step, `break`, `continue`, `pass`, `return [e]`
    (functions only), expression statements, and `print(e, ...)` with int
    arguments (separated by spaces, ended by a newline).
  * calls to functions defined anywhere in the same file (recursion allowed;
    the number of arguments is checked at compile time), except that a
    module-level statement may not call, directly or through other
    functions, a function whose def comes after it: Python has not run that
    def yet and raises NameError, so minipy refuses it at compile time.

Scoping: every function (and the module code) has its own locals: its
parameters and the names it assigns.  Functions do not see module-level
variables: reading a name that is neither a parameter nor assigned in the
function is the compile-time error "name 'x' is not defined".  Function names
cannot be assigned to or used as values.

Where minipy differs from Python:
  * integers are int64 and wrap around on overflow; a literal must fit in
    int64 (-9223372036854775808 included); `x << n` with n >= 64 gives 0;
  * booleans are ints: comparisons, `not` and True/False yield 0 or 1, so
    `print(1 < 2)` prints 1 where Python prints True;
  * locals start at 0: reading a variable before it is assigned yields 0
    instead of raising NameError/UnboundLocalError;
  * a function that ends without `return`, or a bare `return`, returns 0;
  * division or modulo by zero and negative shift counts are run-time errors
    of the VM (with the source line), not Python exceptions; deep recursion
    is limited by the VM's call depth;
  * a for-range counter that steps past the int64 range wraps;
  * a tuple assignment with more or fewer values than names is a compile-time
    error, where Python raises ValueError when it runs.

Big modules (more than half a megabyte) are parsed a piece of top-level
statements at a time, in two passes, so memory stays a few tens of bytes per
source byte where Python's parser needs hundreds for a whole module; the
result and every error are the same as for the module parsed whole.

Code shapes (so dispatch experiments know what they are looking at):
  while:  top: <cond>; JUMP_IF_FALSE end; <body>; LOOP top; end:
          (`while True` has no test; `continue` is LOOP top)
  for:    <start>; STORE i'; <stop>; STORE stop'
          top: LOAD i'; LOAD stop'; LT (GT for a negative step); JUMP_IF_FALSE end
               LOAD i'; STORE x; <body>
          next: LOAD i'; LOAD_INT step; ADD; STORE i'; LOOP top; end:
          (`continue` jumps forward to next)
Conditions of if/while/conditional expressions compile to jumps (and/or/not
and comparison chains short-circuit without materialising 0/1).  Code that
cannot be reached (after return/break/continue, under `if 0:`) is checked
but not emitted.

Local slot layout: parameters first, then the other locals in order of first
appearance in the source, then hidden temporaries (named "$t0", "$t1", ...)
used by comparison chains, for-range counters/limits and print.
"""
from __future__ import annotations

import ast
import builtins
import gc
import sys
from array import array
from collections.abc import Sequence
from typing import Callable, Iterator, Optional

from .. import isa
from ..bytecode import Assembler, Function, Label, Program
from ..errors import FrontendError

__all__ = ["compile_source"]

LANGUAGE = "minipy"

_BINOPS = {
    ast.Add: "ADD", ast.Sub: "SUB", ast.Mult: "MUL", ast.FloorDiv: "FLOORDIV",
    ast.Mod: "MOD", ast.LShift: "LSHIFT", ast.RShift: "RSHIFT", ast.BitAnd: "AND",
    ast.BitOr: "OR", ast.BitXor: "XOR",
}
_BINOP_SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
    ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
    ast.Div: "/", ast.Pow: "**", ast.MatMult: "@",
}
# operators that can fail at run time (so evaluation order is observable)
_FAILING_BINOPS = (ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift)

_CMPOPS = {ast.Lt: "LT", ast.LtE: "LE", ast.Eq: "EQ", ast.NotEq: "NE", ast.Gt: "GT",
           ast.GtE: "GE"}
_CMP_SYMBOLS = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}

_STMT_NAMES = {
    "ClassDef": "class", "AsyncFunctionDef": "async def", "Import": "import",
    "ImportFrom": "import", "Global": "global", "Nonlocal": "nonlocal", "Try": "try",
    "TryStar": "try", "With": "with", "AsyncWith": "async with", "AsyncFor": "async for",
    "Delete": "del", "Raise": "raise", "Assert": "assert", "Match": "match",
    "TypeAlias": "type alias", "FunctionDef": "nested def",
}
_EXPR_NAMES = {
    "List": "list", "Tuple": "tuple", "Dict": "dict", "Set": "set",
    "ListComp": "list comprehension", "SetComp": "set comprehension",
    "DictComp": "dict comprehension", "GeneratorExp": "generator expression",
    "Lambda": "lambda", "Subscript": "subscript", "Attribute": "attribute",
    "JoinedStr": "f-string", "FormattedValue": "f-string",
    "NamedExpr": "assignment expression (:=)", "Await": "await", "Yield": "yield",
    "YieldFrom": "yield from", "Starred": "starred expression", "Slice": "slice",
}
_BUILTIN_CALLS = ("print", "range")
_RECURSION_LIMIT = 8000


def _describe(node: ast.AST, table: dict[str, str]) -> str:
    name = type(node).__name__
    return table.get(name, name.lower())


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either operand order)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    t = node.test
    if len(t.ops) != 1 or not isinstance(t.ops[0], ast.Eq):
        return False
    a, b = t.left, t.comparators[0]

    def is_name(n):
        return isinstance(n, ast.Name) and n.id == "__name__"

    def is_main(n):
        return isinstance(n, ast.Constant) and n.value == "__main__"

    return (is_name(a) and is_main(b)) or (is_main(a) and is_name(b))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _nodes_in(stmts: list[ast.stmt], kind: type) -> list:
    """Every node of this kind in these statements (not inside nested scopes),
    in source order."""
    # by hand rather than ast.iter_child_nodes: this walks every node of a
    # big module, and the generators cost three times the walk itself
    out: list = []
    stack: list = list(stmts)
    AST, Name = ast.AST, ast.Name
    while stack:
        n = stack.pop()
        if isinstance(n, kind):
            out.append(n)
        if isinstance(n, Name) or isinstance(n, _SCOPES):
            continue
        for name in n._fields:
            v = getattr(n, name, None)
            if isinstance(v, AST):
                stack.append(v)
            elif isinstance(v, list):
                stack.extend(x for x in v if isinstance(x, AST))
    out.sort(key=lambda n: (n.lineno, n.col_offset))
    return out


def _names_in(stmts: list[ast.stmt]) -> list[ast.Name]:
    return _nodes_in(stmts, ast.Name)


def _calls_in(stmts: list[ast.stmt]) -> list[ast.Call]:
    """The calls of a function by its name."""
    return [c for c in _nodes_in(stmts, ast.Call) if isinstance(c.func, ast.Name)]


def _latest_reached(turn: dict[str, int], callees: dict[str, tuple[str, ...]]
                    ) -> dict[str, tuple[int, str]]:
    """For each function, the latest def turn among the functions a call of
    it can reach (itself included) and whose def that is: Tarjan's strongly
    connected components, iteratively (recursion reaches itself), so each
    function and call is looked at once."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    latest: dict[str, tuple[int, str]] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    for root in turn:
        if root in index:
            continue
        work = [(root, iter(c for c in callees[root] if c in turn))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            f, it = work[-1]
            g = next(it, None)
            if g is not None:
                if g not in index:
                    index[g] = low[g] = len(index)
                    stack.append(g)
                    on_stack.add(g)
                    work.append((g, iter(c for c in callees[g] if c in turn)))
                elif g in on_stack:
                    low[f] = min(low[f], index[g])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[f])
            if low[f] == index[f]:          # f roots a component: every member reaches the same
                members = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.append(m)
                    if m == f:
                        break
                best = max((turn[m], m) for m in members)
                for m in members:
                    for c in callees[m]:
                        if c in latest and c not in members:
                            best = max(best, latest[c])
                for m in members:
                    latest[m] = best
    return latest


def _may_fail_or_act(node: ast.AST) -> bool:
    """Could evaluating this expression print, call, or raise a run-time error?"""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            return True
        if isinstance(n, ast.BinOp) and isinstance(n.op, _FAILING_BINOPS):
            return True
    return False


class _FuncInfo:
    def __init__(self, index: int, node: Optional[ast.FunctionDef], name: str, nargs: int):
        self.index = index
        self.node = node
        self.name = name
        self.nargs = nargs


class _Positions(Sequence):
    """(line, column) per instruction in two int arrays: 8 bytes an
    instruction instead of a list slot and a tuple."""

    def __init__(self):
        self.lines, self.cols = array("i"), array("i")

    def append(self, position: tuple[int, int]) -> None:
        self.lines.append(position[0])
        self.cols.append(position[1])

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, pc):
        if isinstance(pc, slice):
            return [self[i] for i in range(*pc.indices(len(self)))]
        return self.lines[pc], self.cols[pc]


class _CompactAssembler(Assembler):
    """An Assembler whose equal instructions are one shared tuple and whose
    positions are compact, so a big module's bytecode costs a few bytes per
    source byte."""

    def __init__(self, name: str, language: str):
        super().__init__(name, language)
        self.program.positions = _Positions()
        self._shared: dict[tuple[int, int], tuple[int, int]] = {}

    def emit(self, name: str, arg: int | Label = 0) -> int:
        pc = super().emit(name, arg)
        code = self.program.code
        code[pc] = self._shared.setdefault(code[pc], code[pc])
        return pc


class _ModuleCompiler:
    def __init__(self, filename: str):
        self.filename = filename
        self.asm = _CompactAssembler(filename, LANGUAGE)
        self.functions: dict[str, _FuncInfo] = {}
        self.defs: list[ast.FunctionDef] = []
        self.main_body: list[ast.stmt] = []
        # added to the lines of the nodes being compiled (a piece of a big module)
        self.line_offset = 0
        # what Python runs in order: each def and main statement gets the index
        # of its turn; the names each def calls; the calls main statements make
        self.turn = 0
        self.def_turn: dict[str, int] = {}
        self.callees: dict[str, tuple[str, ...]] = {}
        self.main_calls: list[tuple[int, tuple[tuple[str, int, int], ...]]] = []

    def error(self, node: Optional[ast.AST], msg: str) -> FrontendError:
        line = (getattr(node, "lineno", 1) or 1) + self.line_offset
        col = (getattr(node, "col_offset", 0) or 0) + 1
        return FrontendError(f"{self.filename}:{line}:{col}: {msg}")

    # -- module structure ----------------------------------------------------

    def collect(self, stmts: list[ast.stmt], main: list | None = None,
                defs: bool = True, offset: int = 0) -> None:
        """defs to the function table (unless defs=False), the other
        statements to `main` (self.main_body by default); offset: the
        statements' line offset (a piece of a big module)."""
        main = self.main_body if main is None else main
        for s in stmts:
            if isinstance(s, ast.FunctionDef):
                if defs:
                    self.add_def(s)
                    self.turn += 1
            elif _is_main_guard(s):
                # always true: the else branch never runs
                self.collect(s.body, main, defs, offset)
            else:
                main.append(s)
                if defs:
                    calls = tuple((c.func.id, c.lineno + offset, c.col_offset + 1)
                                  for c in _calls_in([s]))
                    if calls:
                        self.main_calls.append((self.turn, calls))
                    self.turn += 1

    def check_call_order(self) -> None:
        """A main statement must not call, directly or through other
        functions, a function whose def runs after it: Python raises
        NameError there (minipy, which knows every def at compile time, would
        run it)."""
        if not self.main_calls:
            return
        latest = _latest_reached(self.def_turn, self.callees)
        for turn, calls in self.main_calls:
            for name, line, col in calls:
                if name not in latest or latest[name][0] <= turn:
                    continue
                late = latest[name][1]
                how = "" if late == name else f" (called through '{name}')"
                raise FrontendError(
                    f"{self.filename}:{line}:{col}: function '{late}'{how} is called before "
                    f"its def on line {self.functions[late].node.lineno} has run (Python "
                    f"raises NameError: move the def above this statement)")

    def add_def(self, node: ast.FunctionDef) -> None:
        if node.decorator_list:
            raise self.error(node.decorator_list[0], "unsupported decorator")
        a = node.args
        if a.vararg:
            raise self.error(a.vararg, "unsupported *args parameter")
        if a.kwarg:
            raise self.error(a.kwarg, "unsupported **kwargs parameter")
        if a.kwonlyargs:
            raise self.error(a.kwonlyargs[0], "unsupported keyword-only parameter")
        if a.defaults or a.kw_defaults:
            d = (a.defaults or [x for x in a.kw_defaults if x is not None])[0]
            raise self.error(d, "unsupported default parameter value")
        if getattr(node, "type_params", None):
            raise self.error(node, "unsupported type parameters")
        if node.name in _BUILTIN_CALLS:
            raise self.error(node, f"unsupported redefinition of builtin '{node.name}'")
        if node.name in self.functions:
            first = self.functions[node.name].node
            raise self.error(node, f"function '{node.name}' is already defined "
                                   f"(line {first.lineno})")
        params = a.posonlyargs + a.args
        self.functions[node.name] = _FuncInfo(len(self.defs) + 1, node, node.name, len(params))
        self.defs.append(node)
        self.def_turn[node.name] = self.turn
        self.callees[node.name] = tuple({c.func.id for c in _calls_in(node.body)})

    def compile(self, tree: ast.Module) -> Program:
        self.collect(tree.body)
        self.check_call_order()
        functions: list[Function] = []
        main = _FunctionCompiler(self, "<module>", [], self.main_body, None)
        functions.append(main.compile())
        for node in self.defs:
            params = node.args.posonlyargs + node.args.args
            fc = _FunctionCompiler(self, node.name, params, node.body, node)
            functions.append(fc.compile())
        program = self.asm.finish()
        program.functions = functions
        return program

    def compile_pieces(self, pieces: Callable[..., Iterator[tuple[int, list[ast.stmt]]]]
                       ) -> Program:
        """compile() for a big module given as pieces of top-level statements
        with their line offsets (each call of pieces() parses them anew, or
        only the pieces of the indices given): neither the main body nor the
        defs' bodies are held whole.  Pass 1 collects the defs (name, line and
        parameters: their bodies are dropped) and the main body's names,
        pass 2 compiles the main body piece by piece, with line_offset making
        its positions absolute, pass 3 parses the pieces with defs again and
        compiles the defs in order."""
        first: dict[str, tuple[int, int]] = {}   # main's names: first (line, col)
        assigned: set[str] = set()
        with_defs: set[int] = set()              # the pieces pass 3 parses again
        for i, (offset, stmts) in enumerate(pieces()):
            defs = list(_defs_in(stmts))
            if defs:
                with_defs.add(i)
            for d in defs:                       # kept: their lines made absolute
                ast.increment_lineno(d, offset)
            main: list[ast.stmt] = []
            self.collect(stmts, main, offset=offset)
            for d in defs:
                # the function table needs a def's name, line and parameters;
                # its body is compiled in pass 3, parsed anew (kept, the
                # bodies of a module of defs were most of the module's AST)
                d.body = []
            for n in _names_in(main):
                first.setdefault(n.id, (n.lineno + offset, n.col_offset))
                if isinstance(n.ctx, ast.Store):
                    assigned.add(n.id)
        self.check_call_order()
        names = [ast.Name(id=name, ctx=ast.Store() if name in assigned else ast.Load(),
                          lineno=line, col_offset=col) for name, (line, col) in first.items()]
        del first

        def main_body() -> Iterator[ast.stmt]:
            for offset, stmts in pieces():
                main: list[ast.stmt] = []
                self.collect(stmts, main, defs=False)
                self.line_offset = offset
                yield from main
            self.line_offset = 0
        functions: list[Function] = []
        main = _FunctionCompiler(self, "<module>", [], main_body(), None)
        main.names = names
        functions.append(main.compile())
        stubs = iter(self.defs)
        for offset, stmts in pieces(with_defs):  # pass 3: the defs, in the same order
            for node in _defs_in(stmts):
                stub = next(stubs, None)
                assert stub is not None and stub.name == node.name, "defs out of step"
                ast.increment_lineno(node, offset)
                params = node.args.posonlyargs + node.args.args
                fc = _FunctionCompiler(self, node.name, params, node.body, node)
                functions.append(fc.compile())
        assert next(stubs, None) is None, "defs out of step"
        program = self.asm.finish()
        program.functions = functions
        return program


class _FunctionCompiler:
    def __init__(self, module: _ModuleCompiler, name: str, params: list[ast.arg],
                 body: list[ast.stmt], node: Optional[ast.FunctionDef]):
        self.m = module
        self.asm = module.asm
        self.name = name
        self.names: list[ast.Name] | None = None   # the body's names, when given ready
        self.params = params
        self.body = body
        self.node = node
        self.is_main = node is None
        self.slots: dict[str, int] = {}
        self.local_names: list[str] = []
        self.free_temps: list[int] = []
        self.ntemps = 0
        # (break label, continue label, continue is a backward LOOP)
        self.loops: list[tuple[Label, Label, bool]] = []
        self.reachable = True
        self.referenced: set[Label] = set()

    def error(self, node, msg) -> FrontendError:
        return self.m.error(node, msg)

    # -- emission, skipping code that cannot be reached -------------------------

    def at(self, node: ast.AST) -> None:
        self.asm.position = (node.lineno + self.m.line_offset, node.col_offset + 1)

    def emit(self, name: str, arg: int | Label = 0) -> None:
        if not self.reachable:
            return
        if isinstance(arg, Label):
            self.referenced.add(arg)
        self.asm.emit(name, arg)
        if name in ("JUMP", "LOOP", "RETURN", "HALT"):
            self.reachable = False

    def load_int(self, value: int) -> None:
        if self.reachable:
            self.asm.load_int(value)

    def bind(self, label: Label) -> None:
        self.asm.bind(label)
        if label in self.referenced:
            self.reachable = True

    # -- locals ------------------------------------------------------------

    def check_assignable(self, name: str, node: ast.AST) -> None:
        if name in self.m.functions:
            raise self.error(node, f"cannot assign to '{name}': it is a function")
        if name in _BUILTIN_CALLS:
            raise self.error(node, f"unsupported assignment to builtin '{name}'")
        if name == "__name__":
            raise self.error(node, "unsupported assignment to __name__")

    def setup_locals(self) -> None:
        for p in self.params:
            if p.arg in self.slots:
                raise self.error(p, f"duplicate argument '{p.arg}' in function definition")
            self.check_assignable(p.arg, p)
            self.slots[p.arg] = len(self.local_names)
            self.local_names.append(p.arg)
        names = self.names if self.names is not None else _names_in(self.body)
        assigned = {n.id for n in names if isinstance(n.ctx, ast.Store)}
        for n in names:
            if n.id in assigned and n.id not in self.slots:
                self.check_assignable(n.id, n)
                self.slots[n.id] = len(self.local_names)
                self.local_names.append(n.id)

    def temp(self) -> int:
        if self.free_temps:
            return self.free_temps.pop()
        slot = len(self.local_names)
        self.local_names.append(f"$t{self.ntemps}")
        self.ntemps += 1
        return slot

    def release(self, slot: int) -> None:
        self.free_temps.append(slot)

    def store(self, target: ast.expr) -> None:
        if not isinstance(target, ast.Name):
            raise self.error(target, f"unsupported assignment target: "
                                     f"{_describe(target, _EXPR_NAMES)}")
        self.at(target)
        self.emit("STORE_LOCAL", self.slots[target.id])

    # -- functions -------------------------------------------------------------

    def compile(self) -> Function:
        self.setup_locals()
        entry = self.asm.pc
        self.asm.position = (self.node.lineno, self.node.col_offset + 1) if self.node else (1, 1)
        end_line = None
        for s in self.body:      # an iterator for a big module's main body
            self.stmt(s)
            end_line = (getattr(s, "end_lineno", None) or s.lineno) + self.m.line_offset
        if self.is_main:
            if end_line is not None:
                self.asm.position = (end_line, 1)
            self.emit("HALT")
        else:
            self.at(self.node)
            self.load_int(0)
            self.emit("RETURN")
        return Function(self.name, entry, len(self.params), len(self.local_names),
                        list(self.local_names))

    # -- statements -----------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, node: ast.stmt) -> None:
        self.at(node)
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"unsupported statement: {_describe(node, _STMT_NAMES)}")
        method(node)

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_FunctionDef(self, node: ast.FunctionDef) -> None:
        raise self.error(node, "unsupported nested function definition "
                               "(def must be at module level)")

    def stmt_Expr(self, node: ast.Expr) -> None:
        v = node.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return   # docstring
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "print":
            self.print_call(v)
            return
        self.expr(v)
        self.at(node)
        self.emit("POP")

    def stmt_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
            self.unpack_assign(node)
            return
        for t in node.targets:
            if not isinstance(t, ast.Name):
                raise self.error(t, f"unsupported assignment target: {_describe(t, _EXPR_NAMES)}")
        self.expr(node.value)
        for i, t in enumerate(node.targets):
            if i < len(node.targets) - 1:
                self.at(node)
                self.emit("DUP")
            self.store(t)

    def unpack_pairs(self, target: ast.expr, value: ast.expr) -> list[ast.Name]:
        """The names `target` binds, one per leaf of the literal `value`, in
        order; shapes that do not match are errors here, at compile time
        (Python raises ValueError when the statement runs)."""
        if isinstance(target, ast.Name):
            if isinstance(value, (ast.Tuple, ast.List)):
                raise self.error(value, f"unsupported value: a {_describe(value, _EXPR_NAMES)} "
                                        f"assigned to '{target.id}' (only ints are values)")
            return [target]
        if isinstance(target, ast.Starred):
            raise self.error(target, "unsupported starred assignment target")
        if not isinstance(target, (ast.Tuple, ast.List)):
            raise self.error(target, f"unsupported assignment target: "
                                     f"{_describe(target, _EXPR_NAMES)}")
        if not isinstance(value, (ast.Tuple, ast.List)):
            raise self.error(value, "unsupported unpacking of a value that is not a tuple or "
                                    "list literal")
        for v in value.elts:
            if isinstance(v, ast.Starred):
                raise self.error(v, "unsupported starred expression")
        want, got = len(target.elts), len(value.elts)
        if got > want:
            raise self.error(target, f"too many values to unpack (expected {want}, got {got})")
        if got < want:
            raise self.error(target, f"not enough values to unpack (expected {want}, "
                                     f"got {got})")
        names: list[ast.Name] = []
        for t, v in zip(target.elts, value.elts):
            names.extend(self.unpack_pairs(t, v))
        return names

    def value_leaves(self, value: ast.expr) -> list[ast.expr]:
        if isinstance(value, (ast.Tuple, ast.List)):
            return [leaf for v in value.elts for leaf in self.value_leaves(v)]
        return [value]

    def unpack_assign(self, node: ast.Assign) -> None:
        """`a, b = b, a % b`: every value is evaluated, left to right, onto the
        stack before any store; then the names are stored left to right, as
        Python does, so with a name twice (`a, a = 1, 2`) the last one wins."""
        targets = [self.unpack_pairs(t, node.value) for t in node.targets]
        leaves = self.value_leaves(node.value)
        for v in leaves:
            self.expr(v)
        if len(targets) == 1:
            # the stack pops the last value first: storing right to left, a
            # name already stored from further right is the one Python keeps
            stored: set[str] = set()
            for name in reversed(targets[0]):
                if name.id in stored:
                    self.at(name)
                    self.emit("POP")
                else:
                    self.store(name)
                    stored.add(name.id)
            return
        # a = b, c = 1, 2 (several targets): the values go to temporaries,
        # then each target is stored from them, target after target
        temps = [self.temp() for _ in leaves]
        self.at(node)
        for t in reversed(temps):
            self.emit("STORE_LOCAL", t)
        for names in targets:
            for name, t in zip(names, temps):
                self.at(name)
                self.emit("LOAD_LOCAL", t)
                self.store(name)
        for t in reversed(temps):
            self.release(t)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, f"unsupported assignment target: "
                                          f"{_describe(node.target, _EXPR_NAMES)}")
        if node.value is not None:
            self.expr(node.value)
            self.store(node.target)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        t = node.target
        if not isinstance(t, ast.Name):
            raise self.error(t, f"unsupported assignment target: {_describe(t, _EXPR_NAMES)}")
        op = self.binop_name(node.op, node)
        self.at(t)
        self.emit("LOAD_LOCAL", self.slots[t.id])
        self.expr(node.value)
        self.at(node)
        self.emit(op)
        self.store(t)

    def stmt_If(self, node: ast.If) -> None:
        if _is_main_guard(node):
            raise self.error(node, "unsupported use of __name__ "
                                   "(if __name__ == \"__main__\": only at module level)")
        else_l, end = self.asm.label(), self.asm.label()
        self.cond_jump(node.test, else_l, False)
        self.block(node.body)
        if node.orelse:
            self.at(node)
            self.emit("JUMP", end)
            self.bind(else_l)
            self.block(node.orelse)
            self.bind(end)
        else:
            self.bind(else_l)

    def stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error(node.orelse[0], "unsupported else clause on a while loop")
        top, end = self.asm.label(), self.asm.label()
        self.bind(top)
        self.cond_jump(node.test, end, False)
        self.loops.append((end, top, True))
        self.block(node.body)
        self.loops.pop()
        self.at(node)
        self.emit("LOOP", top)
        self.bind(end)

    def range_step(self, node: ast.expr) -> int:
        value = None
        if isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            value = int(node.value)
        elif (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd))
              and isinstance(node.operand, ast.Constant)
              and type(node.operand.value) in (int, bool)):
            value = int(node.operand.value)
            if isinstance(node.op, ast.USub):
                value = -value
        if value is None or value == 0:
            raise self.error(node, "unsupported range() step: it must be a nonzero "
                                   "integer constant")
        if not isa.INT64_MIN <= value <= isa.INT64_MAX:
            raise self.error(node, "integer literal out of 64-bit range")
        return value

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node.orelse[0], "unsupported else clause on a for loop")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, f"unsupported for-loop target: "
                                          f"{_describe(node.target, _EXPR_NAMES)}")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range"):
            raise self.error(it, "unsupported for loop: only 'for x in range(...)' is supported")
        if it.keywords:
            raise self.error(it.keywords[0], "unsupported keyword argument")
        for a in it.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "unsupported starred argument")
        if not 1 <= len(it.args) <= 3:
            raise self.error(it, f"range expected 1 to 3 arguments, got {len(it.args)}")
        step = self.range_step(it.args[2]) if len(it.args) == 3 else 1
        counter, stop = self.temp(), self.temp()
        if len(it.args) == 1:
            self.expr(it.args[0])
            self.at(it)
            self.emit("STORE_LOCAL", stop)
            self.load_int(0)
            self.emit("STORE_LOCAL", counter)
        else:
            self.expr(it.args[0])
            self.at(it)
            self.emit("STORE_LOCAL", counter)
            self.expr(it.args[1])
            self.at(it)
            self.emit("STORE_LOCAL", stop)
        top, nxt, end = self.asm.label(), self.asm.label(), self.asm.label()
        self.bind(top)
        self.at(node)
        self.emit("LOAD_LOCAL", counter)
        self.emit("LOAD_LOCAL", stop)
        self.emit("LT" if step > 0 else "GT")
        self.emit("JUMP_IF_FALSE", end)
        self.emit("LOAD_LOCAL", counter)
        self.store(node.target)
        self.loops.append((end, nxt, False))
        self.block(node.body)
        self.loops.pop()
        self.bind(nxt)
        self.at(node)
        self.emit("LOAD_LOCAL", counter)
        self.load_int(step)
        self.emit("ADD")
        self.emit("STORE_LOCAL", counter)
        self.emit("LOOP", top)
        self.bind(end)
        self.release(stop)
        self.release(counter)

    def stmt_Break(self, node: ast.Break) -> None:
        if not self.loops:
            raise self.error(node, "'break' outside loop")
        self.emit("JUMP", self.loops[-1][0])

    def stmt_Continue(self, node: ast.Continue) -> None:
        if not self.loops:
            raise self.error(node, "'continue' not properly in loop")
        _, target, backward = self.loops[-1]
        self.emit("LOOP" if backward else "JUMP", target)

    def stmt_Return(self, node: ast.Return) -> None:
        if self.is_main:
            raise self.error(node, "'return' outside function")
        if node.value is None:
            self.load_int(0)
        else:
            self.expr(node.value)
            self.at(node)
        self.emit("RETURN")

    def print_call(self, node: ast.Call) -> None:
        if node.keywords:
            raise self.error(node.keywords[0], "unsupported keyword argument to print")
        args = node.args
        for a in args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "unsupported starred argument")
        if not args:
            self.at(node)
            self.emit("PRINT_BYTE", 10)
            return
        # Python evaluates every argument before printing anything.  An argument that
        # may call, print or fail is evaluated first, in order, into a temporary; the
        # others are evaluated as they are printed, which gives the same values since
        # nothing an expression does can change the caller's locals.
        temps: dict[int, int] = {}
        if any(_may_fail_or_act(a) for a in args[1:]):
            for i, a in enumerate(args):
                if _may_fail_or_act(a):
                    temps[i] = self.temp()
                    self.expr(a)
                    self.at(node)
                    self.emit("STORE_LOCAL", temps[i])
        for i, a in enumerate(args):
            if i in temps:
                self.at(node)
                self.emit("LOAD_LOCAL", temps[i])
            else:
                self.expr(a)
            self.at(node)
            self.emit("PRINT", 10 if i == len(args) - 1 else 32)
        for t in reversed(temps.values()):
            self.release(t)

    # -- expressions ------------------------------------------------------------

    def expr(self, node: ast.expr) -> None:
        self.at(node)
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"unsupported expression: {_describe(node, _EXPR_NAMES)}")
        method(node)

    def int_literal(self, node: ast.Constant, negate: bool = False) -> int:
        v = node.value
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            if negate:
                v = -v
            if not isa.INT64_MIN <= v <= isa.INT64_MAX:
                raise self.error(node, "integer literal out of 64-bit range")
            return v
        if isinstance(v, str):
            what = "string literal"
        elif isinstance(v, bytes):
            what = "bytes literal"
        elif isinstance(v, float):
            what = "float literal"
        elif isinstance(v, complex):
            what = "complex literal"
        elif v is None:
            what = "None"
        elif v is Ellipsis:
            what = "Ellipsis"
        else:
            what = f"{type(v).__name__} literal"
        raise self.error(node, f"unsupported {what}")

    def expr_Constant(self, node: ast.Constant) -> None:
        self.load_int(self.int_literal(node))

    def expr_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in self.slots:
            self.emit("LOAD_LOCAL", self.slots[name])
        elif name in self.m.functions:
            raise self.error(node, f"unsupported expression: function '{name}' used as a value")
        elif name in _BUILTIN_CALLS:
            raise self.error(node, f"unsupported expression: builtin '{name}' used as a value")
        elif name == "__name__":
            raise self.error(node, "unsupported use of __name__")
        else:
            raise self.error(node, f"name '{name}' is not defined")

    def binop_name(self, op: ast.operator, node: ast.AST) -> str:
        name = _BINOPS.get(type(op))
        if name is None:
            sym = _BINOP_SYMBOLS.get(type(op), type(op).__name__)
            raise self.error(node, f"unsupported operator: {sym}")
        return name

    def expr_BinOp(self, node: ast.BinOp) -> None:
        op = self.binop_name(node.op, node)
        self.expr(node.left)
        self.expr(node.right)
        self.at(node)
        self.emit(op)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> None:
        op, operand = node.op, node.operand
        if (isinstance(op, ast.USub) and isinstance(operand, ast.Constant)
                and type(operand.value) is int):
            # fold so that -9223372036854775808 is a valid literal
            v = -operand.value
            if not isa.INT64_MIN <= v <= isa.INT64_MAX:
                raise self.error(node, "integer literal out of 64-bit range")
            self.load_int(v)
            return
        self.expr(operand)
        self.at(node)
        if isinstance(op, ast.USub):
            self.emit("NEG")
        elif isinstance(op, ast.Invert):
            self.emit("INVERT")
        elif isinstance(op, ast.Not):
            self.emit("NOT")
        # UAdd: +x is x for ints

    def expr_BoolOp(self, node: ast.BoolOp) -> None:
        jump = "JUMP_IF_TRUE" if isinstance(node.op, ast.Or) else "JUMP_IF_FALSE"
        end = self.asm.label()
        for v in node.values[:-1]:
            self.expr(v)
            self.at(node)
            self.emit("DUP")
            self.emit(jump, end)
            self.emit("POP")
        self.expr(node.values[-1])
        self.bind(end)

    def cmp_names(self, node: ast.Compare) -> list[str]:
        out = []
        for op in node.ops:
            name = _CMPOPS.get(type(op))
            if name is None:
                sym = _CMP_SYMBOLS.get(type(op), type(op).__name__)
                raise self.error(node, f"unsupported comparison operator: {sym}")
            out.append(name)
        return out

    def compare_chain(self, node: ast.Compare, fail: Label, last_jump: Optional[str],
                      last_target: Optional[Label]) -> None:
        """Evaluate a comparison chain; every non-final false link jumps to `fail`
        (stack back at its starting depth).  The final comparison's 0/1 is left
        on the stack, or consumed by `last_jump` to `last_target` if given."""
        ops = self.cmp_names(node)
        n = len(ops)
        t = self.temp() if n > 1 else None
        self.expr(node.left)
        for i, (op, comp) in enumerate(zip(ops, node.comparators)):
            if i > 0:
                self.at(node)
                self.emit("LOAD_LOCAL", t)
            self.expr(comp)
            self.at(node)
            if i < n - 1:
                self.emit("DUP")
                self.emit("STORE_LOCAL", t)
                self.emit(op)
                self.emit("JUMP_IF_FALSE", fail)
            else:
                self.emit(op)
                if last_jump is not None:
                    self.emit(last_jump, last_target)
        if t is not None:
            self.release(t)

    def expr_Compare(self, node: ast.Compare) -> None:
        if len(node.ops) == 1:
            self.compare_chain(node, None, None, None)
            return
        false_l, end = self.asm.label(), self.asm.label()
        self.compare_chain(node, false_l, None, None)
        self.emit("JUMP", end)
        self.bind(false_l)
        self.at(node)
        self.load_int(0)
        self.bind(end)

    def expr_IfExp(self, node: ast.IfExp) -> None:
        else_l, end = self.asm.label(), self.asm.label()
        self.cond_jump(node.test, else_l, False)
        self.expr(node.body)
        self.at(node)
        self.emit("JUMP", end)
        self.bind(else_l)
        self.expr(node.orelse)
        self.bind(end)

    def expr_Call(self, node: ast.Call) -> None:
        f = node.func
        if not isinstance(f, ast.Name):
            raise self.error(node, f"unsupported call of {_describe(f, _EXPR_NAMES)}")
        name = f.id
        if name in self.slots:
            raise self.error(node, f"'{name}' is a variable, not a function")
        if name == "print":
            raise self.error(node, "unsupported expression: print() used as a value")
        if name == "range":
            raise self.error(node, "unsupported expression: range() outside "
                                   "'for x in range(...)'")
        info = self.m.functions.get(name)
        if info is None:
            if hasattr(builtins, name):
                raise self.error(node, f"unsupported builtin function: {name}()")
            raise self.error(node, f"name '{name}' is not defined")
        if node.keywords:
            raise self.error(node.keywords[0], "unsupported keyword argument")
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "unsupported starred argument")
        given = len(node.args)
        if given > info.nargs:
            raise self.error(node, f"{name}() takes {_plural(info.nargs, 'positional argument')}"
                                   f" but {given} {'was' if given == 1 else 'were'} given")
        if given < info.nargs:
            params = info.node.args.posonlyargs + info.node.args.args
            missing = [p.arg for p in params[given:]]
            listed = ", ".join(f"'{m}'" for m in missing)
            raise self.error(node, f"{name}() missing "
                                   f"{_plural(len(missing), 'required positional argument')}"
                                   f": {listed}")
        for a in node.args:
            self.expr(a)
        self.at(node)
        self.emit("CALL", info.index)

    # -- conditions: compiled to jumps ---------------------------------------------

    def cond_jump(self, node: ast.expr, target: Label, jump_if: bool) -> None:
        """Jump to target when bool(node) == jump_if; fall through otherwise."""
        self.at(node)
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            if is_and != jump_if:
                # and/jump-if-false, or/jump-if-true: any operand decides
                for v in node.values:
                    self.cond_jump(v, target, jump_if)
            else:
                skip = self.asm.label()
                for v in node.values[:-1]:
                    self.cond_jump(v, skip, not jump_if)
                self.cond_jump(node.values[-1], target, jump_if)
                self.bind(skip)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self.cond_jump(node.operand, target, not jump_if)
            return
        if isinstance(node, ast.Constant):
            value = self.int_literal(node)
            if bool(value) == jump_if:
                self.emit("JUMP", target)
            return
        if isinstance(node, ast.Compare) and len(node.ops) > 1:
            if not jump_if:
                self.compare_chain(node, target, "JUMP_IF_FALSE", target)
            else:
                skip = self.asm.label()
                self.compare_chain(node, skip, "JUMP_IF_TRUE", target)
                self.bind(skip)
            return
        self.expr(node)
        self.at(node)
        self.emit("JUMP_IF_TRUE" if jump_if else "JUMP_IF_FALSE", target)


def compile_source(source: str, filename: str = "<minipy>") -> Program:
    """Compile minipy source to an (unverified) Program; errors are FrontendError."""
    if source.startswith("\ufeff"):
        source = source[1:]   # a UTF-8 byte-order mark, which Python accepts too
    # the compiler recurses over the tree: allow long `1 + 1 + ... + 1` chains
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    # an AST is millions of objects on a big file and none of them cyclic:
    # the cyclic garbage collector would rescan them again and again (5x the time)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _compile(source, filename)
    finally:
        sys.setrecursionlimit(limit)
        if collecting:
            gc.enable()


# Python's parser needs a few hundred bytes of memory per source byte: a big
# module is parsed in pieces of about this many characters, cut before lines
# at column 0.  A cut inside a construct (a string, brackets, a backslash,
# an else) leaves a piece that does not parse, and then the module is parsed
# whole, which gives the exact result or error.
_PIECE = 1 << 18
_CONTINUATIONS = ("else", "elif", "except", "finally")


def _cuts(source: str) -> list[tuple[int, int, int]]:
    """(start, end, first line) of each piece."""
    out, start, line, n = [], 0, 1, len(source)
    while start < n:
        end = source.find("\n", start + _PIECE)
        while end >= 0:
            c = source[end + 1:end + 2]
            if c and c not in " \t\f\r\n#)]}" and \
                    not source.startswith(_CONTINUATIONS, end + 1):
                break
            end = source.find("\n", end + 1)
        end = n if end < 0 else end + 1
        out.append((start, end, line))
        line += source.count("\n", start, end)
        start = end
    return out


class _CutInsideAConstruct(Exception):
    pass


def _pieces(source: str, filename: str, cuts):
    """A function that parses the pieces anew each call: (line offset, statements)."""
    def parse_all(only: set[int] | None = None) -> Iterator[tuple[int, list[ast.stmt]]]:
        """only: the indices of the pieces wanted (default all)."""
        for i, (start, end, line) in enumerate(cuts):
            if only is not None and i not in only:
                continue
            try:
                tree = ast.parse(source[start:end], filename=filename)
            except (SyntaxError, ValueError, RecursionError):
                raise _CutInsideAConstruct from None
            yield line - 1, tree.body
    return parse_all


def _defs_in(stmts: list[ast.stmt]) -> Iterator[ast.FunctionDef]:
    """The module-level defs, also those under `if __name__ == "__main__":`."""
    for s in stmts:
        if isinstance(s, ast.FunctionDef):
            yield s
        elif _is_main_guard(s):
            yield from _defs_in(s.body)


def _compile_in_pieces(source: str, filename: str) -> Program | None:
    """The program, or None when a piece does not parse alone."""
    cuts = _cuts(source)
    if len(cuts) < 2:
        return None
    try:
        return _ModuleCompiler(filename).compile_pieces(_pieces(source, filename, cuts))
    except _CutInsideAConstruct:
        return None
    except FrontendError:
        # a compile error in an early piece: Python reports a syntax error
        # anywhere in the file first, so every piece must parse before it counts
        try:
            for _ in _pieces(source, filename, cuts)():
                pass
        except _CutInsideAConstruct:
            return None
        raise


def _compile(source: str, filename: str) -> Program:
    if len(source) > 2 * _PIECE:
        try:
            program = _compile_in_pieces(source, filename)
        except RecursionError:
            raise FrontendError(_too_deep(filename)) from None
        except MemoryError:
            raise FrontendError(_out_of_memory(filename, source)) from None
        if program is not None:
            return program
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        line = e.lineno or 1
        col = e.offset or 1
        if "integer string conversion" in e.msg:    # Python's advice is about Python
            raise FrontendError(f"{filename}:{line}:{col}: an integer literal with more than "
                                f"{sys.get_int_max_str_digits()} digits (minipy's integers "
                                f"are 64-bit)") from None
        raise FrontendError(f"{filename}:{line}:{col}: syntax error: {e.msg}") from None
    except RecursionError:
        raise FrontendError(_too_deep(filename)) from None
    except MemoryError:
        raise FrontendError(_out_of_memory(filename, source)) from None
    except ValueError as e:   # e.g. NUL bytes in the source
        raise FrontendError(f"{filename}:1:1: cannot parse: {e}") from None
    try:
        return _ModuleCompiler(filename).compile(tree)
    except RecursionError:
        raise FrontendError(_too_deep(filename)) from None
    except MemoryError:
        raise FrontendError(_out_of_memory(filename, source)) from None


def _too_deep(filename: str) -> str:
    return f"{filename}:1:1: unsupported nesting depth (expression or block nested too deeply)"


def _out_of_memory(filename: str, source: str) -> str:
    # Python's parser needs a few hundred bytes per source byte
    return (f"{filename}: out of memory compiling {len(source):,} characters of minipy "
            f"(Python's parser needs about 300 bytes of memory per source byte)")
