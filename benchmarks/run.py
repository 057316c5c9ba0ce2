"""The benchmark suite: every workload in benchmarks/workloads/, timed against plain NumPy side by side.

Run: python3 benchmarks/run.py [--quick] [--only NAME ...] [--no-peers]   (sets up .venv/ on first use)
Prints one row per workload: plain NumPy time, each backend's speedup over it (eager, numpy, c, and
numexpr / Numba where importable), the numpy backend's compile time and graph count, and the share
of the machine's copy bandwidth the numpy and c backends reach, with timed turns off (steady state). Writes the same to benchmarks/results/.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / ".ci"))
from bootstrap import ensure_venv  # noqa: E402

BACKENDS = ("eager", "numpy", "c")
PEERS = ("numexpr", "numba")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few rounds (a smoke run)")
    parser.add_argument("--only", nargs="*", default=None, help="workload module names to run")
    parser.add_argument("--no-peers", action="store_true", help="skip numexpr and Numba")
    parser.add_argument("--budget", type=float, default=None, help="seconds of timed rounds per workload")
    parser.add_argument("--dynamic", action="store_true",
                        help="also time the numpy backend compiled with dynamic=True (column 'dynamic')")
    return parser.parse_args()


def copy_bandwidth(quick: bool) -> dict[str, float]:
    """Bytes per second a large np.copyto moves (read + write), on one thread and on every core."""
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor

    from dynamo.backends.numpy_cpu import this_machine

    n = 4_000_000 if quick else 32_000_000
    src, dst = np.random.default_rng(0).random(n), np.empty(n)
    np.copyto(dst, src)
    cores = this_machine().cores
    pool = ThreadPoolExecutor(cores)
    chunks = [(slice(i * n // cores, (i + 1) * n // cores)) for i in range(cores)]

    def parallel() -> None:
        list(pool.map(lambda s: np.copyto(dst[s], src[s]), chunks))

    result = {}
    for label, copy in (("one_thread", lambda: np.copyto(dst, src)), ("all_cores", parallel)):
        samples = []
        for _ in range(7):
            start = time.perf_counter()
            copy()
            samples.append(time.perf_counter() - start)
        result[label] = 2 * src.nbytes / statistics.median(samples)
    pool.shutdown()
    return result


def same_result(a, b, exact: bool) -> bool:
    import numpy as np

    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_result(x, y, exact) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if exact:
        return a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    tolerance = 1e-4 if a.dtype == np.float32 else 1e-9
    return bool(np.allclose(a, b, rtol=tolerance, atol=tolerance, equal_nan=True))


class TimedBackend:
    """Wraps a backend to count the graphs it compiles and time each compilation."""

    def __init__(self, name: str) -> None:
        from dynamo.backends import lookup_backend

        self.backend = lookup_backend(name)
        self.seconds: list[float] = []

    def __call__(self, graph_module, example_inputs):
        start = time.perf_counter()
        compiled = self.backend(graph_module, example_inputs)
        self.seconds.append(time.perf_counter() - start)
        return compiled


def fallback_reasons(compiled) -> list[str]:
    try:
        frames = compiled._dynamo_callback.compiled_frames
        return [str(frame.fallback_reason).splitlines()[0] for _, frame in frames if frame.fallback_reason is not None]
    except AttributeError:
        return []


def peer_callables(workload, use_peers: bool) -> dict:
    peers = {}
    if not use_peers:
        return peers
    for name in PEERS:
        builder = getattr(workload, f"{name}_version", None)
        if builder is None:
            continue
        try:
            module = __import__(name)
        except ImportError:
            continue
        peers[name] = builder(module)
    return peers


def run_workload(workload, quick: bool, use_peers: bool, budget: float, dynamic: bool = False) -> dict:
    import numpy as np

    import dynamo
    from harness import interleaved_medians, interleaved_samples, median_ratios

    rng = np.random.default_rng(0)
    args = workload.inputs(rng, quick)
    calls = workload.CALLS if not quick else max(1, workload.CALLS // 20)
    candidates = {"plain": lambda: workload.fn(*args)}
    row: dict = {"workload": workload.NAME, "module": workload.__name__.rsplit(".", 1)[-1], "calls": calls,
                 "first_call_s": {}, "ok": {}, "notes": []}
    expected = workload.fn(*args)
    timed = {}
    for name in BACKENDS:
        timed[name] = TimedBackend(name)
        compiled = dynamo.compile(workload.fn, backend=timed[name])
        start = time.perf_counter()
        try:
            result = compiled(*args)
        except dynamo.BackendCompilerFailed as error:  # backend "c" without a C compiler
            row["notes"].append(f"{name}: {str(error).splitlines()[0][:120]}")
            continue
        row["first_call_s"][name] = time.perf_counter() - start
        row["ok"][name] = same_result(result, expected, exact=True)
        candidates[name] = (lambda c: lambda: c(*args))(compiled)
        if name == "numpy":
            row["notes"].extend(fallback_reasons(compiled))
    if dynamic:  # every size symbolic from the first call: one artifact for any size
        compiled = dynamo.compile(workload.fn, backend="numpy", dynamic=True)
        start = time.perf_counter()
        result = compiled(*args)
        row["first_call_s"]["dynamic"] = time.perf_counter() - start
        row["ok"]["dynamic"] = same_result(result, expected, exact=True)
        candidates["dynamic"] = (lambda c: lambda: c(*args))(compiled)
    for name, peer in peer_callables(workload, use_peers).items():
        start = time.perf_counter()
        try:
            result = peer(*args)
        except Exception as error:  # a peer that cannot compile this workload is left out, with a note
            row["notes"].append(f"{name}: {type(error).__name__}: {str(error).splitlines()[0][:80]}")
            continue
        row["first_call_s"][name] = time.perf_counter() - start
        row["ok"][name] = same_result(result, expected, exact=False)
        candidates[name] = (lambda p: lambda: p(*args))(peer)
    # one warm-up sample of each tells how many interleaved rounds fit the budget
    single = sum(interleaved_medians(candidates, calls, rounds=1, warmup=0).values())
    rounds = int(min(15, max(3, budget / max(single, 1e-9))))
    samples = interleaved_samples(candidates, calls, rounds=rounds, warmup=1)
    row["rounds"] = rounds
    row["samples"] = samples
    row["seconds"] = {name: statistics.median(values) for name, values in samples.items()}
    row["speedup"] = median_ratios(samples, "plain")
    row["graphs"] = len(timed["numpy"].seconds)
    row["compile_ms"] = max(timed["numpy"].seconds, default=0.0) * 1e3
    row["compile_ms_c"] = max(timed["c"].seconds, default=0.0) * 1e3
    row["traffic_bytes"] = workload.traffic(args)
    return row


def format_table(rows: list[dict], bandwidth: dict[str, float], columns: list[str]) -> str:
    head = f"{'workload':36} {'plain':>10}" + "".join(f" {c:>8}" for c in columns)
    head += f" {'compile':>8} {'graphs':>6} {'bw':>5} {'bw c':>5}"
    unit = (f"{'':36} {'per call':>10}" + "".join(f" {'x plain':>8}" for _ in columns)
            + f" {'ms':>8} {'':>6} {'%':>5} {'%':>5}")
    lines = [head, unit]
    for row in rows:
        plain = row["seconds"]["plain"]
        text = f"{row['workload']:36} {_duration(plain):>10}"
        for column in columns:
            speedup = row["speedup"].get(column)
            flag = "" if row["ok"].get(column, True) else "!"
            text += f" {f'{speedup:.2f}{flag}' if speedup else '-':>8}"
        fractions = []
        for backend in ("numpy", "c"):
            seconds = row["seconds"].get(backend)
            share = row["traffic_bytes"] / seconds / bandwidth["one_thread"] if row["traffic_bytes"] and seconds else None
            fractions.append("" if share is None else f"{100 * share:.0f}")
        text += f" {row['compile_ms']:8.1f} {row['graphs']:>6} {fractions[0]:>5} {fractions[1]:>5}"
        lines.append(text)
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.2f} us"


def main() -> None:
    options = parse_args()
    # Numba's OpenMP workers spin after each parallel loop by default, stealing the cores the next
    # candidate in the interleaved rounds needs; passive waiting keeps the comparison fair.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.path.insert(0, str(HERE))
    import numpy as np

    import dynamo
    import workloads

    # the compiled versions' steady state: no timed turns, in which a new version's first 16 calls
    # alternate with the original code (each round of a slow workload would time plain NumPy half the time)
    dynamo.config.timed_turns = 0

    modules = workloads.load_all()
    if options.only:
        modules = [m for m in modules if m.__name__.rsplit(".", 1)[-1] in options.only]
    budget = options.budget if options.budget is not None else (1.0 if options.quick else 8.0)
    print(f"dynamo benchmarks: Python {platform.python_version()}, NumPy {np.__version__}, "
          f"{'quick' if options.quick else 'full'} sizes", flush=True)
    bandwidth = copy_bandwidth(options.quick)
    print(f"copy bandwidth (np.copyto, read+write): {bandwidth['one_thread'] / 1e9:.1f} GB/s on one thread, "
          f"{bandwidth['all_cores'] / 1e9:.1f} GB/s on all cores\n", flush=True)
    rows = []
    start = time.perf_counter()
    for module in modules:
        row = run_workload(module, options.quick, not options.no_peers, budget, options.dynamic)
        rows.append(row)
        print(f"  {row['workload']}: done ({time.perf_counter() - start:.0f} s)", flush=True, file=sys.stderr)
    columns = [c for c in (*BACKENDS, "dynamic", *PEERS) if any(c in r["speedup"] for r in rows)]
    print(format_table(rows, bandwidth, columns))
    notes = [(r["workload"], n) for r in rows for n in r["notes"]]
    wrong = [(r["workload"], name) for r in rows for name, ok in r["ok"].items() if not ok]
    print("\nx plain: plain NumPy time / backend time, the median of per-round ratios (higher is faster); '!' marks a result that differs from "
          "plain NumPy (exactly for dynamo backends, beyond float tolerance for peers).\n"
          "compile: the numpy backend's compile time per graph (plan, source, callable; the JSON also has each "
          "first call's time);\nbw, bw c: the share of one-thread copy bandwidth the numpy and c backends reach, "
          "counting only the bytes a perfect implementation must move.")
    for workload, note in notes:
        print(f"note: {workload}: {note}")
    for workload, name in wrong:
        print(f"MISMATCH: {workload}: {name}")
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    payload = {"python": platform.python_version(), "numpy": np.__version__, "quick": options.quick,
               "machine": platform.machine(), "bandwidth_bytes_per_s": bandwidth, "rows": rows,
               "total_seconds": time.perf_counter() - start}
    for path in (results / f"{stamp}.json", results / "latest.json"):
        path.write_text(json.dumps(payload, indent=1))
    print(f"\nwritten: {results / f'{stamp}.json'} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    ensure_venv(("test",))
    main()
