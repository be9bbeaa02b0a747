"""argparse types for the commands' numeric options.

Each refuses what cannot be meant (nan, inf, a count of zero, a negative
time, a value past what the VM's 64-bit fields hold) as a usage error that
names the value (or, through convert(), a one-line ShimlabError), instead
of a traceback or a silent default later on.
"""
from __future__ import annotations

import argparse
import os

from ..errors import ShimlabError

# (math.isfinite's import is a shared library's load in some Pythons: ~1 ms of a run)
_INF = float("inf")

INT64_SAFE = 1 << 62          # the largest count any option passes on to C
MAX_SECONDS = 365 * 24 * 3600  # select() and the deadlines need a finite, sane time


def _int(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def int_in(lo: int, hi: int = INT64_SAFE, what: str = "an integer"):
    """An integer between lo and hi, inclusive."""
    def parse(text: str) -> int:
        v = _int(text)
        if v < lo:
            raise argparse.ArgumentTypeError(f"{text}: needs {what} of at least {lo}")
        if v > hi:
            raise argparse.ArgumentTypeError(f"{text}: needs {what} of at most {hi}")
        return v
    parse.__name__ = what       # argparse names the type in some messages
    return parse


positive_int = int_in(1)
nonnegative_int = int_in(0)


def seconds(text: str) -> float:
    """A positive, finite number of seconds (at most a year)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < v <= MAX_SECONDS:           # (nan compares false)
        raise argparse.ArgumentTypeError(f"{text}: needs a positive number of seconds, at most "
                                         f"{MAX_SECONDS} (a year)")
    return v


def positive_float(text: str) -> float:
    """A positive, finite number."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < v < _INF:                   # nan and inf too
        raise argparse.ArgumentTypeError(f"{text}: needs a positive, finite number")
    return v


def cpu(text: str) -> int:
    """A CPU this process may run on (workers are pinned to it)."""
    v = nonnegative_int(text)
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [v]
    if v not in allowed:
        raise argparse.ArgumentTypeError(f"{text}: not a CPU this process may use "
                                         f"({', '.join(map(str, allowed))})")
    return v


def convert(args, flag: str, parse) -> None:
    """args.<flag> (argparse kept the text) through `parse`; a bad value is
    a ShimlabError (one line, exit 1) naming the option, for the options
    whose bad values `shimlab run` has always reported that way."""
    dest = flag.lstrip("-").replace("-", "_")
    raw = getattr(args, dest)
    if raw is None or not isinstance(raw, str):
        return
    try:
        setattr(args, dest, parse(raw))
    except argparse.ArgumentTypeError as e:
        raise ShimlabError(f"{flag} {e}") from None
