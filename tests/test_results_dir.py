"""Where results and notebook outputs go: bench and demo write results/ under
the current directory (not the checkout) and say where first; git ignores
results/ and generated notebooks."""
from __future__ import annotations

import argparse
import shutil
import subprocess

import pytest

from shimlab import paths
from shimlab.bench import harness
from shimlab.cli import demo


def test_bench_results_go_under_the_current_directory_and_the_first_line_says_where(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(output=None, resume=None, force=False)
    results = harness.open_results(args, "transitions", [])
    where = results.path.resolve()
    assert where.parent == tmp_path.resolve() / "results"
    assert paths.ROOT not in where.parents
    assert capsys.readouterr().err.splitlines()[0] == f"results file: {where}"


def test_demo_says_where_first_and_runs_the_quick_sweep_as_bench_would(tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.chdir(tmp_path)
    seen = {}

    def sweep(args):
        seen["args"] = args
        return 0
    monkeypatch.setattr(demo.doctor, "run", lambda out: 0)
    from shimlab.bench import roundtrip
    monkeypatch.setattr(roundtrip, "main", sweep)
    assert demo.cmd_demo(argparse.Namespace()) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f"results to {tmp_path / 'results'}/" in first
    args = seen["args"]
    assert args.size == "quick" and args.output is None and args.mode is None
    assert args.design == "paired"


def test_demo_shows_the_toolchain_only_when_it_is_broken(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def broken(out):
        print("clang-19: missing", file=out)
        return 1
    monkeypatch.setattr(demo.doctor, "run", broken)
    from shimlab.bench import roundtrip
    monkeypatch.setattr(roundtrip, "main", lambda args: pytest.fail("benchmarked"))
    assert demo.cmd_demo(argparse.Namespace()) == 1
    assert "clang-19: missing" in capsys.readouterr().out


def test_notebook_outputs_follow_shimlab_notebook_out(tmp_path, monkeypatch):
    monkeypatch.delenv("SHIMLAB_NOTEBOOK_OUT", raising=False)
    assert paths.notebook_out() == paths.EXPERIMENTS / "out"
    monkeypatch.setenv("SHIMLAB_NOTEBOOK_OUT", str(tmp_path))
    assert paths.notebook_out() == tmp_path


@pytest.mark.skipif(shutil.which("git") is None or not (paths.ROOT / ".git").exists(),
                    reason="not a git checkout")
@pytest.mark.parametrize("path", ["results/transitions-1.json", "sub/results/x.json",
                                  "experiments/the-illusion.ipynb", "mine.ipynb",
                                  "experiments/out/x/x.png",
                                  "experiments/.ipynb_checkpoints/x-checkpoint.py"])
def test_git_ignores_generated_files(path):
    r = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=paths.ROOT)
    assert r.returncode == 0, f"git does not ignore {path}"


@pytest.mark.skipif(shutil.which("git") is None or not (paths.ROOT / ".git").exists(),
                    reason="not a git checkout")
def test_git_still_sees_the_notebooks_themselves():
    r = subprocess.run(["git", "check-ignore", "-q", "--no-index", "experiments/new.py"],
                       cwd=paths.ROOT)
    assert r.returncode == 1
