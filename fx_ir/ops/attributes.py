"""ndarray attributes (T, mT, real, imag, shape, dtype, ...) and metadata queries (len, np.ndim).

Metadata answers are Python values computed from the meta alone; they never become graph nodes.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..tensor_meta import TensorMeta
from .errors import UnsupportedArguments
from .operands import array_meta, is_ndarray, is_numpy_operand
from .promotion import ArrayOut, check_dtype, meta_of, probe
from .registry import ArgRef, Attribute, OpInfo, OpKind, register
from .shapes import normalize_axis
from .shaping import matrix_transpose_shape
from .symbolic import normalize, normalize_shape, prod


def _read(name: str, a: Any) -> Any:
    """Probe target: the attribute read off the stand-in (for its dtype and scalar-ness)."""
    return getattr(a, name)


def _array(a: Any) -> TensorMeta:
    meta = meta_of(a)
    if meta is None:
        if isinstance(a, np.generic):
            return TensorMeta((), a.dtype, scalar=True)
        raise UnsupportedArguments(f"{type(a).__name__} is not an array")
    return meta


def _transposed(a: Any) -> TensorMeta:
    meta = _array(a)
    probed = probe(_read, "T", meta)
    return probed.meta(tuple(reversed(meta.shape)))


def _matrix_transposed(a: Any) -> TensorMeta:
    meta = _array(a)
    probed = probe(_read, "mT", meta)
    return probed.meta(matrix_transpose_shape(meta.shape))


def _part(name: str) -> Any:
    def infer(a: Any) -> TensorMeta:
        meta = _array(a)
        probed = probe(_read, name, meta)
        if not isinstance(probed, ArrayOut):
            raise UnsupportedArguments(f".{name} did not give an array")
        return probed.meta(meta.shape)
    infer.__name__ = name
    return infer


def _real_view_of(a: Any) -> ArgRef | None:
    return 0 if is_ndarray(a) else None


def _imag_view_of(a: Any) -> ArgRef | None:
    # the imaginary part of a real array is a new read-only array of zeros
    return 0 if is_ndarray(a) and array_meta(a).dtype.kind == "c" else None


def _shape(a: Any) -> tuple[Any, ...]:
    return normalize_shape(_array(a).shape)


def _ndim(a: Any) -> int:
    return _array(a).ndim


def _size(a: Any) -> Any:
    return prod(_array(a).shape)


def _dtype(a: Any) -> np.dtype:
    return _array(a).dtype


def _itemsize(a: Any) -> int:
    return _array(a).dtype.itemsize


def _nbytes(a: Any) -> Any:
    meta = _array(a)
    return normalize(prod(meta.shape) * meta.dtype.itemsize)


def _len(obj: Any) -> Any:
    meta = _array(obj)
    if meta.scalar:
        raise TypeError(f"object of type 'numpy.{meta.dtype.name}' has no len()")
    if meta.ndim == 0:
        raise TypeError("len() of unsized object")
    return normalize(meta.shape[0])


def _np_shape(a: Any) -> tuple[Any, ...]:
    return _shape(_operand(a))


def _np_ndim(a: Any) -> int:
    return _ndim(_operand(a))


def _np_size(a: Any, axis: Any = None) -> Any:
    meta = _operand(a)
    if axis is None:
        return prod(meta.shape)
    return normalize(meta.shape[normalize_axis(axis, meta.ndim)])


def _operand(a: Any) -> TensorMeta:
    if not is_numpy_operand(a):
        raise UnsupportedArguments("metadata of a non-NumPy value is plain Python")
    return array_meta(a)


def _np_real_imag(name: str) -> Any:
    part = _part(name)

    def infer(val: Any) -> TensorMeta:
        if not is_numpy_operand(val):
            raise UnsupportedArguments(f"np.{name} of a Python value returns a Python value")
        check_dtype(array_meta(val).dtype)
        return part(val)
    infer.__name__ = name
    return infer


def _result_type(*arrays_and_dtypes: Any) -> np.dtype:
    for x in arrays_and_dtypes:
        if isinstance(x, list | tuple):
            raise UnsupportedArguments("result_type of a list")
    return probe(np.result_type, *arrays_and_dtypes)


def _kind_query(fn: Any) -> Any:
    def infer(x: Any) -> bool:
        return bool(fn(np.empty(0, _operand(x).dtype)))  # depends on the dtype alone
    infer.__name__ = fn.__name__
    return infer


def _register() -> None:
    register(OpInfo("ndarray.T", OpKind.VIEW, (Attribute("T"),), _transposed, view_of=_real_view_of))
    register(OpInfo("ndarray.mT", OpKind.VIEW, (Attribute("mT"),), _matrix_transposed,
                    view_of=_real_view_of))
    register(OpInfo("ndarray.real", OpKind.VIEW, (Attribute("real"),), _part("real"),
                    view_of=_real_view_of))
    register(OpInfo("ndarray.imag", OpKind.VIEW, (Attribute("imag"),), _part("imag"),
                    view_of=_imag_view_of))
    register(OpInfo("numpy.real", OpKind.VIEW, (np.real,), _np_real_imag("real"), view_of=_real_view_of))
    register(OpInfo("numpy.imag", OpKind.VIEW, (np.imag,), _np_real_imag("imag"), view_of=_imag_view_of))
    for name, fn in (("shape", _shape), ("ndim", _ndim), ("size", _size), ("dtype", _dtype),
                     ("itemsize", _itemsize), ("nbytes", _nbytes)):
        register(OpInfo(f"ndarray.{name}", OpKind.METADATA, (Attribute(name),), fn))
    register(OpInfo("builtins.len", OpKind.METADATA, (builtins.len,), _len))
    register(OpInfo("numpy.shape", OpKind.METADATA, (np.shape,), _np_shape))
    register(OpInfo("numpy.ndim", OpKind.METADATA, (np.ndim,), _np_ndim))
    register(OpInfo("numpy.size", OpKind.METADATA, (np.size,), _np_size))
    register(OpInfo("numpy.result_type", OpKind.METADATA, (np.result_type,), _result_type))
    for query in (np.iscomplexobj, np.isrealobj):
        register(OpInfo(f"numpy.{query.__name__}", OpKind.METADATA, (query,), _kind_query(query)))


_register()
