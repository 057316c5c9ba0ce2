"""The npbench kernels (ETH's NumPy benchmark suite, loaded from a path given) through dynamo:
results compared with plain NumPy, plain and compiled times side by side, graphs and breaks.

Run: python3 benchmarks/npbench.py /path/to/npbench [--preset S|M|L] [--only NAME ...] [--budget SECONDS]
Every kernel runs in its own child process (a crash or a hang loses only that kernel). Inputs come
from the kernel's `initialize` with its bench_info parameters; plain and compiled calls each get
fresh copies of the arrays (kernels write into their arguments), and the returned values AND the
arrays the kernel mutated are compared: bitwise (dtype, NaNs in place), else the largest relative
error is reported. Times are medians of interleaved rounds after a warm-up (past the frontend's timed
turns, in which the original and the compiled code take calls in turn). Writes
benchmarks/results/npbench-<preset>-<timestamp>.json and npbench-<preset>-latest.json.
No npbench code is copied here: kernels and initializers are imported from the path given.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / ".ci"))
from bootstrap import ensure_venv  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("npbench", type=Path, help="the npbench checkout (holds bench_info/ and npbench/benchmarks/)")
    parser.add_argument("--preset", default="S", choices=("S", "M", "L", "paper"))
    parser.add_argument("--only", nargs="*", default=None, help="short names (bench_info file names) to run")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of timed rounds per kernel")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a kernel counts as hung")
    parser.add_argument("--backends", nargs="*", default=["numpy", "c"], help="dynamo backends timed beside plain")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# one kernel (runs in a child process)

def load_kernel(root: Path, info: dict, preset: str):
    """The kernel function and its keyword inputs at `preset`, built by npbench's own initializer."""
    sys.path.insert(0, str(root))
    package = "npbench.benchmarks." + info["relative_path"].replace("/", ".")
    kernel_module = importlib.import_module(f"{package}.{info['module_name']}_numpy")
    data = dict(info["parameters"][preset])
    init = info.get("init")
    if init:
        setup = importlib.import_module(f"{package}.{info['module_name']}")
        values = getattr(setup, init["func_name"])(*(data[name] for name in init["input_args"]))
        outputs = init["output_args"]
        if len(outputs) == 1:
            values = (values,)
        data.update(zip(outputs, values))
    return getattr(kernel_module, info["func_name"]), data


def fresh_args(data: dict, names: list[str]) -> list:
    """The kernel's arguments, arrays copied with their layout (the kernel may write into them)."""
    import numpy as np

    return [data[n].copy(order="K") if isinstance(data[n], np.ndarray) else data[n] for n in names]


def leaves(value, path="out"):
    """(path, leaf) for every array or scalar in a returned value (tuples and lists walked)."""
    if isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def compare(expected, actual) -> tuple[bool, float, list[str]]:
    """(bitwise equal, largest relative error, differences) between two (path, value) lists."""
    import numpy as np

    exact, worst, problems = True, 0.0, []
    if len(expected) != len(actual):
        return False, math.inf, [f"{len(expected)} values returned plainly, {len(actual)} compiled"]
    for (path, a), (_, b) in zip(expected, actual):
        if type(a) is not type(b):
            exact = False
            problems.append(f"{path}: type {type(a).__name__} plain, {type(b).__name__} compiled")
        if a is None or b is None:
            continue
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape or x.dtype != y.dtype:
            exact = False
            problems.append(f"{path}: {x.dtype}{x.shape} plain, {y.dtype}{y.shape} compiled")
            if x.shape != y.shape:
                worst = math.inf
                continue
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            same = np.array_equal(x, y, equal_nan=True)
        else:
            same = np.array_equal(x, y)
        if same:
            continue
        exact = False
        try:
            with np.errstate(all="ignore"):
                xf, yf = _wide(x), _wide(y)
                diff = np.abs(xf - yf)
                scale = np.maximum(np.abs(xf), np.finfo(np.float64).tiny)
                both_nan = np.isnan(xf) & np.isnan(yf)
                rel = np.where(both_nan, 0.0, diff / scale)
                error = float(np.nanmax(np.where(np.isnan(rel), np.inf, rel))) if rel.size else 0.0
        except (TypeError, ValueError):
            error = math.inf
        worst = max(worst, error)
        problems.append(f"{path}: max relative error {error:.3g}")
    return exact, worst, problems


def _wide(x):
    import numpy as np

    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


