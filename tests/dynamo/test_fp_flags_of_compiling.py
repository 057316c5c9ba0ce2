"""Compiling leaves the floating-point exception flags as the program left them: a compile that
happens inside a NumPy object ufunc's loop must not make NumPy warn."""
from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys
import warnings

import numpy as np
import pytest

import dynamo

FE_DIVBYZERO = 0x04  # <fenv.h> on x86


def larger_or_doubled(x, y):
    return x if x > y else y * 2


def test_compiling_inside_a_vectorized_loop_raises_no_floating_point_warning() -> None:
    a, b = np.arange(6), np.full(6, 2)
    expected = np.vectorize(larger_or_doubled)(a, b)
    # the loop calls the function with 0, 1, 2, ...: the second value makes x a run-time input and
    # the branch on it adds a size guard (these compiles happen inside NumPy's ufunc loop)
    compiled = np.vectorize(dynamo.compile(larger_or_doubled, backend="eager"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = compiled(a, b)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype


def divide_by_zero_flag_then(fn):
    """An object-loop function that raises the FE_DIVBYZERO flag itself (as C code it called could),
    then calls fn: NumPy reports the flag after the loop."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))

    def run(x):
        libm.feraiseexcept(FE_DIVBYZERO)
        return fn(x)
    return run


def warnings_of(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="warn"):
            np.frompyfunc(fn, 1, 1)(np.arange(3.0))
    return [str(w.message) for w in caught]


@pytest.mark.skipif(sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"),
                    reason="FE_DIVBYZERO's value is x86's")
def test_flags_the_program_raised_before_a_compile_survive_it() -> None:
    def halve(x):
        return x / 2

    expected = warnings_of(divide_by_zero_flag_then(halve))
    assert any("divide by zero" in message for message in expected)
    # the first call compiles: the flag raised before it is restored, not cleared
    assert warnings_of(divide_by_zero_flag_then(dynamo.compile(halve, backend="eager"))) == expected
