"""The experiment notebooks: each runs in quick mode as a plain script through
`shimlab reproduce` and writes non-empty figures, tables and JSON; `--list`
and bad input; jupytext round-trips every notebook."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shimlab import notebook, reproduce, toolchain

# every notebook the registry knows (experiments/*.py): a new one is run too
NOTEBOOKS = list(reproduce.notebooks())
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def shimlab(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def one_line_error(r, *needles):
    assert r.returncode != 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shimlab: "), r.stderr
    for n in needles:
        assert n in lines[0], r.stderr


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Runs every notebook once in quick mode; name -> (process, output dir)."""
    base = tmp_path_factory.mktemp("notebooks")
    runs = {}
    for name in NOTEBOOKS:
        r = shimlab("reproduce", name, "--quick", env={"SHIMLAB_NOTEBOOK_OUT": str(base)},
                    timeout=600)
        runs[name] = (r, base / name)
    return runs


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_quick_and_writes_outputs(outputs, name):
    r, out = outputs[name]
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    pngs = list(out.glob("*.png"))
    assert pngs, f"{name} wrote no figure"
    for png in pngs:
        data = png.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, f"{png} is empty or broken"
    tables = list(out.glob("*.txt"))
    assert tables, f"{name} wrote no table"
    for t in tables:
        lines = [ln for ln in t.read_text().splitlines() if ln.strip()]
        assert len(lines) >= 3, f"{t} has no rows"          # header, rule, a row
    results = json.loads((out / "results.json").read_text())
    assert results["quick"] is True
    assert results["findings"], f"{name} found nothing"


def _builds_here(mode):
    # the notebooks measure the compilers the setup installs that are here
    return [cc.name for cc in toolchain.find_compilers()
            if cc.name in notebook.COMPILERS and cc.can_build(mode)]


def test_dispatch_by_compiler_covers_every_compiler_mode_and_pgo(outputs):
    results = json.loads((outputs["dispatch-by-compiler"][1] / "results.json").read_text())
    seen = {(r["compiler"], r["mode"], r["pgo"]) for r in results["rows"]}
    for mode in ("switch", "goto", "tailcall"):
        for cc in _builds_here(mode):
            assert (cc, mode, False) in seen
            assert (cc, mode, True) in seen or any(cc in n for n in results["notes"])
    for row in results["rows"]:
        lo, hi = row["cycles_per_instr"][1:]
        assert 0 < lo <= row["cycles_per_instr"][0] <= hi
        if row["pgo"]:
            assert row["pgo_effect"] is not None
    checks = {(c["compiler"], c["pgo"]): c for c in results["baseline_checks"]}
    assert {cc for cc, _ in checks} == set(_builds_here("goto"))


def test_the_illusion_compares_both_baselines_and_flags_the_merged_one(outputs):
    results = json.loads((outputs["the-illusion"][1] / "results.json").read_text())
    for cc in _builds_here("tailcall"):
        mine = {s["baseline"]: s for s in results["speedups"] if s["compiler"] == cc}
        assert {"goto", "goto-merged"} <= set(mine)
        assert mine["goto-merged"]["baseline_merged"] is True
        assert mine["goto-merged"]["baseline_dispatch_sites"] <= 1
    knobs = {(k["compiler"], k["knob"]) for k in results["knobs"]}
    assert any(knob == "barrier" for _, knob in knobs)
    assert any(knob.startswith("both-") for _, knob in knobs)


def test_per_opcode_profile_covers_bf_and_minipy(outputs):
    results = json.loads((outputs["per-opcode-profile"][1] / "results.json").read_text())
    kinds = {Path(p["workload"]).suffix for p in results["profiles"]}
    assert {".bf", ".py"} <= kinds
    for p in results["profiles"]:
        assert sum(r["instructions"] for r in p["shares"]) == pytest.approx(1.0)
        assert sum(p["executed"].values()) > 0
        assert any(not name.endswith("()") for name in p["instructions"])


def test_the_registry_has_the_notebooks_of_issue_6():
    assert {"dispatch-by-compiler", "the-illusion", "per-opcode-profile", "shim-vs-direct",
            "stencil-playground"} <= set(NOTEBOOKS)


def _jit_ccs():
    return _builds_here("jit-direct")


def test_shim_vs_direct_has_every_crossing_its_steps_and_whole_programs(outputs):
    results = json.loads((outputs["shim-vs-direct"][1] / "results.json").read_text())
    if not _jit_ccs():
        pytest.skip("no compiler here builds the JIT modes")
    t = results["transitions"]
    ms = t["size"]["ms"]
    modes = ("jit-shim", "jit-direct", "jit-direct-handler")
    for mode in modes:
        r = t["modes"][mode]
        lo, hi = r["round_trip"]["ci95"]
        assert lo <= r["round_trip"]["value"] <= hi
        steps = r["steps"]
        assert [tuple(s["m"]) for s in steps] == list(zip(ms, ms[1:]))
        for s in steps:
            assert s["ci95"][0] <= s["value"] <= s["ci95"][1]
        assert isinstance(r["linear"], bool)
        # the verdict and the findings say the same
        said = any(f.strip().startswith(f"{mode}: not linear") for f in results["findings"])
        assert said == (not r["linear"])
        assert r["floor"]["value"] > 0 and r["floor"]["ci95"][0] > 0
    assert set(t["floors"]) == {"jump", "indirect", "call-ret", "call-save6"}
    # anomalies are listed, or said to be none, never left out
    assert all(isinstance(x, str) and x for x in t["anomalies"])
    assert ([f for f in results["findings"] if f.startswith("anomal")]
            == ([f"anomaly: {x}" for x in t["anomalies"]] or ["anomalies: none"]))
    seen = {(r["workload"], r["mode"]) for r in results["programs"]}
    for w in ("nested.bf", "nested_loops.py"):
        for mode in ("tailcall",) + modes:
            assert (w, mode) in seen
    for r in results["programs"]:
        assert r["ci95"][0] <= r["vs_tailcall"] <= r["ci95"][1]


