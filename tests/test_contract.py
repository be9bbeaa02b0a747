"""The register contract: vm.h, contract.py and the compiled handlers agree."""
from __future__ import annotations

import re
import subprocess

import pytest

from conftest import ROOT, get_build, interpreter_configs
from shimlab.abi import contract
from shimlab.abi.vmh import ffi

TAILCALL = [cfg for cfg in interpreter_configs() if cfg[0] == "tailcall"]


def test_vm_h_states_the_same_contract():
    text = (ROOT / "csrc" / "vm.h").read_text()
    stated = dict(re.findall(r"(\w+) -> (r\w+)", text))
    stated["table"] = stated.pop("table", None) or re.search(r"table -> (\w+)", text).group(1)
    assert stated == contract.STATE


def test_state_registers_follow_preserve_none_argument_order():
    assert tuple(contract.STATE.values()) == contract.PRESERVE_NONE_ARGS[:len(contract.STATE)]


def test_instruction_layout():
    assert ffi().sizeof("sl_instr") == contract.INSTR_SIZE
    assert ffi().offsetof("sl_instr", "arg") == contract.OPARG_OFFSET


def _disassemble(build, symbol):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(build.path)],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(rf"<{symbol}>:\n(.*?)\n\n", out, re.S)
    assert m, f"{symbol} not found"
    return m.group(1)


@pytest.mark.skipif(not TAILCALL, reason="no compiler here builds the tailcall mode")
@pytest.mark.parametrize("cfg", TAILCALL, ids=lambda c: c[1])
def test_handler_keeps_state_in_contract_registers(cfg):
    build = get_build(*cfg)
    r = contract.STATE
    # MOVE reads its operand through ip, moves head, dispatches through the
    # table, and on its failure path saves every state register into the vm.
    asm = _disassemble(build, "sl_op_MOVE")
    assert re.search(rf"0x{contract.OPARG_OFFSET:x}\(%{r['ip']}\)", asm), asm
    assert re.search(rf"add\s+%\w+,%{r['head']}", asm), asm
    assert re.search(rf"\(%{r['table']},%\w+,8\)", asm), asm
    for state in ("ip", "sp", "fp", "head"):
        off = ffi().offsetof("sl_vm", state)
        assert re.search(rf"mov\s+%{r[state]},0x{off:x}\(%{r['vm']}\)", asm), (state, asm)
    # LOAD_LOCAL indexes the locals through fp and pushes through sp
    asm = _disassemble(build, "sl_op_LOAD_LOCAL")
    assert re.search(rf"\(%{r['fp']},%\w+,8\)", asm), asm
    assert re.search(rf"mov\s+%\w+,(0x0)?\(%{r['sp']}\)", asm), asm
