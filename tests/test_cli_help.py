"""Every command and every option of the CLI has a line of help; --version works."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys

from shimlab import cli


def _undocumented(p: argparse.ArgumentParser, path: str):
    for a in p._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        if isinstance(a, argparse._SubParsersAction):
            helped = {c.dest: c.help for c in a._choices_actions}
            for name, sub in a.choices.items():
                if not (helped.get(name) or "").strip():
                    yield f"{path} {name} (the command itself)"
                yield from _undocumented(sub, f"{path} {name}")
        elif not (a.help or "").strip() or a.help == argparse.SUPPRESS:
            yield f"{path} {'/'.join(a.option_strings) or a.dest}"


def test_every_command_and_option_has_help():
    missing = list(_undocumented(cli.parser(), "shimlab"))
    assert not missing, "no help text: " + ", ".join(missing)


def test_the_walk_finds_an_option_without_help():
    ap = cli.parser()
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["dis"].add_argument("--undocumented")
    assert list(_undocumented(ap, "shimlab")) == ["shimlab dis --undocumented"]


def _shimlab(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shimlab.cli", *argv],
                          capture_output=True, text=True, timeout=120)


def test_top_level_help_lists_every_command_with_a_line():
    p = _shimlab("--help")
    assert p.returncode == 0, p.stderr
    for name in cli.COMMANDS:
        assert re.search(rf"^    {re.escape(name)}\s+\S", p.stdout, re.M), (name, p.stdout)
    assert "--version" in p.stdout


def test_version():
    p = _shimlab("--version")
    assert p.returncode == 0, p.stderr
    assert re.fullmatch(r"shimlab \d+\.\d+\S*( \(git [0-9a-f]+\))?, Python 3\.\d+\.\d+\S*\n",
                        p.stdout), p.stdout