class CountingC:
    """backend "c", keeping each graph's callable to count the loops that ran as C loops."""

    compiles_loops = True  # as backend "c" itself: the frontend keeps nested short loops as loop nodes

    def __init__(self) -> None:
        self.runs: list = []

    def __call__(self, gm, inputs):
        from dynamo.backends import lookup_backend

        self.runs.append(lookup_backend("c")(gm, inputs))
        return self.runs[-1]

    def loop_counts(self) -> tuple[int, int]:
        from dynamo.backends.c_cpu.loops import loop_counts

        counts = [loop_counts(run) for run in self.runs]
        return sum(c for c, _ in counts), sum(p for _, p in counts)


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the C compiler): what a first call costs
    whatever the machine's load."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def check_backend(kernel, backend, data, names, observed, expected) -> tuple:
    """A compiled kernel on two calls compared with plain: (compiled, first call (wall s, CPU s), exact, error,
    differences). The first call's CPU time (this process and the compiler processes it ran) is the cost of
    compiling that does not grow with the load of the machine (the wall time does, several times over on a
    shared one)."""
    import dynamo

    compiled = dynamo.compile(kernel, backend=backend)
    args = fresh_args(data, names)
    start, start_cpu = time.perf_counter(), cpu_seconds()
    actual = observed(compiled(*args), args)
    first = (time.perf_counter() - start, cpu_seconds() - start_cpu)
    exact, worst, problems = compare(expected, actual)
    # a second compiled call runs the cached code: it must agree too (guards, resume functions)
    args = fresh_args(data, names)
    again = observed(compiled(*args), args)
    exact2, worst2, problems2 = compare(expected, again)
    return compiled, first, exact and exact2, max(worst, worst2), problems + [f"second call: {p}" for p in problems2]


def run_one(root: Path, short: str, preset: str, budget: float, backends: list[str] | None = None) -> dict:
    import numpy as np

    import dynamo

    info = json.loads((root / "bench_info" / f"{short}.json").read_text())["benchmark"]
    row: dict = {"kernel": short, "name": info["name"], "preset": preset}
    if preset not in info["parameters"]:
        row["status"] = f"no {preset} preset"
        return row
    kernel, data = load_kernel(root, info, preset)
    names = info["input_args"]
    arrays = [i for i, n in enumerate(names) if isinstance(data[n], np.ndarray)]

    def observed(result, args):
        """What a call leaves behind: its result and every array argument after it."""
        return list(leaves(result)) + [(f"arg {names[i]}", args[i]) for i in arrays]

    args = fresh_args(data, names)
    start = time.perf_counter()
    expected = observed(kernel(*args), args)
    row["plain_first_s"] = time.perf_counter() - start
    compiled, first, row["exact"], row["max_rel_error"], row["differences"] = check_backend(
        kernel, "numpy", data, names, observed, expected)
    row["compiled_first_s"], row["compiled_first_cpu_s"] = first
    candidates = {"plain": kernel, "compiled": compiled}
    if "c" in (backends or ()):
        counting = CountingC()
        try:
            compiled_c, c_first, row["c_exact"], row["c_max_rel_error"], c_differences = check_backend(
                kernel, counting, data, names, observed, expected)
            row["c_first_s"], row["c_first_cpu_s"] = c_first
        except Exception as error:  # a kernel backend c cannot run is reported, the others still measured
            row["c_status"] = f"{type(error).__name__}: {str(error).splitlines()[0][:160] if str(error) else ''}"
        else:
            candidates["c"] = compiled_c
            row["differences"] += [f"backend c: {p}" for p in c_differences]
            row["c_loops"], row["c_python_loops"] = counting.loop_counts()

    # the frontend's timed turns: the first calls of a compiled frame alternate with its original code,
    # so that timed rounds among them would mix plain calls into the compiled medians (a whole run at
    # load 20 measured lu at 0.45x, alone 48x): they are played out before the rounds
    from dynamo import config

    for name, fn in candidates.items():
        for _ in range(config.timed_turns if name != "plain" else 0):
            fn(*fresh_args(data, names))
    # interleaved rounds: each round times `calls` calls on fresh copies made before the clock starts
    single = max(row["plain_first_s"], 1e-6)
    calls = max(1, min(1000, int(0.02 / single)))
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    rounds, deadline, warmup = 0, time.perf_counter() + budget, 1
    while rounds < warmup + 5 or (time.perf_counter() < deadline and rounds < warmup + 25):
        for name, fn in candidates.items():
            batch = [fresh_args(data, names) for _ in range(calls)]
            start = time.perf_counter()
            for call_args in batch:
                fn(*call_args)
            seconds = (time.perf_counter() - start) / calls
            if rounds >= warmup:
                samples[name].append(seconds)
        rounds += 1
    row["calls_per_round"] = calls
    row["rounds"] = rounds - warmup
    row["plain_s"] = statistics.median(samples["plain"])
    row["compiled_s"] = statistics.median(samples["compiled"])
    row["ratio"] = statistics.median(p / c for p, c in zip(samples["plain"], samples["compiled"]))
    if "c" in samples:
        row["c_s"] = statistics.median(samples["c"])
        row["c_ratio"] = statistics.median(p / c for p, c in zip(samples["plain"], samples["c"]))

    report = dynamo.explain(kernel, backend="numpy")(*fresh_args(data, names))
    row["graphs"] = report.graph_count
    row["breaks"] = report.graph_break_count
    row["compile_s"] = report.compile_time
    row["ops"] = report.op_count
    row["loops"] = report.loop_count
    row["loop_notes"] = [line for _, lines in report.loops_by_frame for line in lines if "not captured" in line][:4]
    reasons = []
    for reason, count in report.reasons_by_frequency()[:6]:
        text = str(reason).splitlines()
        reasons.append(f"{count}x [{reason.kind}] {text[0] if text else ''}"[:240])
    row["break_reasons"] = reasons
    row["status"] = "ok" if row["exact"] and row.get("c_exact", True) else "MISMATCH"
    return row


