"""jit-direct-sites: each trace entered through an ENTER_JIT copy of its own.

The copies must stay distinct functions, each with its own indirect jump
(a compiler folding them would silently turn the mode back into jit-direct),
and `sites=K` must spread the traces over exactly K of them."""
from __future__ import annotations

import re
import subprocess

import pytest

from conftest import interpreter_configs
from shimlab import vm
from shimlab.abi import vmh
from shimlab.bench import synthetic
from shimlab.interp import build

JIT_CCS = sorted({cc for mode, cc in interpreter_configs() if mode == "tailcall"})
pytestmark = pytest.mark.skipif(not JIT_CCS, reason="no compiler here builds the JIT modes")


@pytest.mark.parametrize("cc", JIT_CCS)
def test_every_copy_is_a_function_with_its_own_indirect_jump(cc):
    b = build.build("jit-direct-sites", cc)
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(b.path)],
                         capture_output=True, text=True, check=True).stdout
    bodies = re.findall(r"<sl_op_ENTER_JIT_(\d+)>:\n(.*?)(?=\n\n)", dis, re.S)
    assert len(bodies) == vmh.constant("SL_JIT_ENTER_COPIES")
    for k, body in bodies:
        assert re.search(r"\bjmp\s+\*", body), f"copy {k} has no indirect jump of its own"


@pytest.mark.parametrize("sites", [1, 3, 0])
def test_traces_spread_over_the_copies_asked_for(sites):
    spec = "transitions:m=8,j=16,i=16,n=3" + (f",sites={sites}" if sites else "")
    program, stretches = synthetic.build(spec)
    b = build.build("jit-direct-sites", JIT_CCS[0])
    with vm.Loaded(b, program, b"", jit=synthetic.jit_options(spec, stretches)) as loaded:
        assert loaded.run().status == 0
        jit = loaded.jit
        ops = [int(loaded.vm.code[start].op) for start, _ in stretches]
        used = {int(vmh.ffi().cast("uintptr_t", jit.installer.table[op])) for op in ops}
    copies = {int(vmh.ffi().cast("uintptr_t", c)) for c in jit.installer.entry_copies}
    assert used <= copies
    assert len(used) == (sites or len(stretches))


def test_a_bad_sites_count_is_refused():
    spec = "transitions:m=2,j=4,i=4,n=1,sites=65"
    program, stretches = synthetic.build(spec)
    b = build.build("jit-direct-sites", JIT_CCS[0])
    with pytest.raises(Exception, match="entry_sites 65: choose 1 to 64"):
        vm.Loaded(b, program, b"", jit=synthetic.jit_options(spec, stretches))
