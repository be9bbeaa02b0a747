"""`shimlab run` starts fast: a tiny run imports what running needs and nothing else.

Read from `python -X importtime`, which names every module a process imports:
no numpy, no benchmark suites, no JIT for an interpreter mode, and no C parser
(cffi's parsed declarations come from the build directory).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES
from shimlab import console

HELLO = str(EXAMPLES / "bf" / "hello.bf")
# never needed to run a program on an interpreter mode (of the JIT, its defaults alone)
HEAVY = ("numpy", "matplotlib", "pyperf", "shimlab.bench", "pycparser", "cffi.cparser",
         "shimlab.jit", "peachpy_stencils", "peachpy", "capstone", "shimlab.notebook",
         "shimlab.reproduce", "subprocess")
ALLOWED = ("shimlab.jit", "shimlab.jit.defaults")


# as the `shimlab` command starts (its console script; `-m` would import runpy,
# and with it importlib.util and contextlib, which the command does not)
RUN = "import sys; from shimlab.console import main; sys.exit(main())"


def imported(*argv: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", RUN, *argv],
                       capture_output=True, text=True, env=env, timeout=300)
    names = {line.rsplit("|", 1)[1].strip() for line in p.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return p, names


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if n not in ALLOWED and
                  any(n == h or n.startswith(h + ".") for h in HEAVY))


def test_a_tiny_run_imports_no_numpy_no_benchmarks_no_jit():
    imported("run", HELLO, "--mode", "tailcall")          # warm the caches (build, cffi)
    p, names = imported("run", HELLO, "--mode", "tailcall")
    assert p.returncode == 0 and p.stdout == "Hello from shimlab!\n", p.stderr[-2000:]
    # the check sees imports (importlib.import_module's own module is not listed)
    assert "shimlab.vm" in names and "shimlab.interp.loader" in names
    assert not heavy(names), heavy(names)


# stdlib modules that cost a tiny run a few milliseconds each and that it does
# not need (shimlab.record stands in for dataclasses; argparse gets the terminal
# width without shutil): the check counts only what `python -c pass` does not
# import already in this environment
SLOW_STDLIB = ("dataclasses", "inspect", "typing", "shutil", "tempfile", "threading",
               "traceback", "subprocess",
               # OpenSSL's load (shimlab/digest.py) and ctypes (isolate.py's prctl):
               # ~3.5 and ~3 ms of every run's start, the child's included
               "hashlib", "_hashlib", "ctypes",
               # pathlib (with urllib.parse and ipaddress; paths are strings on
               # the run path: paths.py), pickle (a child's Result crosses as
               # marshal data: isolate.py), contextlib, importlib.util and
               # faulthandler: ~14 ms of a run's start on Zen 3 together
               "pathlib", "urllib.parse", "pickle", "contextlib", "importlib.util",
               "faulthandler")


def test_a_tiny_run_skips_the_slow_stdlib_modules():
    imported("run", HELLO, "--mode", "tailcall")          # warm the caches (build, cffi)
    _, names = imported("run", HELLO, "--mode", "tailcall")
    base = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"],
                          capture_output=True, text=True, timeout=60).stderr
    already = {line.rsplit("|", 1)[1].strip() for line in base.splitlines()
               if line.startswith("import time:") and "|" in line}
    assert "shimlab.record" in names
    assert not (set(SLOW_STDLIB) & (names - already)), sorted(set(SLOW_STDLIB) & names)


def test_a_jit_run_that_makes_traces_skips_the_slow_stdlib_modules_too():
    """The JIT's path, its compiler and stencil store included, with the
    trace cache off (every trace made) and on (traces placed from plans)."""
    from shimlab import modes, toolchain
    try:
        toolchain.default_compiler(modes.get("jit-direct").features)
    except toolchain.ToolchainError:
        pytest.skip("no compiler here builds the JIT modes")
    nested = str(EXAMPLES / "bf" / "nested.bf")
    base = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"],
                          capture_output=True, text=True, timeout=60).stderr
    already = {line.rsplit("|", 1)[1].strip() for line in base.splitlines()
               if line.startswith("import time:") and "|" in line}
    for cache in ("--no-trace-cache", "--trace-cache", "--trace-cache"):
        p, names = imported("run", nested, "--mode", "jit-direct", "--jit-threshold", "64", cache)
        assert p.returncode == 0, p.stderr[-2000:]
        assert {"shimlab.jit.compile", "shimlab.jit.stencil_store"} <= names
        assert not (set(SLOW_STDLIB) & (names - already)), (cache, sorted(set(SLOW_STDLIB) & names))


def test_the_check_sees_the_jit_when_a_jit_mode_runs():
    from shimlab import modes, toolchain
    try:
        toolchain.default_compiler(modes.get("jit-direct").features)
    except toolchain.ToolchainError:
        pytest.skip("no compiler here builds the JIT modes")
    # (the trace cache off: a run history may otherwise sit the JIT out, jit/sit_out.py)
    p, names = imported("run", HELLO, "--mode", "jit-direct", "--no-trace-cache")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "shimlab.jit.runtime" in heavy(names)


def test_a_jit_run_whose_loops_never_get_hot_loads_no_compiler_and_no_stencils():
    """The JIT's compiler and stencils come with its first trace (issue 24):
    nested.bf's loops, under a threshold they never reach, and then hot."""
    from shimlab import modes, toolchain
    try:
        toolchain.default_compiler(modes.get("jit-direct").features)
    except toolchain.ToolchainError:
        pytest.skip("no compiler here builds the JIT modes")
    nested = str(EXAMPLES / "bf" / "nested.bf")
    p, names = imported("run", nested, "--mode", "jit-direct", "--jit-threshold", "100000000")
    assert p.returncode == 0, p.stderr[-2000:]
    # (nor what makes, places and reports traces: ~3 ms of such a run)
    late = {"shimlab.jit.compile", "shimlab.jit.stencil_store", "shimlab.jit.optimize", "peachpy_stencils",
            "peachpy", "capstone", "subprocess", "shimlab.jit.install", "shimlab.jit.memory",
            "shimlab.jit.report", "shimlab.jit.trace", "shimlab.fits"}
    assert not late & names, sorted(late & names)
    # by default nothing is compiled before the run has paid for the JIT's
    # start, which this short run never does
    p, names = imported("run", nested, "--mode", "jit-direct")
    assert p.returncode == 0 and not late & names, sorted(late & names)
    p, names = imported("run", nested, "--mode", "jit-direct", "--jit-threshold", "64")
    assert p.returncode == 0 and {"shimlab.jit.compile", "shimlab.jit.stencil_store"} <= names


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["run", "--help"]])
def test_help_and_version_load_no_command_they_do_not_show(argv):
    p, names = imported(*argv)
    assert p.returncode == 0, p.stderr[-2000:]
    extra = set(heavy(names)) - ({"subprocess"} if argv == ["--version"] else set())  # git
    assert not extra, extra
    assert not any(n.startswith("shimlab.cli.") and n.split(".")[2] in
                   ("bench", "stencils", "compare", "demo", "reproduce") for n in names), names


