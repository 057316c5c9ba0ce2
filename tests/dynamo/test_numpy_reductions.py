"""Corpus: reductions and scans of the op registry (functions, methods, ufunc.reduce/accumulate)
with axis, keepdims, dtype, out and where, compared with plain NumPy; NumPy scalars come back."""
import numpy as np
import pytest

from numpy_samples import BOOL, C128, F32, F64, I64, check, sample
from support import compile_with_counter

WITH_NAN = np.where(F64 > 1.5, np.nan, F64)
INPUTS = [(F64,), (F32,), (I64,), (BOOL,), (sample(()),), (sample((1, 3)),), (sample((2, 1, 3), np.float32),)]

FUNCTIONS = [np.sum, np.prod, np.mean, np.std, np.var, np.max, np.min, np.argmax, np.argmin, np.any, np.all,
             np.ptp, np.median, np.count_nonzero]
NAN_FUNCTIONS = [np.nansum, np.nanprod, np.nanmean, np.nanstd, np.nanvar, np.nanmax, np.nanmin, np.nanargmax,
                 np.nanargmin, np.nanmedian]
METHODS = ["sum", "prod", "mean", "std", "var", "max", "min", "argmax", "argmin", "any", "all"]
SCANS = [np.cumsum, np.cumprod, np.nancumsum, np.nancumprod, np.cumulative_sum, np.cumulative_prod]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
def test_reduction_functions_whole_array_and_axes(fn):
    keep = (lambda args: args[0].dtype != bool) if fn is np.ptp else (lambda args: True)  # bool - bool raises
    check(lambda a: fn(a), *filter(keep, INPUTS))
    check(lambda a: (fn(a, axis=0), fn(a, axis=-1)), *filter(keep, [(F64,), (I64,), (BOOL,), (sample((1, 3)),)]))
    if fn not in (np.argmax, np.argmin, np.count_nonzero):
        check(lambda a: (fn(a, axis=(0, 1)), fn(a, axis=1, keepdims=True), fn(a, keepdims=True)), (F64,), (F32,))


@pytest.mark.parametrize("fn", NAN_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_nan_reductions(fn):
    check(lambda a: (fn(a), fn(a, axis=0), fn(a, axis=1)), (WITH_NAN,), (F32,), (I64,))


@pytest.mark.parametrize("name", METHODS)
def test_reduction_methods(name):
    def f(a):
        method = getattr(a, name)
        return method(), method(axis=0), method(1)

    def keep(a):
        return getattr(a, name)(axis=1, keepdims=True)

    check(f, (F64,), (F32,), (I64,), (BOOL,), (sample((1, 3)),))
    check(keep, (F64,), (I64,))


def test_reductions_return_numpy_scalars_not_0d_arrays():
    def f(a):
        return np.sum(a), a.mean(), np.max(a), a.argmin(), np.all(a > 0), a.sum() + 1, np.sum(a) * 2.0

    check(f, (F64,), (F32,), (I64,), (sample(()),), (sample((1,)),))
    compiled, _ = compile_with_counter(f)
    result = compiled(F32)
    assert type(result[0]) is np.float32 and type(result[3]) is np.intp and type(result[4]) is np.bool_
    assert type(result[6]) is np.float32  # NEP 50: a Python float does not widen a NumPy float32


def test_reduction_dtype_out_where_initial_ddof():
    def f(a, o):
        return (np.sum(a, dtype=np.float32), a.mean(dtype=np.float64), np.std(a, ddof=1), a.var(axis=0, ddof=1),
                np.sum(a, axis=0, out=o), o, np.max(a, initial=10.0), np.sum(a, where=a > 1.0),
                np.prod(a, axis=1, dtype=np.int64), np.mean(a, axis=0, where=a > 1.0))

    check(f, (F64, np.zeros(4)), (I64, np.zeros(4)))


def test_reductions_of_empty_arrays():
    check(lambda a: (np.sum(a), np.prod(a), np.any(a), np.all(a), np.sum(a, axis=0)), (sample((0, 3)),))
    check(lambda a: np.max(a), (sample((0, 3)),), graph=False)  # ValueError: no identity
    check(lambda a: np.max(a, axis=1), (sample((0, 3)),))  # no zero-size reduction: fine
    check(lambda a: np.argmin(a), (sample((0,)),), graph=False)


def test_reduction_axis_errors_are_raised():
    check(lambda a: np.sum(a, axis=2), (F64,), graph=False)
    check(lambda a: a.mean(axis=(0, 0)), (F64,), graph=False)


@pytest.mark.parametrize("fn", SCANS, ids=lambda fn: fn.__name__)
def test_scans(fn):
    if fn in (np.cumulative_sum, np.cumulative_prod):
        check(lambda a: (fn(a, axis=0), fn(a, axis=1, include_initial=True)), (F64,), (I64,), (BOOL,))
        check(lambda a: fn(a), (sample((4,)),))
    else:
        check(lambda a: (fn(a), fn(a, axis=0), fn(a, axis=1, dtype=np.float32)), (F64,), (I64,), (WITH_NAN,))


def test_scan_methods_and_out():
    def f(a, o):
        return a.cumsum(), a.cumprod(axis=1), np.cumsum(a, axis=0, out=o), o

    check(f, (F64, np.zeros((3, 4))), (I64, np.zeros((3, 4))))


def test_statistics():
    def f(a, w):
        return (np.percentile(a, 50), np.percentile(a, [25, 75], axis=0), np.quantile(a, 0.3, axis=1),
                np.nanpercentile(a, 90), np.nanquantile(a, (0.1, 0.9)), np.average(a), np.average(a, axis=0, weights=w),
                np.median(a, axis=0))

    check(f, (F64, sample((3,))), (WITH_NAN, sample((3,))), (I64, sample((3,))))
    # a (sum, weights) pair is not modelled by the registry: the call runs in Python
    check(lambda a: np.average(a, axis=1, returned=True), (F64,), graph=False)


def test_count_nonzero_and_ptp_with_axes():
    check(lambda a: (np.count_nonzero(a, axis=0), np.count_nonzero(a, keepdims=True, axis=1), np.ptp(a, axis=1)),
          (I64 - 3,), (F64,))


def test_ufunc_reduce_accumulate_outer_reduceat():
    def f(a, b):
        return (np.add.reduce(a), np.add.reduce(a, axis=1), np.multiply.reduce(a, axis=None), np.maximum.reduce(a, 0),
                np.add.accumulate(a), np.multiply.accumulate(a, axis=1), np.subtract.outer(a[0], b),
                np.logical_and.reduce(a > 1), np.add.reduce(a, keepdims=True, axis=0))

    check(f, (F64, sample((5,))), (I64, sample((2,), np.int64)))


def test_ufunc_methods_without_a_row_run_in_python():
    check(lambda a: np.add.reduceat(a, [0, 2]) * 2, (sample((5,)),), graph=False)


def test_ufunc_at_scatters_in_place():
    def f(a, idx):
        np.add.at(a, idx, 1.0)
        return a

    check(f, (np.zeros(5), np.array([0, 1, 1, 3])), (np.zeros((3, 2)), np.array([2, 2])))


def test_reductions_of_complex_and_bool():
    check(lambda a: (np.sum(a), a.mean(axis=0), np.prod(a, axis=1), np.var(a), np.std(a, axis=0)), (C128,))
    check(lambda a: (a.sum(), a.mean(), np.any(a, axis=0), a.all(axis=1), a.max(), np.argmax(a)), (BOOL,))
