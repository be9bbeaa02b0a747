"""Traces laid out by earlier runs of a program, kept between processes: a
trace recorded again is placed from its plan (compile.plan_of: pieces,
sizes, exits, no address) instead of being optimized and laid out again,
which was about half of each trace's ~0.3 ms (issue 24).  The file also
lists the traces the last run installed, in order (replay): a later run
installs them all when its JIT starts, without recording them again or
waiting for each loop to get hot, and a trace is a guarded path valid
wherever its start is reached, so they need not come from the same input.

One file a program and set of options (build/traces/), read when the JIT
starts and written when it closes if it compiled a trace the file lacked
or installed other traces than the file lists.
A plan is used only under the exact key it was made under: the file's
(the program's code and constants, the mode and every option that changes
a layout, the stencil artifacts' bytes, the source of every module that
decides a plan, Python's version) and the trace's own (its every
instruction).  A file that is damaged (its CRC), of another format or
made under another key is ignored and replaced.  SHIMLAB_TRACE_CACHE=0
(`shimlab run --no-trace-cache`) turns it off; =verify compiles every trace
anyway and fails if a plan differs from what compiling made.
"""
from __future__ import annotations

import marshal
import os
import sys
from functools import lru_cache
from operator import attrgetter

from ..cachefile import keep_sealed, read_sealed, settled, stamp
from ..digest import blake2b, program_digest, sha1
from ..paths import SRC_DIR, build_dir
from .trace import Trace, TraceOp

FORMAT = b"SLTC2" + bytes(sys.version_info[:2])    # the file's layout; marshal's Python
MAX_FILES = 256           # the folder keeps the most recently written this many
MAX_REPLAY = 4096         # traces a file lists for the next run to install
# the modules whose code decides a trace's plan: an edit to any changes every key
_SOURCES = ("jit/compile.py", "jit/optimize.py", "jit/fuse.py", "jit/reglocals.py",
            "jit/trace.py", "jit/trace_cache.py", "isa.py", "modes.py", "stencil.py",
            "record.py", "abi/contract.py")


def folder() -> str:
    return os.path.join(build_dir(), "traces")


@lru_cache(maxsize=None)
def code_digest() -> tuple | str:
    """What the source of the modules that decide a plan is: their stat
    stamps while all are settled (reading and hashing them took ~1 ms of the
    JIT's start, Zen 3), else their bytes hashed."""
    stamps = tuple(stamp(os.path.join(SRC_DIR, "shimlab", rel)) for rel in _SOURCES)
    if None not in stamps and settled(*stamps):
        return stamps
    h = blake2b(digest_size=20)
    for rel in _SOURCES:
        with open(os.path.join(SRC_DIR, "shimlab", rel), "rb") as f:
            h.update(rel.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


# every field of a trace's instruction that its equality compares (all but its
# name, which its opcode decides): a field added to TraceOp joins the key
_OP_FIELDS = attrgetter(*[f.name for f in TraceOp.__record_fields__ if f.compare])


def trace_key(trace) -> bytes:
    """What a trace is, for its plan: every instruction as recorded, its
    start and end, as text (compared whole, never by a hash alone; repr,
    not marshal, whose bytes for equal values depend on what else refers
    to them)."""
    return repr((trace.start, trace.closed, trace.end_pc, _ops(trace))).encode()


def _ops(trace) -> tuple:
    """Every instruction of a trace as a tuple of the fields that make it."""
    return tuple(map(_OP_FIELDS, trace.ops))


def replay_entry(trace, side: bool, blocks: int) -> tuple:
    """A trace as plain data marshal writes (a replay list's entry)."""
    return (trace.start, _ops(trace), trace.closed, trace.end_pc, trace.why_end, side, blocks)


class TraceCache:
    """The plans of one program under one key (options: a tuple of plain
    values that decides every layout, the stencils' digests among them)."""

    def __init__(self, options: tuple, code, consts, verify: bool = False,
                 program: str | None = None):
        """program: digest.program_digest(code, consts), when already made."""
        self.key = (code_digest(), options, program or program_digest(code, consts))
        self.path = os.path.join(folder(), sha1(repr(self.key).encode()).hexdigest()[:24] + ".bin")
        self.verify = verify
        self.plans, self.replay = self._read()
        self.new = 0              # plans made in this process (save writes them)
        self.hits = 0             # traces placed from a plan (install counts them)
        self.installed: list = []  # this run's traces, as replay entries (note_installed)
        self.replayed = 0         # traces installed from the replay list (runtime counts them)
        self.replay_ns = 0        # and the thread CPU time that took

    def _read(self) -> tuple[dict, list]:
        try:
            key, plans, replay = read_sealed(self.path, FORMAT)
        except (TypeError, ValueError):     # nothing there, or not three values
            return {}, []
        if key != self.key or not isinstance(plans, dict) or not isinstance(replay, list):
            return {}, []
        return plans, replay

    @staticmethod
    def key_of(trace) -> bytes:
        return trace_key(trace)

    # The file maps the SHA-1 of a trace's key to marshal data of (its key,
    # its plan): reading the file makes no plan (a few hundred of them, as
    # objects, took ~3 ms); a plan is made when its trace is recorded, and
    # used only if the key it holds is the trace's, byte for byte.
    def get(self, key: bytes):
        blob = self.plans.get(sha1(key).digest())
        if blob is None:
            return None
        try:
            held, plan = marshal.loads(blob)
        except (ValueError, EOFError, TypeError):
            return None
        return plan if held == key else None

    def put(self, key: bytes, plan) -> None:
        if plan is None:
            return
        try:
            blob = marshal.dumps((key, plan))
        except ValueError:            # a value marshal cannot write: not kept
            return
        self.plans[sha1(key).digest()] = blob
        self.new += 1

    def drop(self, key: bytes) -> None:
        self.plans.pop(sha1(key).digest(), None)

    # -- the replay list: the traces of the last run, in the order it installed them
    def note_installed(self, trace, side: bool, blocks: int) -> None:
        """A trace this run installed (after its blocks were added: as
        install took it), for the next run to install again."""
        if len(self.installed) < MAX_REPLAY:
            self.installed.append(replay_entry(trace, side, blocks))

    def traces(self, code) -> list:
        """The replay list as (Trace, side, blocks), in order; [] when any
        entry is not a trace of `code` (each instruction as the program has
        it: a list from another program is never installed)."""
        out = []
        try:
            for start, ops, closed, end_pc, why_end, side, blocks in self.replay:
                trace = Trace(start, [TraceOp(*op) for op in ops], closed, end_pc, why_end)
                for t in trace.ops:
                    if not t.synthetic and tuple(code[t.pc]) != (t.op, t.arg):
                        return []
                out.append((trace, bool(side), int(blocks)))
        except (TypeError, ValueError, IndexError):
            return []
        return out

    def save(self) -> None:
        """Writes the plans and this run's replay list if either changed
        (best effort: a read-only build directory keeps none), and keeps
        the folder to MAX_FILES files."""
        if not self.new and (not self.installed or self.installed == self.replay):
            return
        replay = self.installed or self.replay
        if keep_sealed(self.path, FORMAT, (self.key, self.plans, replay), MAX_FILES):
            self.new = 0


def clear() -> int:
    """Removes every kept plan; returns how many files went."""
    n = 0
    try:
        with os.scandir(folder()) as entries:
            files = [e.path for e in entries if e.name.endswith(".bin")]
    except OSError:
        return 0
    for p in files:
        try:
            os.unlink(p)
            n += 1
        except OSError:
            pass
    return n
