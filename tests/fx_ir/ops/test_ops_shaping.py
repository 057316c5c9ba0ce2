"""Views (reshape, transpose, squeeze, broadcast_to, flip, split, ...) and copies against NumPy.

Aliasing is checked with np.shares_memory on every result: views must share, copies must not.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ops_harness import DTYPES, check, examples, sample

from dynamo.fx_ir.ops import Attribute, Method, UnsupportedArguments, infer_meta, lookup_function
from dynamo.fx_ir.tensor_meta import TensorMeta


@examples(60)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4), data=st.data())
def test_reshape_matches_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    a = sample(shape, data.draw(st.sampled_from(DTYPES)))
    target = list(data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)))
    if target and data.draw(st.booleans()):
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    check(np.reshape, a, tuple(target))
    check(Method("reshape"), a, *target)
    check(Method("reshape"), a, target)
    check(Method("reshape"), a, a.size)
    check(np.ravel, a)
    check(Method("ravel"), a)
    check(Method("flatten"), a)


def test_reshape_cases() -> None:
    a = sample((2, 3))
    check(np.reshape, a, (-1, -1))
    check(np.reshape, a, (4, -1))
    check(np.reshape, a, (-2, 3))             # NumPy reads any negative size as unknown
    check(np.reshape, sample((0, 3)), (0, -1))
    check(np.reshape, a, (6,), copy=True)
    check(Method("reshape"), a, 2.0, 3)
    check(Method("reshape"), a, (2, 3), 3)
    check(Method("reshape"), np.float64(2.0), 1)
    check(Method("reshape"), sample(()), ())
    with pytest.raises(UnsupportedArguments):
        infer_meta("reshape", TensorMeta((6,), np.float64), 2, 3, order="F")
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.reshape, TensorMeta((6,), np.float64), (2, 3), copy=False)
    info = lookup_function(np.reshape)
    assert info.layout_view and info.effects(TensorMeta((6,), np.float64), (2, 3)).view_of == 0


@examples(40)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3), data=st.data())
def test_axis_permutations(shape: tuple[int, ...], data: st.DataObject) -> None:
    a = sample(shape)
    n = len(shape)
    perm = data.draw(st.permutations(range(n)))
    axis = data.draw(st.integers(-n - 1, n))
    other = data.draw(st.integers(-n - 1, n))
    check(np.transpose, a)
    check(np.transpose, a, perm)
    check(np.transpose, a, [p - n for p in perm])
    check(Method("transpose"), a, *perm)
    check(Method("transpose"), a, tuple(perm))
    check(Method("transpose"), a)
    check(Attribute("T"), a)
    check(Attribute("mT"), a)
    check(np.matrix_transpose, a)
    check(np.swapaxes, a, axis, other)
    check(Method("swapaxes"), a, axis, other)
    check(np.moveaxis, a, axis, other)
    check(np.moveaxis, a, (0, axis) if n > 1 else axis, (other, -1) if n > 1 else other)
    check(np.rollaxis, a, axis, other)
    check(np.expand_dims, a, axis)
    check(np.expand_dims, a, (axis, other))
    check(np.squeeze, a)
    check(np.squeeze, a, axis)
    check(Method("squeeze"), a, axis)
    check(np.flip, a)
    check(np.flip, a, axis)
    check(np.fliplr, a)
    check(np.flipud, a)
    check(np.diagonal, a, axis, 0, 1)
    check(Method("diagonal"), a, axis, 0, -1)
    check(np.atleast_1d, a)
    check(np.atleast_2d, a)
    check(np.atleast_3d, a)
    check(np.atleast_3d, a, sample((2,)), 1.0)


def test_transpose_errors_and_scalars() -> None:
    check(np.transpose, sample((2, 3)), (0, 0))
    check(np.transpose, sample((2, 3)), (0,))
    check(Attribute("T"), np.float64(1.0))
    check(np.transpose, np.float32(1.0))
    check(np.squeeze, np.float64(1.0))
    check(np.expand_dims, np.int8(1), 0)


@examples(40)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       target=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
def test_broadcasting_views(shapes: object, target: tuple[int, ...]) -> None:
    a, b = (sample(s) for s in shapes.input_shapes)
    check(np.broadcast_to, a, target)
    check(np.broadcast_to, a, shapes.result_shape)
    check(np.broadcast_arrays, a, b)
    check(np.broadcast_arrays, a, sample(target))


def test_broadcast_cases() -> None:
    check(np.broadcast_to, sample((3,)), (-1,))
    check(np.broadcast_to, 1.5, (2, 3))
    check(np.broadcast_to, sample((3,)), 3)
    check(np.broadcast_arrays, sample((3,)), 2)


def test_split() -> None:
    a = sample((6, 4))
    for fn in (np.split, np.array_split):
        check(fn, a, 3)
        check(fn, a, 4)                       # split: ValueError; array_split: uneven pieces
        check(fn, a, [1, 4])
        check(fn, a, [-2, 10, 3])
        check(fn, a, 2, axis=1)
        check(fn, a, 0)
        check(fn, sample((0,)), 3)
    check(np.hsplit, a, 2)
    check(np.hsplit, sample((6,)), 3)
    check(np.vsplit, a, [2])
    check(np.vsplit, sample((6,)), 2)
    check(np.dsplit, sample((2, 2, 4)), 2)
    check(np.unstack, a)
    check(np.unstack, a, axis=1)


def test_copies() -> None:
    for dtype in DTYPES:
        a = sample((2, 3), dtype)
        check(np.copy, a)
        check(Method("copy"), a)
        check(Method("astype"), a, np.float32)
        check(Method("astype"), a, dtype, copy=False)          # the array itself
        check(Method("astype"), a, np.int8, casting="safe")
        check(np.sort, a)
        check(np.sort, a, axis=None)
        check(np.argsort, a, axis=0)
        check(Method("argsort"), a)
        check(Method("sort"), a.copy())
        check(np.roll, a, 2)
        check(np.roll, a, (1, 2), axis=(0, 1))
        check(np.diff, a)
        check(np.diff, a, n=2, axis=0)
        check(np.diff, a, n=0)
        check(np.diff, a, prepend=a[:, :1], append=0)
        check(np.tril, a)
        check(np.triu, a, 1)
        check(Method("fill"), a.copy(), 1)
        check(np.copyto, a.copy(), sample((3,), dtype))
        check(Method("astype"), np.float64(1.0), dtype)
    check(np.astype, sample((2, 3)), np.int8)
    check(np.astype, sample((2, 3)), np.float64, copy=False)
    check(np.tril, sample((3,)))
    check(np.diff, sample(()))
    check(Method("fill"), sample((3,), np.int8), 300)
    check(Method("fill"), sample((3,)), sample((2,)))
    check(np.copyto, sample((3,), np.int8), sample((3,)))        # same_kind: TypeError
    check(np.copyto, sample((3,)), sample((4,)))
    check(np.copyto, sample((2, 3)), sample((3,)), where=sample((2, 1), bool))
    with pytest.raises(UnsupportedArguments):
        infer_meta("flatten", TensorMeta((2, 3), np.float64), "F")


def test_joining() -> None:
    a, b = sample((2, 3)), sample((4, 3), np.int8)
    check(np.concatenate, [a, b])
    check(np.concatenate, (a, b), axis=None)
    check(np.concatenate, [a, b], axis=1)
    check(np.concatenate, [a, sample((2,))])
    check(np.concatenate, [1.0, 2.0])
    check(np.concatenate, [a, b], out=sample((6, 3)))
    check(np.concatenate, [a, b], out=sample((5, 3)))
    check(np.concatenate, [a, b], dtype=np.float32)
    check(np.concatenate, [a, [[1, 2, 3]]])
    check(np.concat, [a, b], axis=-2)
    check(np.stack, [a, a, a], axis=-1)
    check(np.stack, [a, b])
    check(np.stack, [])
    check(np.stack, [a, a], out=sample((2, 2, 3)))
    check(np.hstack, [a, sample((2, 1))])
    check(np.hstack, [sample(()), sample((2,))])
    check(np.vstack, [a, sample((3,))])
    check(np.dstack, [a, a])
    check(np.column_stack, [sample((3,)), sample((3, 2)), sample((3,), np.int8)])
    check(np.column_stack, [sample((3,)), 1.0])
    check(np.tile, a, 2)
    check(np.tile, a, (2, 1, 2))
    check(np.tile, sample(()), (3,))
    check(np.tile, a, (-1,))
    check(np.repeat, a, 2)
    check(np.repeat, a, 2, axis=1)
    check(np.repeat, a, [1, 2], axis=0)
    check(np.repeat, a, [1, 2, 3])
    check(np.repeat, a, -1)
    check(Method("repeat"), a, 3, 0)


def test_joining_traced_sequence_not_modelled() -> None:
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.concatenate, TensorMeta((2, 3), np.float64))
