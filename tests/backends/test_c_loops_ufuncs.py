"""NumPy ufuncs of float64 scalars inside C loops under backend "c" (loop_codegen.scalar_ufunc): each
calls NumPy's own loop on the one value, as NumPy does for a scalar. Compared bitwise with plain NumPy
over three calls (sizes constant, then symbolic), warnings included, with the loops counted as C loops."""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from test_c_loops import bits, run_both

import dynamo

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")

rng = np.random.default_rng(5)


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def transcendental_mix(x, out):
    for i in range(x.shape[0]):
        v = np.exp(x[i]) * np.log1p(np.abs(x[i])) - np.sin(x[i])
        out[i] = np.arctan2(v, x[i] + 0.5) + np.maximum(v, x[i]) + np.power(np.cos(v), 2.0)
    return out


def native_runs(rec):
    return [loop.native_runs for loop in rec.native_loops()]


def test_a_trace_of_tanh_runs_as_one_c_loop():
    rec = run_both(go_fast, [(rng.random((70, 70)),), (rng.random((90, 90)),), (rng.standard_normal((33, 33)),)])
    # the first iteration is peeled (trace turns from a Python float into a NumPy scalar), the rest is C
    assert sum(native_runs(rec)) == 3
    assert all(not loop.refused for loop in rec.native_loops())


def test_unary_and_binary_ufuncs_of_scalars_give_numpys_bits():
    special = np.array([0.0, -0.0, 1e-310, -1e-310, 700.0, -745.0, 1e300, np.inf, -np.inf, np.nan, 3.0, -2.5])
    with np.errstate(all="ignore"):
        rec = run_both(transcendental_mix, [(special, np.zeros(12)), (rng.standard_normal(80) * 30, np.zeros(80)),
                                            (rng.standard_normal(5), np.zeros(5))])
    assert sum(native_runs(rec)) == 3


def test_an_overflow_in_a_scalar_exp_warns_as_numpy_does():
    def exps(x, out):
        for i in range(x.shape[0]):
            out[i] = np.exp(x[i]) * 2.0
        return out
    x = np.array([1.0, 800.0, 2.0] + [0.5] * 70)
    compiled = dynamo.compile(exps, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = exps(x, np.zeros(73))
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(x, np.zeros(73))
    assert bits(got) == bits(expected)
    assert [str(w.message) for w in our_w] == [str(w.message) for w in plain_w] == ["overflow encountered in exp"]


def test_a_flag_raised_before_a_numpy_loop_that_clears_flags_is_still_reported():
    def divide_then_abs(x, out):
        for i in range(x.shape[0]):
            out[i] = np.abs(x[i] / 0.0)  # the division raises divide by zero; NumPy's absolute loop clears flags
        return out
    x = rng.random(70) + 1.0
    compiled = dynamo.compile(divide_then_abs, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = divide_then_abs(x, np.zeros(70))
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(x, np.zeros(70))
    assert bits(got) == bits(expected)
    assert {str(w.message) for w in our_w} == {str(w.message) for w in plain_w}
