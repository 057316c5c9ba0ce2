"""The benchmark workloads, one module each, in the order the suite prints them.

A workload module defines NAME, CALLS (calls per timing sample), fn (plain NumPy, what dynamo
compiles), inputs(rng, quick), traffic(args) (bytes a perfect implementation must move), and
optionally numexpr_version(ne) and numba_version(numba) returning peer callables (None: no peer).
"""
from importlib import import_module

ORDER = [
    "elementwise_chain", "kmeans", "softmax", "layernorm", "jacobi", "gemm", "black_scholes",
    "nbody", "unrolled_loop", "branch", "trivial", "small_hot_loop",
]


def load_all():
    return [import_module(f"{__name__}.{name}") for name in ORDER]
