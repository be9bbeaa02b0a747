"""The experiment notebooks.  `make test` runs the cheap checks on every
notebook (each parses, its imports and the names it uses from them exist,
jupytext round-trips it) and one notebook, in quick mode, through a real
Jupyter kernel (nbclient): inline figures, each table once.  The tests
marked slow (`make test-all`) run every other notebook quick, as a script
through `shimlab reproduce`, and check what each found."""
from __future__ import annotations

import ast
import base64
import importlib
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from shimlab import notebook, reproduce, toolchain

# every notebook the registry knows (experiments/*.py): a new one is checked too
NOTEBOOKS = list(reproduce.notebooks())
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# The one notebook `make test` runs: the quickest (about 20 s here), and it
# keeps in-process state (a stencil registered in a cell) that a kernel must hold.
KERNEL_NOTEBOOK = "stencil-playground"


def shimlab(*args, env=None, timeout=300, cwd=None):
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)


def one_line_error(r, *needles):
    assert r.returncode != 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shimlab: "), r.stderr
    for n in needles:
        assert n in lines[0], r.stderr


def needs_jupyter():
    """Skips, saying why, where the notebook extra is not installed (make
    setup installs it, so CI runs these)."""
    for module in ("nbclient", "ipykernel", "jupytext", "nbformat"):
        pytest.importorskip(module, reason=f"{module} is not installed: the notebook extra "
                                           f"(pip install -e '.[notebook]') is missing")


def slow_unless_in_ci(names):
    """Every notebook but KERNEL_NOTEBOOK as a slow test (make test-all only)."""
    return [pytest.param(n, marks=() if n == KERNEL_NOTEBOOK else pytest.mark.slow)
            for n in names]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """name -> (process, output dir) of the notebook's quick run, run on
    first use: KERNEL_NOTEBOOK through a Jupyter kernel, the others as scripts."""
    base = tmp_path_factory.mktemp("notebooks")

    class Runs(dict):
        def __missing__(self, name):
            how = ("--kernel",) if name == KERNEL_NOTEBOOK else ()
            if how:
                needs_jupyter()
            r = shimlab("reproduce", name, "--quick", *how,
                        env={"SHIMLAB_NOTEBOOK_OUT": str(base)}, timeout=900)
            self[name] = (r, base / name)
            return self[name]
    return Runs()


@pytest.mark.parametrize("name", slow_unless_in_ci(NOTEBOOKS))
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_lua_interpreters_has_the_census_the_ratios_and_the_exit_cost(outputs):
    r, out = outputs["lua-interpreters"]
    if "the Lua sources cannot be had" in r.stderr:
        pytest.skip("lupa's sdist cannot be reached")
    census = (out / "census.txt").read_text()
    assert "luaV_execute" in census and "lj_BC_" in census
    summary = json.loads((out / "lua-summary.json").read_text())
    assert summary["goto_vs_switch"] and summary["luajit"] and summary["clock"] == "cpu"
    for g in summary["goto_vs_switch"]:
        lo, hi = g["geomean"]["ci95"]
        assert lo <= g["geomean"]["value"] <= hi
    exits = json.loads((out / "exits-summary.json").read_text())
    assert exits["nolink"]["slope"]["value"] > exits["linked"]["slope"]["value"]
    assert set(exits["shimlab"]["modes"]) == {"jit-shim", "jit-direct"}
    findings = (out / "findings.txt").read_text()
    assert "clang 19" in findings and "trace exit" in findings


@pytest.mark.slow
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


