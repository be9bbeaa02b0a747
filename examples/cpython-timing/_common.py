"""What every timing program shares: a pyperf Runner with its size taken from
SHIMLAB_TIMING_N (the variants path makes it small in quick mode)."""
import os

import pyperf

N = int(os.environ.get("SHIMLAB_TIMING_N", "20000"))


def bench(name, fn):
    runner = pyperf.Runner()
    runner.bench_func(name, fn, N)
