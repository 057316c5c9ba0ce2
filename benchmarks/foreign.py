"""Kernels written by others (files with `#setup:` and `#run:` comment lines, as in the numpy-benchmarks
collection) through dynamo: results against plain NumPy, first call, compiles, steady speed.

Run: python3 benchmarks/foreign.py --numpy-benchmarks PATH [--only NAME ...] [--backends tiered numpy c]
     [--json FILE] [--rounds N] [--settle SECONDS]
PATH is a checkout of the collection (its numpy_benchmarks/benchmarks/ folder is used) or any folder of
such files. For each kernel file: the `#setup:` line runs once; every call gets fresh copies of the
arrays it made (kernels write into their arguments); the `#run:` expression is evaluated with the
kernel's name bound to the plain function, then to dynamo.compile(fn, backend=B), one child process
per kernel and backend (a crash loses one cell; each backend starts with a cold frontend). Compared
bitwise with the plain call: the returned values and every array of the setup after the call (dtype,
shape, values, NaNs in place). Reported: the first compiled call (wall and CPU), compiles of the file's
functions (after the first call, and any made by later calls: a recompile per call shows there), graph
breaks, and the steady time per call as plain CPU time / compiled CPU time, the median of per-round
ratios over interleaved rounds, after the frontend's timed turns and, for backend tiered, once its
graphs moved to c (or `--settle` seconds passed). Numba's njit of the same function is a peer where
numba imports (skipped when it fails). No code of the collection is copied here: files are read from PATH.
"""
from __future__ import annotations

import argparse
import ast
import copy
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / ".ci"))
from bootstrap import ensure_venv  # noqa: E402

