"""Every kind of registry op through the numpy backend, against the graph run as traced (plain NumPy).

Elementwise ops and reductions run inside blocked, threaded kernels (tiny cache); the rest as straight code.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_backend_helpers import SERIAL, build, check_graph, sample

from dynamo.fx_ir.ops import OpKind, all_ops

RNG = np.random.default_rng(1234)
SAFE_DTYPES = (np.float64, np.float32, np.int64, np.int32, np.bool_, np.complex128, np.float16, np.uint8)


def _ufuncs(nin: int) -> list[np.ufunc]:
    found = {id(u): u for u in vars(np).values() if isinstance(u, np.ufunc)}
    return sorted((u for u in found.values() if u.nin == nin and u.nout == 1 and u.signature is None),
                  key=lambda u: u.__name__)


def _dtypes_for(ufunc: np.ufunc) -> list[np.dtype]:
    """Input dtypes the ufunc has a loop for, among the ones we sample."""
    chosen = []
    for dtype in SAFE_DTYPES:
        code = np.dtype(dtype).char
        if any(t.split("->")[0] == code * ufunc.nin for t in ufunc.types):
            chosen.append(np.dtype(dtype))
    return chosen[:3]


@pytest.mark.parametrize("ufunc", _ufuncs(1), ids=lambda u: u.__name__)
def test_unary_ufuncs_blocked(ufunc: np.ufunc) -> None:
    for dtype in _dtypes_for(ufunc):
        x = sample((37, 5), dtype, RNG)
        gm = build(1, lambda g, a: g.call_function(ufunc, (g.call_function(ufunc, (a,)),))
                   if ufunc(x).dtype == x.dtype else g.call_function(ufunc, (a,)))
        compiled = check_graph(gm, [x])
        assert compiled.plan.kernels, compiled.plan.describe()


@pytest.mark.parametrize("ufunc", _ufuncs(2), ids=lambda u: u.__name__)
def test_binary_ufuncs_blocked_with_broadcasting(ufunc: np.ufunc) -> None:
    for dtype in _dtypes_for(ufunc):
        x, y = sample((29, 6), dtype, RNG), sample((6,), dtype, RNG)
        check_graph(build(2, lambda g, a, b: g.call_function(ufunc, (a, b))), [x, y])
        check_graph(build(1, lambda g, a: g.call_function(ufunc, (a, dtype.type(3)))), [x])


BINARY_OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                    operator.mod, operator.pow, operator.lt, operator.le, operator.eq, operator.ne,
                    operator.gt, operator.ge]


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_operators_with_python_scalars(op, dtype) -> None:
    x = sample((23, 7), dtype, RNG)
    gm = build(1, lambda g, a: g.call_function(operator.add, (g.call_function(op, (a, 2)),
                                                              g.call_function(op, (0.5, a)))))
    check_graph(gm, [x])


@pytest.mark.parametrize("exponent", [2, 0.5, -1, 1, 0, 3, 2.0, -1.5])
def test_power_keeps_numpy_fast_paths(exponent) -> None:
    x = sample((41,), np.float64, RNG)
    x[0], x[1], x[2] = -0.0, -np.inf, np.nan
    # base dies into the power: `**=` in a scratch buffer; and a power of an input: allocates
    gm = build(1, lambda g, a: g.call_function(operator.pow, (g.call_function(operator.mul, (a, 1.5)), exponent)))
    check_graph(gm, [x])
    check_graph(build(1, lambda g, a: g.call_function(operator.pow, (a, exponent))), [x])


@pytest.mark.parametrize("dtype", [np.complex64, np.float32, np.int64])
def test_builtin_pow_takes_the_same_fast_paths(dtype) -> None:
    x = sample((17, 3), dtype, RNG)
    check_graph(build(1, lambda g, a: g.call_function(pow, (g.call_function(operator.mul, (a, 2)), 2))), [x])


def test_unary_operators_and_bitwise() -> None:
    i = sample((33, 3), np.int64, RNG)
    gm = build(1, lambda g, a: g.call_function(operator.xor, (
        g.call_function(operator.invert, (g.call_function(operator.neg, (a,)),)),
        g.call_function(operator.lshift, (g.call_function(abs, (a,)), 2)))))
    check_graph(gm, [i])


REDUCTIONS = [np.sum, np.prod, np.mean, np.std, np.var, np.max, np.min, np.argmax, np.argmin, np.any, np.all]


@pytest.mark.parametrize("fn", REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, (1, 2), (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_in_kernels_are_exact(fn, axis, keepdims) -> None:
    if fn in (np.argmax, np.argmin) and isinstance(axis, tuple):
        return
    x = sample((9, 13, 17), np.float64, RNG)
    gm = build(1, lambda g, a: g.call_function(fn, (g.call_function(np.exp, (a,)),),
                                               {"axis": axis, "keepdims": keepdims}))
    check_graph(gm, [x])


@pytest.mark.parametrize("method", ["sum", "mean", "max", "argmin", "std", "prod", "all"])
def test_reduction_methods_in_softmax_like_chains(method) -> None:
    x = sample((31, 40), np.float32, RNG)

    def body(g, a):
        e = g.call_function(np.exp, (g.call_function(operator.sub, (a, g.call_method("max", (a,), {"axis": 1, "keepdims": True}))),))
        r = g.call_method(method, (e,), {"axis": -1, "keepdims": True})
        return g.call_function(operator.truediv, (e, r))
    check_graph(build(1, body), [x])
    check_graph(build(1, body), [x], SERIAL)


def test_norm_and_elementwise_functions() -> None:
    x, y = sample((50, 8, 3), np.float64, RNG), sample((8, 3), np.float64, RNG)

    def body(g, a, b):
        d = g.call_function(np.linalg.norm, (g.call_function(operator.sub, (a, b)),), {"axis": 2})
        w = g.call_function(np.where, (g.call_function(operator.gt, (d, 1.0)), d, g.call_function(np.negative, (d,))))
        c = g.call_function(np.clip, (w, -0.5, 0.5))
        r = g.call_method("round", (c,), {"decimals": 2})
        return g.call_method("astype", (r, np.float32))
    check_graph(build(2, body), [x, y])


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), dtype=st.sampled_from([np.float64, np.float32, np.int64]),
       ops=st.lists(st.sampled_from(["add", "mul", "sub", "maximum", "neg", "abs", "square"]), min_size=1, max_size=8),
       seed=st.integers(0, 2**16))
def test_random_elementwise_chains(shape, dtype, ops, seed) -> None:
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    inputs = [sample(shape, dtype, rng), sample(shape[1:], dtype, rng), sample(shape, dtype, rng)]
    table = {"add": operator.add, "mul": operator.mul, "sub": operator.sub, "maximum": np.maximum,
             "neg": operator.neg, "abs": np.absolute, "square": np.square}

    def body(g, a, b, c):
        values = [a, b, c]
        for i, name in enumerate(ops):
            fn = table[name]
            if name in ("neg", "abs", "square"):
                values.append(g.call_function(fn, (values[-1],)))
            else:
                values.append(g.call_function(fn, (values[-1], values[(i * 7 + seed) % len(values)])))
        return values[-1], values[-2]
    check_graph(build(3, body), inputs)


# -- every kind of the registry, as straight code or kernels ----------------------------------------------

def _straight_cases():
    x = sample((6, 8), np.float64, RNG)
    v = sample((8,), np.float64, RNG)
    return {
        OpKind.VIEW: [(np.transpose, (x,), {}), (np.reshape, (x, (8, 6)), {}), (np.expand_dims, (x, 0), {}),
                      (np.flip, (x,), {"axis": 1}), (np.ravel, (x,), {})],
        OpKind.INDEXING: [(operator.getitem, (x, (slice(1, None, 2), None)), {}), (np.take, (x, [0, 3]), {"axis": 1})],
        OpKind.COPY_SHAPE: [(np.concatenate, ((x, x),), {}), (np.tile, (x, 2), {}), (np.copy, (x,), {}),
                            (np.roll, (x, 2), {})],
        OpKind.CREATION: [(np.zeros_like, (x,), {}), (np.full_like, (x, 3.0), {}), (np.ones, ((3, 4),), {})],
        OpKind.LINALG: [(np.matmul, (x, x.T), {}), (np.dot, (v, v), {}), (np.outer, (v, v), {}),
                        (np.einsum, ("ij,j->i", x, v), {})],
        OpKind.SCAN: [(np.cumsum, (x,), {"axis": 1}), (np.cumprod, (x,), {})],
        OpKind.OTHER: [(np.sort, (x,), {"axis": 0}), (np.argsort, (x,), {}), (np.diff, (x,), {})],
        OpKind.METADATA: [(np.shape, (x,), {})],
    }


@pytest.mark.parametrize("kind", list(_straight_cases()), ids=lambda k: k.value)
def test_other_kinds_run_as_straight_code_around_kernels(kind) -> None:
    for fn, args, kwargs in _straight_cases()[kind]:
        arrays = [a for a in args if isinstance(a, np.ndarray)]

        def body(g, *placeholders):
            it = iter(placeholders)
            call_args = tuple(next(it) if isinstance(a, np.ndarray) else a for a in args)
            pre = [g.call_function(operator.mul, (p, 2.0)) for p in placeholders]
            call_args = tuple(pre[placeholders.index(a)] if a in placeholders else a for a in call_args)
            result = g.call_function(fn, call_args, kwargs)
            if kind == OpKind.METADATA:
                return result
            return g.call_function(np.add, (result, 1)) if fn is not np.argsort else result
        check_graph(build(len(arrays), body), arrays)


def test_every_registry_kind_is_covered() -> None:
    kinds = {row.kind for row in all_ops()}
    covered = set(_straight_cases()) | {OpKind.ELEMENTWISE, OpKind.REDUCTION}
    assert kinds <= covered, f"kinds without a test: {kinds - covered}"


def test_setitem_and_inplace_operators_keep_order() -> None:
    x = sample((40, 12), np.float64, RNG)

    def body(g, a):
        t = g.call_function(operator.mul, (a, 3.0))
        head = g.call_function(operator.getitem, (g.call_function(np.exp, (t,)), slice(0, 5)))
        g.call_function(operator.setitem, (a, (slice(0, 5),), head))
        u = g.call_function(operator.add, (a, t))          # reads `a` after the write
        g.call_function(operator.iadd, (t, 1.0))            # mutates t after u was computed
        return g.call_function(operator.mul, (u, t))
    check_graph(build(1, body), [x])
