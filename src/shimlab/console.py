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
collector as it was."""
import gc

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
    return _cli_main(argv)