PEERS = ("numba",)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numpy-benchmarks", type=Path, default=None,
                        help="a checkout of numpy-benchmarks, or a folder of files with #setup:/#run: lines")
    parser.add_argument("--only", nargs="*", default=None, help="kernel file names (without .py) to run")
    parser.add_argument("--backends", nargs="*", default=["tiered", "numpy", "c", "numba"],
                        help="dynamo backends (and 'numba', a peer) each timed beside plain")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved timed rounds (medians are taken)")
    parser.add_argument("--round-seconds", type=float, default=0.02, help="plain CPU time per round (calls batched)")
    parser.add_argument("--settle", type=float, default=20.0,
                        help="seconds of calls that backend tiered may take to move its graphs to c")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a cell counts as hung")
    parser.add_argument("--json", type=Path, default=None, help="write the rows to this file")
    parser.add_argument("--child", nargs=2, metavar=("FILE", "BACKEND"), default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# reading a kernel file

class KernelFile:
    """One file's `#setup:` code, `#run:` expression and the name of the function the expression calls."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.stem
        self.setup = self.run = ""
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith("#setup:"):
                self.setup = stripped[len("#setup:"):].strip()
            elif stripped.startswith("#run:"):
                self.run = stripped[len("#run:"):].strip()
        self.function = ""
        if self.run:
            call = ast.parse(self.run, mode="eval").body
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                self.function = call.func.id

    @property
    def usable(self) -> bool:
        return bool(self.run and self.function)


def kernel_files(root: Path, only: list[str] | None) -> list[KernelFile]:
    folder = root / "numpy_benchmarks" / "benchmarks"
    if not folder.is_dir():
        folder = root
    files = [KernelFile(p) for p in sorted(folder.glob("*.py")) if p.name != "__init__.py"]
    files = [f for f in files if f.usable]
    if only:
        unknown = sorted(set(only) - {f.name for f in files})
        if unknown:
            sys.exit(f"unknown kernels: {', '.join(unknown)} (known: {' '.join(f.name for f in files)})")
        files = [f for f in files if f.name in only]
    return files


def load_function(kernel: KernelFile) -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location(f"foreign_{kernel.name}", kernel.path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, kernel.function)


def setup_values(kernel: KernelFile) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(kernel.setup, f"<setup of {kernel.name}>", "exec"), namespace)
    return {k: v for k, v in namespace.items() if k != "__builtins__"}


def fresh(values: dict[str, Any]) -> dict[str, Any]:
    """The setup's values with arrays copied (layout kept), through tuples and lists."""
    import numpy as np

    def copied(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return value.copy(order="K")
        if isinstance(value, (tuple, list)):
            return type(value)(copied(v) for v in value)
        return value

    return {k: copied(v) for k, v in values.items()}


def observed(result: Any, env: dict[str, Any]) -> list[tuple[str, Any]]:
    """What a call leaves: its result's leaves and every array among the setup's values after it."""
    import numpy as np

    def leaves(value: Any, path: str):
        if isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                yield from leaves(item, f"{path}[{i}]")
        else:
            yield path, value

    out = list(leaves(result, "out"))
    for name, value in env.items():
        out += [(f"arg {p}", v) for p, v in leaves(value, name) if isinstance(v, np.ndarray)]
    return out


def differences(expected: list[tuple[str, Any]], actual: list[tuple[str, Any]]) -> list[str]:
    """Where two observations differ bitwise: type, dtype, shape, values (NaNs must sit in the same places)."""
    import numpy as np

    if len(expected) != len(actual):
        return [f"{len(expected)} values plain, {len(actual)} compiled"]
    problems = []
    for (path, a), (_, b) in zip(expected, actual):
        if type(a) is not type(b):
            problems.append(f"{path}: type {type(a).__name__} plain, {type(b).__name__} compiled")
            continue
        if a is None:
            continue
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape or x.dtype != y.dtype:
            problems.append(f"{path}: {x.dtype}{x.shape} plain, {y.dtype}{y.shape} compiled")
            continue
        if x.dtype.kind in "fc":
            # bitwise, NaN payloads aside: -0.0 and 0.0 differ, NaNs must sit at the same places
            same = (np.array_equal(x, y, equal_nan=True) and np.array_equal(np.signbit(x.real), np.signbit(y.real))
                    and np.array_equal(np.signbit(x.imag), np.signbit(y.imag)))
        else:
            same = np.array_equal(x, y)
        if not same:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                wide = np.complex128 if x.dtype.kind == "c" else np.float64
                try:
                    error = float(np.nanmax(np.abs(x.astype(wide) - y.astype(wide))
                                            / np.maximum(np.abs(x.astype(wide)), 1e-300)))
                except (TypeError, ValueError):
                    error = math.inf
            problems.append(f"{path}: values differ (max relative error {error:.3g})")
    return problems


# ---------------------------------------------------------------------------------------------
# one kernel under one backend (a child process)

def compiled_with(fn: Callable[..., Any], backend: str) -> Callable[..., Any]:
    if backend == "numba":
        import numba

        return numba.njit(fn)
    import dynamo

    return dynamo.compile(fn, backend=backend)


def compiles_of(callback: Any, path: Path) -> tuple[int, int, int]:
    """(compiled versions, graph breaks, graphs) of frames from the kernel's file."""
    frames = [frame for code, frame in callback.compiled_frames if code.co_filename == str(path)]
    return len(frames), sum(len(f.breaks) for f in frames), sum(len(f.graphs) for f in frames)


def tier_states(callback: Any) -> list[str]:
    return [g.compiled_fn._dynamo_fn.tier.state for _, frame in callback.compiled_frames for g in frame.graphs
            if hasattr(getattr(g.compiled_fn, "_dynamo_fn", None), "tier")]


def tier_progress(callback: Any) -> list[float]:
    return [g.compiled_fn._dynamo_fn.tier.spent for _, frame in callback.compiled_frames for g in frame.graphs
            if hasattr(getattr(g.compiled_fn, "_dynamo_fn", None), "tier")]


def cpu_seconds() -> float:
    """This process's CPU time and its finished children's (the C compiler)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(kernel: KernelFile, backend: str, options: argparse.Namespace) -> dict[str, Any]:
    row: dict[str, Any] = {"kernel": kernel.name, "backend": backend}
    fn = load_function(kernel)
    values = setup_values(kernel)
    run = compile(kernel.run, f"<run of {kernel.name}>", "eval")

    def call(target: Callable[..., Any], env: dict[str, Any]) -> Any:
        return eval(run, {**env, kernel.function: target})

    env = fresh(values)
    start, start_cpu = time.perf_counter(), cpu_seconds()
    expected = observed(call(fn, env), env)
    row["plain_first_s"], row["plain_first_cpu_s"] = time.perf_counter() - start, cpu_seconds() - start_cpu

    try:
        compiled = compiled_with(fn, backend)
        env = fresh(values)
        start, start_cpu = time.perf_counter(), cpu_seconds()
        actual = observed(call(compiled, env), env)
        row["first_s"], row["first_cpu_s"] = time.perf_counter() - start, cpu_seconds() - start_cpu
    except Exception as error:
        if backend in PEERS:
            row["status"] = f"skipped: {type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else ''}"
            return row
        raise
    problems = differences(expected, actual)
    callback = getattr(compiled, "_dynamo_callback", None)
    if callback is not None:
        row["compiles_first"], row["breaks"], row["graphs"] = compiles_of(callback, kernel.path)

    # the steady state: tiered's graphs moved to c, the frontend's timed turns played out
    calls = 0
    if backend == "tiered":
        from dynamo.backends import tiered

        start = time.perf_counter()
        while time.perf_counter() - start < options.settle and any(
                s in (tiered.NUMPY, tiered.COMPILING) for s in tier_states(callback)):
            before = tier_progress(callback)
            call(compiled, fresh(values))
            calls += 1
            if tier_progress(callback) == before:
                break  # no graph of it ran (the frontend dropped the version for the original code)
        tiered.wait_for_tier_ups(max(0.0, options.settle - (time.perf_counter() - start)))
        row["settle_s"], row["settle_calls"] = time.perf_counter() - start, calls
        row["tiers"] = tier_states(callback)
    if callback is not None:
        from dynamo import config

        for _ in range(config.timed_turns):
            call(compiled, fresh(values))
    env = fresh(values)
    problems += [f"later call: {p}" for p in differences(expected, observed(call(compiled, env), env))]
    row["exact"] = not problems
    row["differences"] = problems[:6]

    env = fresh(values)
    start = time.process_time()
    call(fn, env)
    plain_again = time.process_time() - start
    per_round = max(1, min(1000, int(options.round_seconds / max(plain_again, 1e-6))))
    samples: dict[str, list[float]] = {"plain": [], backend: []}
    for index in range(options.rounds + 1):
        for name, target in (("plain", fn), (backend, compiled)):
            batch = [fresh(values) for _ in range(per_round)]
            start = time.process_time()
            for env in batch:
                call(target, env)
            if index:  # the first round warms up
                samples[name].append((time.process_time() - start) / per_round)
    row["calls_per_round"] = per_round
    row["plain_s"] = statistics.median(samples["plain"])
    row["compiled_s"] = statistics.median(samples[backend])
    row["ratio"] = statistics.median(p / c if c > 0 else math.inf for p, c in zip(samples["plain"], samples[backend]))
    if callback is not None:
        from dynamo.explain import dropped_versions

        total, row["breaks"], row["graphs"] = compiles_of(callback, kernel.path)
        row["compiles"] = total
        row["recompiles_later"] = total - row["compiles_first"]
        row["dropped"] = dropped_versions(callback)
        row["given_up"] = [why[:160] for code, why in callback.given_up if code.co_filename == str(kernel.path)]
        row["break_reasons"] = sorted({str(b).splitlines()[0][:160] for code, frame in callback.compiled_frames
                                       if code.co_filename == str(kernel.path) for b in frame.breaks})[:4]
        row["fallbacks"] = sorted({str(frame.fallback_reason).splitlines()[0][:160]
                                   for code, frame in callback.compiled_frames if code.co_filename == str(kernel.path)
                                   and frame.fallback_reason is not None})[:4]
    row["status"] = "ok" if row["exact"] else "MISMATCH"
    return row


# ---------------------------------------------------------------------------------------------
# the driver

def run_child(options: argparse.Namespace, kernel: KernelFile, backend: str) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(kernel.path), backend,
               "--rounds", str(options.rounds), "--round-seconds", str(options.round_seconds),
               "--settle", str(options.settle)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=options.timeout)
    except subprocess.TimeoutExpired:
        return {"kernel": kernel.name, "backend": backend, "status": f"HANG (> {options.timeout:.0f} s)"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return {"kernel": kernel.name, "backend": backend, "status": f"ERROR: {tail[:200]}",
                "stderr": done.stderr[-3000:]}
    return json.loads(lines[-1])


def format_table(rows: list[dict[str, Any]], backends: list[str]) -> str:
    by_kernel: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_kernel.setdefault(row["kernel"], {})[row["backend"]] = row
    head = f"{'kernel':24} {'plain':>9}"
    for backend in backends:
        head += f" | {backend[:7]:>7} {'x':>6} {'first':>6} {'cmp':>3}"
    lines = [head, f"{'':24} {'per call':>9}" + "".join(
        f" | {'':>7} {'plain/':>6} {'call s':>6} {'':>3}" for _ in backends)]
    for name, cells in by_kernel.items():
        plain = next((c["plain_s"] for c in cells.values() if "plain_s" in c), math.nan)
        line = f"{name:24} {_duration(plain):>9}"
        for backend in backends:
            cell = cells.get(backend, {})
            if "ratio" not in cell:
                line += f" | {cell.get('status', '-')[:28]:>28}"
                continue
            match = "ok" if cell["exact"] else "BAD"
            compiles = str(cell.get("compiles", "")) + ("+" if cell.get("recompiles_later") else "")
            line += (f" | {match:>7} {cell['ratio']:6.2f} {cell['first_s']:6.2f} {compiles:>3}")
        lines.append(line)
    for backend in backends:
        ratios = [c[backend]["ratio"] for c in by_kernel.values() if "ratio" in c.get(backend, {})]
        if ratios:
            exact = sum(1 for c in by_kernel.values() if c.get(backend, {}).get("exact"))
            slow = [n for n, c in by_kernel.items() if c.get(backend, {}).get("ratio", 1.0) < 0.95]
            geomean = math.exp(sum(math.log(r) for r in ratios if r > 0) / len(ratios))
            lines.append(f"{backend}: {len(ratios)} kernels, {exact} exact, geomean {geomean:.2f}x; under 0.95x: "
                         f"{', '.join(slow) or 'none'}")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds != seconds:
        return "-"
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def notes(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for row in rows:
        where = f"{row['kernel']} [{row['backend']}]"
        out += [f"difference: {where}: {d}" for d in row.get("differences", [])]
        out += [f"break: {where}: {r}" for r in row.get("break_reasons", [])]
        out += [f"fallback: {where}: {r}" for r in row.get("fallbacks", [])]
        out += [f"gave up: {where}: {r}" for r in row.get("given_up", [])]
        out += [f"dropped: {where}: {r}" for r in row.get("dropped", [])]
        if row.get("recompiles_later"):
            out.append(f"recompiled: {where}: {row['recompiles_later']} versions made after the first call")
        if row.get("tiers") and any(t != "c" for t in row["tiers"]):
            out.append(f"tiers: {where}: {', '.join(row['tiers'])}")
        if row.get("status", "").startswith(("ERROR", "HANG")):
            out.append(f"error: {where}: {row['status']}")
    return out


def main() -> None:
    options = parse_args()
    if options.child:
        path, backend = options.child
        print(json.dumps(measure(KernelFile(Path(path)), backend, options)), flush=True)
        return
    if options.numpy_benchmarks is None or not options.numpy_benchmarks.is_dir():
        sys.exit("benchmarks/foreign.py needs --numpy-benchmarks PATH: a checkout of "
                 "https://github.com/serge-sans-paille/numpy-benchmarks (or a folder of .py files with "
                 "#setup: and #run: comment lines); none was found" +
                 (f" at {options.numpy_benchmarks}" if options.numpy_benchmarks else ""))
    import numpy as np

    kernels = kernel_files(options.numpy_benchmarks.resolve(), options.only)
    if not kernels:
        sys.exit(f"no kernel files with #setup: and #run: lines under {options.numpy_benchmarks}")
    print(f"foreign kernels through dynamo: {len(kernels)} kernels, backends {' '.join(options.backends)}, Python "
          f"{platform.python_version()}, NumPy {np.__version__}, load average {os.getloadavg()[0]:.1f}", flush=True)
    rows, start = [], time.perf_counter()
    for kernel in kernels:
        for backend in options.backends:
            row = run_child(options, kernel, backend)
            rows.append(row)
            ratio = f"{row['ratio']:.2f}x" if "ratio" in row else ""
            print(f"  {kernel.name} [{backend}]: {row.get('status')} {ratio} ({time.perf_counter() - start:.0f} s)",
                  file=sys.stderr, flush=True)
    print(format_table(rows, options.backends))
    print("\nx: plain CPU time / compiled CPU time per call, median of per-round ratios over interleaved rounds "
          "(steady state: after the timed turns; tiered after its graphs moved to c); first: the first compiled "
          "call, wall s;\ncmp: 'ok' when results and the setup's arrays after the call are bitwise plain's; the "
          "number after it: compiled versions of the file's frames ('+': some made after the first call)")
    for line in notes(rows):
        print(line)
    if options.json:
        options.json.write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": platform.python_version(), "numpy": np.__version__,
            "load_average": os.getloadavg(), "backends": options.backends, "rows": rows,
            "total_seconds": time.perf_counter() - start}, indent=1))
        print(f"written: {options.json}")


if __name__ == "__main__":
    ensure_venv(("test",))
    main()
