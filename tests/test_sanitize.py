"""Sanitizer builds: they really catch bugs, and the sanitizer runs really use them.

`make test-sanitize` runs the corpus and the property tests with
SHIMLAB_SANITIZE=1 and a compiler's ASan runtime preloaded (shimlab.sanitize);
these tests show that such a build reports a deliberate memory error and a
deliberate undefined behaviour, in a snippet and in a real interpreter, and
that a sanitizer run is not silently testing plain builds.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import get_build, interpreter_configs
from shimlab import sanitize, toolchain
from shimlab.interp import build

SANITIZABLE = [cc for cc in toolchain.find_compilers() if sanitize.runtime(cc) is not None]

WRONG_C = r"""
#include <stdlib.h>
int heap_overflow(int n) {            /* reads one past an n-int block */
    int *p = malloc(n * sizeof(int));  /* (a size unknown at compile time: ASan's
                                          finding, not UBSan's object-size check) */
    int v = p[n];
    free(p);
    return v;
}
int signed_overflow(int x) { return x + 1; }   /* UB at INT_MAX */
"""


def _python(code: str, cc, **env):
    """A fresh python that loads cc's sanitized builds (reports on stderr)."""
    e = sanitize.child_env(cc, report_dir=None)
    e.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=e, timeout=300)


@pytest.mark.skipif(not SANITIZABLE, reason="no compiler with a sanitizer runtime here")
@pytest.mark.parametrize("cc", SANITIZABLE, ids=lambda c: c.name)
@pytest.mark.parametrize("call,report", [
    ("heap_overflow(4)", "AddressSanitizer: heap-buffer-overflow"),
    ("signed_overflow(2147483647)", "runtime error: signed integer overflow"),
])
def test_the_sanitizer_flags_catch_a_deliberate_bug(tmp_path, cc, call, report):
    src = tmp_path / "wrong.c"
    src.write_text(WRONG_C)
    so = tmp_path / "wrong.so"
    # the flags every interpreter build gets, plus the sanitizer ones
    subprocess.run([cc.path, *build.BASE_FLAGS, "-O1", *build.SANITIZE_FLAGS, str(src),
                    "-o", str(so)], check=True, capture_output=True)
    r = _python(f"""
        import ctypes
        lib = ctypes.CDLL({str(so)!r})
        print("returned", lib.{call})
    """, cc)
    assert r.returncode != 0 and "returned" not in r.stdout, r.stdout + r.stderr
    assert report in r.stderr, r.stderr[-3000:]


@pytest.mark.skipif(not SANITIZABLE, reason="no compiler with a sanitizer runtime here")
def test_a_sanitized_interpreter_reports_an_out_of_bounds_read():
    """Unverified bytecode (a constant index past the pool) reaches the
    switch interpreter; its sanitizer build stops at the bad read."""
    cc = next(c for c in SANITIZABLE if c.family == "clang") if any(
        c.family == "clang" for c in SANITIZABLE) else SANITIZABLE[0]
    r = _python(f"""
        from shimlab import isa, vm
        from shimlab.interp import build
        from shimlab.bytecode import Function, Program
        p = Program("oob", [(isa.opcode("LOAD_CONST"), 3), (isa.opcode("POP"), 0),
                            (isa.opcode("HALT"), 0)], [7], [Function("main", 0, 0, 0, [], 1)])
        p.verified = True        # skip the verifier on purpose
        b = build.build("switch", {cc.name!r})
        assert b.sanitize
        print("status", vm.run(b, p).status)
    """, cc)
    assert r.returncode != 0 and "status" not in r.stdout, r.stdout + r.stderr
    assert "AddressSanitizer: heap-buffer-overflow" in r.stderr, r.stderr[-3000:]
    assert "sl_interpret" in r.stderr          # inside the interpreter, not elsewhere


def test_sanitize_is_part_of_the_build_key():
    cc = SANITIZABLE[0].name if SANITIZABLE else interpreter_configs()[0][1]
    plain = build.build("switch", cc, sanitize=False)
    checked = build.build("switch", cc, sanitize=True)
    assert plain.key != checked.key and plain.path != checked.path
    assert set(build.SANITIZE_FLAGS) <= set(checked.command_flags)
    assert not set(build.SANITIZE_FLAGS) & set(plain.command_flags)


@pytest.mark.skipif(not SANITIZABLE, reason="no compiler with a sanitizer runtime here")
def test_a_sanitized_build_without_its_runtime_is_one_clear_line(tmp_path):
    prog = tmp_path / "h.bf"
    prog.write_text("+.")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    env["SHIMLAB_SANITIZE"] = "1"
    r = subprocess.run([sys.executable, "-m", "shimlab.cli", "run", str(prog), "--mode", "switch",
                        "--cc", SANITIZABLE[0].name], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "sanitizer build" in r.stderr and "shimlab.sanitize" in r.stderr


@pytest.mark.skipif(not build.sanitize_requested(), reason="only in a sanitizer run")
def test_this_sanitizer_run_really_uses_sanitized_builds():
    assert sanitize.loaded_runtime() is not None
    assert interpreter_configs()
    for cfg in interpreter_configs():
        b = get_build(*cfg, count=True)
        assert b.sanitize and "-fsanitize=address,undefined" in b.command_flags
