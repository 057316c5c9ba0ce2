"""A Python loop that unrolls into 150 elementwise ops: `for i in range(50): acc = acc*0.5 + x*i`."""
import numpy as np

NAME = "unrolled loop x50, 1M f64"
CALLS = 1


def fn(acc, x):
    for i in range(50):
        acc = acc * 0.5 + x * i
    return acc


def inputs(rng, quick):
    n = 100_000 if quick else 1_000_000
    return [rng.random(n), rng.random(n)]


def traffic(args):
    return 3 * args[0].nbytes


def numexpr_version(ne):
    expr = "acc"
    for i in range(50):
        expr = f"({expr}) * 0.5 + x * {i}"
    return lambda acc, x: ne.evaluate(expr)


def numba_version(numba):
    @numba.njit(parallel=True)
    def loop(acc, x):
        out = np.empty_like(acc)
        for j in numba.prange(acc.shape[0]):
            a = acc[j]
            for i in range(50):
                a = a * 0.5 + x[j] * i
            out[j] = a
        return out
    return loop