@pytest.mark.slow
def test_shim_vs_direct_has_every_crossing_paired_the_old_sweep_and_whole_programs(outputs):
    results = json.loads((outputs["shim-vs-direct"][1] / "results.json").read_text())
    if not _jit_ccs():
        pytest.skip("no compiler here builds the JIT modes")
    t = results["transitions"]
    base = t["size"]["base"]
    label = f"M={base['m']} k={base['k']}"
    for mode in ("jit-shim", "jit-direct", "jit-direct-handler", "jit-table"):
        r = t["cache"]["0"][mode]
        e = r["base"]["round_trip"]
        assert e["ci95"][0] <= e["value"] <= e["ci95"][1]
        assert label in r["points"] and len(r["base"]["layouts"]) == t["size"]["code_layouts"]
        assert isinstance(r["density"]["linear"], bool)
        said = any(f.startswith(f"{mode}: not linear") for f in results["findings"])
        assert said == (not r["density"]["linear"])
    # the verdict names the CPU and comes first
    assert results["findings"][0].startswith(f"On {results['cpu']['name']}")
    assert len(results["old_sweep"]) == 3 and len(results["nulls"]) >= 4
    assert all(isinstance(x, str) and x for x in t["anomalies"])
    assert ([f for f in results["findings"] if f.startswith("anomal")]
            == ([f"anomaly: {x}" for x in t["anomalies"]] or ["anomalies: none"]))
    seen = {(r["workload"], r["mode"]) for r in results["programs"]}
    for w in ("nested.bf", "nested_loops.py"):
        for mode in ("tailcall", "jit-shim", "jit-direct"):
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


@pytest.mark.slow
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


def _strip_version(text):      # the writer stamps its own version into the header
    return re.sub(r"^#\s+jupytext_version:.*\n", "", text, flags=re.M)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_jupytext_round_trips(name):
    import jupytext
    src = reproduce.find(name)
    nb = jupytext.reads(src.read_text(), fmt="py:percent")
    assert nb.cells[0].cell_type == "markdown"
    assert any(c.cell_type == "code" for c in nb.cells)
    assert _strip_version(jupytext.writes(nb, fmt="py:percent")) == _strip_version(src.read_text())