def test_writing_the_cffi_cache_prints_nothing_on_stdout(tmp_path, capfd):
    """A first run with a new build directory writes the parsed declarations
    (vmh._emit); stdout is the program's output, so that must be silent."""
    from shimlab.abi import vmh
    decls = "typedef struct { int a; } sl_probe;"
    assert vmh._emit(decls, tmp_path / "cffi" / "vmh_probe.py") is not None
    out, _ = capfd.readouterr()
    assert out == ""


def test_the_cffi_cache_is_loaded_through_bytecode_and_written_again_when_damaged(
        tmp_path, monkeypatch):
    """The parsed declarations load as a module does (its bytecode cached
    beside it), and a damaged file is written again rather than failing."""
    from shimlab.abi import vmh
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    decls = "typedef struct { int a; long b; } sl_probe;"
    path = tmp_path / "cffi" / "vmh_probe.py"
    assert vmh._ffi_from(decls, path, "probe_one").sizeof("sl_probe") == 16
    assert list((tmp_path / "cffi" / "__pycache__").glob("vmh_probe*.pyc"))
    path.write_text("this is not Python (")
    assert vmh._ffi_from(decls, path, "probe_two").sizeof("sl_probe") == 16
    assert "ffi = " in path.read_text()


def _jit_run_names() -> set[str]:
    """What a JIT run that compiles traces imports (nested.bf's loops get hot)."""
    from shimlab import modes, toolchain
    try:
        toolchain.default_compiler(modes.get("jit-direct").features)
    except toolchain.ToolchainError:
        pytest.skip("no compiler here builds the JIT modes")
    nested = str(EXAMPLES / "bf" / "nested.bf")
    imported("run", nested, "--mode", "jit-direct", "--jit-threshold", "64")      # warm the caches (build, stencils)
    p, names = imported("run", nested, "--mode", "jit-direct", "--jit-threshold", "64")
    assert p.returncode == 0, p.stderr[-2000:]
    assert {"shimlab.jit.compile", "shimlab.jit.stencil_store"} <= names
    return names


def test_a_jit_run_skips_the_slow_stdlib_modules_and_the_stencil_builder():
    """The JIT's own start (issue 24): its modules declare records with
    shimlab.record, and a current stencil artifact is loaded without the
    assembler, PeachPy or capstone (dataclasses and typing were ~25 ms of
    a JIT process)."""
    names = _jit_run_names()
    base = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"],
                          capture_output=True, text=True, timeout=60).stderr
    already = {line.rsplit("|", 1)[1].strip() for line in base.splitlines()
               if line.startswith("import time:") and "|" in line}
    slow = set(SLOW_STDLIB) - {"subprocess"}     # (a JIT run may build its interpreter)
    assert not (slow & (names - already)), sorted(slow & names)
    builder = {"peachpy_stencils.asm", "peachpy", "capstone", "shimlab.disasm", "shimlab.elf",
               "random"}        # (jit/memory.py draws its offsets with a xorshift of its own)
    assert not builder & names, sorted(builder & names)