# ---------------------------------------------------------------------------------------------
# the driver

def kernel_names(root: Path, only: list[str] | None) -> list[str]:
    names = sorted(p.stem for p in (root / "bench_info").glob("*.json"))
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            sys.exit(f"unknown kernels: {', '.join(unknown)} (known: {' '.join(names)})")
        names = [n for n in names if n in only]
    return names


def run_child(options: argparse.Namespace, short: str) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), str(options.npbench), "--preset", options.preset,
               "--budget", str(options.budget), "--child", short, "--backends", *options.backends]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=options.timeout)
    except subprocess.TimeoutExpired:
        return {"kernel": short, "preset": options.preset, "status": f"HANG (> {options.timeout:.0f} s)"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return {"kernel": short, "preset": options.preset, "status": f"CRASH: {tail[:200]}",
                "stderr": done.stderr[-4000:]}
    row = json.loads(lines[-1])
    row["wall_s"] = time.perf_counter() - start
    return row


def format_table(rows: list[dict]) -> str:
    lines = [f"{'kernel':24} {'match':>9} {'plain':>10} {'compiled':>10} {'ratio':>6} {'compile':>8} "
             f"{'first':>7} {'first':>7} {'graphs':>6} {'breaks':>6} {'loops':>5} {'c':>10} {'c':>6} {'c':>5} "
             f"{'C':>5} {'c':>7} {'c first':>7}",
             f"{'':24} {'':>9} {'per call':>10} {'per call':>10} {'x':>6} {'ms':>8} {'call s':>7} {'CPU s':>7} "
             f"{'':>6} {'':>6} {'':>5} {'per call':>10} {'x':>6} {'match':>5} {'loops':>5} {'first s':>7} {'CPU s':>7}"]
    for row in rows:
        if "ratio" not in row:
            lines.append(f"{row['kernel']:24} {row['status']}")
            continue
        match = "exact" if row["exact"] else f"{row['max_rel_error']:.1e}"
        lines.append(f"{row['kernel']:24} {match:>9} {_duration(row['plain_s']):>10} "
                     f"{_duration(row['compiled_s']):>10} {row['ratio']:6.2f} {row['compile_s'] * 1e3:8.1f} "
                     f"{row['compiled_first_s']:7.2f} {row.get('compiled_first_cpu_s', math.nan):7.2f} "
                     f"{row['graphs']:>6} {row['breaks']:>6} {row.get('loops', 0):>5}"
                     + _c_columns(row))
    ratios = [row["ratio"] for row in rows if "ratio" in row]
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        exact = sum(1 for row in rows if row.get("exact"))
        looping = [row for row in rows if row.get("loops", 0)]
        lines.append(f"{len(ratios)} kernels, {exact} exact; geomean ratio {geomean:.2f}x; first compiled call over 2 s: "
                     f"{sum(1 for row in rows if row.get('compiled_first_s', 0) > 2)} (wall), "
                     f"{sum(1 for row in rows if row.get('compiled_first_cpu_s', 0) > 2)} (CPU); kernels with loop "
                     f"nodes: {len(looping)}, loop nodes: {sum(row['loops'] for row in looping)}")
    c_ratios = [row["c_ratio"] for row in rows if "c_ratio" in row]
    if c_ratios:
        geomean = math.exp(sum(math.log(r) for r in c_ratios) / len(c_ratios))
        exact = sum(1 for row in rows if row.get("c_exact"))
        lines.append(f"backend c: {len(c_ratios)} kernels, {exact} exact; geomean ratio {geomean:.2f}x; loops run as C "
                     f"loops: {sum(row.get('c_loops', 0) for row in rows)}, as Python loops over a compiled body: "
                     f"{sum(row.get('c_python_loops', 0) for row in rows)}; first call over 2 s: "
                     f"{sum(1 for row in rows if row.get('c_first_s', 0) > 2)} (over 2 s of CPU: "
                     f"{sum(1 for row in rows if row.get('c_first_cpu_s', 0) > 2)})")
    return "\n".join(lines)


def _c_columns(row: dict) -> str:
    if "c_ratio" not in row:
        return f" {row.get('c_status', '')[:40]:>10}" if "c_status" in row else ""
    match = "exact" if row["c_exact"] else f"{row['c_max_rel_error']:.0e}"
    return (f" {_duration(row['c_s']):>10} {row['c_ratio']:6.2f} {match:>5} {row.get('c_loops', 0):>5}"
            f" {row.get('c_first_s', 0.0):7.2f} {row.get('c_first_cpu_s', 0.0):7.2f}")


def _duration(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def main() -> None:
    options = parse_args()
    root = options.npbench.resolve()
    if options.child:
        print(json.dumps(run_one(root, options.child, options.preset, options.budget, options.backends)), flush=True)
        return
    import numpy as np

    names = kernel_names(root, options.only)
    print(f"npbench through dynamo: preset {options.preset}, {len(names)} kernels, Python "
          f"{platform.python_version()}, NumPy {np.__version__}, load average {os.getloadavg()[0]:.1f}", flush=True)
    rows, start = [], time.perf_counter()
    for short in names:
        row = run_child(options, short)
        rows.append(row)
        ratio = f"{row['ratio']:.2f}x" if "ratio" in row else ""
        print(f"  {short}: {row['status']} {ratio} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    print(format_table(rows))
    print("\nratio: plain time / compiled time, the median of per-round ratios (higher is faster); match: 'exact' "
          "when the results and mutated arguments are bitwise equal,\nelse the largest relative error; compile: "
          "tracing and backend time of all graphs (dynamo.explain); first call: the first compiled call (tracing "
          "included), wall and CPU seconds (the compiler processes it ran included);\ngraphs/breaks: dynamo.explain's counts; loops: loops compiled into loop nodes (nested ones "
          "included);\nc: backend c (per call, ratio plain/c, match, C loops: loop nodes that ran as C loops, nested ones "
          "included, first call s: its first call, tracing and C compiles included, wall clock;\nc first cpu s: the "
          "same call's CPU time, the compiler's processes included, which the load of other processes does not "
          "inflate). Numba, the peer, is timed only where installed (not on this machine: no column).")
    for row in rows:
        for text in row.get("differences", []):
            print(f"difference: {row['kernel']}: {text}")
        for text in row.get("loop_notes", []):
            print(f"loop: {row['kernel']}: {text.strip()}")
        if row.get("status", "").startswith(("CRASH", "HANG")):
            print(f"{row['status'].split(':')[0].lower()}: {row['kernel']}: {row['status']}")
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    payload = {"python": platform.python_version(), "numpy": np.__version__, "preset": options.preset,
               "machine": platform.machine(), "load_average": os.getloadavg(), "rows": rows,
               "total_seconds": time.perf_counter() - start}
    for path in (results / f"npbench-{options.preset}-{stamp}.json", results / f"npbench-{options.preset}-latest.json"):
        path.write_text(json.dumps(payload, indent=1))
    print(f"\nwritten: {results / f'npbench-{options.preset}-{stamp}.json'} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    ensure_venv(("test",))
    main()
