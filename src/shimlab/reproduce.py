"""Runs one experiment notebook (`shimlab reproduce NAME|PATH [--quick] [--kernel]`).

A notebook is a jupytext percent script: experiments/NAME.py, or any such
file named by its path.  It runs as a plain script with this Python
(matplotlib headless), or with --kernel through a real Jupyter kernel
(nbclient), which also writes the executed .ipynb.  `--list` names each
notebook of experiments/ with the title of its first markdown cell.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from . import childpy, toolchain
from .errors import ShimlabError
from .paths import EXPERIMENTS, notebook_out

_TITLE = re.compile(r"^#\s+#\s+(.+?)\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
NEED_EXTRA = "pip install -e '.[kernel]' in the checkout (make setup does)"


def notebooks() -> dict[str, Path]:
    """Name -> path of every notebook in experiments/, sorted by name."""
    if not EXPERIMENTS.is_dir():
        return {}
    return {p.stem: p for p in sorted(EXPERIMENTS.glob("*.py")) if not p.name.startswith("_")}


def describe(path: Path) -> str:
    """The title of the notebook's first markdown cell (its one-line description)."""
    for line in path.read_text().splitlines():
        m = _TITLE.match(line)
        if m:
            return m.group(1)
    return "(no title)"


def find(name: str) -> Path:
    """A notebook by its name in experiments/ (NAME or NAME.py), or by the
    path of a .py file anywhere (a user's own notebook)."""
    path = Path(name).expanduser()
    stem = name[:-3] if name.endswith(".py") else name
    books = notebooks()
    if path.is_file() or (os.sep in name or name.endswith(".ipynb")) or \
            (name.endswith(".py") and stem not in books):
        if not path.exists():
            raise ShimlabError(f"{name}: no such notebook file")
        if path.is_dir() or path.suffix != ".py":
            raise ShimlabError(f"{name}: not a notebook (a jupytext percent script, NAME.py, "
                               f"is; jupytext --to py:percent converts an .ipynb)")
        return path.resolve()
    if stem not in books:
        known = ", ".join(books) or "none"
        raise ShimlabError(f"unknown notebook {name!r} (known: {known}; see shimlab reproduce "
                           f"--list; a notebook of your own: give its path)")
    return books[stem]


def _env(path: Path, quick: bool, compilers: list[str] | None,
         script: bool = True) -> dict[str, str]:
    """The notebook's environment: quick mode, compilers, and for a notebook
    outside experiments/ an out/ folder beside it (unless one is set).  A
    script draws headless; a kernel keeps its inline backend."""
    extra = {"MPLBACKEND": "Agg"} if script else {}
    if quick:
        extra["SHIMLAB_QUICK"] = "1"
    if compilers:
        for cc in compilers:
            toolchain.get_compiler(cc)     # a missing compiler: one clear line, now
        extra["SHIMLAB_CC"] = ",".join(compilers)
    if path.parent != EXPERIMENTS.resolve() and not os.environ.get("SHIMLAB_NOTEBOOK_OUT"):
        extra["SHIMLAB_NOTEBOOK_OUT"] = str(path.parent / "out")
    return childpy.env(**extra)


def _header(path: Path, quick: bool, how: str = "") -> None:
    print(f"== {path.stem}{' (quick)' if quick else ''}{how}: {describe(path)} ==", flush=True)


def run(name: str, quick: bool = False, compilers: list[str] | None = None) -> int:
    """Runs notebook `name` as a script, its output going to ours."""
    path = find(name)
    env = _env(path, quick, compilers)
    _header(path, quick)
    proc = subprocess.run([sys.executable, str(path)], env=env, cwd=path.parent)
    if proc.returncode != 0:
        raise ShimlabError(f"notebook {path.stem} failed (exit status {proc.returncode}; "
                           f"its output is above)")
    return 0


