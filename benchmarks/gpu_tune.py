"""Tile sizes and warps of the triton backend, swept on a GPU: the figures its defaults come from.

python3 benchmarks/gpu_tune.py [--only NAME ...]: each workload on CuPy inputs under every
(max_tile, num_warps) pair, CUDA-event medians (triton.testing.do_bench), as GB/s of compulsory traffic.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.gpu import bench  # noqa: E402
from benchmarks.workloads import load_all  # noqa: E402

TILES = (1024, 4096, 16384)
WARPS = (4, 8, 16)
MEMORY_BOUND = ("elementwise_chain", "black_scholes", "softmax", "layernorm", "kmeans", "jacobi", "unrolled_loop")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(MEMORY_BOUND))
    args = parser.parse_args()
    import cupy

    import dynamo
    from dynamo.backends.triton_gpu import TritonBackend
    from dynamo.backends.triton_gpu.codegen import TileConfig

    for w in load_all():
        name = w.__name__.rsplit(".", 1)[-1]
        if name not in args.only:
            continue
        host = w.inputs(np.random.default_rng(0), False)
        gpu = [cupy.asarray(a) for a in host]
        cells = []
        for tile in TILES:
            for warps in WARPS:
                dynamo.reset()
                fn = dynamo.compile(w.fn, backend=TritonBackend(TileConfig(max_tile=tile, num_warps=warps)))
                try:
                    fn(*[a.copy() for a in gpu])
                    seconds = bench(lambda fn=fn: fn(*gpu), 1)
                except Exception as exc:  # a configuration that does not compile: shown, not fatal
                    cells.append(f"{tile}/{warps}: {type(exc).__name__}")
                    continue
                cells.append(f"{tile}/{warps}: {w.traffic(host) / seconds / 1e9:.0f}")
        print(f"{name} (GB/s by max_tile/num_warps): " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
