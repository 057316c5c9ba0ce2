"""Reductions along axes in C loop bodies under backend "c" (backends/c_cpu/loop_reductions.py): NPBench's
convolutions (np.sum of a 5-d product with np.newaxis, float32 and float64, mixed with a float32 weight)
and max pooling (np.max of a view), compared bitwise with plain NumPy (NumPy's summation order) over
several shapes and axis sets, warnings compared, exact counts of the loops that ran as C loops, and
the layouts and shapes where NumPy sums in another order staying Python loops."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_c_loops import bits, native_runs, run_both

import c_helpers
import dynamo

pytestmark = c_helpers.needs_compiler

rng = np.random.default_rng(2019)


def conv2d(input, weights):
    K = weights.shape[0]
    N = input.shape[0]
    H_out = input.shape[1] - K + 1
    W_out = input.shape[2] - K + 1
    C_out = weights.shape[3]
    output = np.empty((N, H_out, W_out, C_out), dtype=np.float32)
    for i in range(H_out):
        for j in range(W_out):
            output[:, i, j, :] = np.sum(input[:, i:i + K, j:j + K, :, np.newaxis] * weights[np.newaxis, :, :, :],
                                        axis=(1, 2, 3))
    return output


def maxpool2d(x):
    output = np.empty([x.shape[0], x.shape[1] // 2, x.shape[2] // 2, x.shape[3]], dtype=x.dtype)
    for i in range(x.shape[1] // 2):
        for j in range(x.shape[2] // 2):
            output[:, i, j, :] = np.max(x[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :], axis=(1, 2))
    return output


def images(n, h, w, c, dtype=np.float32, scale=1000.0):
    return (rng.standard_normal((n, h, w, c)) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_convolution_sums_in_numpy_order(dtype):
    def make(n, h, c_in, c_out, k):
        return (images(n, h, h + 1, c_in, dtype), images(k, k, c_in, c_out, np.float32))
    rec = run_both(conv2d, [make(4, 9, 3, 16, 2), make(2, 7, 5, 6, 3), make(3, 12, 1, 8, 4), make(2, 5, 2, 3, 1)])
    assert sum(native_runs(rec)) >= 4  # the loop over i, its loop over j nested as a C loop


def test_max_pooling_keeps_numpy_nans_and_signed_zeros():
    values = np.array([0.0, -0.0, np.nan, 1.5, -2.0, np.inf, -np.inf], dtype=np.float32)
    def make(n, h, c):
        return (rng.choice(values, (n, h, h + 2, c)),)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a signaling compare would raise 'invalid value'
        rec = run_both(maxpool2d, [make(2, 8, 6), make(3, 6, 4), make(1, 10, 3), (images(2, 9, 9, 5),)])
    assert sum(native_runs(rec)) >= 4


def test_int32_max_pooling():
    def make(n, h, c):
        return (rng.integers(-2 ** 31, 2 ** 31, (n, h, h, c)).astype(np.int32),)
    rec = run_both(maxpool2d, [make(2, 8, 6), make(3, 6, 4)])
    assert sum(native_runs(rec)) >= 2


def sums_along(x, y, n):
    for i in range(n):
        y[i] = np.sum(x[i] * 3.0 - x[i], axis=(0, 1)) + np.sum(x[i], axis=0)[1, :]
        y[i] += np.min(x[i, :, :, :], axis=1)[1, :] + np.max(x[i], axis=(0, 1))
    return y


def test_sums_along_inner_and_outer_axes_and_over_long_runs():
    def make(n, a, b, c):
        return (rng.standard_normal((n, a, b, c)) * 1e3, np.zeros((n, c)), n)
    rec = run_both(sums_along, [make(3, 4, 5, 6), make(2, 30, 40, 3), make(4, 2, 3, 2)])
    assert native_runs(rec) == [1, 2]


def test_layouts_numpy_reduces_in_another_order_stay_python_loops():
    weights = images(2, 2, 3, 8)
    # F-ordered input: NumPy allocates the product in another order (checked per call: Python loop)
    compiled = dynamo.compile(conv2d, backend="c")
    for x in (images(2, 6, 6, 3), np.asfortranarray(images(2, 6, 6, 3))):
        assert bits(compiled(x, weights)) == bits(conv2d(x, weights))
    # one output channel: NumPy sums the reduced axes pairwise (refused at compile time)
    def one_channel(x, w):
        return conv2d(x, w)
    rec = run_both(one_channel, [(images(2, 6, 6, 3), images(2, 2, 3, 1))])
    assert any(loop.refused for loop in rec.native_loops())


def test_overflow_in_a_sum_along_axes_warns_as_numpy():
    def grow(x, y, n):
        for i in range(n):
            y[i] = np.sum(x[i] * 2.0, axis=0)
        return y
    x = np.full((2, 3, 4), 1e308)
    compiled = dynamo.compile(grow, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = grow(x, np.zeros((2, 4)), 2)
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(x, np.zeros((2, 4)), 2)
    assert bits(got) == bits(expected)
    assert {str(w.message) for w in our_w} <= {str(w.message) for w in plain_w}
    assert our_w and plain_w


def test_max_along_an_empty_axis_raises_numpy_value_error():
    def pool(x, y, n):
        for i in range(n):
            y[i] = np.max(x[i, :, i:i], axis=1)
        return y
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        pool(np.ones((2, 3, 4)), np.zeros((2, 3)), 2)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        dynamo.compile(pool, backend="c")(np.ones((2, 3, 4)), np.zeros((2, 3)), 2)
