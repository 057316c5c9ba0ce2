"""Hand-built graphs of real NumPy programs, with input makers and plain-NumPy references, for the fx_ir tests.

Each Program builds a fresh Graph, so tests may edit what they get.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from dynamo.fx_ir import Graph


@dataclass(frozen=True)
class Program:
    name: str
    build: Callable[[], Graph]
    inputs: Callable[[np.random.Generator], tuple[Any, ...]]
    reference: Callable[..., Any]


def build_kmeans() -> Graph:
    """np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)"""
    g = Graph()
    X, means = g.placeholder("X"), g.placeholder("means")
    expanded = g.call_function(operator.getitem, (means, (slice(None), None)))
    diff = g.call_function(operator.sub, (X, expanded))
    dist = g.call_function(np.linalg.norm, (diff,), {"axis": 2})
    g.output(g.call_function(np.argmin, (dist,), {"axis": 0}))
    return g


def kmeans_reference(X: np.ndarray, means: np.ndarray) -> np.ndarray:
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def build_softmax() -> Graph:
    """e = np.exp(x - x.max(axis=-1, keepdims=True)); e / e.sum(axis=-1, keepdims=True)"""
    g = Graph()
    x = g.placeholder("x")
    top = g.call_method("max", (x,), {"axis": -1, "keepdims": True})
    e = g.call_function(np.exp, (g.call_function(operator.sub, (x, top)),))
    total = g.call_method("sum", (e,), {"axis": -1, "keepdims": True})
    g.output(g.call_function(operator.truediv, (e, total)))
    return g


def softmax_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def build_stencil() -> Graph:
    """Five-point Jacobi step on the interior of a copy: out[1:-1, 1:-1] = 0.2 * (5 neighbours)."""
    g = Graph()
    A = g.placeholder("A")
    inner = slice(1, -1)
    parts = [
        g.call_function(operator.getitem, (A, index))
        for index in ((inner, inner), (inner, slice(None, -2)), (inner, slice(2, None)),
                      (slice(2, None), inner), (slice(None, -2), inner))
    ]
    total = parts[0]
    for part in parts[1:]:
        total = g.call_function(operator.add, (total, part))
    scaled = g.call_function(operator.mul, (0.2, total))
    out = g.call_method("copy", (A,))
    g.call_function(operator.setitem, (out, (inner, inner), scaled))
    g.output(out)
    return g


def stencil_reference(A: np.ndarray) -> np.ndarray:
    out = A.copy()
    out[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
    return out


def _norm_cdf(x: Any) -> Any:
    return 0.5 * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def build_black_scholes() -> Graph:
    """A call price with a tanh approximation of the normal CDF: long chains of ufuncs and scalars."""
    g = Graph()
    S, K, T = g.placeholder("S"), g.placeholder("K"), g.placeholder("T")
    r, v = g.placeholder("r", default=0.02), g.placeholder("v", default=0.3)
    fn, mul, add, sub, div = g.call_function, operator.mul, operator.add, operator.sub, operator.truediv
    sqrt_t = fn(np.sqrt, (T,))
    vol = fn(mul, (v, sqrt_t))
    drift = fn(mul, (fn(add, (r, fn(mul, (fn(mul, (0.5, v)), v)))), T))
    d1 = fn(div, (fn(add, (fn(np.log, (fn(div, (S, K)),)), drift)), vol))
    d2 = fn(sub, (d1, vol))

    def cdf(x: Any) -> Any:
        cube = fn(operator.pow, (x, 3))
        inner = fn(mul, (0.7978845608, fn(add, (x, fn(mul, (0.044715, cube))))))
        return fn(mul, (0.5, fn(add, (1.0, fn(np.tanh, (inner,))))))

    discount = fn(np.exp, (fn(mul, (fn(operator.neg, (r,)), T)),))
    call = fn(sub, (fn(mul, (S, cdf(d1))), fn(mul, (fn(mul, (K, discount)), cdf(d2)))))
    g.output(call)
    return g


def black_scholes_reference(S: Any, K: Any, T: Any, r: float = 0.02, v: float = 0.3) -> Any:
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * v * v) * T) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    return S * _norm_cdf(d1) - K * np.exp(-r * T) * _norm_cdf(d2)


def build_scatter_update() -> Graph:
    """Mutates its input: a[idx] = v; a += 1; returns (a.sum(), a[0])."""
    g = Graph()
    a, idx, v = g.placeholder("a"), g.placeholder("idx"), g.placeholder("v")
    g.call_function(operator.setitem, (a, idx, v))
    bumped = g.call_function(operator.iadd, (a, 1))
    g.output((g.call_method("sum", (bumped,)), g.call_function(operator.getitem, (bumped, 0))))
    return g


def scatter_update_reference(a: np.ndarray, idx: Any, v: Any) -> tuple[Any, Any]:
    a[idx] = v
    a += 1
    return a.sum(), a[0]


PROGRAMS = (
    Program("kmeans", build_kmeans, lambda rng: (rng.random((50, 3)), rng.random((4, 3))), kmeans_reference),
    Program("softmax", build_softmax, lambda rng: (rng.standard_normal((6, 10)),), softmax_reference),
    Program("stencil", build_stencil, lambda rng: (rng.random((9, 7)),), stencil_reference),
    Program(
        "black_scholes", build_black_scholes,
        lambda rng: (rng.uniform(10, 50, 20), rng.uniform(10, 50, 20), rng.uniform(0.1, 2, 20)),
        black_scholes_reference,
    ),
    Program(
        "scatter_update", build_scatter_update,
        lambda rng: (rng.random(8), np.array([1, 5]), 7.5), scatter_update_reference,
    ),
)


def copy_inputs(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in values)


def assert_same(actual: Any, expected: Any) -> None:
    """Equal values, types and dtypes, recursively (NaN equals NaN)."""
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert actual.dtype == expected.dtype
        np.testing.assert_array_equal(actual, expected)
    else:
        assert actual == expected or (actual != actual and expected != expected)


@pytest.fixture(params=PROGRAMS, ids=lambda p: p.name)
def program(request: pytest.FixtureRequest) -> Program:
    return request.param


@pytest.fixture
def programs() -> dict[str, Program]:
    return {p.name: p for p in PROGRAMS}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def same() -> Callable[[Any, Any], None]:
    return assert_same


@pytest.fixture
def fresh_inputs() -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    return copy_inputs
