"""Reductions and scans against NumPy: axis (None, int, negative, tuple), keepdims, dtype, out.

Includes the empty-axis errors of reductions without an identity (max, argmin, ...).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ops_harness import DTYPES, check, examples, sample

from dynamo.fx_ir.ops import Method, UnsupportedArguments, infer_meta
from dynamo.fx_ir.tensor_meta import TensorMeta

REDUCTIONS = [np.sum, np.prod, np.mean, np.std, np.var, np.max, np.min, np.amax, np.amin, np.any,
              np.all, np.nansum, np.nanprod, np.nanmean, np.nanstd, np.nanvar, np.nanmax, np.nanmin,
              np.ptp, np.median, np.nanmedian]
ARG_REDUCTIONS = [np.argmax, np.argmin, np.nanargmax, np.nanargmin]
METHODS = ["sum", "prod", "mean", "std", "var", "max", "min", "any", "all"]
SCANS = [np.cumsum, np.cumprod, np.nancumsum, np.nancumprod]


def _axis(ndim: int) -> st.SearchStrategy[object]:
    single = st.integers(-ndim - 1, ndim) if ndim else st.integers(-1, 1)
    return st.one_of(st.none(), single,
                     st.lists(st.integers(-ndim, max(ndim - 1, 0)), max_size=max(ndim, 1)).map(tuple))


@st.composite
def reduction_case(draw: st.DrawFn) -> tuple[np.ndarray, object, bool]:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    dtype = draw(st.sampled_from(DTYPES))
    return sample(shape, dtype), draw(_axis(len(shape))), draw(st.booleans())


@examples(40)
@given(case=reduction_case())
def test_reductions_match_numpy(case: tuple[np.ndarray, object, bool]) -> None:
    a, axis, keepdims = case
    for fn in REDUCTIONS:
        if a.dtype.kind == "c" and fn in (np.max, np.min, np.amax, np.amin, np.nanmax, np.nanmin, np.ptp):
            continue  # complex ordering: NumPy's own behaviour, nothing shape-related
        if fn in (np.median, np.nanmedian) and (axis == () or a.size == 0):
            check(fn, a, axis=axis, _expect=UnsupportedArguments)  # differs across NumPy versions
            continue
        check(fn, a, axis=axis, keepdims=keepdims)
    for name in METHODS:
        check(Method(name), a, axis, keepdims=keepdims)


@examples(40)
@given(case=reduction_case())
def test_arg_reductions_and_scans_match_numpy(case: tuple[np.ndarray, object, bool]) -> None:
    a, axis, keepdims = case
    int_axis = axis if not isinstance(axis, tuple) else (axis[0] if axis else None)
    for fn in ARG_REDUCTIONS:
        if fn in (np.nanargmax, np.nanargmin) and a.dtype.kind == "c":
            continue
        check(fn, a, axis=int_axis, keepdims=keepdims)
        if fn in (np.argmax, np.argmin):
            check(fn, a, axis=axis)                         # a tuple axis: NumPy's TypeError
    check(Method("argmax"), a, int_axis)
    for fn in SCANS:
        check(fn, a, axis=int_axis)
    check(Method("cumsum"), a, int_axis)
    check(np.add.reduce, a, axis=axis, keepdims=keepdims)
    check(np.maximum.reduce, a, axis=axis)
    check(np.add.accumulate, a, axis=int_axis if int_axis is not None else 0)
    check(np.count_nonzero, a, axis=axis, keepdims=keepdims)


def test_reduction_dtypes_and_scalars() -> None:
    for dtype in DTYPES:
        a = sample((2, 3), dtype)
        for fn in (np.sum, np.prod, np.mean, np.var, np.cumsum):
            check(fn, a)                                     # full reduction: a NumPy scalar
            check(fn, a, dtype=np.float32)
            check(fn, a, axis=0, dtype=np.int8)
            check(fn, sample((), dtype))
        check(np.std, a, ddof=1)
        check(np.var, a, axis=1, ddof=2)
        check(np.sum, a, keepdims=True)                      # keepdims: an array, not a scalar
        check(np.max, a, initial=3)
    check(np.sum, sample((2, 3)), where=sample((3,), bool))
    check(np.sum, sample((2, 3)), where=sample((2, 2), bool))
    check(np.max, sample((2, 3)), where=sample((3,), bool))  # needs initial: NumPy's ValueError
    check(np.max, sample((2, 3)), where=sample((3,), bool), initial=0.0)
    check(np.sum, sample((2, 3)), bogus=1)
    check(np.std, sample((2, 3)), correction=1)


def test_empty_axes() -> None:
    empty = sample((0, 3))
    for fn in (np.max, np.min, np.ptp, np.argmax, np.argmin, np.nanmax, np.nanargmin):
        check(fn, empty)
        check(fn, empty, axis=0)
        check(fn, empty, axis=1)
    check(np.max, empty, axis=0, initial=1.0)
    check(np.maximum.reduce, empty, axis=0)
    check(np.maximum.reduce, empty, axis=0, initial=0.0)
    check(np.add.reduce, empty, axis=0)
    check(np.sum, empty)


def test_reduction_out() -> None:
    a = sample((2, 3))
    check(np.sum, a, axis=1, out=sample((2,)))
    check(np.sum, a, axis=1, out=sample((3,)))
    check(np.sum, a, axis=1, out=sample((1, 2)))
    check(np.sum, a, axis=1, out=sample((2,), np.int8))
    check(Method("max"), a, 0, sample((3,)))
    check(np.cumsum, a, 1, None, sample((2, 3)))
    check(np.add.reduce, a, 0, None, sample((3,)))
    check(np.argmax, a, axis=0, out=sample((3,), np.intp))


def test_median_overwrite_and_mean_not_modelled() -> None:
    a = TensorMeta((3,), np.float64)
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.median, a, overwrite_input=True)
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.std, a, mean=TensorMeta((), np.float64))


def test_cumulative_sum() -> None:
    if not hasattr(np, "cumulative_sum"):
        pytest.skip("NumPy < 2.1")
    a = sample((2, 3))
    check(np.cumulative_sum, a, axis=1)
    check(np.cumulative_sum, a, axis=0, include_initial=True)
    check(np.cumulative_prod, sample((4,), np.int8), include_initial=True)
    check(np.cumulative_sum, a)                               # axis required for 2-d


def test_quantiles_and_average() -> None:
    a = sample((3, 4))
    for fn, q in ((np.percentile, 30), (np.nanpercentile, [10, 90]), (np.quantile, 0.5),
                  (np.nanquantile, [[0.1], [0.9]])):
        check(fn, a, q)
        check(fn, a, q, axis=1)
        check(fn, a, q, axis=(0, 1), keepdims=True)
        check(fn, sample((4,), np.int8), q, axis=0, method="nearest")
    check(np.percentile, a, [10, 120])
    check(np.quantile, a, 1.5)
    check(np.percentile, a, 50, axis=0, out=sample((4,)))
    check(np.average, a)
    check(np.average, a, axis=1)
    check(np.average, a, axis=0, weights=sample((3,)))
    check(np.average, a, axis=0, weights=sample((4,)))
    check(np.average, a, weights=sample((3, 4)), keepdims=True)
    check(np.average, a, weights=sample((4,)))
    check(np.average, sample((2, 3), np.int8), axis=(0, 1), weights=sample((2, 3)))
