"""Runs the differential properties of tests/test_differential.py for as long
as asked: `make fuzz FUZZ_SECONDS=600` (or `python scripts/fuzz.py --seconds 600`).

Rounds of up to a few hundred examples per kind of program (BF, minipy, raw
bytecode, and `cpython`: the minipy programs with the oracle also held to
what CPython prints), each round a fresh hypothesis run with new random
choices and sized to the time left, until the time is up.  Each example runs
in every mode at every --jit-opt, K = 0 and a drawn K, threshold 1 and a
drawn one; --full runs every K in 1..5 and the default threshold too.  A failure stops the run; the shrunk case is already saved in
tests/regression/ (by tests/differential.py) for `make test` to replay.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import differential  # noqa: E402  (needs tests/ on the path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/fuzz.py", description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz (default 60)")
    ap.add_argument("--kind", action="append", choices=sorted(differential.PROPERTIES),
                    help="kinds of program (default: all)")
    ap.add_argument("--round", type=int, default=200, metavar="N",
                    help="examples per kind per round (default 200)")
    ap.add_argument("--full", action="store_true",
                    help="every example in every K and thresholds 1, 64 and a drawn one, "
                         "and replayed traces in every JIT mode at levels 2 and 3 "
                         "(about five times the configurations)")
    args = ap.parse_args(argv)
    kinds = args.kind or sorted(differential.PROPERTIES)
    differential.FULL = args.full
    per = differential.example_configs(1, 2)
    matrix = ("every K, thresholds 1, 64 and a drawn one, replayed traces in every JIT mode"
              if args.full else "K = 0 and a drawn K, threshold 1 and a drawn one, replayed "
              f"traces in {' and '.join(differential.REPLAY_MODES)}")
    from conftest import interpreter_configs
    configs = interpreter_configs()
    print(f"fuzz: {', '.join(kinds)} on {len(configs)} interpreters "
          f"({', '.join(f'{m}/{c}' for m, c in configs)}) and the JIT modes, "
          f"{len(per)} configurations per example (every --jit-opt, {matrix}) "
          f"for {args.seconds:g} s", flush=True)
    start = time.monotonic()
    examples, rounds = {k: 0 for k in kinds}, 0
    per_example = {k: None for k in kinds}     # seconds, measured as we go
    while args.seconds - (time.monotonic() - start) > 1.0:   # not worth a round below that
        rounds += 1
        for i, kind in enumerate(kinds):
            left = args.seconds - (time.monotonic() - start)
            if left <= 1.0:
                break
            # a small first round measures the pace; later rounds are sized
            # to end near the deadline, shared with the kinds still to come
            share = left / (len(kinds) - i) if rounds == 1 else left / len(kinds)
            n = 20 if per_example[kind] is None else \
                max(1, min(args.round, int(share / per_example[kind])))
            test = differential.property_test(kind, max_examples=n)
            t0 = time.monotonic()
            try:
                test()
            except Exception as e:
                print(f"fuzz: {kind}: FAILED after {examples[kind]} examples: "
                      f"{str(e).splitlines()[0] if str(e) else type(e).__name__}",
                      file=sys.stderr)
                print(f"fuzz: the shrunk case is in {differential.regression_dir()}",
                      file=sys.stderr)
                raise
            took = time.monotonic() - t0
            per_example[kind] = took / n
            examples[kind] += n
            print(f"fuzz: round {rounds} {kind}: {n} examples in {took:.1f} s", flush=True)
    total = ", ".join(f"{k} {n}" for k, n in examples.items())
    print(f"fuzz: no difference found in {time.monotonic() - start:.0f} s ({total} examples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
