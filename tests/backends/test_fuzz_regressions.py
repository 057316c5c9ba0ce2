"""Failures the differential fuzzer (tests/fuzz/) found in the backends, minimized: each program run
plain and compiled on every CPU backend must return the same values and leave the same arguments."""
from __future__ import annotations

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
