"""GEMM + bias + ReLU at 2048x2048 float64: BLAS does the work; the epilogue should cost nothing extra."""
import numpy as np

NAME = "gemm+bias+relu, 2048^2 f64"
CALLS = 1


def fn(A, B, bias):
    return np.maximum(A @ B + bias, 0)


def inputs(rng, quick):
    n = 256 if quick else 2048
    return [rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)]


def traffic(args):
    return 3 * args[0].nbytes


def numba_version(numba):
    @numba.njit(parallel=True)
    def gemm(A, B, bias):
        C = A @ B
        for i in numba.prange(C.shape[0]):
            for j in range(C.shape[1]):
                C[i, j] = max(C[i, j] + bias[j], 0.0)
        return C
    return gemm