def test_records_are_declared_with_record_only_where_a_run_needs_it():
    """Two record mechanisms, one rule: shimlab.record in the modules a run
    imports, a tiny interpreter run or a JIT run (dataclasses would cost the
    first about 10 ms, 6-7% of its time, and the second ~22 ms, measured
    side by side), dataclasses everywhere else."""
    import ast
    from conftest import ROOT
    imported("run", HELLO, "--mode", "tailcall")          # warm the caches (build, cffi)
    _, names = imported("run", HELLO, "--mode", "tailcall")
    names |= _jit_run_names()
    users = set()
    for top in (ROOT / "src", ROOT):
        folder = top / ("shimlab" if top.name == "src" else "peachpy_stencils")
        for path in sorted(folder.rglob("*.py")):
            module = ".".join(path.relative_to(top).with_suffix("").parts).removesuffix(
                ".__init__")
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(
                        "record") and module != "shimlab.record":
                    users.add(module)
    assert users, "no module uses shimlab.record: drop it and this test"
    assert not users - names, f"use dataclasses in {sorted(users - names)}: a run " \
                              "does not import them"


def test_the_command_keeps_the_collector_off_its_start_up_and_importing_shimlab_does_not():
    """shimlab.console (the `shimlab` command's entry point): its imports
    with the collector off, then what they made frozen and young
    collections 50,000 objects apart; a program importing shimlab (a
    notebook, these tests) keeps its collector as it was."""
    probe = ("import gc, sys\n"
             "before = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())\n"
             "from shimlab import console\n"
             "imported = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())\n"
             "assert imported == before, (before, imported)\n"
             "code = console.main(['run', sys.argv[1], '--mode', 'tailcall'])\n"
             "print(code, gc.isenabled(), gc.get_threshold()[0], gc.get_freeze_count())\n")
    p = subprocess.run([sys.executable, "-c", probe, HELLO], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    out = p.stdout.split()
    assert out[-4:-1] == ["0", "True", str(console.YOUNG_THRESHOLD)], p.stdout
    assert int(out[-1]) > 5_000, p.stdout       # what importing the CLI made, frozen


def test_a_lazy_pattern_compiles_once_on_first_use_and_acts_as_the_pattern():
    import re
    from shimlab.lazy_pattern import LazyPattern
    p = LazyPattern(rb"[ \t]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
    assert p._compiled is None                   # nothing compiled at import
    assert p.match(b"# coding: latin-1").group(1) == b"latin-1"
    first = p._compiled
    assert first.flags & re.ASCII and p.search(b"x") is None and p._compiled is first
    assert [m.group(1) for m in LazyPattern(r"(\d)").finditer("a1b2")] == ["1", "2"]


_ENDING = ("import atexit, os, sys\n"
           "real_exit, me = os._exit, os.getpid()\n"
           "def early_exit(code):\n"
           "    if os.getpid() == me:         # (not the run's forked child)\n"
           "        os.write(2, b'early exit\\n')\n"
           "    real_exit(code)\n"
           "os._exit = early_exit\n"
           "if sys.argv[1] == 'atexit':\n"
           "    atexit.register(os.write, 2, b'atexit ran\\n')\n"
           "sys.argv[1:2] = []\n"
           "from shimlab.console import main\n"
           "sys.exit(main())\n")


@pytest.mark.parametrize("program, code, err", [(HELLO, 0, ""),
                                               ("no-such.bf", 1, "no-such.bf: cannot read")])
def test_a_run_process_ends_without_finalization_its_output_flushed(program, code, err):
    """The command's `run` skips Python's teardown (os._exit) and still
    delivers its status and every line."""
    p = subprocess.run([sys.executable, "-c", _ENDING, "plain", "run", program,
                        "--mode", "tailcall"], capture_output=True, text=True, timeout=300)
    assert p.returncode == code, p.stderr
    assert p.stdout == ("Hello from shimlab!\n" if code == 0 else "")
    assert err in p.stderr and p.stderr.endswith("early exit\n"), p.stderr
    assert p.stderr.count("early exit") == 1


def test_a_run_process_with_an_atexit_callback_ends_as_python_does():
    p = subprocess.run([sys.executable, "-c", _ENDING, "atexit", "run", HELLO,
                        "--mode", "tailcall"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout == "Hello from shimlab!\n", p.stderr
    assert p.stderr == "atexit ran\n", p.stderr


def test_a_run_called_from_a_program_returns_to_it():
    """main(argv) from a notebook or a test returns its status: only the
    command's own process (argv from its command line) ends early."""
    code = console.main(["run", HELLO, "--mode", "tailcall", "--no-isolate"])
    assert code == 0
