"""The k-means assignment step on 2M 2-D points and 8 means (the README's example).

NumPy materializes an (8, 2M, 2) difference and reduces a length-2 axis, the slowest case of its loops.
"""
import numpy as np

NAME = "kmeans assign, 2M x 2, k=8"
CALLS = 1


def fn(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def inputs(rng, quick):
    n = 50_000 if quick else 2_000_000
    return [rng.standard_normal((n, 2)), rng.standard_normal((8, 2))]


def traffic(args):
    return args[0].nbytes + args[0].shape[0] * 8


def numba_version(numba):
    @numba.njit(parallel=True)
    def assign(X, means):
        n, k = X.shape[0], means.shape[0]
        out = np.empty(n, np.int64)
        for i in numba.prange(n):
            best, arg = np.inf, 0
            for j in range(k):
                d = np.sqrt((X[i, 0] - means[j, 0]) ** 2 + (X[i, 1] - means[j, 1]) ** 2)
                if d < best:
                    best, arg = d, j
            out[i] = arg
        return out
    return assign
