"""The README and docs/*.md held to the code, so the docs cannot rot.

- Every line of a ```sh block is checked: a `shimlab` command is parsed by
  the real argument parser and, when it is cheap (a program, a disassembly,
  a stencil, a listing: RUN below), run, and must succeed; the expensive
  ones (benchmarks, notebooks, timings) are parsed without running, and the
  files and notebooks they name must exist.  `make` targets and variables
  must be the Makefile's, `export`ed variables ones the code reads, and a
  line no rule knows fails, so a new kind of command gets a rule here.
- Every inline `shimlab ...` span names real commands and options, and
  parses when it has no placeholders (FILE, NAME, [...]).
- docs/cli.md lists every command and option the parser has, each option in
  its command's section, and names no option the parser does not have.
- Links and the repository paths the docs name exist.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from shimlab import cli, reproduce

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CLI_MD = ROOT / "docs" / "cli.md"

# The subcommands run for real: seconds each on a warm build directory.  Every
# other shimlab command is parsed, not run (its suite has tests of its own
# at the smallest size: test_transitions.py, test_roundtrip.py, ...).
RUN = {("run",), ("dis",), ("doctor",), ("stencils", "list"), ("stencils", "show"),
       ("stencils", "test")}
RUN_LISTING = {("reproduce",): "--list"}     # run only with this option
# Words of a syntax summary, not of a command line: such a span is checked
# for its command and options only.
PLACEHOLDERS = {"FILE", "F", "NAME", "PATH", "M", "CC", "K", "N", "L", "S", "LEVEL", "PCT",
                "SECONDS", "BYTES", "OP=NAME", "A", "B", "A.json", "B.json", "INSTR"}
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[oh])(?![\w-])")


# -- the parser, walked -----------------------------------------------------------------

def _commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every command path of the parser (() is `shimlab` itself) -> its parser."""
    out = {}

    def walk(p, path):
        out[path] = p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, path + (name,))
    walk(cli.parser(), ())
    return out


COMMANDS = _commands()
LEAVES = {path: p for path, p in COMMANDS.items()
          if path and not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)}
HELP = {"-h", "--help"}


def _options(path: tuple[str, ...]) -> set[str]:
    return {o for a in COMMANDS[path]._actions for o in a.option_strings}


ALL_OPTIONS = set().union(*(_options(p) for p in COMMANDS))


def _path_of(words: list[str]) -> tuple[str, ...]:
    """The longest command path the words start with."""
    path = ()
    for w in words:
        if path + (w,) not in COMMANDS:
            break
        path += (w,)
    return path


def _parse(argv: list[str]) -> argparse.Namespace | None:
    """argv as `shimlab` parses it, without running; None for --help and
    --version (which print and stop).  A parse error fails with its line."""
    only = argv[0] if argv and argv[0] in cli.COMMANDS else ""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return cli.parser(only).parse_args(argv)
    except SystemExit as e:
        if e.code == 0:
            return None
        pytest.fail(f"`shimlab {shlex.join(argv)}` does not parse: {err.getvalue().strip()}")


# -- what the docs show -----------------------------------------------------------------

FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```\n", re.S | re.M)


def _blocks(doc: Path, lang: str):
    """(line number, text) of the fenced blocks of one language."""
    text = doc.read_text()
    for m in FENCE.finditer(text):
        if m.group(1) == lang:
            yield text[:m.start()].count("\n") + 2, m.group(2)


def _prose(doc: Path) -> str:
    """The doc without its fenced blocks."""
    return FENCE.sub("", doc.read_text())


def _sh_lines() -> list[tuple[str, list[str], dict]]:
    """(where, words, env) of every command line of every ```sh block, in
    order, with the variables the doc's `export` lines set before it."""
    out = []
    for doc in DOCS:
        env: dict[str, str] = {}
        for start, block in _blocks(doc, "sh"):
            for i, line in enumerate(block.replace("\\\n", " ").splitlines()):
                words = shlex.split(line, comments=True)
                if not words:
                    continue
                where = f"{doc.relative_to(ROOT)}:{start + i}"
                if words[0] == "export":
                    for assignment in words[1:]:
                        name, _, value = assignment.partition("=")
                        env[name] = value.replace("$PWD", str(ROOT))
                out.append((where, words, dict(env)))
    return out


SH_LINES = _sh_lines()


def _known_variables() -> set[str]:
    """The environment variables the code reads (SHIMLAB_*)."""
    names = set()
    for folder in ("src", "peachpy_stencils", "scripts"):
        for p in (ROOT / folder).rglob("*"):
            if p.suffix in (".py", ".sh"):
                names |= set(re.findall(r"\bSHIMLAB_[A-Z_]+\b", p.read_text()))
    return names


def _makefile() -> tuple[set[str], set[str]]:
    text = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):", text, re.M))
    variables = set(re.findall(r"^([A-Z_]+)\s*[?:]?=", text, re.M))
    return targets, variables


