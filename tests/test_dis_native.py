"""`shimlab dis --native` for every mode, `--handler`, and the capstone reading under it."""
from __future__ import annotations

import contextlib
import io

import pytest

from shimlab import disasm, isa, modes, toolchain
from shimlab.cli import main
from shimlab.interp import build, dispatch_check


def dis(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["dis", "--native", *argv])
    return rc, out.getvalue(), err.getvalue()


def _buildable(mode: str) -> bool:
    try:
        toolchain.default_compiler(modes.get(mode).features)
    except toolchain.ToolchainError:
        return False
    return True


@pytest.mark.parametrize("mode", modes.NAMES)
def test_every_mode_gets_a_check_that_understands_it(mode):
    if not _buildable(mode):
        pytest.skip(f"no compiler here builds {mode}")
    rc, out, err = dis("--mode", mode)
    assert rc == 0, err
    head = out.splitlines()[0]
    spec = modes.get(mode)
    if spec.variant == "switch":
        # one switch: its jump table dispatches every instruction, no per-handler rows
        assert f"for {isa.NUM_OPCODES} instructions, all cases of one switch" in head, head
        assert "one shared switch dispatch" in head or "duplicated" in head
        return
    assert f"for {isa.NUM_OPCODES} handlers" in head, head
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("  ") and
            ln.split() and ln.split()[0] in isa.BY_NAME]
    assert len(rows) == isa.NUM_OPCODES, out
    if spec.variant == "tailcall":
        # tailcall, asm and every JIT mode: one tail-call dispatch in each handler
        assert "MERGED" not in out, head
        assert "dispatch" in head and int(head.split(": ")[1].split()[0]) >= isa.NUM_OPCODES - 1
    if spec.jit:
        assert f"the {spec.build_name} binary" in out and "ENTER_JIT" in out, out
    if mode == "goto-merged":
        assert "MERGED" in head, head


def test_jit_modes_say_how_they_enter_traces():
    if not _buildable("jit-direct"):
        pytest.skip("no compiler here builds the JIT modes")
    notes = {m: dis("--mode", m)[1] for m in modes.JIT}
    assert "calls sl_jit_shim" in notes["jit-shim"]
    assert "indirect jump(s) into the trace" in notes["jit-direct"]
    assert "64 copies" in notes["jit-direct-sites"] and "64 with an indirect jump" in \
        notes["jit-direct-sites"]
    assert "ENTER_JIT is bypassed" in notes["jit-table"]


@pytest.mark.parametrize("mode", ["goto", "tailcall", "jit-direct"])
def test_handler_prints_one_handlers_machine_code(mode):
    if not _buildable(mode):
        pytest.skip(f"no compiler here builds {mode}")
    rc, out, err = dis("--mode", mode, "--handler", "load_int")
    assert rc == 0, err
    lines = out.splitlines()
    assert "LOAD_INT" in lines[0] and lines[1].endswith("LOAD_INT:"), out
    body = lines[2:]
    assert body and all(ln.startswith("    ") and ":" in ln for ln in body), out
    if mode == "tailcall" or (mode == "goto" and not dispatch_check.analyze(
            build.build(mode)).flagged):
        assert any("<- dispatch: indirect jump" in ln for ln in body), out


def test_handler_errors_are_one_line():
    for argv in (["--mode", "tailcall", "--handler", "NO_SUCH"],
                 ["--mode", "switch", "--handler", "ADD"],
                 ["--mode", "goto", "--handler", "NO_SUCH"]):
        if not _buildable(argv[1]):
            continue
        rc, out, err = dis(*argv)
        assert rc == 1 and not out and len(err.strip().splitlines()) == 1, (argv, err)
    rc, out, err = main_dis_plain("--handler", "ADD")
    assert rc == 1 and "--handler needs --native" in err


def main_dis_plain(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["dis", *argv])
    return rc, out.getvalue(), err.getvalue()


def test_with_a_program_counts_handlers_in_every_kind_of_mode(tmp_path):
    prog = tmp_path / "p.bf"
    prog.write_text("+++[>++<-]>.")
    for mode in ("switch", "goto", "jit-direct"):
        if not _buildable(mode):
            continue
        rc, out, err = dis(str(prog), "--mode", mode)
        assert rc == 0, err
        assert "executed" in out, out
        counts = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:] if ln.startswith("  ")}
        assert "CELL_ADD" in counts or any("CELL" in k for k in counts), out


# -- capstone: indirect jumps are an operand kind, not a text pattern ----------

@pytest.mark.parametrize("code,indirect", [
    ("ffe0", True),              # jmp rax
    ("41ff24c6", True),          # jmp [r14 + rax*8]
    ("3effe0", True),            # notrack jmp rax
    ("ff2500000000", True),      # jmp [rip]
    ("e900000000", False),       # jmp rel32
    ("0f8400000000", False),     # je rel32
    ("ffd0", False),             # call rax: a call, not a jump
    ("c3", False),
])
def test_indirect_jump_is_read_from_operands(code, indirect):
    (insn,) = disasm.disassemble(bytes.fromhex(code))
    assert insn.indirect_jump is indirect, insn


def test_direct_targets_and_calls():
    jmp, call = disasm.disassemble(bytes.fromhex("e905000000" "e800000000"), 0x1000)
    assert jmp.jump and jmp.target == 0x100a
    assert call.call and call.target == 0x100a and not call.indirect_jump


def test_functions_come_from_the_symbol_table():
    b = build.build("tailcall")
    syms = disasm.functions(b.path)
    assert "sl_interpret" in syms and "sl_op_ADD" in syms
    code = disasm.function_code(b.path, ["sl_op_ADD"])["sl_op_ADD"]
    assert code[0].addr == syms["sl_op_ADD"].addr
    assert code[-1].end == syms["sl_op_ADD"].addr + syms["sl_op_ADD"].size
    assert any(i.indirect_jump for i in code)


def test_without_capstone_dis_native_is_one_line_naming_the_package(monkeypatch):
    disasm._capstone.cache_clear()
    monkeypatch.setitem(__import__("sys").modules, "capstone", None)   # import fails
    try:
        rc, out, err = dis("--mode", "tailcall")
    finally:
        monkeypatch.undo()
        disasm._capstone.cache_clear()
    assert rc == 1 and not out, (out, err)
    assert err.count("\n") == 1 and "apt-get install python3-capstone" in err, err


def test_goto_default_compiler_passes_the_baseline_check():
    """doctor's default for goto keeps a dispatch jump per handler (clang 19's merges)."""
    try:
        cc = toolchain.default_compiler(modes.get("goto").features)
    except toolchain.ToolchainError:
        pytest.skip("no compiler here builds goto")
    b = build.build("goto")                     # `run --mode goto` without --cc
    assert b.compiler.name == cc.name
    report = dispatch_check.analyze(b)
    merging_only = all(c.name in toolchain.MERGES_COMPUTED_GOTO
                       for c in toolchain.find_compilers() if c.supports("computed_goto"))
    assert report.flagged is merging_only, report.summary()
    for name in toolchain.MERGES_COMPUTED_GOTO:
        if any(c.name == name for c in toolchain.find_compilers()):
            # the finding the default rests on still holds on this machine
            assert dispatch_check.analyze(build.build("goto", name)).flagged, name


def test_doctor_says_the_goto_default_passes():
    from shimlab import doctor
    try:
        toolchain.default_compiler(modes.get("goto").features)
    except toolchain.ToolchainError:
        pytest.skip("no compiler here builds goto")
    line = next(ln for ln in doctor.default_section()[0] if ln.split()[0] == "goto")
    assert "baseline check passes" in line or "MERGED" in line, line
