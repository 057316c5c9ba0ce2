"""Methods of ufunc objects: np.add.reduce, np.maximum.accumulate, np.multiply.outer, np.add.at.

np.add.reduce is a new bound method at every access, so rows are built per (ufunc, method).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor_meta import TensorMeta
from .errors import UnsupportedArguments
from .indexing import index_result_shape, parse_index
from .operands import array_meta, check_out, is_ndarray, operand_shape, out_effects
from .promotion import ArrayOut, meta_of, probe
from .registry import REGISTRY, OpInfo, OpKind
from .shapes import broadcast_to_shape, reduced_shape, reduction_axes, shape_str
from .symbolic import is_zero

_NoValue = np._NoValue


def _result(probed: Any, shape: Any) -> TensorMeta:
    if not isinstance(probed, ArrayOut):
        raise UnsupportedArguments("expected one array result")
    return probed.meta(shape)


def _reduce(ufunc: np.ufunc) -> Any:
    def infer(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False,
              initial: Any = _NoValue, where: Any = True) -> TensorMeta:
        extra = {} if initial is _NoValue else {"initial": initial}
        probed = probe(ufunc.reduce, array, axis, dtype, None, keepdims, where=where, **extra)
        shape = operand_shape(array)
        axes = reduction_axes(axis, len(shape))
        if ufunc.identity is None and initial is _NoValue and any(is_zero(shape[i]) for i in axes):
            raise ValueError(f"zero-size array to reduction operation {ufunc.__name__} which has no identity")
        result = reduced_shape(shape, axes, bool(keepdims))
        if out is not None:
            return check_out(out, result, exact=True, what=ufunc.__name__)
        return _result(probed, result)
    return infer


def _accumulate(ufunc: np.ufunc) -> Any:
    def infer(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> TensorMeta:
        probed = probe(ufunc.accumulate, array, axis, dtype)
        shape = operand_shape(array)
        if out is not None:
            return check_out(out, shape, exact=True, what=ufunc.__name__)
        return _result(probed, shape)
    return infer


def _outer(ufunc: np.ufunc) -> Any:
    def infer(A: Any, B: Any, /, **kwargs: Any) -> TensorMeta:
        if "out" in kwargs or "where" in kwargs:
            raise UnsupportedArguments(f"{ufunc.__name__}.outer(out=/where=) is not modelled")
        probed = probe(ufunc.outer, A, B, **kwargs)
        return _result(probed, (*operand_shape(A), *operand_shape(B)))
    return infer


def _at(ufunc: np.ufunc) -> Any:
    def infer(a: Any, indices: Any, b: Any = None, /) -> None:
        if not is_ndarray(a):
            raise TypeError("first operand must be array")
        meta = array_meta(a)
        b_meta = meta_of(b)
        value = TensorMeta((), b_meta.dtype) if b_meta is not None else b
        probe(ufunc.at, meta, (), *(() if b is None else (value,)))
        target = index_result_shape(meta.shape, parse_index(meta.shape, indices))
        if b is not None:
            try:
                broadcast_to_shape(operand_shape(b), target)
            except ValueError:
                raise ValueError(f"array is not broadcastable to correct shape: "
                                 f"{shape_str(operand_shape(b))} into {shape_str(target)}") from None
        return None
    return infer


def ufunc_method_row(ufunc: np.ufunc, name: str) -> OpInfo | None:
    """Registry row for `ufunc.<name>`, or None for methods the registry does not model."""
    target = getattr(ufunc, name)
    qual = f"numpy.{ufunc.__name__}.{name}"
    if name == "reduce":
        view_of, mutates = out_effects(3)
        return OpInfo(qual, OpKind.REDUCTION, (target,), _reduce(ufunc), view_of=view_of,
                      mutates=mutates, ufunc=ufunc)
    if name == "accumulate":
        view_of, mutates = out_effects(3)
        return OpInfo(qual, OpKind.SCAN, (target,), _accumulate(ufunc), view_of=view_of,
                      mutates=mutates, ufunc=ufunc)
    if name == "outer":
        return OpInfo(qual, OpKind.OTHER, (target,), _outer(ufunc), ufunc=ufunc)
    if name == "at":
        return OpInfo(qual, OpKind.INDEXING, (target,), _at(ufunc), mutates=(0,), ufunc=ufunc)
    return None


REGISTRY.set_ufunc_method_factory(ufunc_method_row)
