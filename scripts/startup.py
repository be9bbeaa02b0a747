"""How long `shimlab run` takes on a tiny program beyond Python's own start-up:
interleaved runs of it and of `python -c pass`, medians and minima of wall
time.  Usage: python scripts/startup.py [RUNS] (the build must be cached: one
warm-up run comes first)."""
import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HELLO = Path(__file__).resolve().parent.parent / "examples" / "bf" / "hello.bf"
# as the `shimlab` command starts (its entry point, shimlab.console)
RUN = [sys.executable, "-c", "import sys; from shimlab.console import main; sys.exit(main())",
       "run", str(HELLO), "--mode", "tailcall"]
BARE = [sys.executable, "-c", "pass"]


def wall(argv) -> float:
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="?", type=int, default=20, help="runs of each (default 20)")
    n = ap.parse_args().runs
    if n < 1:
        ap.error(f"runs {n}: needs at least 1")
    wall(RUN)
    runs, bare = [], []
    for _ in range(n):
        runs.append(wall(RUN))
        bare.append(wall(BARE))
    for name, xs in (("shimlab run hello.bf", runs), ("python -c pass", bare)):
        print(f"{name:>22}: median {statistics.median(xs) * 1e3:6.1f} ms, "
              f"min {min(xs) * 1e3:6.1f} ms")
    print(f"{'shimlab own':>22}: median {(statistics.median(runs) - statistics.median(bare)) * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
