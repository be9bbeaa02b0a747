"""How the last `shimlab run`s of a program went, kept between processes
beside the trace cache and switched with it: how long the interpreter alone
took (or at least took) and how long a run with the JIT took, the JIT's own
work within it.  The JIT's payback wait (policy.remembered_wait) reads them
to tell whether the JIT pays for this program on this host.  One small file
a program and set of options (build/runs/), read when the JIT is made,
written when it closes if something moved by more than a quarter.  A
damaged file, another format or another key reads as no history."""
from __future__ import annotations

import os
import sys

from ..cachefile import keep_sealed, read_sealed
from ..digest import program_digest, sha1
from ..paths import build_dir

FORMAT = b"SLRH3" + bytes(sys.version_info[:2])
MAX_FILES = 1024


def folder() -> str:
    return os.path.join(build_dir(), "runs")


class Lengths:
    """Thread CPU of runs, in ns, from loading the program to closing it (the
    VM's run, and whatever the JIT's path costs around it: its runtime, the
    trace cache's file).  interp_ns: the interpreter alone,
    to the run's end (interp_exact) or to where the JIT started, which the
    run took at least (None: no run yet); jit_ns: the last run that started
    the JIT at the wait asked, everything included, jit_own_ns of it the
    JIT's own work (start, compiles, trace cache); None: no such run.
    (A plain class: typing, which NamedTuple needs, took ~4.7 ms to import.)"""
    __slots__ = ("interp_ns", "interp_exact", "jit_ns", "jit_own_ns")

    def __init__(self, interp_ns: int | None = None, interp_exact: bool = False,
                 jit_ns: int | None = None, jit_own_ns: int = 0):
        self.interp_ns, self.interp_exact = interp_ns, interp_exact
        self.jit_ns, self.jit_own_ns = jit_ns, jit_own_ns

    def __iter__(self):
        return iter((self.interp_ns, self.interp_exact, self.jit_ns, self.jit_own_ns))

    def __eq__(self, other) -> bool:
        return isinstance(other, Lengths) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"Lengths{tuple(self)}"

    def _replace(self, **changes) -> "Lengths":
        return Lengths(**{**dict(zip(self.__slots__, self)), **changes})

    def after(self, ran_ns: int, jit_from_ns: int | None, jit_own_ns: int,
              waited_as_asked: bool) -> "Lengths":
        """These lengths with a run's: ran_ns long, the JIT started jit_from_ns
        into it (None: never), its own work jit_own_ns; waited_as_asked:
        the run's wait was the one asked, not a longer one the history set
        (that run says how long the interpreter takes at least, and nothing
        about the JIT's run as it would usually start)."""
        if jit_from_ns is None:
            return self._replace(interp_ns=ran_ns, interp_exact=True)
        new = self
        if self.interp_ns is None or jit_from_ns > self.interp_ns:
            new = new._replace(interp_ns=jit_from_ns, interp_exact=False)
        if waited_as_asked:
            new = new._replace(jit_ns=ran_ns, jit_own_ns=jit_own_ns)
        return new

    def moved(self, old: "Lengths") -> bool:
        """Worth writing: a length new or gone, exactness changed, or one
        moved by more than a quarter (a run's noise rewrites nothing)."""
        if self.interp_exact != old.interp_exact:
            return True
        for a, b in ((self.interp_ns, old.interp_ns), (self.jit_ns, old.jit_ns),
                     (self.jit_own_ns or None, old.jit_own_ns or None)):
            if (a is None) != (b is None) or (a is not None and abs(a - b) * 4 > b):
                return True
        return False


def _valid(value) -> bool:
    if not (isinstance(value, tuple) and len(value) == 4):
        return False
    interp, exact, jit, own = value
    return all(v is None or (isinstance(v, int) and v > 0) for v in (interp, jit)) and \
        isinstance(exact, bool) and isinstance(own, int) and own >= 0 and \
        (interp is not None or jit is None)


def run_options(mode: str, opt: int, cache: int, count: bool, tape_len: int) -> tuple:
    """What besides the program changes how long a run takes: the history's
    key, the same whether the JIT (runtime.Jit) or the run that sits it out
    (sit_out.py) reads it."""
    return (mode, int(opt), int(cache), bool(count), int(tape_len))


class RunHistory:
    """options: plain values that change how long a run takes (run_options);
    code, consts: the program (program: its digest.program_digest, when
    already made)."""

    def __init__(self, options: tuple, code, consts, program: str | None = None):
        self.key = (options, program or program_digest(code, consts))
        self.path = os.path.join(folder(), sha1(repr(self.key).encode()).hexdigest()[:24] + ".bin")
        self.last = self._read()

    def _read(self) -> Lengths:
        try:
            key, value = read_sealed(self.path, FORMAT)
        except (TypeError, ValueError):     # nothing there, or not two values
            return Lengths()
        return Lengths(*value) if key == self.key and _valid(value) else Lengths()

    def save(self, ran_ns: int, jit_from_ns: int | None = None, jit_own_ns: int = 0,
             waited_as_asked: bool = True) -> None:
        """Lengths.after with this run's, kept when they moved.  Best effort:
        a build directory that cannot be written keeps nothing."""
        if ran_ns <= 0:
            return
        new = self.last.after(ran_ns, jit_from_ns, jit_own_ns, waited_as_asked)
        if new.moved(self.last):
            keep_sealed(self.path, FORMAT, (self.key, tuple(new)), MAX_FILES)
