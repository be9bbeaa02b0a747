"""A small progress display for long benchmark sweeps, on stderr.

Redraws one line in place on a terminal; in a log (not a TTY) prints a line
only now and then, so CI logs stay short.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

__all__ = ["Progress", "format_duration"]


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Progress(total, label).step(n=1, note="") ... .close(); also a context manager."""

    def __init__(self, total: int | None, label: str = "", stream: TextIO | None = None,
                 interval: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.label = label
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self._clock = clock
        self._start = clock()
        try:
            self._tty = self.stream.isatty()
        except (AttributeError, ValueError):
            self._tty = False
        self._last_print = self._start
        self._last_decile = 0
        self._last_width = 0
        self._closed = False
        self._note = ""
        self._unprinted = True   # the current state has not been shown yet

    def line(self) -> str:
        elapsed = self._clock() - self._start
        parts = [self.label] if self.label else []
        if self.total:
            pct = 100.0 * self.done / self.total
            parts.append(f"{self.done}/{self.total} {pct:3.0f}%")
        else:
            parts.append(f"{self.done}")
        parts.append(f"elapsed {format_duration(elapsed)}")
        if self.total and 0 < self.done < self.total:
            eta = elapsed / self.done * (self.total - self.done)
            parts.append(f"eta {format_duration(eta)}")
        if self._note:
            parts.append(self._note)
        return "  ".join(parts)

    def step(self, n: int = 1, note: str = "") -> None:
        self.done += n
        self._note = note
        self._unprinted = True
        now = self._clock()
        if self._tty:
            # Redrawing more than ~10 times a second only costs time.
            if now - self._last_print >= 0.1 or self._finished():
                self._draw_tty()
                self._last_print = now
            return
        decile = int(10 * self.done / self.total) if self.total else 0
        if now - self._last_print >= self.interval or decile > self._last_decile:
            self._write_line()
            self._last_print = now
            self._last_decile = decile

    def _finished(self) -> bool:
        return bool(self.total) and self.done >= self.total

    def _draw_tty(self) -> None:
        text = self.line()
        pad = " " * max(0, self._last_width - len(text))
        self.stream.write("\r" + text + pad)
        self.stream.flush()
        self._last_width = len(text)
        self._unprinted = False

    def _write_line(self) -> None:
        self.stream.write(self.line() + "\n")
        self.stream.flush()
        self._unprinted = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._tty:
            self._draw_tty()
            self.stream.write("\n")
            self.stream.flush()
        elif self._unprinted:
            self._write_line()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
