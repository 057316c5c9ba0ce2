"""a[key] and a[key] = v against NumPy on random keys: ints, slices, None, Ellipsis, arrays.

Covers constant and traced boolean masks and mixed basic/advanced indices (adjacent or not).
"""
from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ops_harness import check, examples, sample

from dynamo.fx_ir.ops import DataDependentShape, Method, infer_meta, lookup_function
from dynamo.fx_ir.tensor_meta import TensorMeta


def _item(draw: st.DrawFn, traced: bool) -> object:
    kind = draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis", "list", "array",
                                 "bool_list", "bool", "int0d", "npint"] + (["mask"] if traced else [])))
    if kind == "int":
        return draw(st.integers(-4, 4))
    if kind == "slice":
        bound = st.one_of(st.none(), st.integers(-5, 5))
        return slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3, -1, -2])))
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "list":  # constant values: the rule checks their bounds
        shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=3))
        return np.array(draw(st.lists(st.integers(-4, 3), min_size=int(np.prod(shape)),
                                      max_size=int(np.prod(shape))))).reshape(shape).tolist()
    if kind == "array":  # traced values: zeros, always in bounds of a non-empty axis
        return np.zeros(draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3)), np.int64)
    if kind == "bool_list":
        return draw(st.lists(st.booleans(), min_size=0, max_size=4))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "int0d":
        return np.array(0)
    if kind == "npint":
        return np.int64(0)
    return np.ones(draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3)), bool)


@st.composite
def index_case(draw: st.DrawFn, traced: bool = False) -> tuple[np.ndarray, object]:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4))
    items = draw(st.lists(st.builds(lambda: None).flatmap(lambda _: st.just(None)), max_size=0))
    n = draw(st.integers(0, 4))
    items = [_item(draw, traced) for _ in range(n)]
    key: object = tuple(items)
    if n == 1 and draw(st.booleans()):
        key = items[0]
    return sample(shape), key


def _has_mask(key: object) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(i, np.ndarray) and i.dtype == bool for i in items)


@examples(300)
@given(case=index_case())
def test_getitem_matches_numpy(case: tuple[np.ndarray, object]) -> None:
    a, key = case
    check(operator.getitem, a, key)


@examples(100)
@given(case=index_case(traced=True))
def test_getitem_with_traced_masks(case: tuple[np.ndarray, object]) -> None:
    a, key = case
    check(operator.getitem, a, key, _expect=DataDependentShape if _has_mask(key) else None)


@examples(150)
@given(case=index_case(), value_kind=st.sampled_from(["scalar", "same", "lead1", "row", "bad", "list"]))
def test_setitem_matches_numpy(case: tuple[np.ndarray, object], value_kind: str) -> None:
    a, key = case
    try:
        target = a[key]
    except Exception:
        target = None
    shape = np.shape(target) if target is not None else (2,)
    value = {"scalar": 1.5, "same": sample(shape), "lead1": sample((1, *shape)),
             "row": sample(shape[-1:]), "bad": sample((7,)), "list": [1.0] * (shape[-1] if shape else 1)}
    check(operator.setitem, a, key, value[value_kind])


def test_getitem_cases() -> None:
    a = sample((2, 3, 4))
    b = sample((5, 3, 4))
    check(operator.getitem, a, (slice(None), 0, [0, 1]))          # adjacent: stays in place
    check(operator.getitem, a, (0, slice(None), [0, 1]))          # separated: goes first
    check(operator.getitem, b, (slice(None), [0, 1, 2], None, [0, 1, 2]))  # None separates
    check(operator.getitem, b, (slice(None), [0, 1], Ellipsis, [0, 1]))    # so does an empty ...
    check(operator.getitem, a, ([0, 1], [0, 1, 2]))                # broadcast IndexError
    check(operator.getitem, a, ([[0], [1]], [0, 1, 2]))
    check(operator.getitem, a, np.ones((2, 3, 4), bool).tolist())  # constant mask, full shape
    check(operator.getitem, a, ([True, False], slice(None), [True, False, True, False]))
    check(operator.getitem, a, [True, False, True])                # mask length mismatch
    check(operator.getitem, a, 1.0)
    check(operator.getitem, a, np.zeros(2))                         # float index array
    check(operator.getitem, a, [1.0])
    check(operator.getitem, a, "x")
    check(operator.getitem, a, (Ellipsis, Ellipsis))
    check(operator.getitem, a, (0, 0, 0, 0))
    check(operator.getitem, a, ())
    check(operator.getitem, a, [])
    check(operator.getitem, sample(()), ())                          # 0-d[()] is a NumPy scalar
    check(operator.getitem, sample(()), Ellipsis)
    check(operator.getitem, sample(()), None)
    check(operator.getitem, sample(()), 0)
    check(operator.getitem, np.float64(1.0), ())
    check(operator.getitem, np.float64(1.0), None)
    check(operator.getitem, sample((0, 3)), (slice(None), [5]))
    check(operator.getitem, sample((3, 0)), ([5], slice(None)))
    check(operator.getitem, sample((0, 3)), (slice(None), 5))
    check(operator.getitem, sample((0, 3)), ([], [0]))
    check(operator.getitem, a, (np.array(1), slice(None)))          # 0-d array index: a copy
    check(operator.getitem, a, (np.int64(1), slice(None)))          # NumPy scalar: a view
    check(operator.getitem, a, slice(1, np.int64(3)))
    check(operator.getitem, a, slice(1, 3.0))