def test_jupytext_converts_a_notebook_as_the_readme_says(tmp_path):
    """The command line once (a process each costs seconds): .py to .ipynb and back."""
    import jupytext
    src = reproduce.find(KERNEL_NOTEBOOK)
    ipynb = tmp_path / f"{KERNEL_NOTEBOOK}.ipynb"
    r = subprocess.run([sys.executable, "-m", "jupytext", "--to", "notebook", "-o", str(ipynb),
                        str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    back = jupytext.writes(jupytext.read(ipynb), fmt="py:percent")
    assert _strip_version(back) == _strip_version(src.read_text())


@pytest.mark.slow
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


# -- cheap checks on every notebook (make test) ------------------------------------------

def _module_names(tree) -> dict[str, object]:
    """What the notebook's imports bind: name -> module or object, each
    import checked to resolve (a renamed module or function fails here)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                module = importlib.import_module(a.name)
                bound[a.asname or a.name.split(".")[0]] = (
                    module if a.asname else importlib.import_module(a.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            module = importlib.import_module(node.module)
            for a in node.names:
                try:
                    value = importlib.import_module(f"{node.module}.{a.name}")
                except ModuleNotFoundError:
                    assert hasattr(module, a.name), f"{node.module} has no {a.name}"
                    value = getattr(module, a.name)
                bound[a.asname or a.name] = value
    return bound


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_parses_and_what_it_uses_of_its_imports_exists(name):
    """Without running it: the notebook is valid Python (a percent script is),
    its imports resolve, and every `module.name` it reads exists, so an API
    change that breaks a notebook fails `make test`, not only `make test-all`."""
    path = reproduce.find(name)
    tree = ast.parse(path.read_text(), str(path))
    compile(tree, str(path), "exec")
    bound = _module_names(tree)
    missing = sorted({f"{n.value.id}.{n.attr} (line {n.lineno})" for n in ast.walk(tree)
                      if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
                      and isinstance(n.value, ast.Name)
                      and isinstance(bound.get(n.value.id), types.ModuleType)
                      and not hasattr(bound[n.value.id], n.attr)})
    assert not missing, f"{name} uses names its modules do not have: {', '.join(missing)}"
    assert reproduce.describe(path) != "(no title)"


def test_the_import_check_catches_a_missing_name(tmp_path):
    tree = ast.parse("from shimlab import notebook as nb\nnb.no_such_helper(1)\n")
    bound = _module_names(tree)
    assert not hasattr(bound["nb"], "no_such_helper")
    with pytest.raises(AssertionError, match="has no nothing_here"):
        _module_names(ast.parse("from shimlab.notebook import nothing_here\n"))


# -- Jupyter: the kernel run, figures inline, tables once (make test) ----------------------

def _outputs(nb_path: Path) -> list[dict]:
    import nbformat
    nb = nbformat.read(str(nb_path), as_version=4)
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def test_a_notebook_runs_in_a_jupyter_kernel_with_figures_inline_and_tables_once(outputs):
    needs_jupyter()
    r, out = outputs[KERNEL_NOTEBOOK]
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "through a Jupyter kernel" in r.stdout
    executed = out / f"{KERNEL_NOTEBOOK}.ipynb"
    assert executed.exists() and f"executed notebook: {executed}" in r.stdout
    outs = _outputs(executed)
    assert not [o for o in outs if o["output_type"] == "error"]
    # the figure, inline: a PNG in the notebook, the same one saved beside it
    pngs = [base64.b64decode(o["data"]["image/png"]) for o in outs
            if o["output_type"] == "display_data" and "image/png" in o.get("data", {})]
    assert pngs and all(p.startswith(PNG_MAGIC) for p in pngs)
    saved = {p.read_bytes() for p in out.glob("*.png")}
    assert set(pngs) <= saved
    # nothing shown twice: no cell's value (a returned table or path) as Out[]
    assert not [o for o in outs if o["output_type"] == "execute_result"]
    text = "".join(o.get("text", "") for o in outs if o["output_type"] == "stream")
    tables = list(out.glob("*.txt"))
    assert tables
    for t in tables:
        assert text.count(t.read_text().rstrip("\n")) == 1, f"{t.name} not printed exactly once"


MY_NOTEBOOK = """\
# %% [markdown]
# # My own notebook: one table, one figure
# %%
import matplotlib.pyplot as plt
from shimlab import notebook as nb
OUT = nb.out_dir("mine")
print("quick", nb.quick())
# %%
nb.show_table([("a", 1), ("b", 2)], ["name", "n"], OUT, "counts")
# %%
fig, ax = plt.subplots()
ax.plot([1, 2, 3])
nb.save_figure(fig, OUT, "line")
"""


def test_a_notebook_of_ones_own_runs_from_its_path_and_writes_beside_it(tmp_path):
    mine = tmp_path / "notes" / "mine.py"
    mine.parent.mkdir()
    mine.write_text(MY_NOTEBOOK)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "SHIMLAB_NOTEBOOK_OUT"}
    r = subprocess.run([sys.executable, "-m", "shimlab.cli", "reproduce", str(mine), "--quick"],
                       capture_output=True, text=True, timeout=300, env=env, cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    assert "== mine (quick): My own notebook: one table, one figure ==" in r.stdout
    assert "quick True" in r.stdout
    out = mine.parent / "out" / "mine"
    assert (out / "line.png").read_bytes().startswith(PNG_MAGIC)
    assert r.stdout.count((out / "counts.txt").read_text().rstrip("\n")) == 1
    assert not list(elsewhere.iterdir())


def test_a_failing_notebook_in_a_kernel_is_one_line_and_keeps_the_executed_notebook(tmp_path):
    needs_jupyter()
    bad = tmp_path / "broken.py"
    bad.write_text("# %% [markdown]\n# # Broken on purpose\n# %%\nx = 1\n# %%\n1 / 0\n")
    r = shimlab("reproduce", str(bad), "--kernel", env={"SHIMLAB_NOTEBOOK_OUT": str(tmp_path)})
    one_line_error(r, "notebook broken failed in cell 2", "ZeroDivisionError", "broken.ipynb")
    assert "ZeroDivisionError" in r.stdout and "1 / 0" in r.stdout     # the cell's traceback
    outs = _outputs(tmp_path / "broken" / "broken.ipynb")
    assert [o["ename"] for o in outs if o["output_type"] == "error"] == ["ZeroDivisionError"]


def test_paths_that_are_not_notebooks_are_one_line(tmp_path):
    one_line_error(shimlab("reproduce", str(tmp_path / "nope.py")), "nope.py",
                   "no such notebook file")
    one_line_error(shimlab("reproduce", str(tmp_path)), "not a notebook")
    (tmp_path / "x.ipynb").write_text("{}")
    one_line_error(shimlab("reproduce", str(tmp_path / "x.ipynb")), "not a notebook",
                   "jupytext --to py:percent")


def test_a_notebook_is_found_by_name_by_name_py_and_by_path():
    path = reproduce.notebooks()[KERNEL_NOTEBOOK]
    assert reproduce.find(KERNEL_NOTEBOOK) == path
    assert reproduce.find(f"{KERNEL_NOTEBOOK}.py") == path
    assert reproduce.find(str(path)) == path.resolve()


def test_save_figure_and_show_table_outside_jupyter(tmp_path, capsys):
    import matplotlib.pyplot as plt
    assert not notebook.in_jupyter()
    fig, ax = plt.subplots()
    ax.plot([1, 2])
    assert notebook.save_figure(fig, tmp_path, "f") is None
    assert not plt.fignum_exists(fig.number)            # closed: no figure piles up
    assert (tmp_path / "f.png").read_bytes().startswith(PNG_MAGIC)
    assert notebook.show_table([("a", 1)], ["x", "y"], tmp_path, "t") is None
    printed = capsys.readouterr().out
    assert printed.count((tmp_path / "t.txt").read_text().rstrip("\n")) == 1
    assert f"figure: {tmp_path / 'f.png'}" in printed


def test_kernel_without_the_extra_is_one_line_naming_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "nbclient", None)       # as if not installed
    with pytest.raises(reproduce.ShimlabError, match=r"nbclient is not installed.*\.\[kernel\]"):
        reproduce.run_in_kernel(KERNEL_NOTEBOOK, quick=True)


def test_the_registry_has_the_notebook_of_issue_14():
    assert "cached-state" in NOTEBOOKS
    assert "K" in reproduce.describe(reproduce.notebooks()["cached-state"])


@pytest.mark.slow
def test_cached_state_has_every_k_every_crossing_and_its_answer(outputs):
    results = json.loads((outputs["cached-state"][1] / "results.json").read_text())
    if not _jit_ccs():
        pytest.skip("no compiler here builds the JIT modes")
    from shimlab import modes
    t = results["transitions"]
    assert [int(k) for k in t["cache"]] == results["ks"] and results["ks"][0] == 0
    # "modes" is K = 0, as in every other transitions summary
    assert t["modes"] == t["cache"]["0"]
    for k, ms in t["cache"].items():
        assert set(ms) == set(modes.JIT)          # a new crossing appears by itself
        for mode, r in ms.items():
            lo, hi = r["round_trip"]["ci95"]
            assert lo <= r["round_trip"]["value"] <= hi
            assert ("vs_base_cache" in r) == (k != "0")
    assert set(t["shim_vs_direct"]) == set(t["cache"])
    # the answer is computed: it names the Ks and quotes the measured excess
    answer = results["findings"][0]
    top = t["shim_vs_direct"][str(results["ks"][-1])]["excess"]
    assert f"{top['value']:.1f} [{top['ci95'][0]:.1f}, {top['ci95'][1]:.1f}]" in answer
    assert "jit-direct" in answer and f"K={results['ks'][-1]}" in answer


def test_the_registry_has_the_notebook_of_issue_26():
    assert "real-interpreters" in NOTEBOOKS


@pytest.mark.slow
def test_real_interpreters_has_the_census_of_shimlabs_goto_builds_and_the_real_ones(outputs):
    results = json.loads((outputs["real-interpreters"][1] / "results.json").read_text())
    mine = {r["label"].split("/ ")[1]: r for r in results["reports"] if r["group"] == "shimlab"}
    assert set(mine) == set(_builds_here("goto"))
    for cc, r in mine.items():
        assert r["merged"] is (cc in toolchain.MERGES_COMPUTED_GOTO), (cc, r["verdict"])
    real = [r for r in results["reports"] if r["group"] == "real"]
    assert real, "no real interpreter was read"
    for r in real:
        assert r["found_by"] and r["confidence"] and r["kind"]
    # the finding names the merged real builds, computed from the reports
    merged = [r["label"] for r in real if r["merged"]]
    assert results["findings"][0] == ("merged real builds: " + ", ".join(merged) if merged
                                      else f"merged real builds: none of the {len(real)} read")
