"""Backend "tiered" against "numpy" on benchmarks/workloads/: first-call time, when each graph moved to c,
and per-call time after the move, each backend in a fresh process of its own (a fresh disk cache too).

Run: python3 benchmarks/tiered.py [--quick] [--only NAME ...] [--seconds S]   (sets up .venv/ on first use)
Times are this process's CPU (time.process_time: every thread of it, the C compiler's processes not
counted) and wall; per-call times are medians of rounds interleaved with plain NumPy in the same process.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / ".ci"))
from bootstrap import ensure_venv  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the workloads' small sizes")
    parser.add_argument("--only", nargs="*", default=None, help="workload module names to run")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="seconds of calls a tiered graph may take to move before the steady rounds")
    parser.add_argument("--measure", nargs=2, metavar=("WORKLOAD", "BACKEND"), help=argparse.SUPPRESS)
    return parser.parse_args()


def tiers() -> list[str]:
    import dynamo

    callback = dynamo.api.callback_for("tiered", False, None)
    return [g.compiled_fn._dynamo_fn.tier.state for _, frame in callback.compiled_frames for g in frame.graphs
            if hasattr(g.compiled_fn._dynamo_fn, "tier")]


def measure(module: str, backend: str, quick: bool, seconds: float) -> dict:
    """In this process: the first call, calls until every tiered graph has moved (or `seconds`), then
    interleaved rounds of plain and compiled."""
    import numpy as np

    import dynamo
    from dynamo.backends import tiered
    from harness import interleaved_samples

    workload = importlib.import_module(f"workloads.{module}")
    args = workload.inputs(np.random.default_rng(0), quick)
    calls = workload.CALLS if not quick else max(1, workload.CALLS // 20)
    compiled = dynamo.compile(workload.fn, backend=backend)
    wall, cpu = time.perf_counter(), time.process_time()
    result = compiled(*args)
    row = {"first_wall": time.perf_counter() - wall, "first_cpu": time.process_time() - cpu}
    expected = workload.fn(*args)
    row["exact"] = bool(np.array_equal(result, expected, equal_nan=True))
    if backend == "tiered":
        start = time.perf_counter()
        while time.perf_counter() - start < seconds and any(s in (tiered.NUMPY, tiered.COMPILING) for s in tiers()):
            compiled(*args)
        tiered.wait_for_tier_ups(max(0.0, seconds - (time.perf_counter() - start)))
        row["moved_after"] = time.perf_counter() - start
        row["tiers"] = tiers()
        row["exact"] = row["exact"] and bool(np.array_equal(compiled(*args), expected, equal_nan=True))
    samples = interleaved_samples({"plain": lambda: workload.fn(*args), backend: lambda: compiled(*args)},
                                  calls, rounds=9, warmup=1, clock=time.process_time)
    row["plain_cpu"] = statistics.median(samples["plain"])
    row["per_call_cpu"] = statistics.median(samples[backend])
    row["name"] = workload.NAME
    return row


def main() -> None:
    options = parse_args()
    if options.measure:
        sys.path.insert(0, str(HERE))
        sys.path.insert(0, str(HERE.parent))
        print(json.dumps(measure(*options.measure, options.quick, options.seconds)))
        return
    modules = options.only or sorted(p.stem for p in (HERE / "workloads").glob("*.py") if p.stem != "__init__")
    print(f"{'workload':34} {'backend':8} {'first call':>17} {'moved':>7} {'per call CPU':>13} {'x plain':>8}  exact")
    print(f"{'':34} {'':8} {'wall s':>8} {'CPU s':>8} {'after s':>7} {'':>13} {'':>8}")
    for module in modules:
        for backend in ("numpy", "tiered"):
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "DYNAMO_CACHE_DIR": cache}
                done = subprocess.run([sys.executable, __file__, "--measure", module, backend,
                                       "--seconds", str(options.seconds), *(["--quick"] if options.quick else [])],
                                      capture_output=True, text=True, env=env)
            if done.returncode != 0:
                print(f"{module:34} {backend:8} failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            moved = f"{row['moved_after']:.1f}" if "moved_after" in row else "-"
            print(f"{row['name'][:34]:34} {backend:8} {row['first_wall']:8.3f} {row['first_cpu']:8.3f} {moved:>7} "
                  f"{row['per_call_cpu'] * 1e3:10.3f} ms {row['plain_cpu'] / row['per_call_cpu']:8.2f}  "
                  f"{row['exact']}{'  ' + ','.join(row['tiers']) if row.get('tiers') else ''}", flush=True)


if __name__ == "__main__":
    ensure_venv(("test",))
    main()
