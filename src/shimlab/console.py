"""The `shimlab` command's entry point: the CLI with Python's cycle collector
kept out of a short process's way.

A process of the command imports ~100 modules and then, for a JIT run,
loads stencils and makes traces: objects that live to its end, which the
collector's default (a young collection every 700 new objects) traversed
again and again.  Measured in-process with gc.callbacks (Zen 3, 4-5 runs
each): hello.bf on tailcall, 8 collections, 2.0-2.4 ms; fib.py with the
JIT, 13 collections, 4.0-6.3 ms; mandel_bits.bf with the JIT, 22-26
collections, 4.5-7.9 ms.  So the CLI's imports run with the collector off,
what they made is frozen (gc.freeze: never traversed again), and a young
collection comes every 50,000 objects: 1 collection, 0.4-1.0 ms, in each of
those runs (every 10,000: 2 collections, 3.5-5.2 ms, on mandel_bits.bf).
Only the command's process is changed: importing shimlab leaves the
collector as it was.

A `run` process also ends without Python's finalization (its teardown of
~100 modules and what they hold): 7-10 ms of a hello.bf run's ~120 ms on
Zen 3, when nothing needs it (no atexit callback, no other thread).
"""
import gc
import os
import sys

YOUNG_THRESHOLD = 50_000

if gc.isenabled():
    gc.disable()
    try:
        from .cli import main as _cli_main
    finally:
        gc.enable()
else:
    from .cli import main as _cli_main


def main(argv=None):
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    code = _cli_main(argv)
    if argv is None and sys.argv[1:2] == ["run"]:
        exit_now(code)
    return code


def exit_now(code) -> None:
    """Ends the process with status `code` at once, its output flushed:
    returns (for an ordinary exit) when something still needs the
    finalization, or the output cannot be flushed (a closed pipe: the
    ordinary exit reports it)."""
    import atexit
    threading = sys.modules.get("threading")
    if atexit._ncallbacks() or (threading is not None and threading.active_count() > 1):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:          # (None: the fd was closed at start)
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
