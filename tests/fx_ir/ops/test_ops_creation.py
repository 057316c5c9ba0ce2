"""Creation functions against NumPy: zeros/full, *_like, arange, linspace, eye, asarray/array.

arange lengths with float steps and asarray/array copy semantics are checked exactly.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ops_harness import DTYPES, Const, check, examples, sample

from dynamo.fx_ir.ops import UnsupportedArguments, infer_meta, lookup_function
from dynamo.fx_ir.tensor_meta import TensorMeta


def test_filled() -> None:
    for fn in (np.zeros, np.ones, np.empty):
        check(fn, (2, 3))
        check(fn, 4, np.int8)
        check(fn, (), dtype=np.complex64)
        check(fn, (2, -1))
        check(fn, (2, 3.0))
        check(fn, [0, 2], "f4", "F")
        check(fn, (2,), dtype="nonsense")
    check(np.full, (2, 3), 1)
    check(np.full, (2, 3), 1.5, np.float32)
    check(np.full, (2, 3), [1, 2, 3])
    check(np.full, (2, 3), [1, 2])
    check(np.full, (2, 3), sample((3,), np.float32))
    check(np.full, (2, 3), 300, dtype=np.int8)
    check(np.full, 3, np.int8(3))
    check(np.full, 3, Const(np.int8(3)))
    assert lookup_function(np.empty).effects((3,)).nondeterministic
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.zeros, (3,), like=TensorMeta((3,), np.float64))


def test_like() -> None:
    for dtype in DTYPES:
        a = sample((2, 3), dtype)
        for fn in (np.zeros_like, np.ones_like, np.empty_like):
            check(fn, a)
            check(fn, a, np.float32)
            check(fn, a, shape=(4,))
            check(fn, a, dtype=np.int8, shape=())
        check(np.full_like, a, 2)
        check(np.full_like, a, 2.5, np.float32, shape=(3, 3))
        check(np.full_like, a, sample((3,)))
        check(np.full_like, a, sample((4,)))
        check(np.zeros_like, np.float64(1.0))
        check(np.zeros_like, sample(()), shape=(2,))


ARANGE_VALUES = st.one_of(st.integers(-20, 20), st.floats(-20, 20, allow_nan=False).map(lambda x: round(x, 3)))


@examples(200)
@given(start=ARANGE_VALUES, stop=ARANGE_VALUES,
       step=st.one_of(st.integers(-5, 5), st.sampled_from([0.1, 0.3, -0.7, 1.5, 1e-2, 0.25])))
def test_arange_lengths(start: float, stop: float, step: float) -> None:
    check(np.arange, start, stop, step)
    check(np.arange, stop)
    check(np.arange, start, stop)


def test_arange_cases() -> None:
    check(np.arange, 5, dtype=np.float32)
    check(np.arange, 0, 10, 0)
    check(np.arange, 0.0, 1.0, 0.1)
    check(np.arange, Const(np.int8(3)))
    check(np.arange, Const(np.float32(3)), 5.0)
    check(np.arange, sample(scalar=True), _expect=UnsupportedArguments)  # a traced bound
    check(np.arange, 1, 2, 1, np.int16)
    check(np.arange, start=2, stop=7)
    check(np.arange, stop=5)
    check(np.arange, 0, float("inf"))
    check(np.arange, 10**20)
    check(np.arange, 0, 1, 1j, _expect=UnsupportedArguments)
    check(np.arange)


@examples(60)
@given(num=st.integers(-1, 7), endpoint=st.booleans(), axis=st.integers(-3, 2),
       start_shape=st.sampled_from([(), (3,), (2, 1)]), dtype=st.sampled_from([None, np.int32, np.float32]))
def test_linspace_family(num: int, endpoint: bool, axis: int, start_shape: tuple[int, ...],
                         dtype: object) -> None:
    start = sample(start_shape) if start_shape else 0.5
    check(np.linspace, start, 4.0, num, endpoint, dtype=dtype, axis=axis)
    check(np.logspace, start, 2.0, num, endpoint=endpoint, axis=axis)
    check(np.geomspace, start, 4.0, num, endpoint, dtype=dtype, axis=axis)


def test_linspace_cases() -> None:
    check(np.linspace, 0, 1, 5.0)
    check(np.linspace, 0, 1)
    check(np.linspace, np.float32(0), 1)
    check(np.linspace, Const(np.float32(0)), 1)
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.linspace, 0, 1, 5, retstep=True)


def test_eye_identity() -> None:
    check(np.eye, 3)
    check(np.eye, 3, 4, 1, dtype=np.int8)
    check(np.eye, -1)
    check(np.eye, 3, k=5)
    check(np.identity, 4, np.complex64)
    check(np.identity, 0)


def test_asarray_and_array() -> None:
    a = sample((2, 3))
    check(np.asarray, a)                              # the array itself: a view of argument 0
    check(np.asarray, a, np.float64)
    check(np.asarray, a, np.float32)                  # a new array
    check(np.asarray, a, copy=True)
    check(np.asarray, a, dtype=np.int8, copy=False)   # NumPy's ValueError
    check(np.asanyarray, a)
    check(np.array, a)                                # copies by default
    check(np.array, a, copy=False)
    check(np.array, a, copy=None)
    check(np.array, a, ndmin=4)
    check(np.array, [[1, 2], [3, 4]])
    check(np.array, [[1, 2], [3]])
    check(np.array, [1, 2.5, 3j])
    check(np.array, [a, a])
    check(np.array, [a, sample((3,))])
    check(np.array, [sample((2,), np.int8), [1, 300]])
    check(np.array, [sample((), np.int8), 3])
    check(np.array, [np.float32(1), 2.0])
    check(np.array, [Const(np.float32(1)), 2.0])
    check(np.array, [1, 300], dtype=np.int8)
    check(np.array, [])
    check(np.array, 1.5)
    check(np.array, np.float64(1.5))
    check(np.asarray, [1, 2], copy=False)
    check(np.ascontiguousarray, a)
    check(np.ascontiguousarray, sample(()))
    check(np.ascontiguousarray, a, np.float32)
    check(np.ascontiguousarray, [1, 2])
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.array, ["a", "b"])


def test_arange_argument_forms() -> None:
    check(np.arange, 5, step=0.5)
    check(np.arange, 2, 9, step=Const(np.float32(2)))
    check(np.arange, start=5)
    check(np.arange, 1, 2, start=0)
    check(np.arange, 1, 2, 3, 4)
    check(np.arange, 1, 2, 3, np.float32, like=None)
    check(np.arange, Const(np.int8(3)), Const(np.int16(9)))
    check(np.arange, Const(np.uint8(3)), 9, Const(np.int8(2)))
    check(np.arange, True, 3)


def test_meshgrid_and_indices() -> None:
    x, y, z = sample((3,)), sample((4,), np.int8), sample((2, 1))
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            check(np.meshgrid, x, y, z, indexing=indexing, sparse=sparse)
            check(np.meshgrid, x, y, indexing=indexing, sparse=sparse, copy=False)
    check(np.meshgrid, x)
    check(np.meshgrid)
    check(np.meshgrid, [1, 2], [3.0, 4.0, 5.0])
    check(np.meshgrid, x, y, indexing="zz")
    check(np.indices, (2, 3))
    check(np.indices, (2, 3), sparse=True)
    check(np.indices, (), np.int8)
