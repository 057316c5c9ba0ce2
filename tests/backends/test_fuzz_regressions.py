"""Failures the differential fuzzer (tests/fuzz/) found in the backends, minimized: each program run
plain and compiled on every CPU backend must return the same values and leave the same arguments."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dynamo
from dynamo.backends.registry import list_backends

BACKENDS = [b for b in ("eager", "numpy", "c") if b in list_backends()]


def contiguous_copy_then_write(a):
    # fuzz seed 900000, backend c: the kernel lowering took ascontiguousarray for a view, so the copy
    # of the reversed array saw the write made after it
    smallest = np.argmin(a)
    copy = np.ascontiguousarray(a[::-1])
    a[:] = smallest
    return copy


def contiguous_same_array_then_write(a):
    # an array that is already C-contiguous is returned itself: the write shows through it
    same = np.ascontiguousarray(a)
    a[0] = a[1]
    return same, same is a


def astype_same_dtype_then_in_place(a):
    # fuzz seed 1000569, backend c: astype to the array's own dtype is a copy, but the kernel lowering
    # took the array's own value, so the in-place product wrote into the argument
    v = a.astype(np.float64)
    v *= a
    return v


def assert_identical(got, expected):
    assert type(got) is type(expected)
    if isinstance(expected, tuple):
        for g, e in zip(got, expected, strict=True):
            assert_identical(g, e)
    elif isinstance(expected, np.ndarray):
        assert (got.dtype, got.shape, got.strides) == (expected.dtype, expected.shape, expected.strides)
        assert got.tobytes() == expected.tobytes()
    else:
        assert got == expected


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", [contiguous_copy_then_write, contiguous_same_array_then_write])
@pytest.mark.parametrize("dtype", [np.float64, np.bool_, np.int32])
def test_fuzzer_found_program(backend, program, dtype):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for values in ([1, 0, 1], [0, 1, 1, 0, 1]):   # a second shape: the cached path and a recompile
        plain_args, compiled_args = np.array(values, dtype), np.array(values, dtype)
        expected = program(plain_args)
        got = compiled(compiled_args)
        assert_identical(got, expected)
        assert_identical(compiled_args, plain_args)


def scalar_overflows_the_dtype(a):
    # fuzz seeds 900020 and 1000008, backend c: the Python scalar, cast to the array's dtype, overflows;
    # NumPy warns on every call, the kernel lowering folded the cast and warned once, while compiling
    return a * 1e300 + 1.0, a < 1e300


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fuzzer_found_warnings(backend, dtype):
    dynamo.reset()
    compiled = dynamo.compile(scalar_overflows_the_dtype, backend=backend)
    for _ in range(2):   # the first call compiles, the second runs the cached kernels
        with warnings.catch_warnings(record=True) as plain_warnings:
            warnings.simplefilter("always")
            expected = scalar_overflows_the_dtype(np.ones(3, dtype))
        with warnings.catch_warnings(record=True) as compiled_warnings:
            warnings.simplefilter("always")
            got = compiled(np.ones(3, dtype))
        assert_identical(got, expected)
        assert [(w.category, str(w.message)) for w in compiled_warnings] == \
            [(w.category, str(w.message)) for w in plain_warnings]


def unread_in_place_floor_divide(a):
    # fuzz seed 1000163, backend c: an in-place update nobody reads never ran, nor warned
    v = -a
    v //= v


@pytest.mark.parametrize("backend", BACKENDS)
def test_fuzzer_found_astype_copy(backend):
    dynamo.reset()
    compiled = dynamo.compile(astype_same_dtype_then_in_place, backend=backend)
    # as the fuzzer called it: float32 twice, then float64 of another shape (a recompile)
    for values in (np.array([1.5, 2.0, -3.0], np.float32), np.array([0.5, 2.0, 3.0], np.float32),
                   np.array([1.99, 0.1, -0.28, -2.81])):
        plain_args, compiled_args = values.copy(), values.copy()
        assert_identical(compiled(compiled_args), astype_same_dtype_then_in_place(plain_args))
        assert_identical(compiled_args, plain_args)


def write_then_singular_inverse(a):
    # fuzz seed 1000456, backend c (issue #17 class 1): the functionalized write into the argument was
    # stored at the graph's end, which the LinAlgError of the NumPy step never reached
    a[:1] = 7
    np.linalg.inv(np.zeros((2, 2)))


def write_then_raising_step_and_old_value(a):
    # the write lands before the NumPy step, and a value read before the write keeps the old contents
    old = a + 1
    a[:1] = 7
    return old * 2, np.take(a, 10**6)


def shift_in_place_then_fancy_setitem(a):
    # fuzz seed 1000624, backend c: the NumPy setitem after `a <<= k` wrote into a temporary holding
    # a << k instead of a, and a kept the shifted values
    a <<= 3
    a[[0, -1]] = 5
    return a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, make_args", [
    (shift_in_place_then_fancy_setitem, lambda: (np.array([[2, 3, -1], [1, 1, 1], [4, 0, 2]]),)),
    (write_then_singular_inverse, lambda: (np.array([1.5, 2.0, -3.0]),)),
    (write_then_raising_step_and_old_value, lambda: (np.array([1.5, 2.0, -3.0]),)),
    (unread_in_place_floor_divide, lambda: (np.array([[1, 0], [2, 3]], np.uint8),)),
])
def test_fuzzer_found_effects_before_an_error(backend, program, make_args):
    dynamo.reset()
    compiled = dynamo.compile(program, backend=backend)
    for _ in range(2):
        outcomes = []
        for fn in (program, compiled):
            args = make_args()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    fn(*args)
                    error = None
                except (IndexError, np.linalg.LinAlgError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
            outcomes.append(([(w.category, str(w.message)) for w in caught], error,
                             [a.tobytes() for a in args]))
        assert outcomes[1] == outcomes[0]