def test_stencil_playground_passes_the_prototype_and_catches_the_broken_one(outputs):
    results = json.loads((outputs["stencil-playground"][1] / "results.json").read_text())
    if not _jit_ccs():
        pytest.skip("no compiler here builds the JIT modes")
    oracle = results["oracle"]
    assert oracle["LOAD_INT"]["failures"] == [] and oracle["LOAD_INT:rax"]["failures"] == []
    assert oracle["LOAD_INT:dword"]["failures"]
    assert "hole oparg" in results["stencils"]["LOAD_INT:rax"]["disassembly"]
    assert results["whole_program"]["matches_oracle"] is True
    r = results["timing"]["LOAD_INT:rax"]["vs_standard"]
    assert 0 < r[1] <= r[0] <= r[2]


def test_per_opcode_profile_names_jit_code(outputs):
    results = json.loads((outputs["per-opcode-profile"][1] / "results.json").read_text())
    if not _jit_ccs():
        pytest.skip("no compiler here builds the JIT modes")
    (p,) = [p for p in results["jit_profiles"] if p["workload"] == "bf/nested.bf"]
    assert sum(r["share"] for r in p["rows"]) == pytest.approx(1.0)
    jit = [r for r in p["rows"] if r["kind"] == "JIT"]
    assert jit and sum(r["share"] for r in jit) > 0.5        # traces run nearly everything
    if p["unit"].startswith("cpu-clock"):                    # named through the perf map
        assert p["per_trace"] and all(r["where"] != "JIT code (unnamed)" for r in jit)
        assert (outputs["per-opcode-profile"][1] / "per-opcode-profile-jit.png").exists()


def test_list_names_every_notebook_with_a_line():
    r = shimlab("reproduce", "--list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == sorted(NOTEBOOKS)
    assert all(len(ln.split(None, 1)) == 2 for ln in lines)


def test_unknown_notebook_is_one_line():
    one_line_error(shimlab("reproduce", "no-such-notebook"), "unknown notebook",
                   "no-such-notebook", "dispatch-by-compiler")


def test_no_name_is_one_line():
    one_line_error(shimlab("reproduce"), "name a notebook")


def test_missing_compiler_is_one_line():
    one_line_error(shimlab("reproduce", "the-illusion", "--quick", "--cc", "clang-99"),
                   "clang-99 not found", "apt-get install clang-99")


def test_a_failing_notebook_is_one_line(tmp_path, monkeypatch):
    bad = tmp_path / "broken.py"
    bad.write_text("# %% [markdown]\n# # Broken on purpose\n# %%\nraise SystemExit(3)\n")
    monkeypatch.setattr(reproduce, "EXPERIMENTS", tmp_path)
    assert reproduce.describe(bad) == "Broken on purpose"
    with pytest.raises(reproduce.ShimlabError, match="notebook broken failed"):
        reproduce.run("broken", quick=True)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_jupytext_round_trips(tmp_path, name):
    import jupytext
    src = reproduce.find(name)
    ipynb = tmp_path / f"{name}.ipynb"
    r = subprocess.run([sys.executable, "-m", "jupytext", "--to", "notebook", "-o", str(ipynb),
                        str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    nb = jupytext.read(ipynb)
    assert nb.cells[0].cell_type == "markdown"
    assert any(c.cell_type == "code" for c in nb.cells)
    back = jupytext.writes(nb, fmt="py:percent")

    def strip(text):      # the writer stamps its own version into the header
        return re.sub(r"^#\s+jupytext_version:.*\n", "", text, flags=re.M)
    assert strip(back) == strip(src.read_text())


def test_crossing_density_separates_entry_jumps_from_traces(outputs):
    """Every entry variant gets its steps at every M, the sites sweep has every
    K, and the finding is a sentence computed from the run (not a constant)."""
    if not _jit_ccs():
        pytest.skip("no compiler here builds the JIT modes")
    results = json.loads((outputs["crossing-density"][1] / "results.json").read_text())
    ms = results["ms"]
    assert set(results["steps"]) == {"jit-direct", "jit-direct-sites",
                                     "jit-direct-sites, sites=1", "jit-table"}
    for curve in results["steps"].values():
        assert [s["m"] for s in curve["steps"]] == [list(p) for p in zip(ms, ms[1:])]
    assert [s["k"] for s in results["sites"]] == [k for k in (1, 2, 4, 8, 16, 32) if k <= ms[-1]]
    saved = results["saved_per_round_trip"]
    assert saved["ci95"][0] <= saved["value"] <= saved["ci95"][1]
    assert any(f"{abs(saved['value']):.2f}" in line for line in results["findings"])
