"""One 5-point Jacobi stencil step on a 4096x4096 float64 grid (a copy, then the interior rewritten)."""

NAME = "Jacobi stencil, 4096^2 f64"
CALLS = 1


def fn(u):
    v = u.copy()
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return v


def inputs(rng, quick):
    n = 512 if quick else 4096
    return [rng.random((n, n))]


def traffic(args):
    return 2 * args[0].nbytes


def numexpr_version(ne):
    def step(u):
        v = u.copy()
        parts = {"a": u[:-2, 1:-1], "b": u[2:, 1:-1], "c": u[1:-1, :-2], "d": u[1:-1, 2:]}
        ne.evaluate("0.25 * (a + b + c + d)", local_dict=parts, out=v[1:-1, 1:-1])
        return v
    return step


def numba_version(numba):
    @numba.njit(parallel=True)
    def step(u):
        v = u.copy()
        n, m = u.shape
        for i in numba.prange(1, n - 1):
            for j in range(1, m - 1):
                v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
        return v
    return step
