"""The corpus (corpus/corpus.toml) that judges the JIT and the front end:
complete, with expected outputs that come from outside shimlab (a C
translation of each BF program, CPython for minipy), and every mode at
every level printing exactly those outputs.

`make test` runs the manifest checks and the mandelbrot-class programs in
the default JIT configuration; the rest is marked slow (`make test-all`):
the independent oracles over the whole corpus, and every configuration
(every mode, every --jit-opt, both --bf-opt levels) on every program.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, execution_configs, get_build
from shimlab import corpus, isolate, modes, vm
from shimlab.frontend import bf, load_program
from shimlab.jit import defaults as jit_defaults

ENTRIES = corpus.entries()
MANDEL = [e for e in ENTRIES if e.mandel]
TIMEOUT = 600.0


def _ids(entry) -> str:
    return f"{entry.path.parent.parent.name}/{entry.name}"


def _data(entry) -> bytes:
    return entry.input.read_bytes() if entry.input else b""


def _run(entry, configs) -> list[tuple[str, bytes | str]]:
    """Each (mode, cc, jit_opt, bf_opt) on the entry, in one forked child;
    (label, output or the error's text)."""
    def child():
        out = []
        for mode, cc, jit_opt, bf_opt in configs:
            label = f"{mode}/{cc} --jit-opt {jit_opt} --bf-opt {bf_opt}"
            try:
                program = load_program(entry.path, bf_opt=bf_opt)
                jit = {"opt": jit_opt} if modes.is_jit(mode) else None
                with vm.Loaded(get_build(mode, cc), program, _data(entry), jit=jit) as loaded:
                    r = loaded.run()
                out.append((label, r.output if not r.status else f"status {r.status.name}"))
            except Exception as e:          # that configuration's failure, not the rest's
                out.append((label, f"{type(e).__name__}: {e}"))
        return out
    return isolate.call(f"the corpus program {entry.name}", child, timeout=TIMEOUT)


def _check(entry, configs) -> None:
    want = entry.expected.read_bytes()
    bad = [f"{label}: {got if isinstance(got, str) else _first_difference(got, want)}"
           for label, got in _run(entry, configs) if got != want]
    assert not bad, f"{entry.name}: configurations that disagree with {entry.expected.name}:\n  " \
        + "\n  ".join(bad)


def _first_difference(got: bytes, want: bytes) -> str:
    n = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
             min(len(got), len(want)))
    return f"output differs at byte {n} ({len(got)} bytes, expected {len(want)})"


def _default_jit() -> tuple[str, str]:
    from shimlab import toolchain
    cc = toolchain.get_compiler(None, need=set(modes.get("jit-direct").features)).name
    return "jit-direct", cc


# ---- the manifest ---------------------------------------------------------------------

def test_manifest_lists_every_program_with_its_output():
    listed = {e.path for e in ENTRIES}
    on_disk = set()
    for folder, pattern in (("corpus/bf", "*.bf"), ("corpus/minipy", "*.py"),
                            ("examples/bf", "*.bf"), ("examples/minipy", "*.py")):
        on_disk |= set((ROOT / folder).glob(pattern))
    assert on_disk - listed == set(), "programs the manifest leaves out"
    assert listed - on_disk == set(), "programs the manifest names that are not there"
    assert all(e.expected.is_file() for e in ENTRIES)
    styles = {e.style for e in ENTRIES}
    assert styles == set(corpus.STYLES), styles
    assert len(MANDEL) >= 3 and {e.language for e in ENTRIES} == {"bf", "minipy"}


def test_a_bad_manifest_is_one_clear_error(tmp_path):
    from shimlab.errors import ShimlabError
    bad = tmp_path / "c.toml"
    bad.write_text('[[program]]\npath = "x.bf"\nstyle = "borrowed"\n')
    with pytest.raises(ShimlabError, match="style"):
        corpus.entries(bad)
    bad.write_text("[[program]\n")
    with pytest.raises(ShimlabError, match="c.toml"):
        corpus.entries(bad)


# ---- the expected outputs, from outside shimlab -----------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.language == "bf"], ids=_ids)
def test_bf_expected_output_is_the_c_translations(entry):
    sys.path.insert(0, str(ROOT / "corpus" / "gen"))
    from common import c_reference
    assert c_reference(entry.path, _data(entry)) == entry.expected.read_bytes()


def test_hand_written_bf_outputs_are_their_tasks_models():
    """The hand-written programs' outputs are what a Python model of each
    task prints (corpus/gen/hand_outputs.py; the C translation is checked
    against the same files above), and their inputs are the model's."""
    sys.path.insert(0, str(ROOT / "corpus" / "gen"))
    import hand_outputs
    for name, model in hand_outputs.MODELS.items():
        src = ROOT / "corpus" / "bf" / f"{name}.bf"
        assert any(e.path == src and e.style == "hand" for e in ENTRIES), name
        assert src.with_suffix(".out").read_bytes() == model(), name
        if name in hand_outputs.INPUTS:
            assert src.with_suffix(".in").read_bytes() == hand_outputs.INPUTS[name]


@pytest.mark.slow
@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.language == "minipy"], ids=_ids)
def test_minipy_expected_output_is_cpythons(entry):
    run = subprocess.run([sys.executable, str(entry.path)], input=_data(entry),
                         capture_output=True, check=True, timeout=TIMEOUT)
    assert run.stdout == entry.expected.read_bytes()


# ---- every configuration prints it ----------------------------------------------------------

@pytest.mark.parametrize("entry", MANDEL, ids=_ids)
def test_mandelbrot_class_programs_in_the_default_configuration(entry):
    mode, cc = _default_jit()
    _check(entry, [(mode, cc, jit_defaults.DEFAULT_LEVEL, bf.DEFAULT_LEVEL),
                   ("tailcall", cc, 0, bf.DEFAULT_LEVEL)])


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES, ids=_ids)
def test_every_mode_at_every_level_prints_the_expected_output(entry):
    levels = bf.LEVELS if entry.language == "bf" else (0,)
    configs = [(mode, cc, o, b) for b in levels for mode, cc in execution_configs()
               for o in (jit_defaults.LEVELS if modes.is_jit(mode) else (0,))]
    _check(entry, configs)