def _strip_prefixes(words: list[str]) -> tuple[list[str], dict]:
    """`VAR=value cmd` and `taskset -c N cmd`: the command, and the variables."""
    env = {}
    while words and re.match(r"^[A-Z_]+=", words[0]):
        name, _, value = words[0].partition("=")
        env[name] = value
        words = words[1:]
    if words[:2] == ["taskset", "-c"]:
        words = words[3:]
    return words, env


def _in_checkout(path: str) -> Path | None:
    """A path a command names, if it is one in the checkout (a path of the
    reader's own, ~/..., is not checked)."""
    if path.startswith(("~", "/", "$")):
        return None
    return ROOT / path


def _check_names(path: tuple[str, ...], args: argparse.Namespace, where: str) -> None:
    """The files and notebooks a parsed command names exist."""
    files = []
    if path in (("run",), ("dis",)) and args.file:
        files.append(args.file)
    files += getattr(args, "workload", None) or []
    if getattr(args, "input", None) not in (None, "-"):
        files.append(args.input)
    for f in files:
        p = _in_checkout(f)
        assert p is None or p.exists(), f"{where}: {f} does not exist"
    if path == ("reproduce",) and args.name:
        if args.name.endswith(".py"):
            p = _in_checkout(args.name)
            assert p is None or p.exists(), f"{where}: {args.name} does not exist"
        else:
            reproduce.find(args.name)       # one line naming it when it is no notebook


def _cheap(path: tuple[str, ...], words: list[str]) -> bool:
    if path in RUN_LISTING:
        return RUN_LISTING[path] in words
    if path not in RUN:
        return False
    # a named compiler that is not installed here: parsed only
    cc = words[words.index("--cc") + 1] if "--cc" in words else None
    return cc is None or shutil.which(cc) is not None


def _ids(lines):
    return [f"{where} {' '.join(words)[:60]}" for where, words, _ in lines]


@pytest.mark.parametrize("where, words, env", SH_LINES, ids=_ids(SH_LINES))
def test_every_sh_line_is_a_command_that_works(where, words, env):
    words, prefix_env = _strip_prefixes(words)
    env = {**env, **prefix_env}
    for name in env:
        assert name in _known_variables(), f"{where}: no code reads ${name}"
    head = words[0]
    if head == "export":
        return
    if head == "make":
        targets, variables = _makefile()
        assert words[1] in targets, f"{where}: the Makefile has no target {words[1]}"
        for w in words[2:]:
            name, _, value = w.partition("=")
            assert name in variables, f"{where}: the Makefile has no variable {name}"
            if name == "NB":
                assert (ROOT / value).is_file(), f"{where}: {value} does not exist"
        return
    if head in ("python", "python3") and words[1:2] == ["-m"]:
        assert importlib.util.find_spec(words[2]), f"{where}: no module {words[2]}"
        return
    if head in ("python", "python3"):
        assert (ROOT / words[1]).is_file(), f"{where}: no script {words[1]}"
        return
    assert head == "shimlab", (f"{where}: the docs test does not know how to check "
                               f"`{' '.join(words)}`: teach tests/test_docs.py")
    argv = words[1:]
    args = _parse(argv)
    path = _path_of(argv)
    assert path in LEAVES or argv[:1] == ["--version"], f"{where}: no command {argv}"
    if args is not None:
        _check_names(path, args, where)
    if not _cheap(path, words):
        return
    p = subprocess.run([sys.executable, "-m", "shimlab.cli", *argv], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
                            **env})
    assert p.returncode == 0 and "Traceback" not in p.stderr, \
        f"{where}: `{' '.join(words)}` exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr}"


def test_the_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    first = re.match(r"# shimlab\n\n```sh\n(.*?)```", text, re.S)
    assert first, "README.md starts with `# shimlab` and a sh block"
    assert [shlex.split(line, comments=True) for line in first.group(1).splitlines()] == \
        [["make", "demo"], ["make", "test"]]
    assert len(text.splitlines()) <= 150, "the README stays short: the rest goes to docs/"


def test_the_docs_sh_lines_cover_the_cheap_commands():
    """The rule above can fail: the docs show commands that really run."""
    ran = {_path_of(_strip_prefixes(w)[0][1:]) for _, w, _ in SH_LINES
           if _strip_prefixes(w)[0][:1] == ["shimlab"]}
    assert {("run",), ("dis",), ("stencils", "test")} <= ran


# -- inline `shimlab ...` spans ---------------------------------------------------------

SPAN = re.compile(r"`(shimlab(?: [^`]*)?)`")


def _spans() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for m in SPAN.finditer(_prose(doc)):
            out.append((str(doc.relative_to(ROOT)), " ".join(m.group(1).split())))
    return out


SPANS = _spans()


def _is_summary(words: list[str]) -> bool:
    return any(w in PLACEHOLDERS or any(c in w for c in "[]|…<>") or "..." in w
               or w.split("=")[-1] in PLACEHOLDERS for w in words)


