"""Loop bodies on arrays of other dtypes than float64 under backend "c" (backends/c_cpu/loop_dtypes.py):
int32/int64 wrap-around, float32 single ops, uint8, np.minimum/np.maximum (NaN and tie rules),
ufunc.outer (NPBench floyd_warshall), in-place updates and constants converted as NumPy converts a weak
scalar; compared bitwise with plain NumPy over several calls (constant, then symbolic sizes), warnings
compared, exact counts of the loops that ran as C loops, and what stays a Python loop."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_c_loops import bits, native_runs, run_both

import c_helpers
import dynamo

pytestmark = c_helpers.needs_compiler

rng = np.random.default_rng(1919)


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))


def distances(n, dtype):
    path = rng.integers(1, 50, (n, n)).astype(dtype)
    path[rng.random((n, n)) < 0.3] = 999
    return path


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_floyd_warshall_is_one_c_loop(dtype):
    rec = run_both(floyd_warshall, [(distances(n, dtype),) for n in (12, 7, 16)])
    assert native_runs(rec) == [1, 2]  # 12 known iterations; then N symbolic
    run_both(floyd_warshall, [(distances(0, dtype),)])


def test_floyd_warshall_with_negative_edges_reads_the_row_before_it_is_stored():
    # path[k, k] < 0: the store of row k changes what the column and row of k read; NumPy computes
    # the outer product before the store
    path = rng.integers(-3, 9, (9, 9)).astype(np.int32)
    rec = run_both(floyd_warshall, [(path,), (path[:5, :5].copy(),)])
    assert native_runs(rec) == [1, 1]


def test_floyd_warshall_on_strided_reversed_and_transposed_views():
    path = distances(14, np.int32)
    compiled = dynamo.compile(floyd_warshall, backend="c")
    for view in (lambda p: p[::2, 1::2], lambda p: p[::-1], lambda p: p.T, lambda p: p[1:, :-1]):
        ours, plain = path.copy(), path.copy()
        compiled(view(ours))
        floyd_warshall(view(plain))
        assert bits(ours) == bits(plain)


def wrapping(A, B, n):
    for i in range(n):
        A[i, :] = A[i, :] * B[i, :] + 2147483000
        A[:, i] -= B[:, i]
        B[i:, :] = -B[i:, :]
    return A


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_slices_wrap_around_as_numpy(dtype):
    rec = run_both(wrapping, [full_range(dtype, 6, 5), full_range(dtype, 8, 9), full_range(dtype, 3, 3)])
    assert native_runs(rec) == [1, 2]


def full_range(dtype, n, m):
    info = np.iinfo(dtype)
    A = rng.integers(info.min, info.max, (n, m), dtype=dtype, endpoint=True)
    B = rng.integers(info.min, info.max, (n, m), dtype=dtype, endpoint=True)
    return (A, B, min(n, m))


def small_constants(A, B, n):
    for i in range(n):
        A[i, :] = A[i, :] * B[i, :] + 200
        A[:, i] -= B[:, i]
        B[i:, :] = np.maximum(B[i:, :], A[i:, :]) // 3 | (A[i:, :] & 5)
    return A


def test_uint8_wraps_and_floor_divides_as_numpy():
    rec = run_both(small_constants, [full_range(np.uint8, 6, 5), full_range(np.uint8, 8, 9)])
    assert sum(native_runs(rec)) >= 1


def float32_chain(A, B, n):
    for i in range(1, n):
        A[i, :] = A[i - 1, :] * 1.1 + B[i, :] / 3.0 - 0.1
        B[:, i] = np.minimum(B[:, i - 1], A[:, i]) ** 2
    return A, B


def test_float32_ops_are_single_float_ops_and_constants_round_as_numpy():
    def make(n):
        return (rng.random((n, n)).astype(np.float32), rng.random((n, n)).astype(np.float32), n)
    rec = run_both(float32_chain, [make(9), make(5), make(12)])
    assert native_runs(rec) == [1, 2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_minimum_and_maximum_keep_numpy_nans_and_signed_zeros(dtype):
    def mix(A, B, n):
        for i in range(n):
            A[i, :] = np.maximum(A[i, :], B[i, :])
            B[i, :] = np.minimum(B[i, :], A[n - 1 - i, :])
        return A, B
    values = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0], dtype=dtype)
    def make(n):
        return (rng.choice(values, (n, 8)), rng.choice(values, (n, 8)), n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a signaling compare would raise 'invalid value'
        rec = run_both(mix, [make(6), make(4), make(9)])
    assert native_runs(rec) == [1, 2]


def test_float32_overflow_and_division_by_zero_warn_as_numpy():
    def grow(A, B, n):
        for i in range(n):
            A[:, 1:] *= A[:, :-1]
            B[i, :] = A[i, :] / B[i, :]
        return A, B
    A = np.full((3, 4), 1e30, dtype=np.float32)
    B = np.array([[0.0, 1.0, 2.0, 0.0]] * 3, dtype=np.float32)
    compiled = dynamo.compile(grow, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = grow(A.copy(), B.copy(), 3)
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(A.copy(), B.copy(), 3)
    assert bits(got) == bits(expected)
    assert sorted({str(w.message) for w in our_w}) == sorted({str(w.message) for w in plain_w})
    assert plain_w


def test_integer_floor_division_by_zero_warns_as_numpy():
    def halve(A, B, n):
        for i in range(n):
            A[i, :] = A[i, :] // B[i, :] + 1
        return A
    A = rng.integers(-100, 100, (4, 5)).astype(np.int32)
    B = rng.integers(-3, 3, (4, 5)).astype(np.int32)
    B[1, 2] = 0
    compiled = dynamo.compile(halve, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = halve(A.copy(), B, 4)
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(A.copy(), B, 4)
    assert bits(got) == bits(expected)
    assert sorted({str(w.message) for w in our_w}) == sorted({str(w.message) for w in plain_w})
    assert plain_w


def test_what_numpy_casts_or_raises_on_stays_a_python_loop():
    # a float64 value stored into an int32 array (NumPy's unsafe cast), a constant past int32, an
    # element of an int32 array (NumPy's scalar warns on overflow): the Python loop over the compiled
    # body, still NumPy's results
    def casts(A, B, n):
        for i in range(n):
            A[i, :] = B[i, :] * 0.5
        return A

    def past_int32(A, n):
        for i in range(n):
            A[i, :] = A[i, :] + 2 ** 40
        return A

    def element(A, n):
        for i in range(1, n):
            A[i, 0] = A[i - 1, 0] + A[i, 1]
        return A
    A = rng.integers(-9, 9, (4, 3)).astype(np.int32)
    rec = run_both(casts, [(A, rng.standard_normal((4, 3)) * 100, 4)])
    assert [loop.refused for loop in rec.native_loops()] != [{}]
    with pytest.raises(OverflowError):
        past_int32(A.copy(), 4)
    with pytest.raises(OverflowError):
        dynamo.compile(past_int32, backend="c")(A.copy(), 4)
    rec = run_both(element, [(A, 4)])
    assert [loop.refused for loop in rec.native_loops()] != [{}]


def test_safe_casts_to_float64_as_numpy():
    # int32 and float32 operands of a float64 op: NumPy casts them first (exactly); a float64 value
    # stored into float32 rounds as NumPy's cast
    def mixed(A, F, D, n):
        for i in range(n):
            D[i, :] = A[i, :] * 0.5 + F[i, :] * D[i, :]
            F[i, :] = D[i, :] * 3.0
        return D, F
    def make(n, m):
        return (rng.integers(-2 ** 31, 2 ** 31, (n, m)).astype(np.int32),
                rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal((n, m)) * 1e30, n)
    rec = run_both(mixed, [make(5, 7), make(8, 3), make(2, 2)])
    assert native_runs(rec) == [1, 2]
