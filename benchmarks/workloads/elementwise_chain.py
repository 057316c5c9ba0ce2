"""A long elementwise chain on 10M float64: a*b + c*d - e through exp and sqrt.

NumPy writes and re-reads a full temporary per operation; fused blocks keep them in cache.
"""
import numpy as np

NAME = "elementwise chain, 10M f64"
CALLS = 1


def fn(a, b, c, d, e):
    return np.exp(a * b + c * d - e) + np.sqrt(np.abs(a))


def inputs(rng, quick):
    n = 200_000 if quick else 10_000_000
    return [rng.random(n) for _ in range(5)]


def traffic(args):
    return sum(a.nbytes for a in args) + args[0].nbytes


def numexpr_version(ne):
    return lambda a, b, c, d, e: ne.evaluate("exp(a * b + c * d - e) + sqrt(abs(a))")


def numba_version(numba):
    @numba.njit(parallel=True)
    def chain(a, b, c, d, e):
        out = np.empty_like(a)
        for i in numba.prange(a.shape[0]):
            out[i] = np.exp(a[i] * b[i] + c[i] * d[i] - e[i]) + np.sqrt(np.abs(a[i]))
        return out
    return chain