def test_getitem_effects() -> None:
    getitem = lookup_function(operator.getitem)
    a = TensorMeta((4, 5), np.float64)
    assert getitem.effects(a, (slice(1, None), None)).view_of == 0
    assert getitem.effects(a, ([0, 1],)).view_of is None
    assert getitem.effects(a, (1, 2)).view_of is None
    assert getitem.infer(a, (1, 2)) == TensorMeta((), np.float64, scalar=True)
    with pytest.raises(DataDependentShape):
        getitem.infer(a, TensorMeta((4, 5), np.bool_))
    with pytest.raises(DataDependentShape):
        getitem.infer(a, slice(TensorMeta((), np.int64, scalar=True), None))


def test_setitem_cases() -> None:
    check(operator.setitem, sample((3,), np.int8), slice(None), [1, 300])
    check(operator.setitem, sample((3,), np.int8), slice(None), [1, 2, 300])
    check(operator.setitem, sample((3,), np.int8), 0, 300)
    check(operator.setitem, sample((3,), np.int8), 0, 1.5)
    check(operator.setitem, sample((3,)), 0, 1 + 2j)
    check(operator.setitem, sample((2, 3)), (0, 0), sample((1,)))   # an element takes a scalar
    check(operator.setitem, sample((2, 3)), (0, 0), sample(()))
    check(operator.setitem, sample((2, 3)), 0, sample((2, 1, 3)))
    check(operator.setitem, sample((2, 3)), ([0, 1], 0), sample((2,)))
    check(operator.setitem, sample((2, 3)), np.ones((2, 3), bool), 0.0)   # traced mask, scalar value
    check(operator.setitem, sample((2, 3)), (slice(None), np.ones(3, bool)), sample((1,)))
    check(operator.setitem, sample((2, 3)), np.ones((2, 2), bool), 0.0)   # mask of the wrong shape
    check(operator.setitem, sample((2, 3)), np.ones((2, 3), bool), sample((6,)),
          _expect=DataDependentShape)
    check(operator.setitem, np.float64(1.0), (), 2.0)
    info = lookup_function(operator.setitem)
    assert info.effects(TensorMeta((3,), np.float64), 0, 1.0).mutates == (0,)


def test_take() -> None:
    a = sample((3, 4))
    check(np.take, a, [0, 2])
    check(np.take, a, [[0, 2]], axis=1)
    check(np.take, a, [5], axis=1)
    check(np.take, a, [-13])
    check(np.take, a, 1, axis=0)
    check(np.take, a, np.zeros((2, 2), np.int64), axis=0)
    check(Method("take"), a, [1, 2], 1)
    check(np.take_along_axis, a, np.zeros((3, 1), np.int64), axis=1)
    check(np.take_along_axis, a, np.zeros((1, 4), np.int64), axis=0)
    check(np.take_along_axis, a, np.zeros((12,), np.int64), axis=None)


def test_data_dependent_functions() -> None:
    a = TensorMeta((3, 4), np.float64)
    for fn in (np.nonzero, np.argwhere, np.flatnonzero, np.unique, np.trim_zeros):
        with pytest.raises(DataDependentShape):
            infer_meta(fn, a)
    with pytest.raises(DataDependentShape):
        infer_meta("nonzero", a)


def test_ufunc_at() -> None:
    check(np.add.at, sample((5,)), [0, 1, 1], 1.0)
    check(np.add.at, sample((5,)), [0, 1, 1], sample((3,)))
    check(np.add.at, sample((5,)), [0, 1, 1], sample((2,)))
    check(np.add.at, sample((5,), np.int8), [0, 1], 1.5)
    check(np.negative.at, sample((5,)), [0, 1])
    check(np.add.at, sample((2, 3)), (slice(None), [0, 2]), sample((2, 1)))


def test_searchsorted_interp_fill_diagonal() -> None:
    a = np.sort(sample((5,)))
    check(np.searchsorted, a, 1.0)
    check(np.searchsorted, a, sample((2, 3)), side="right")
    check(np.searchsorted, a, [1.0, 2.0], sorter=np.arange(5))
    check(np.searchsorted, sample((2, 3)), 1.0)
    check(Method("searchsorted"), a, sample((4,)))
    check(np.interp, sample((2, 3)), [0.0, 1.0, 2.0], [1.0, 2.0, 3.0])
    check(np.interp, 1.5, a, sample((5,), np.complex128))
    check(np.interp, sample((3,)), [0.0, 1.0], [1.0, 2.0, 3.0])
    check(np.fill_diagonal, sample((3, 4)), 5.0)
    check(np.fill_diagonal, sample((3, 3, 3)), sample((3,)))
    check(np.fill_diagonal, sample((3, 3, 2)), 1.0)
    check(np.fill_diagonal, sample((3,)), 1.0)
    check(np.fill_diagonal, sample((3, 3), np.int8), 300)
