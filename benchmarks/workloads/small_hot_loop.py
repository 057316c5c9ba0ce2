"""A small-array hot loop: 100k calls on 8-element arrays, where per-call overhead is everything."""
import numpy as np

NAME = "small arrays, 8 elems x 100k calls"
CALLS = 100_000


def fn(x, y):
    return x * y + 1.0 - np.sqrt(x)


def inputs(rng, quick):
    return [rng.random(8), rng.random(8)]


def traffic(args):
    return 0


def numexpr_version(ne):
    return lambda x, y: ne.evaluate("x * y + 1.0 - sqrt(x)")


def numba_version(numba):
    @numba.njit
    def small(x, y):
        return x * y + 1.0 - np.sqrt(x)
    return small
