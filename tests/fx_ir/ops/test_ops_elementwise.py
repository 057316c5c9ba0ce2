"""Ufuncs, operators and elementwise functions against NumPy: dtypes (NEP 50), shapes, errors.

Every ufunc in the numpy namespace runs on every dtype (pairs for binary ufuncs).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ops_harness import DTYPES, check, examples, sample

from dynamo.fx_ir.ops import Method, UnsupportedArguments, infer_meta
from dynamo.fx_ir.ops.elementwise import numpy_ufuncs
from dynamo.fx_ir.tensor_meta import TensorMeta

UFUNCS = sorted({id(u): u for u in numpy_ufuncs().values()}.values(), key=lambda u: u.__name__)
PLAIN = [u for u in UFUNCS if u.signature is None]


@pytest.mark.parametrize("ufunc", [u for u in PLAIN if u.nin == 1], ids=lambda u: u.__name__)
def test_unary_ufunc_every_dtype(ufunc: np.ufunc) -> None:
    for dtype in DTYPES:
        check(ufunc, sample((2, 3), dtype))
        check(ufunc, sample((), dtype))                 # 0-d array -> NumPy scalar
        check(ufunc, sample(dtype=dtype, scalar=True))  # NumPy scalar -> NumPy scalar
        check(ufunc, sample((0, 1), dtype))


@pytest.mark.parametrize("ufunc", [u for u in PLAIN if u.nin == 2], ids=lambda u: u.__name__)
def test_binary_ufunc_every_dtype_pair(ufunc: np.ufunc) -> None:
    for left in DTYPES:
        for right in DTYPES:
            check(ufunc, sample((2, 3), left), sample((3,), right))
        check(ufunc, sample((), left), sample(dtype=left, scalar=True))
        check(ufunc, sample((4, 1), left), sample((1, 0), left))


PY_SCALARS = [True, False, 0, 1, -1, 2, 127, 128, 255, 256, -129, 300, 2**31, 2**63, -(2**63) - 1,
              2**64, 0.5, -1.5, 1e300, float("inf"), 1j, 2 + 0.5j]


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide,
                                   np.power, np.less, np.equal, np.maximum, np.bitwise_and,
                                   np.left_shift, np.arctan2, np.remainder], ids=lambda u: u.__name__)
def test_nep50_weak_python_scalars(ufunc: np.ufunc) -> None:
    # int8 + 300 raises OverflowError; float32 + 1.0 stays float32; uint8 < -1 is fine
    for dtype in DTYPES:
        for value in PY_SCALARS:
            check(ufunc, sample((3,), dtype), value)
            check(ufunc, value, sample((), dtype))


def test_gufuncs() -> None:
    a, b = sample((2, 3)), sample((3, 4))
    check(np.matmul, a, b)
    check(np.matmul, sample((5, 1, 2, 3)), sample((4, 3, 2)))
    check(np.matmul, sample((3,)), sample((3,)))             # 1-d @ 1-d -> NumPy scalar
    check(np.matmul, sample((3,)), sample((5, 3, 2)))
    check(np.matmul, sample((5, 2, 3)), sample((3,)))
    check(np.matmul, a, sample((4, 2)))                      # core mismatch: ValueError
    check(np.matmul, sample(()), b)                          # 0-d: not enough dimensions
    check(np.matmul, sample((2, 2, 3)), sample((3, 3, 4)))   # loop dims do not broadcast
    check(np.matmul, a, b, out=sample((2, 4)))
    check(np.matmul, a, b, out=sample((2, 5)))
    check(np.matmul, sample((2, 3), np.int8), sample((3, 4), np.float32))
    check(np.vecdot, sample((4, 3)), sample((3,)))
    check(np.vecdot, sample((3,)), sample((4,)))
    check(np.matvec, sample((2, 4, 3)), sample((3,)))
    check(np.vecmat, sample((3,)), sample((3, 4)))


def test_ufunc_keywords() -> None:
    a, b = sample((2, 3)), sample((3,), np.int8)
    check(np.add, a, b, out=sample((2, 3)))
    check(np.add, a, b, out=(sample((2, 3)),))
    check(np.add, b, 1, out=sample((4, 2, 3)))            # inputs broadcast into a larger out
    check(np.add, a, 1, out=sample((3,)))                 # non-broadcastable output operand
    check(np.add, a, b, out=sample((2, 3), np.int8))      # float64 result into int8: UFuncTypeError
    check(np.add, a, b, sample((2, 3)))                   # positional out
    check(np.divmod, a, b, out=(None, sample((2, 3))))
    check(np.modf, a, sample((2, 3)), sample((2, 3)))
    check(np.add, a, b, dtype=np.float32)
    check(np.add, a, b, dtype=np.int8)                    # needs casting='unsafe'
    check(np.add, a, b, dtype=np.int8, casting="unsafe")
    check(np.add, a, b, casting="no")
    check(np.add, a, b, where=sample((2, 1), bool), out=sample((2, 3)))
    check(np.add, b, 1, where=sample((4, 3), bool))       # where broadcasts into the result
    check(np.add, a, b, order="C", subok=True)
    check(np.add, a, b, bogus=1)                          # TypeError, like NumPy
    check(np.add, a)                                      # too few arguments
    check(np.add, a, b, signature=(None, None, np.float32))


def test_ufunc_where_is_nondeterministic_and_out_is_mutated() -> None:
    info_args = (TensorMeta((3,), np.float64), 1.0)
    from dynamo.fx_ir.ops import lookup_function
    add = lookup_function(np.add)
    assert add.effects(*info_args, where=TensorMeta((3,), np.bool_)).nondeterministic
    assert not add.effects(*info_args).nondeterministic
    out = TensorMeta((3,), np.float64)
    effects = add.effects(*info_args, out=out)
    assert effects.view_of == "out" and effects.mutates == ("out",)
    assert add.infer(*info_args, out=out) is out
    divmod_ = lookup_function(np.divmod)
    effects = divmod_.effects(*info_args, out=(None, out))
    assert effects.view_of == (None, ("out", 1)) and effects.mutates == (("out", 1),)


def test_axes_keywords_are_not_modelled() -> None:
    with pytest.raises(UnsupportedArguments):
        infer_meta(np.matmul, TensorMeta((2, 3), np.float64), TensorMeta((3, 2), np.float64),
                   axes=[(0, 1), (0, 1), (0, 1)])


BINARY_OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                    operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
                    operator.lshift, operator.rshift, operator.lt, operator.le, operator.eq,
                    operator.ne, operator.ge, operator.gt, builtins.divmod, builtins.pow]
INPLACE_OPERATORS = [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                     operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
                     operator.ilshift, operator.irshift]


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda f: f.__name__)
def test_binary_operators(op: object) -> None:
    for left in DTYPES:
        for right in DTYPES[::3]:
            check(op, sample((2, 3), left), sample((3,), right))
        for value in (True, 2, -1, 300, 1.5, 1j):
            check(op, sample((3,), left), value)
            check(op, value, sample((3,), left))          # reflected: 2 - a
        check(op, sample((), left), sample((), left))     # 0-d op 0-d -> NumPy scalar
        check(op, sample(dtype=left, scalar=True), sample((2,), left))
    check(op, sample((3,)), sample((4,)))                 # ValueError, even for ==
    check(op, sample((3,)), [1, 2, 3])                    # constant lists are operands
    check(op, [1.0, 2.0, 3.0], sample((3,)))


@pytest.mark.parametrize("op", INPLACE_OPERATORS, ids=lambda f: f.__name__)
def test_inplace_operators(op: object) -> None:
    # same_kind casting back into the left operand: int8 += 1.5 raises UFuncTypeError
    for left in DTYPES:
        for right in DTYPES[::2]:
            check(op, sample((2, 3), left), sample((3,), right))
        for value in (True, 3, 300, -1, 1.5, 1j):
            check(op, sample((3,), left), value)
        check(op, sample((), left), sample((), left))     # a 0-d array is written in place
        check(op, sample(dtype=left, scalar=True), sample((2,), left))  # a NumPy scalar is not
    check(op, sample((3,)), sample((2, 3)))               # the result would not fit: ValueError


def test_inplace_effects() -> None:
    from dynamo.fx_ir.ops import lookup_function
    iadd = lookup_function(operator.iadd)
    a = TensorMeta((3,), np.float64)
    assert iadd.infer(a, 1.0) is a
    assert iadd.effects(a, 1.0).mutates == (0,) and iadd.effects(a, 1.0).view_of == 0
    s = TensorMeta((), np.float64, scalar=True)
    assert iadd.effects(s, a).mutates == () and iadd.infer(s, a) == TensorMeta((3,), np.float64)


def test_matmul_operators() -> None:
    check(operator.matmul, sample((2, 3)), sample((3, 4)))
    check(operator.matmul, sample((3,)), sample((3,)))
    check(operator.matmul, sample((2, 3)), sample((2, 3)))
    check(operator.matmul, sample((2, 3)), 2.0)
    check(operator.imatmul, sample((2, 3)), sample((3, 3)))
    check(operator.imatmul, sample((2, 3)), sample((3, 4)))   # result shape differs: ValueError
    check(operator.imatmul, sample((3,)), sample((3, 3)))
    check(operator.imatmul, sample((3,)), sample((3,)))       # NumPy's own ValueError


@pytest.mark.parametrize("op", [operator.neg, operator.pos, operator.abs, builtins.abs,
                                operator.invert, operator.inv], ids=lambda f: f.__name__)
def test_unary_operators(op: object) -> None:
    for dtype in DTYPES:
        check(op, sample((2, 3), dtype))
        check(op, sample((), dtype))
        check(op, sample(dtype=dtype, scalar=True))


def test_operators_without_arrays_are_plain_python() -> None:
    with pytest.raises(UnsupportedArguments):
        infer_meta(operator.add, 1, 2)
    with pytest.raises(UnsupportedArguments):
        infer_meta(operator.eq, TensorMeta((3,), np.float64), None)


@examples(60)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4, max_side=3),
       dtypes=st.lists(st.sampled_from(DTYPES), min_size=3, max_size=3))
def test_broadcasting_matches_numpy(shapes: object, dtypes: list[np.dtype]) -> None:
    a, b, c = (sample(s, d) for s, d in zip(shapes.input_shapes, dtypes))
    check(np.add, a, b)
    check(np.where, a.astype(bool), b, c)
    check(np.clip, a, b, c)


@examples(60)
@given(left=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       right=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
def test_incompatible_broadcasting_raises_like_numpy(left: tuple[int, ...], right: tuple[int, ...]) -> None:
    check(np.multiply, sample(left), sample(right))
    check(operator.iadd, sample(left), sample(right))


def test_elementwise_functions() -> None:
    a, b = sample((2, 3)), sample((3,), np.int16)
    check(np.where, a > 1, a, b)
    check(np.where, sample((), bool), sample(()), 1)     # 0-d where stays a 0-d array
    check(np.where, a > 1, a)                            # NumPy's ValueError
    from dynamo.fx_ir.ops import DataDependentShape
    check(np.where, a > 1, _expect=DataDependentShape)
    for dtype in DTYPES:
        check(np.clip, sample((3,), dtype), 1, 3)
        check(np.clip, sample((3,), dtype), 1.5, None)
        check(np.round, sample((2, 3), dtype), 1)
        check(Method("round"), sample((2, 3), dtype))
        check(np.isclose, sample((2, 3), dtype), sample((3,), dtype))
        check(np.nan_to_num, sample((2, 3), dtype))
        check(np.angle, sample((2,), dtype))
        check(np.isreal, sample((2,), dtype))
        check(np.iscomplex, sample((2,), dtype))
        check(Method("conj"), sample((2,), dtype))
    check(np.clip, sample((3,), np.int8), 0, 300)         # NEP 50 in clip bounds
    check(np.clip, a, min=0.5, max=1.5)
    check(Method("clip"), a, 0.5, 1.5)
    check(Method("clip"), a, max=1.0, out=sample((2, 3)))
    check(np.round, sample(()), 2)
    check(np.round, sample(scalar=True))
    check(np.round, a, out=sample((2, 3)))
    check(np.fix, a)
    check(np.sinc, a)
    check(np.isposinf, a)
    check(np.isneginf, a)
    check(np.i0, a)


def test_symbolic_python_int_operands() -> None:
    import sympy
    from dynamo.fx_ir.ops import HintOracle, SymbolicDecisionNeeded, using_oracle
    n = sympy.Symbol("n", integer=True, positive=True)
    f32 = TensorMeta((3,), np.float32)
    assert infer_meta(np.add, f32, n) == f32                      # a float array: any int fits
    i8 = TensorMeta((3,), np.int8)
    with pytest.raises(SymbolicDecisionNeeded):                    # does n fit in int8?
        infer_meta(np.add, i8, n)
    with using_oracle(HintOracle({n: 5})) as oracle:
        assert infer_meta(np.add, i8, n) == i8
        assert any(str(g) == "n <= 127" or "127" in str(g) for g in oracle.guards)
    with using_oracle(HintOracle({n: 500})), pytest.raises(UnsupportedArguments):
        infer_meta(np.add, i8, n)


def test_scalar_type_constructors() -> None:
    from dynamo.fx_ir.ops.elementwise import numpy_scalar_types
    for scalar_type in numpy_scalar_types():
        for dtype in DTYPES[::2]:
            check(scalar_type, sample((2, 3), dtype))      # an array in: a cast array (or itself)
            check(scalar_type, sample((), dtype))          # 0-d in: a NumPy scalar
            check(scalar_type, sample(dtype=dtype, scalar=True))
        for value in (True, 3, 300, -1, 2.5, 1j, [1, 2]):
            check(scalar_type, value)
    check(np.float64, sample((3,)))                          # the very same array


def test_conj_method_out() -> None:
    check(Method("conj"), sample((3,), np.complex128), sample((3,), np.complex128))
    check(Method("conjugate"), sample((3,), np.complex64), out=sample((3,), np.complex128))
    check(Method("conj"), sample((3,)), out=sample((3,)))
