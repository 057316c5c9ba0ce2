"""A trivial function: what a call through dynamo costs when there is nothing to compute (dispatch)."""
import numpy as np

NAME = "trivial f(x) -> x (dispatch)"
CALLS = 100_000


def fn(x):
    return x


def inputs(rng, quick):
    return [np.ones(8)]


def traffic(args):
    return 0


def numba_version(numba):
    @numba.njit
    def trivial(x):
        return x
    return trivial
