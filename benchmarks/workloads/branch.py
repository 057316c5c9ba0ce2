"""A function with a data-dependent branch on 1M float64 (a graph break: the test is computed data)."""
import numpy as np

NAME = "data-dependent branch, 1M"
CALLS = 1


def fn(x, y):
    s = x * y + 1.0
    if s.sum() > 0:
        return np.sqrt(s * s + 1.0) - x
    return np.exp(s) + y


def inputs(rng, quick):
    n = 100_000 if quick else 1_000_000
    return [rng.random(n), rng.random(n)]


def traffic(args):
    return 3 * args[0].nbytes


def numba_version(numba):
    @numba.njit(parallel=True)
    def branch(x, y):
        s = x * y + 1.0
        if s.sum() > 0:
            return np.sqrt(s * s + 1.0) - x
        return np.exp(s) + y
    return branch
