"""The package's layers: imports only go down, and no two modules import each
other, directly or around a cycle.

Every import of every module counts, also one inside a function (a lazy
import is still a dependency).  A module belongs to the layer of the longest
prefix in LAYERS that names it; a module no layer names fails the test, so a
new module is placed on purpose.  Within a layer, imports between packages
are allowed, cycles never.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

# Bottom first.  A module may import its own layer and the layers below it.
LAYERS: list[tuple[str, ...]] = [
    ("shimlab", "shimlab.errors", "shimlab.paths", "shimlab.atomicfile", "shimlab.record",
     "shimlab.fits", "shimlab.digest", "shimlab.cachefile",
     "shimlab.lazy_pattern"),   # shimlab: the package's
    # __init__; fits: lines and means without numpy; digest: SHA-1 and SHA-256 without
    # OpenSSL; cachefile: sealed marshal files and stat stamps; lazy_pattern: a regular
    # expression compiled when first used
    # disasm: capstone, for every listing; elf: ELF files read; dispatch_sites: how
    # handlers dispatch, for dis --native and census alike
    ("shimlab.isa", "shimlab.disasm", "shimlab.elf", "shimlab.dispatch_sites"),
    # result: the limits of a run and its Result, for the oracle and the loader alike
    ("shimlab.modes", "shimlab.bytecode", "shimlab.stencil", "shimlab.result"),
    ("shimlab.oracle", "shimlab.first_difference", "shimlab.frontend", "shimlab.toolchain",
     "shimlab.isolate", "shimlab.childpy", "shimlab.perfcounter", "shimlab.progio"),
    ("shimlab.abi",),                  # vm.h as Python sees it; the register contract
    ("peachpy_stencils",),                     # the PeachPy stencils, written against shimlab.stencil
    ("shimlab.interp",),               # generated C, asm interpreter, builds, the loader
    ("shimlab.jit",),                  # trace, patch, memory, runtime
    ("shimlab.vm",),                   # the loader with the JIT's hooks
    ("shimlab.stencil_check", "shimlab.doctor", "shimlab.sanitize"),
    ("shimlab.bench", "shimlab.census"),   # census: anyone's interpreter binary
    ("shimlab.lua",),                  # real interpreters: Lua's sources, builds, timing
    ("shimlab.notebook", "shimlab.reproduce"),
    ("shimlab.cli",),
    ("shimlab.console",),              # the command's entry point: the CLI, collector set
]
PACKAGES = {"shimlab": ROOT / "src" / "shimlab", "peachpy_stencils": ROOT / "peachpy_stencils"}


def module_files() -> dict[str, Path]:
    out = {}
    for top, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [top, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module of ours that `name` imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from pkg import mod` imports the module pkg.mod when there is one
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                       for a in node.names]
        else:
            continue
        for t in targets:
            r = resolve(t)
            if r and r != name:
                found.add(r)
    return found


def layer_of(name: str) -> int | None:
    best, where = -1, None
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, where = len(prefix), i
    return where


def graph() -> dict[str, set[str]]:
    files = module_files()
    known = set(files)
    return {name: imports_of(name, path, known) for name, path in files.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def violations(g: dict[str, set[str]]) -> list[str]:
    problems = [f"{name}: in no layer of tests/test_layering.py" for name in sorted(g)
                if layer_of(name) is None]
    for name, deps in sorted(g.items()):
        here = layer_of(name)
        for dep in sorted(deps):
            there = layer_of(dep)
            if here is not None and there is not None and there > here:
                problems.append(f"{name} (layer {here}) imports {dep} (layer {there}): upward")
    problems += [f"import cycle: {' -> '.join(c)}" for c in cycles(g)]
    return problems


def test_imports_only_go_down_and_never_around_a_cycle():
    problems = violations(graph())
    assert not problems, "\n".join(problems)


def test_the_checker_sees_inner_imports_cycles_and_upward_imports(tmp_path):
    """The checks themselves, on a graph that has each fault once."""
    g = graph()
    assert "shimlab.vm" in g and "shimlab.jit.runtime" in g["shimlab.vm"]
    bad = {k: set(v) for k, v in g.items()}
    bad["shimlab.interp.loader"].add("shimlab.jit.runtime")        # upward (and a cycle)
    bad["shimlab.jit.trace"].add("shimlab.jit.compile")            # a cycle within a layer
    problems = "\n".join(violations(bad))
    assert "shimlab.interp.loader (layer 6) imports shimlab.jit.runtime (layer 7): upward" \
        in problems
    assert "import cycle:" in problems and "shimlab.jit.trace" in problems


def test_an_import_inside_a_function_counts(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from shimlab import vm\n    import peachpy_stencils.build\n")
    assert imports_of("shimlab.isa", src, set(module_files())) == {"shimlab.vm",
                                                                  "peachpy_stencils.build"}


@pytest.mark.parametrize("folder", ["src", "peachpy_stencils"])
def test_no_sys_path_edits(folder):
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob("*.py")
                 if "sys.path" in p.read_text()]
    assert not offenders, offenders
