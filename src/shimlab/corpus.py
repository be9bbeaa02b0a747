"""The corpus (corpus/corpus.toml): the programs every optimization is
judged on, their styles, which are mandelbrot-class, and where each one's
input and expected output are.  One source of truth for the tests and for
`bench programs --corpus`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import ShimlabError
from .paths import CORPUS, ROOT

MANIFEST = CORPUS / "corpus.toml"
STYLES = ("hand", "compiled", "generated", "example")


@dataclass(frozen=True)
class Entry:
    path: Path
    style: str
    mandel: bool
    what: str

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def language(self) -> str:
        return "bf" if self.path.suffix in (".b", ".bf") else "minipy"

    @property
    def input(self) -> Path | None:
        p = self.path.with_suffix(".in")
        return p if p.exists() else None

    @property
    def expected(self) -> Path:
        return self.path.with_suffix(".out")


def entries(manifest: Path = MANIFEST) -> list[Entry]:
    import tomllib              # only for the corpus: a run never reads it
    try:
        data = tomllib.loads(manifest.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ShimlabError(f"{manifest}: {e}") from None
    out = []
    for i, p in enumerate(data.get("program", [])):
        style = p.get("style")
        if style not in STYLES or "path" not in p:
            raise ShimlabError(f"{manifest}: program {i + 1}: needs a path and a style of "
                               f"{', '.join(STYLES)}")
        out.append(Entry(ROOT / p["path"], style, bool(p.get("mandel", False)),
                         p.get("what", "")))
    return out
