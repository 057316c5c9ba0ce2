"""backend="c": NaNs keep NumPy's sign bit through the C compiler's algebra (x + (-NaN) is not x - NaN,
(-a) * (-b) is not a * b, x * -1.0 is not -x), and an in-place operator on a view that a NumPy step
made (a complex array's .real) writes the viewed memory."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import dynamo
from c_helpers import Recorder, bits, needs_compiler

pytestmark = needs_compiler

# vector bodies and scalar tails of the compiled loops: 5 and 7 leave tails after 4 or 8 lanes
LENGTHS = (5, 7, 21)


def with_nans(n: int, dtype: type) -> np.ndarray:
    """NaNs of both signs among numbers, infinities and zeros."""
    pattern = [np.nan, -np.nan, 1.5, -0.0, 0.0, np.inf, -2.5]
    return np.array((pattern * n)[:n], dtype=dtype)


def without_nans(n: int, dtype: type) -> np.ndarray:
    return np.array(([1.5, -0.0, 0.0, np.inf, -2.5, -np.inf, 3.0] * n)[:n], dtype=dtype)


def finite_constants_on_nans(a, b):
    return a * -1.0, a / -1.0, -1.0 * a, (-a) * (-a), (-a) * b, a - (-b), -(-a), (-a) + b, a * -np.inf


def nan_constants_on_numbers(a):
    return (a + (-np.nan), a - (-np.nan), a * (-np.nan), (-np.nan) - a, a / (-np.nan), a * 0 + (-np.nan),
            a + np.nan, -(a + np.nan))


def run_both(fn, *args):
    """fn's result plain and compiled for "c", each on its own copy of the arguments (fn may write them)."""
    recorder = Recorder()
    compiled = dynamo.compile(fn, backend=recorder)
    with np.errstate(all="ignore"):
        expected = fn(*copy.deepcopy(args))
        got = compiled(*copy.deepcopy(args))
    return expected, got, recorder


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_operands_keep_their_sign_through_folded_constants(dtype):
    for n in LENGTHS:
        a, b = with_nans(n, dtype), without_nans(n, dtype)
        expected, got, recorder = run_both(finite_constants_on_nans, a, b)
        assert bits(got) == bits(expected), n
        assert sum(g.kernel_count for g in recorder.graphs) >= 1  # C kernels computed them


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_constants_keep_their_sign(dtype):
    for n in LENGTHS:
        expected, got, recorder = run_both(nan_constants_on_numbers, without_nans(n, dtype))
        assert bits(got) == bits(expected), n
        assert sum(g.kernel_count for g in recorder.graphs) >= 1


def test_the_sign_of_a_nan_stored_and_computed():
    """test_numpy_ufuncs' case: a float32 array of 5 (a vector of 4 and a scalar tail)."""
    def f(a, mask):
        stored = a.copy()
        stored[mask] = -np.nan
        return np.signbit(stored), np.signbit(a * 0 + (-np.nan)), np.signbit(np.copysign(a, -np.nan))

    a = np.linspace(1.0, 2.0, 5, dtype=np.float32)
    mask = np.array([True, False, True, False, True])
    expected, got, _ = run_both(f, a, mask)
    assert bits(got) == bits(expected)


def test_negation_in_a_loop_keeps_the_sign_of_nan():
    """A loop node's scalar negation (loop_codegen) and its vector one (loop_vectors)."""
    def f(a, out):
        for i in range(a.shape[0]):
            out[i] = -(-a[i]) * -1.0
        return out

    a = with_nans(70, np.float64)
    expected, got, _ = run_both(f, a, np.zeros(70))
    assert bits(got) == bits(expected)


@pytest.mark.parametrize("part", ["real", "imag"])
def test_an_inplace_operator_on_a_view_made_by_a_numpy_step_writes_the_base(part):
    """`a.real` of a complex array runs as NumPy (no C kernel for complex): its result is a view, and
    `r += 1` must land in a, not in a copy of it."""
    def write_part(a):
        r = getattr(a, part)
        r += 1
        r *= 2.0
        return a

    base = np.arange(12.0).reshape(3, 4) + 1j * np.arange(12.0).reshape(3, 4)
    expected, got, _ = run_both(write_part, base)
    assert bits(got) == bits(expected)
    assert bits(run_both(write_part, base)[1]) == bits(expected)  # the cached call too
