"""Black-Scholes call prices for 10M options (tanh approximation of the normal CDF), float64."""
import numpy as np

NAME = "Black-Scholes, 10M f64"
CALLS = 1
R, SIGMA = 0.02, 0.3


def fn(S, K, T):
    d1 = (np.log(S / K) + (R + 0.5 * SIGMA**2) * T) / (SIGMA * np.sqrt(T))
    d2 = d1 - SIGMA * np.sqrt(T)
    cdf = lambda z: 0.5 * (1.0 + np.tanh(0.7978845608 * (z + 0.044715 * z**3)))  # noqa: E731
    return S * cdf(d1) - K * np.exp(-R * T) * cdf(d2)


def inputs(rng, quick):
    n = 200_000 if quick else 10_000_000
    return [rng.uniform(50, 150, n), rng.uniform(50, 150, n), rng.uniform(0.1, 2.0, n)]


def traffic(args):
    return 4 * args[0].nbytes


def numexpr_version(ne):
    expr_d1 = "(log(S / K) + (R + 0.5 * SIGMA**2) * T) / (SIGMA * sqrt(T))"

    def price(S, K, T):
        d1 = ne.evaluate(expr_d1, local_dict={"S": S, "K": K, "T": T, "R": R, "SIGMA": SIGMA})
        d2 = ne.evaluate("d1 - SIGMA * sqrt(T)", local_dict={"d1": d1, "T": T, "SIGMA": SIGMA})
        cdf = "0.5 * (1.0 + tanh(0.7978845608 * (z + 0.044715 * z**3)))"
        return ne.evaluate(f"S * {cdf.replace('z', 'd1')} - K * exp(-R * T) * {cdf.replace('z', 'd2')}",
                           local_dict={"S": S, "K": K, "T": T, "R": R, "d1": d1, "d2": d2})
    return price


def numba_version(numba):
    @numba.njit(parallel=True)
    def price(S, K, T):
        out = np.empty_like(S)
        for i in numba.prange(S.shape[0]):
            sq = np.sqrt(T[i])
            d1 = (np.log(S[i] / K[i]) + (R + 0.5 * SIGMA**2) * T[i]) / (SIGMA * sq)
            d2 = d1 - SIGMA * sq
            c1 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d1 + 0.044715 * d1**3)))
            c2 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d2 + 0.044715 * d2**3)))
            out[i] = S[i] * c1 - K[i] * np.exp(-R * T[i]) * c2
        return out
    return price