@pytest.mark.parametrize("doc, span", SPANS, ids=[f"{d} {s[:50]}" for d, s in SPANS])
def test_every_inline_shimlab_span_names_real_commands_and_options(doc, span):
    words = span.split()[1:]
    path = _path_of(words)
    rest = words[len(path):]
    assert path in COMMANDS, f"{doc}: `{span}`: no such command"
    if not rest or (not path and rest[0] not in ALL_OPTIONS):
        return      # the command's name (`shimlab run`), or `shimlab` itself
    if _is_summary(rest):
        for w in rest:
            for opt in OPTION.findall(w.replace("[no-]", "")):
                assert opt in _options(path) | HELP, \
                    f"{doc}: `{span}`: shimlab {' '.join(path)} has no option {opt}"
        return
    _parse(words)


# -- docs/cli.md against the parser -----------------------------------------------------

SECTION = re.compile(r"^## `shimlab ([a-z ]+)`$", re.M)


def _cli_sections() -> tuple[str, dict[tuple[str, ...], str]]:
    """(the text outside the command sections, command path -> its section)."""
    text = _prose(CLI_MD)
    parts = SECTION.split(text)
    outside, sections = [parts[0]], {}
    for i in range(1, len(parts), 2):
        body = parts[i + 1]
        rest = re.split(r"^## ", body, maxsplit=1, flags=re.M)   # a section of another kind
        sections[tuple(parts[i].split())] = rest[0]
        outside += rest[1:]
    return "\n".join(outside), sections


def _own_options(text: str) -> set[str]:
    """The options a text names, less those inside `shimlab ...` spans (which
    name their own command's options, checked above)."""
    return set(OPTION.findall(SPAN.sub("", text).replace("[no-]", "")))


def test_cli_md_has_a_section_for_every_command():
    _, sections = _cli_sections()
    missing = sorted(" ".join(p) for p in LEAVES if p not in sections)
    assert not missing, f"docs/cli.md has no section for: shimlab {', shimlab '.join(missing)}"
    extra = sorted(" ".join(p) for p in sections if p not in LEAVES)
    assert not extra, f"docs/cli.md has sections for commands the parser lacks: {extra}"


@pytest.mark.parametrize("path", sorted(LEAVES), ids=[" ".join(p) for p in sorted(LEAVES)])
def test_cli_md_lists_every_option_of_each_command_and_no_other(path):
    _, sections = _cli_sections()
    if path not in sections:
        pytest.skip("no section (test_cli_md_has_a_section_for_every_command fails)")
    named = _own_options(sections[path])
    have = _options(path) - HELP
    assert not have - named, \
        f"docs/cli.md, shimlab {' '.join(path)}: options not documented: {sorted(have - named)}"
    assert not named - have - HELP, \
        f"docs/cli.md, shimlab {' '.join(path)}: names options the parser does not have: " \
        f"{sorted(named - have - HELP)}"
    for a in COMMANDS[path]._actions:       # positionals: in the usage line
        if not a.option_strings:
            shown = (a.metavar or a.dest).upper()
            assert shown in sections[path], \
                f"docs/cli.md, shimlab {' '.join(path)}: its argument {shown} is not shown"


def test_cli_md_outside_the_sections_names_only_real_options():
    outside, _ = _cli_sections()
    unknown = _own_options(outside) - ALL_OPTIONS
    assert not unknown, f"docs/cli.md names options no command has: {sorted(unknown)}"
    assert "--version" in outside and "--help" in outside


def test_the_cli_check_can_fail():
    """An option the parser lacks, named in a section, is found."""
    assert "--nope" in _own_options("| `--nope` | x |") - _options(("run",))
    assert "--mode" not in _own_options("see `shimlab run --mode jit-shim`")


# -- links and paths --------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
REPO_PATH = re.compile(r"`((?:src|tests|csrc|peachpy_stencils|experiments|examples|scripts|docs|"
                       r"bench|jit|interp|cli|frontend|abi)/[\w./-]*)`")
# where a path in backquotes may be rooted: the checkout, or src/shimlab/
# (the docs write `jit/trace.py` for src/shimlab/jit/trace.py)
ROOTS = (ROOT, ROOT / "src" / "shimlab")
MADE = ("experiments/out",)      # made by runs, not committed


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_links_and_paths_exist(doc):
    prose = _prose(doc)
    for target in LINK.findall(re.sub(r"`[^`]*`", "", prose)):
        if "://" in target:
            continue
        assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)}: broken link {target}"
    for path in REPO_PATH.findall(prose):
        if path.startswith(MADE) or any(c in path for c in "<>") or re.search(r"[A-Z]{2,}",
                                                                              path):
            continue
        assert any((r / path).exists() for r in ROOTS), \
            f"{doc.relative_to(ROOT)}: `{path}` does not exist"
