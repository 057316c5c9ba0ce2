"""Compiled functions in a pool of worker processes: first-call time per worker, total against plain.

Run: python3 benchmarks/processes.py [--workers 2] [--tasks 16] [--size N] [--backend numpy]
Each worker is a fresh spawned process (as a cluster's would be); every task records the worker's pid,
whether it was that worker's first call, and how long the call took. Backends that generate code keep
it in the on-disk cache, so the workers after the first should not pay a compile.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / ".ci"))
from bootstrap import ensure_venv  # noqa: E402


def workload(x):
    """Black-Scholes-like elementwise work: enough arithmetic to be worth compiling."""
    import numpy as np

    d1 = (np.log(x + 1.5) + (0.03 + 0.5 * 0.04) * 0.75) / (0.2 * np.sqrt(0.75))
    d2 = d1 - 0.2 * np.sqrt(0.75)
    return x * np.tanh(d1) - np.exp(-0.03 * 0.75) * np.tanh(d2) + x * x * 0.5


_seen = set()


def timed_call(fn, x):
    first = os.getpid() not in _seen
    _seen.add(os.getpid())
    start = time.perf_counter()
    fn(x)
    return os.getpid(), first, time.perf_counter() - start


def run_pool(fn, arrays, workers: int) -> tuple[float, list[tuple[int, bool, float]]]:
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        pool.map(abs, range(workers * 4))  # workers started and importing before the clock runs
        start = time.perf_counter()
        records = pool.starmap(timed_call, [(fn, a) for a in arrays], chunksize=1)
        return time.perf_counter() - start, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--size", type=int, default=2_000_000)
    parser.add_argument("--backend", default="numpy")
    args = parser.parse_args()

    import numpy as np

    import dynamo

    compiled = dynamo.compile(workload, backend=args.backend)
    rng = np.random.default_rng(0)
    arrays = [rng.random(args.size) for _ in range(args.tasks)]
    plain_total, plain_records = run_pool(workload, arrays, args.workers)
    compiled_total, records = run_pool(compiled, arrays, args.workers)

    print(f"{args.workers} spawned workers, {args.tasks} tasks of {args.size} float64, backend {args.backend!r}")
    firsts = sorted((t for _, first, t in records if first), reverse=True)
    steady = [t for _, first, t in records if not first]
    plain_steady = [t for _, first, t in plain_records if not first]
    for i, t in enumerate(firsts):
        print(f"  first call in worker {i + 1}: {t * 1e3:8.1f} ms")
    print(f"  steady call (median):     {statistics.median(steady) * 1e3:8.1f} ms"
          f"   plain {statistics.median(plain_steady) * 1e3:.1f} ms")
    print(f"  whole map: compiled {compiled_total:.3f} s, plain {plain_total:.3f} s,"
          f" speedup {plain_total / compiled_total:.2f}x")


if __name__ == "__main__":
    ensure_venv(("test",))
    main()
