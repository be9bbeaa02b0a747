"""Plain-text aligned tables for terminal output.

Shared by every command that prints rows of results.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

__all__ = ["table"]

# A cell that starts like a number (optionally signed, or a ratio "1.05x",
# or "±") reads best right-aligned so that the digits line up.
_NUMERIC = re.compile(r"^[+\-±~]?\d")


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table(rows: Iterable[Sequence], headers: Sequence[str], align: str | None = None,
          sep: str = "  ") -> str:
    """rows under headers, columns padded; align is one 'l'/'r' per column.

    By default a column is right-aligned when all its non-empty cells look
    numeric.  A row may be None to draw a separator line (e.g. before totals).
    """
    headers = [str(h) for h in headers]
    ncol = len(headers)
    body = []
    for row in rows:
        if row is None:
            body.append(None)
            continue
        cells = [_cell(v) for v in row]
        if len(cells) > ncol:
            raise ValueError(f"row has {len(cells)} cells for {ncol} columns: {row!r}")
        body.append(cells + [""] * (ncol - len(cells)))
    widths = [len(h) for h in headers]
    for cells in body:
        if cells is not None:
            widths = [max(w, len(c)) for w, c in zip(widths, cells)]
    if align is None:
        align = ""
        for i in range(ncol):
            col = [c[i] for c in body if c is not None and c[i]]
            align += "r" if col and all(_NUMERIC.match(c) for c in col) else "l"
    elif len(align) != ncol or set(align) - {"l", "r"}:
        raise ValueError(f"align must be {ncol} characters of 'l'/'r', got {align!r}")

    def line(cells):
        out = [c.rjust(w) if a == "r" else c.ljust(w)
               for c, w, a in zip(cells, widths, align)]
        return sep.join(out).rstrip()

    rule = sep.join("-" * w for w in widths)
    lines = [line(headers), rule]
    lines += [rule if cells is None else line(cells) for cells in body]
    return "\n".join(lines)
