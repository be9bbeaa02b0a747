"""The CPython stand-in (csrc/standin/cpython_ceval.c) built in each of
CPython's dispatch styles: a small real program with CPython's names
(_PyEval_EvalFrameDefault, opcode_targets, _TAIL_CALL_<NAME>,
INSTRUCTION_TABLE), on which the census and the variants path are tested
where CPython's source cannot be had.  Builds go to build/census/standin/.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .. import toolchain
from ..errors import BuildError
from ..paths import CSRC, build_root

SOURCE = CSRC / "standin" / "cpython_ceval.c"
# style -> (the define, the compiler features it needs), as CPython's configure names them
STYLES = {
    "computed-goto": ("STANDIN_GOTO", {"computed_goto"}),
    "tail-call": ("STANDIN_TAILCALL", {"musttail", "preserve_none"}),
    "switch": ("STANDIN_SWITCH", set()),
}


def can_build(style: str, cc: str) -> bool:
    try:
        return STYLES[style][1] <= toolchain.get_compiler(cc).features
    except toolchain.ToolchainError:
        return False


def build(style: str, cc: str, stripped: bool = False) -> Path:
    """The stand-in in `style` compiled by `cc` (-O3, its eval function
    exported as CPython's is); with `stripped`, a copy without .symtab."""
    define, _ = STYLES[style]
    compiler = toolchain.get_compiler(cc)
    out = build_root() / "census" / "standin" / f"{style}-{cc}"
    if not out.exists() or out.stat().st_mtime < SOURCE.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        p = subprocess.run([compiler.path, "-O3", "-rdynamic", f"-D{define}", str(SOURCE),
                            "-o", str(out)], capture_output=True, text=True)
        if p.returncode != 0:
            raise BuildError(f"stand-in {style} with {cc} failed: "
                             f"{(p.stderr.strip().splitlines() or ['?'])[-1]}")
    if not stripped:
        return out
    bare = out.with_name(out.name + ".stripped")
    if not bare.exists() or bare.stat().st_mtime < out.stat().st_mtime:
        strip = shutil.which("strip")
        if strip is None:
            raise BuildError("strip (binutils) is missing")
        shutil.copy(out, bare)
        subprocess.run([strip, "--strip-all", str(bare)], check=True)
    return bare
