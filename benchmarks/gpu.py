"""The GPU column of the benchmark suite: every workload on a CUDA GPU, in one run, table printed last.

Run on a machine with a GPU, CuPy and Triton: python3 benchmarks/gpu.py [--quick] [--only NAME ...]
For each workload in benchmarks/workloads/: dynamo's triton backend on CuPy inputs (in place) and on
NumPy inputs (copied in and out), CuPy eager (the same source with `np` bound to `cupy`), torch.compile
of the NumPy function under torch.device("cuda") (NumPy in and out, as PyTorch runs it), JAX jit of the
same source with `np` bound to `jax.numpy` where that traces (no in-place writes), the compulsory bytes
over the dynamo time against a device-to-device copy measured in the same run, and whether every result
matches NumPy's. Times are medians of CUDA-event timings after warm-up (triton.testing.do_bench, which
also empties the L2 cache between runs). Writes the table as JSON to benchmarks/results/gpu-*.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.workloads import load_all  # noqa: E402

# per-call workloads (dispatch-bound) run this many calls per timed sample, not their CPU CALLS
GPU_CALLS = {"small_hot_loop": 100, "trivial": 100}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--only", nargs="*", default=None, help="workload module names to run")
    parser.add_argument("--peers", nargs="*", default=["cupy", "torch", "jax"],
                        help="peers to time beside dynamo (cupy torch jax)")
    parser.add_argument("--json", default=None, help="where to write the results (default benchmarks/results/)")
    return parser.parse_args()


def with_module(fn: Callable, module: Any) -> Callable:
    """The workload's own code with its global `np` bound to another array module (cupy, jax.numpy)."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": module}, fn.__name__,
                              fn.__defaults__, fn.__closure__)


def bench(call: Callable[[], Any], calls: int) -> float:
    """Median seconds of one call (CUDA events around `calls` calls, L2 emptied between samples)."""
    import triton.testing

    def sample() -> None:
        for _ in range(calls):
            call()
    return triton.testing.do_bench(sample, warmup=50, rep=300, return_mode="median") / 1e3 / calls


def copy_bandwidth() -> float:
    """Bytes per second of a 1 GiB device-to-device copy, counting bytes read plus bytes written."""
    import cupy
    src = cupy.random.random(1 << 27)  # 2**27 float64: 1 GiB
    dst = cupy.empty_like(src)
    seconds = bench(lambda: dst.__setitem__(Ellipsis, src), 1)
    return 2 * src.nbytes / seconds


def relative_error(got: Any, want: Any) -> float:
    """max over results of ||got - want|| / ||want|| in float64 (inf on a shape or type mismatch)."""
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return float("inf")
        return max((relative_error(g, w) for g, w in zip(got, want)), default=0.0)
    got = to_numpy(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if want.dtype.kind in "biu":
        return 0.0 if np.array_equal(got, want) else float("inf")
    g, w = got.astype(np.float64), want.astype(np.float64)
    if np.isnan(g).any() != np.isnan(w).any():
        return float("inf")
    scale = np.linalg.norm(w) or 1.0
    return float(np.linalg.norm(g - w) / scale)


def to_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):
        return value.get()
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def sync() -> None:
    import cupy
    cupy.cuda.Device().synchronize()


