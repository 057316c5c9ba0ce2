"""Where the host time of cached GPU calls goes: cProfile over many calls of a workload on CuPy inputs.

python3 benchmarks/gpu_profile.py [NAME ...] [--calls N]: the triton backend's cached calls (after a warm
call), the top functions by own time; by default the workloads whose cached calls outlast their kernels.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.workloads import load_all  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=["branch", "small_hot_loop", "layernorm", "unrolled_loop", "nbody"])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    import cupy

    import dynamo
    for w in load_all():
        name = w.__name__.rsplit(".", 1)[-1]
        if name not in args.names:
            continue
        gpu = [cupy.asarray(a) for a in w.inputs(np.random.default_rng(0), False)]
        dynamo.reset()
        compiled = dynamo.compile(w.fn, backend="triton")
        compiled(*gpu)
        cupy.cuda.Device().synchronize()
        eager = type(w.fn)(w.fn.__code__, {**w.fn.__globals__, "np": cupy})
        for label, fn in (("dynamo", compiled), ("cupy eager", eager)):
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn(*gpu)
            cupy.cuda.Device().synchronize()
            print(f"{name} {label}: {(time.perf_counter() - t0) / args.calls * 1e6:.1f} us per call (host, synchronized at the end)")
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            compiled(*gpu)
        cupy.cuda.Device().synchronize()
        profile.disable()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(20)
        print(f"--- {name}: top 20 by own time over {args.calls} calls\n{out.getvalue()}")


if __name__ == "__main__":
    main()
