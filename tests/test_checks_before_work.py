"""Every option combination a command refuses is refused before anything is
compiled or built: one line naming the problem, exit status 1, in well under
a second's work, and the build directory (a fresh one per case) holds no
interpreter, stencil or program build afterwards.  At most the compiler probe
and the register contract (toolchain.json, contract.json) are there: a
--stencil override is checked against the registers of the compiler the
build would use."""
from __future__ import annotations

import time

import pytest

from conftest import EXAMPLES
from shimlab import cli

HELLO = str(EXAMPLES / "bf" / "hello.bf")
EXISTING = "existing.json"        # made in the case's directory
PROBES = {"toolchain.json", "contract.json"}
STENCILS = ("stencils.json", "stencils.prepared", "cffi/")   # the stencil store, cffi's vm.h

CASES = [
    # run
    (["run", HELLO, "--stats"],
     "--stats, --perf-map, --stencil and --trace-cache need a JIT mode"),
    (["run", HELLO, "--trace-cache"], "need a JIT mode"),
    (["run", HELLO, "--mode", "switch", "--perf-map"], "need a JIT mode"),
    (["run", HELLO, "--stencil", "CELL_ADD=CELL_ADD:rmw"], "need a JIT mode"),
    (["run", HELLO, "--mode", "reference", "--stats"], "need a JIT mode"),
    (["run", HELLO, "--mode", "reference", "--check"], "the reference mode is the oracle"),
    (["run", HELLO, "--mode", "reference", "--cache", "1"], "the reference mode keeps no values"),
    (["run", HELLO, "--mode", "goto", "--cache", "1"], "the goto mode keeps no values"),
    (["run", HELLO, "--timeout", "0"], "--timeout 0: needs a positive number"),
    (["run", HELLO, "--mode", "reference", "--timeout", "5", "--no-isolate"],
     "--timeout needs --isolate"),
    (["run", HELLO, "--mode", "jit-direct", "--stencil", "CELL_ADD"], "expected OP=NAME"),
    (["run", HELLO, "--mode", "jit-direct", "--stencil", "CELL_ADD=X", "--stencil", "CELL_ADD=Y"],
     "CELL_ADD is replaced twice"),
    (["run", HELLO, "--mode", "jit-direct", "--stencil", "NOPE=NOPE:x"], "is not a VM instruction"),
    # dis
    (["dis", HELLO, "--handler", "LOAD_INT"], "--handler needs --native"),
    (["dis"], "name a program file"),
    (["dis", "--native", "--handler", "LOAD_INT", HELLO], "it takes no program file"),
    # bench dispatch
    (["bench", "dispatch", "--workload", "nope.bf"], "nope.bf: no such workload"),
    (["bench", "dispatch", "-o", EXISTING], "already exists"),
    (["bench", "dispatch", "--resume", "nope.json"], "nothing to resume"),
    (["bench", "dispatch", "-o", "a.json", "--resume", "b.json"], "give one of them"),
    # bench transitions (both designs)
    (["bench", "transitions", "-o", EXISTING], "already exists"),
    (["bench", "transitions", "--design", "sweep", "--resume", "nope.json"], "nothing to resume"),
    # bench programs
    (["bench", "programs", "--workload", "nope.bf"], "nope.bf: no such workload"),
    (["bench", "programs", "-o", EXISTING], "already exists"),
    (["bench", "programs", "--no-whole"], "--no-whole applies to --corpus only"),
    (["bench", "programs", "--mode", "jit-shim"], "--mode applies to --corpus only"),
    (["bench", "programs", "--before", "."], "--before applies to --corpus only"),
    (["bench", "programs", "--trace-cache"], "--trace-cache applies to --corpus only"),
    (["bench", "programs", "--corpus", "--before", "nowhere"], "no .venv/bin/python there"),
    (["bench", "programs", "--corpus", "--workload", "nope.bf"], "not in the corpus: nope.bf"),
    (["bench", "programs", "--corpus", "--stencil", "CELL_ADD=CELL_ADD:rmw"],
     "--stencil does not apply to --corpus"),
    (["bench", "programs", "--corpus", "--cache", "1"], "--cache does not apply to --corpus"),
    (["bench", "programs", "--corpus", "--quick"], "--quick does not apply to --corpus"),
    (["bench", "programs", "--stencil", "CELL_ADD"], "expected OP=NAME"),
    # stencils compare
    (["stencils", "compare", "NOPE"], "cannot compare NOPE"),
    (["stencils", "compare", "CELL_ADD:rmw"], "is a stencil, not an instruction"),
    # (a pair of stencils is looked up first, which builds the stencils, so that an
    # unknown name is what is reported; still before anything is timed or built else)
    (["stencils", "compare", "DUP", "JUMP_IF_FALSE:taken"], "compare two stencils of one instruction",
     STENCILS),
    (["stencils", "compare", "LOOP:close", "LOOP:inner"], "it has no unit to time it in",
     STENCILS),
    # census
    (["census"], "name a binary"),
    # lua
    (["lua", "bench", "-o", EXISTING], "already exists"),
    (["lua", "exits", "-o", EXISTING], "already exists"),
    (["lua", "report", "nope.json"], "nope.json: no such results file"),
]


CASES = [c if len(c) == 3 else (*c, ()) for c in CASES]


@pytest.mark.parametrize("argv, problem, allowed", CASES,
                         ids=[" ".join(c[0][:4]).replace(HELLO, "hello.bf") for c in CASES])
def test_a_refused_combination_is_refused_before_any_work(argv, problem, allowed, tmp_path,
                                                          monkeypatch, capsys):
    build_dir = tmp_path / "build"
    monkeypatch.setenv("SHIMLAB_BUILD_DIR", str(build_dir))
    monkeypatch.chdir(tmp_path)
    (tmp_path / EXISTING).write_text("{}")
    start = time.perf_counter()
    status = cli.main(argv)
    took = time.perf_counter() - start
    err = capsys.readouterr().err
    assert status == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shimlab: ") and problem in lines[0], err
    built = sorted(str(p.relative_to(build_dir)) for p in build_dir.rglob("*")
                   if p.is_file() and p.name not in PROBES) if build_dir.exists() else []
    built = [b for b in built if not b.startswith(allowed)]
    assert not built, f"built before refusing: {built[:5]}"
    assert took < 5, f"{took:.1f} s before refusing"