def run_workload(w: Any, quick: bool, peers: list[str], log: Callable[[str], None]) -> dict[str, Any]:
    import cupy

    import dynamo

    name = w.__name__.rsplit(".", 1)[-1]
    rng = np.random.default_rng(0)
    host_args = w.inputs(rng, quick)
    want = w.fn(*[a.copy() for a in host_args])
    calls = GPU_CALLS.get(name, 1)
    row: dict[str, Any] = {"workload": name, "name": w.NAME, "bytes": w.traffic(host_args), "calls": calls}

    def timed(label: str, make: Callable[[], Callable], args_of: Callable[[], list]) -> None:
        try:
            t0 = time.perf_counter()
            fn = make()
            args = args_of()
            result = fn(*args)
            sync()
            row[f"{label}_first_s"] = time.perf_counter() - t0
            row[f"{label}_err"] = relative_error(result, want)
            fresh = [args_of() for _ in range(2)]
            k = [0]

            def call() -> Any:
                k[0] ^= 1
                return fn(*fresh[k[0]])
            row[f"{label}_s"] = bench(call, calls)
        except Exception as exc:  # a peer that cannot run this workload: n/a, with the reason kept
            row[f"{label}_s"] = None
            row[f"{label}_why"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            log(f"  {name} {label}: {row[f'{label}_why']}")
            if os.environ.get("DYNAMO_BENCH_TRACE"):
                traceback.print_exc()

    def cupy_args() -> list:
        return [cupy.asarray(a) for a in host_args]

    def host_copies() -> list:
        return [a.copy() for a in host_args]

    def compiled_triton() -> Callable:
        dynamo.reset()
        return dynamo.compile(w.fn, backend="triton")

    timed("dynamo", compiled_triton, cupy_args)
    row["graphs"] = len(dynamo.explain(w.fn, backend="triton")(*cupy_args()).graphs) if row.get("dynamo_s") else 0
    timed("dynamo_host", compiled_triton, host_copies)
    if "cupy" in peers:
        timed("cupy", lambda: with_module(w.fn, cupy), cupy_args)
    if "torch" in peers:
        def torch_compiled() -> Callable:
            import torch
            torch._dynamo.reset()
            compiled = torch.compile(w.fn)

            def on_cuda(*args: Any) -> Any:
                with torch.device("cuda"):
                    return compiled(*args)
            return on_cuda
        timed("torch", torch_compiled, host_copies)
        if row.get("torch_s") is None:
            # torch.compile's NumPy interop can fail on an image's NumPy (torch 2.11 with NumPy 2.5:
            # "'ndarray' object has no attribute 'mul'"): then the same source with `np` bound to torch,
            # on CUDA tensors, where it runs as torch code; the table marks the column as a port
            def torch_port() -> Callable:
                import torch
                torch._dynamo.reset()
                return torch.compile(with_module(w.fn, torch))

            def torch_args() -> list:
                import torch
                return [torch.as_tensor(a, device="cuda") for a in host_args]
            row["torch_numpy_why"] = row.pop("torch_why", None)
            timed("torch", torch_port, torch_args)
            row["torch_how"] = "port"
    if "jax" in peers:
        def jax_jitted() -> Callable:
            import jax
            import jax.numpy as jnp
            jax.config.update("jax_enable_x64", True)
            jitted = jax.jit(with_module(w.fn, jnp))
            # JAX dispatches asynchronously on its own stream, which CUDA events on the default
            # stream do not wait for: each timed call waits for its results
            return lambda *args: jax.block_until_ready(jitted(*args))

        def jax_args() -> list:
            import jax
            return [jax.device_put(a) for a in host_args]
        timed("jax", jax_jitted, jax_args)
    return row


def launch_overhead() -> dict[str, float]:
    """Host seconds per call, 1024 float64 on the GPU: CuPy's own elementwise launch (x + 1.0) against a
    cached dynamo call of the same one-kernel graph; one synchronize after each batch of calls."""
    import cupy

    import dynamo
    x = cupy.asarray(np.random.default_rng(1).random(1024))
    dynamo.reset()
    compiled = dynamo.compile(lambda a: a + 1.0, backend="triton")

    def per_call(fn: Callable[[], Any], calls: int = 2000) -> float:
        best = float("inf")
        for _ in range(7):
            sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            best = min(best, (time.perf_counter() - t0) / calls)
        return best
    compiled(x)
    return {"cupy_launch_s": per_call(lambda: x + 1.0), "dynamo_launch_s": per_call(lambda: compiled(x))}


def fmt_time(s: float | None) -> str:
    if s is None:
        return "n/a"
    return f"{s * 1e3:.3f}ms" if s >= 1e-4 else f"{s * 1e6:.1f}us"


def table(rows: list[dict[str, Any]], copy_bw: float, device: str) -> str:
    head = ["workload", "dynamo", "vs cupy", "vs torch", "vs jax", "host in/out", "GB/s", "of copy", "graphs",
            "first call", "ok"]
    lines = [f"device: {device}; device-to-device copy: {copy_bw / 1e9:.0f} GB/s (read + write)",
             "ratios: peer time / dynamo time (> 1: dynamo faster); dynamo on CuPy inputs, in place; "
             "*: torch.compile of the source with np bound to torch (its NumPy interop failed here)", ""]
    body = []
    for r in rows:
        d = r.get("dynamo_s")

        def ratio(peer: str) -> str:
            p = r.get(f"{peer}_s")
            mark = "*" if r.get(f"{peer}_how") == "port" and p else ""
            return f"{p / d:.2f}x{mark}" if p and d else "n/a"
        bw = r["bytes"] / d if d and r["bytes"] else None
        errs = [r[k] for k in r if k.endswith("_err") and r.get(k.replace("_err", "_s"))]
        ok = "yes" if errs and all(e < 1e-3 for e in errs) else ("NO" if errs else "n/a")
        body.append([r["workload"], fmt_time(d), ratio("cupy"), ratio("torch"), ratio("jax"),
                     fmt_time(r.get("dynamo_host_s")), f"{bw / 1e9:.0f}" if bw else "-",
                     f"{bw / copy_bw:.0%}" if bw else "-", str(r.get("graphs", "-")),
                     f"{r['dynamo_first_s']:.2f}s" if r.get("dynamo_first_s") else "-", ok])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    for cells in [head, *body]:
        lines.append("  ".join(str(c).ljust(n) for c, n in zip(cells, widths)))
    return "\n".join(lines)


def main() -> None:
    args = parse_args()
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    log = lambda msg: print(msg, flush=True)  # noqa: E731
    import logging
    tuning = logging.getLogger("dynamo.output_code.autotune")  # each kernel's candidates and their times
    tuning.setLevel(logging.DEBUG)
    tuning.addHandler(logging.StreamHandler(sys.stdout))
    tuning.propagate = False
    copy_bw = copy_bandwidth()
    log(f"copy bandwidth {copy_bw / 1e9:.0f} GB/s on {device}")
    out = Path(args.json) if args.json else HERE / "results" / f"gpu-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    launch = launch_overhead()
    log("launch overhead, one-kernel call on 1024 f64: " +
        "  ".join(f"{k[:-2]} {fmt_time(v)}" for k, v in launch.items()))
    rows: list[dict[str, Any]] = []

    def save() -> None:  # after every workload: a run cut off by its time limit keeps what it measured
        out.write_text(json.dumps({"device": device, "copy_bytes_per_s": copy_bw, "date": time.strftime("%Y-%m-%d"),
                                   "launch": launch, "rows": rows}, indent=1, default=str))
    for w in load_all():
        name = w.__name__.rsplit(".", 1)[-1]
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        rows.append(run_workload(w, args.quick, args.peers, log))
        log(f"{name}: {time.perf_counter() - t0:.1f}s  " +
            " ".join(f"{k}={fmt_time(v)}" for k, v in rows[-1].items() if k.endswith("_s") and "first" not in k))
        save()
    print()
    print(table(rows, copy_bw, device))


if __name__ == "__main__":
    main()