def run_in_kernel(name: str, quick: bool = False, compilers: list[str] | None = None) -> Path:
    """Executes notebook `name` cell by cell in a Jupyter kernel (this
    Python's ipykernel, started by nbclient), echoing its text output as it
    comes, and writes the executed notebook, outputs and figures included,
    to OUT/NAME/NAME.ipynb; returns that path."""
    path = find(name)
    env = _env(path, quick, compilers, script=False)
    try:
        import jupytext
        import nbformat
        from jupyter_client.kernelspec import NoSuchKernel
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError, DeadKernelError
    except ImportError as e:
        raise ShimlabError(f"--kernel needs Jupyter ({e.name} is not installed): "
                           f"{NEED_EXTRA}") from None

    class EchoingClient(NotebookClient):
        # nbclient keeps outputs until a cell ends; a long cell should show
        # its progress as it runs, as it does in a script
        def process_message(self, msg, cell, cell_index):
            out = super().process_message(msg, cell, cell_index)
            if out is not None:
                _echo(out)
            return out

    nb = jupytext.read(path)
    out_dir = Path(env.get("SHIMLAB_NOTEBOOK_OUT") or notebook_out()) / path.stem
    target = out_dir / f"{path.stem}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    # kernel "python3" with argv "python" is this Python (jupyter_client puts
    # sys.executable there).  The kernel's own log is kept to errors: it warns
    # on every start that its loopback TCP is unencrypted (IPC would avoid it
    # but needs the kernel and us in one directory).
    client = EchoingClient(nb, kernel_name="python3",
                           extra_arguments=["--IPKernelApp.log_level=ERROR"],
                           resources={"metadata": {"path": str(path.parent)}})
    _header(path, quick, ", through a Jupyter kernel")
    # The kernel's own stderr goes to a log beside the notebook: cells' output
    # and errors come through the protocol, and what the kernel process itself
    # prints (libzmq once asserted on its way down after a failed cell) is
    # not the user's output.
    log = open(out_dir / "kernel.log", "wb")
    try:
        client.execute(env=env, stderr=log)
    except NoSuchKernel:
        raise ShimlabError(f"no Jupyter kernel for Python here: {NEED_EXTRA}") from None
    except CellExecutionError as e:
        cell = _failed_cell(nb)
        raise ShimlabError(f"notebook {path.stem} failed in cell {cell}: {e.ename}: "
                           f"{_first_line(e.evalue)} (executed notebook: {target})") from None
    except DeadKernelError as e:
        raise ShimlabError(f"notebook {path.stem}: the kernel died ({e}; executed notebook: "
                           f"{target})") from None
    except (RuntimeError, TimeoutError) as e:      # e.g. "Kernel didn't respond in 60 seconds"
        raise ShimlabError(f"notebook {path.stem}: the Jupyter kernel failed: {e}") from None
    finally:
        log.close()
        nbformat.write(nb, str(target))     # also a failed run's, for its tracebacks
    print(f"executed notebook: {target}", flush=True)
    return target


def _echo(out) -> None:
    kind = out.get("output_type")
    if kind == "stream":
        stream = sys.stderr if out.get("name") == "stderr" else sys.stdout
        stream.write(out.get("text", ""))
        stream.flush()
    elif kind in ("display_data", "execute_result"):
        data = out.get("data", {})
        shown = next((t for t in ("image/png", "image/svg+xml") if t in data), None)
        print(f"[{shown} shown inline]" if shown else data.get("text/plain", ""), flush=True)
    elif kind == "error":       # as the cell shows it; the one-line error follows on stderr
        print(_ANSI.sub("", "\n".join(out.get("traceback", []))), flush=True)


def _failed_cell(nb) -> int:
    """1-based index among code cells of the first cell with an error output."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, c in enumerate(code, 1):
        if any(o.get("output_type") == "error" for o in c.get("outputs", [])):
            return i
    return len(code)


def _first_line(text: str) -> str:
    lines = _ANSI.sub("", str(text)).strip().splitlines()
    return lines[0] if lines else ""
