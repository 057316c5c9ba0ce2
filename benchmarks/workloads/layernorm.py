"""Layer normalisation along the last axis of a 4096x4096 float32 activation, with scale and shift."""
import numpy as np

NAME = "layer norm, 4096^2 f32"
CALLS = 1


def fn(x, gamma, beta):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


def inputs(rng, quick):
    n = 512 if quick else 4096
    x = rng.standard_normal((n, n)).astype(np.float32)
    return [x, rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)]


def traffic(args):
    return 2 * args[0].nbytes


def numba_version(numba):
    @numba.njit(parallel=True)
    def layernorm(x, gamma, beta):
        out = np.empty_like(x)
        for i in numba.prange(x.shape[0]):
            row = x[i]
            mu = row.mean()
            d = row - mu
            var = (d * d).mean()
            out[i] = d / np.sqrt(var + np.float32(1e-5)) * gamma + beta
        return out
    return layernorm
