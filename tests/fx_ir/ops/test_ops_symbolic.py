"""Shape rules on sympy sizes: broadcasting, reductions, reshape -1, concatenate, slicing, matmul.

Undecidable questions go to the size oracle: StructuralOracle raises, HintOracle records guards.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest
import sympy

from dynamo.fx_ir.ops import (HintOracle, SizeOracle, StructuralOracle, SymbolicDecisionNeeded,
                              current_oracle, infer_meta, using_oracle)
from dynamo.fx_ir.ops.shapes import broadcast_shapes, slice_length
from dynamo.fx_ir.tensor_meta import TensorMeta

s0, s1, s2 = sympy.symbols("s0 s1 s2", integer=True, positive=True)
F = np.float64


def T(*shape: object, dtype: object = F) -> TensorMeta:
    return TensorMeta(shape, dtype)


def shape_of(fn: object, *args: object, **kwargs: object) -> tuple[object, ...]:
    return infer_meta(fn, *args, **kwargs).shape


def test_broadcasting() -> None:
    assert shape_of(np.add, T(s0, 3), T(1, 3)) == (s0, 3)
    assert shape_of(np.add, T(s0, 3), T(s0, 1)) == (s0, 3)
    assert shape_of(np.add, T(s0), 2.0) == (s0,)
    assert shape_of(np.multiply, T(s0, s1), T(s0, s1)) == (s0, s1)
    with pytest.raises(SymbolicDecisionNeeded) as info:
        infer_meta(np.add, T(s0), T(3))       # s0 == 1 or s0 == 3? only the shape env knows
    assert info.value.condition == sympy.Eq(s0, 1)
    with using_oracle(HintOracle({s0: 3})) as oracle:
        assert shape_of(np.add, T(s0), T(3)) == (3,)
        assert oracle.guards == [sympy.Ne(s0, 1), sympy.Eq(s0, 3)]
    with using_oracle(HintOracle({s0: 1})) as oracle:
        assert shape_of(np.add, T(s0), T(3)) == (3,)
        assert oracle.guards == [sympy.Eq(s0, 1)]
    with using_oracle(HintOracle({s0: 4})), pytest.raises(ValueError):
        infer_meta(np.add, T(s0), T(3))


def test_reductions_and_scans() -> None:
    assert shape_of(np.sum, T(s0, 3), axis=0) == (3,)
    assert shape_of(np.sum, T(s0, 3), axis=0, keepdims=True) == (1, 3)
    assert infer_meta(np.mean, T(s0, 3)) == TensorMeta((), F, scalar=True)
    assert shape_of(np.cumsum, T(s0, 3)) == (3 * s0,)
    assert shape_of(np.argmax, T(s0, s1), axis=-1) == (s0,)
    assert shape_of(np.max, T(s0, 3), axis=0) == (3,)    # s0 >= 1: never an empty axis
    assert shape_of(np.linalg.norm, T(s0, 3), axis=1) == (s0,)


def test_reshape() -> None:
    assert shape_of(np.reshape, T(s0, 3), (-1,)) == (3 * s0,)
    assert shape_of(np.reshape, T(s0, 3), (3, -1)) == (3, s0)
    assert shape_of(np.reshape, T(3 * s0), (s0, -1)) == (s0, 3)
    assert shape_of("reshape", T(s0, s1), s1, s0) == (s1, s0)
    assert shape_of("ravel", T(s0, s1, 2)) == (2 * s0 * s1,)
    with pytest.raises(SymbolicDecisionNeeded):
        infer_meta(np.reshape, T(s0), (2, -1))               # is s0 even?
    with using_oracle(HintOracle({s0: 10})) as oracle:
        assert shape_of(np.reshape, T(s0), (2, -1)) == (2, sympy.floor(s0 / 2))
        assert oracle.guards == [sympy.Eq(2 * sympy.floor(s0 / 2), s0)]
    with using_oracle(HintOracle({s0: 7})), pytest.raises(ValueError):
        infer_meta(np.reshape, T(s0), (2, -1))
    with using_oracle(HintOracle({s0: 6})), pytest.raises(ValueError):
        infer_meta(np.reshape, T(s0, 3), (s0, 2))


def test_concatenate_and_stack() -> None:
    assert shape_of(np.concatenate, [T(s0, 3), T(s1, 3), T(2, 3)]) == (s0 + s1 + 2, 3)
    assert shape_of(np.concatenate, [T(s0, 3), T(s0, 4)], axis=1) == (s0, 7)
    assert shape_of(np.concatenate, [T(s0, 3), T(s1, 4)], axis=None) == (3 * s0 + 4 * s1,)
    assert shape_of(np.stack, [T(s0, 3), T(s0, 3)], axis=1) == (s0, 2, 3)
    assert shape_of(np.vstack, [T(s0), T(s0)]) == (2, s0)
    with pytest.raises(SymbolicDecisionNeeded):
        infer_meta(np.concatenate, [T(s0, 3), T(s1, 4)], axis=1)
    assert [m.shape for m in infer_meta(np.split, T(2 * s0), 2)] == [(s0,), (s0,)]


def test_slicing() -> None:
    a = T(s0, 3)
    assert shape_of(operator.getitem, a, slice(1, None)) == (s0 - 1, 3)   # s0 - 1 >= 0 is known
    assert shape_of(operator.getitem, a, slice(None, None, -1)) == (s0, 3)
    assert shape_of(operator.getitem, a, slice(None, None, 2)) == (sympy.ceiling(s0 / 2), 3)
    assert shape_of(operator.getitem, a, (0, slice(None))) == (3,)        # s0 > 0: in bounds
    assert shape_of(operator.getitem, a, (None, Ellipsis, 1)) == (1, s0)
    assert shape_of(operator.getitem, a, (T(s1, dtype=np.int64), slice(None))) == (s1, 3)
    with pytest.raises(SymbolicDecisionNeeded) as info:
        infer_meta(operator.getitem, a, slice(1, -1))
    assert info.value.condition == sympy.Ge(s0 - 2, 0)
    with using_oracle(HintOracle({s0: 10})) as oracle:
        assert shape_of(operator.getitem, a, slice(1, -1)) == (s0 - 2, 3)  # no Max(): a guard
        assert oracle.guards == [sympy.Ge(s0 - 2, 0)]
        n = sympy.Symbol("n", integer=True, positive=True)
        with using_oracle(HintOracle({s0: 10, n: 8})):
            assert shape_of(operator.getitem, a, slice(None, n // 2)) == (sympy.floor(n / 2), 3)
        length = shape_of(operator.getitem, a, slice(s0 - 2, s0))[0]
        assert length == 2 and type(length) is int                        # cancels to a plain int
    with using_oracle(HintOracle({s0: 1})):
        assert shape_of(operator.getitem, a, slice(1, -1)) == (0, 3)
        with pytest.raises(IndexError):
            infer_meta(operator.getitem, a, 5)


def test_matmul_and_linalg() -> None:
    assert shape_of(operator.matmul, T(s0, s1), T(s1, s2)) == (s0, s2)
    assert shape_of(np.matmul, T(7, s0, s1), T(s1,)) == (7, s0)
    assert shape_of(np.dot, T(s0, s1), T(s1)) == (s0,)
    assert shape_of(np.einsum, "ij,jk->ik", T(s0, s1), T(s1, s2)) == (s0, s2)
    assert shape_of(np.outer, T(s0), T(s1)) == (s0, s1)
    with pytest.raises(ValueError):
        infer_meta(operator.matmul, T(s0, 3), T(4, 2))
    with pytest.raises(SymbolicDecisionNeeded):
        infer_meta(operator.matmul, T(s0, 3), T(s1, 2))


def test_views_creation_and_attributes() -> None:
    assert shape_of(np.transpose, T(s0, s1, 3)) == (3, s1, s0)
    assert shape_of(np.broadcast_to, T(s0, 1), (s0, s1)) == (s0, s1)
    assert shape_of(np.diagonal, T(s0, s0)) == (s0,)
    assert shape_of(np.squeeze, T(s0, 1), 1) == (s0,)
    with pytest.raises(SymbolicDecisionNeeded):
        infer_meta(np.squeeze, T(s0, 1))                     # would squeeze s0 if it were 1
    assert shape_of(np.tile, T(s0), 2) == (2 * s0,)
    assert shape_of(np.zeros, (s0, 3)) == (s0, 3)
    assert shape_of(np.arange, s0) == (s0,)
    assert shape_of(np.arange, 1, s0) == (s0 - 1,)
    assert shape_of(np.linspace, 0.0, 1.0, s0) == (s0,)
    assert shape_of(np.eye, s0) == (s0, s0)
    assert shape_of(np.array, [T(s0), T(s0)]) == (2, s0)
    assert infer_meta("shape", T(s0, 3)) == (s0, 3)
    assert infer_meta("size", T(s0, 3)) == 3 * s0
    assert infer_meta("nbytes", T(s0, 3)) == 24 * s0
    assert infer_meta(len, T(s0, 3)) == s0


STATIC_CALLS = [
    (np.add, (T(2, 3), T(3))), (np.sum, (T(2, 3),)), (np.reshape, (T(2, 3), (-1, 2))),
    (operator.getitem, (T(5, 3), slice(1, -1, 2))), (np.concatenate, ([T(2, 3), T(4, 3)],)),
    (np.arange, (0.0, 1.0, 0.1)), (np.linspace, (0, 1, 7)), (np.split, (T(6), 3)),
    (np.diagonal, (T(3, 5), 1)), (np.cumsum, (T(2, 3),)), (np.tile, (T(2), (2, 3))),
]


@pytest.mark.parametrize(("fn", "args"), STATIC_CALLS, ids=[getattr(c[0], "__name__", "") for c in STATIC_CALLS])
def test_static_shapes_are_plain_ints(fn: object, args: tuple[object, ...]) -> None:
    result = infer_meta(fn, *args)
    metas = result if isinstance(result, list | tuple) else [result]
    for meta in metas:
        assert all(type(d) is int for d in meta.shape), meta.shape


def test_oracle_interface() -> None:
    assert isinstance(current_oracle(), StructuralOracle)
    assert broadcast_shapes((s0 + 1 - 1, 3), (s0, 1)) == (s0, 3)   # structurally equal: no question

    class Recording(SizeOracle):
        def __init__(self) -> None:
            self.asked: list[object] = []

        def decide_equal(self, a: object, b: object) -> bool:
            self.asked.append(sympy.Eq(a, b))
            return True

        def decide_nonnegative(self, a: object) -> bool:
            self.asked.append(sympy.Ge(a, 0))
            return True

    oracle = Recording()
    with using_oracle(oracle):
        assert current_oracle() is oracle
        assert shape_of(np.add, T(s0), T(s1)) == (s0,)
        assert slice_length(s0, 1, -1, None) == s0 - 2
    assert current_oracle() is not oracle
    assert oracle.asked[0] == sympy.Eq(s1, 1)
    with using_oracle(HintOracle({})), pytest.raises(SymbolicDecisionNeeded):
        infer_meta(np.add, T(s0), T(3))                    # no hint for s0: still undecided
