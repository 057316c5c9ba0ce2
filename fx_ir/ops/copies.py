"""Fresh arrays of (nearly) the input's shape: copy, astype, flatten, sort, roll, diff, tril.

Also the in-place writers that return None: a.fill, a.sort, np.copyto.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor_meta import TensorMeta
from .errors import UnsupportedArguments
from .operands import array_meta, is_ndarray, lift, operand_shape
from .promotion import ArrayOut, probe, probe_method
from .registry import ArgRef, Method, OpInfo, OpKind, register
from .shapes import broadcast_shapes, broadcast_to_shape, normalize_axis, shape_str
from .symbolic import is_nonnegative, normalize, prod, sizes_equal

_NoValue = np._NoValue


def _result(probed: Any, shape: Any) -> TensorMeta:
    if not isinstance(probed, ArrayOut):
        raise UnsupportedArguments("expected one array result")
    return probed.meta(shape)


def _copy(a: Any, order: str = "K", subok: bool = False) -> TensorMeta:
    return _result(probe(np.copy, a, order, subok), array_meta(a).shape)


def _copy_method(a: Any, order: str = "C") -> TensorMeta:
    return _result(probe_method("copy", a, order), array_meta(a).shape)


def _flatten(a: Any, order: str = "C") -> TensorMeta:
    if order != "C":
        raise UnsupportedArguments(f"flatten(order={order!r}): only C order is modelled")
    return _result(probe_method("flatten", a, order), (prod(array_meta(a).shape),))


def _astype_method(a: Any, dtype: Any, order: str = "K", casting: str = "unsafe",
                   subok: bool = True, copy: bool = True) -> TensorMeta:
    probed = probe_method("astype", a, dtype, order, casting, subok, copy)
    return _result(probed, array_meta(a).shape)


def _astype_view_of(a: Any, dtype: Any, *args: Any, copy: Any = _NoValue, **kwargs: Any) -> ArgRef | None:
    # copy=False with an unchanged dtype returns the array itself
    if copy is _NoValue:
        copy = args[3] if len(args) > 3 else True
    if copy or not is_ndarray(a):
        return None
    return 0 if np.dtype(dtype) == array_meta(a).dtype else None


def _astype(x: Any, dtype: Any, /, *, copy: bool = True, **kwargs: Any) -> TensorMeta:
    return _result(probe(np.astype, x, dtype, copy=copy, **kwargs), array_meta(x).shape)


def _astype_fn_view_of(x: Any, dtype: Any, /, *, copy: bool = True, **kwargs: Any) -> ArgRef | None:
    if copy or not is_ndarray(x):
        return None
    return 0 if np.dtype(dtype) == array_meta(x).dtype else None


def _sort_shape(a: Any, axis: Any) -> Any:
    shape = array_meta(a).shape
    return (prod(shape),) if axis is None else shape


def _sort_rule(fn: Any) -> Any:
    def infer(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kwargs: Any) -> TensorMeta:
        if order is not None:
            raise UnsupportedArguments(f"{fn.__name__}(order=...) sorts structured arrays")
        probed = probe(fn, a, axis, kind, order, **kwargs)
        return _result(probed, _sort_shape(a, axis))
    infer.__name__ = fn.__name__
    return infer


def _argsort_method(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kwargs: Any) -> TensorMeta:
    if order is not None:
        raise UnsupportedArguments("argsort(order=...) sorts structured arrays")
    return _result(probe_method("argsort", a, axis, kind, order, **kwargs), _sort_shape(a, axis))


def _sort_method(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kwargs: Any) -> None:
    if order is not None:
        raise UnsupportedArguments("sort(order=...) sorts structured arrays")
    if not is_ndarray(a):
        raise UnsupportedArguments("sort() of a NumPy scalar")
    probe_method("sort", a, axis, kind, order, **kwargs)
    return None


def _roll(a: Any, shift: Any, axis: Any = None) -> TensorMeta:
    return _result(probe(np.roll, a, shift, axis), array_meta(a).shape)


def _diff(a: Any, n: Any = 1, axis: Any = -1, prepend: Any = _NoValue, append: Any = _NoValue) -> TensorMeta:
    extra = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not _NoValue}
    probed = probe(np.diff, a, n, axis, **extra)
    meta = array_meta(a)
    if n == 0:
        if not is_ndarray(a):  # NumPy hands back the very object it was given, list or scalar
            raise UnsupportedArguments("diff(x, n=0) returns x itself, which is not an array here")
        return meta
    shape = list(meta.shape)
    ax = normalize_axis(axis, len(shape))
    length = shape[ax]
    for v in extra.values():
        vs = operand_shape(v)
        length = normalize(length + (vs[ax] if len(vs) == len(shape) else 1))
    length = normalize(length - n)
    shape[ax] = length if is_nonnegative(length) else 0
    return _result(probed, shape)


def _diff_view_of(a: Any, n: Any = 1, *args: Any, **kwargs: Any) -> ArgRef | None:
    return 0 if n == 0 and is_ndarray(a) else None


def _triangle(fn: Any) -> Any:
    def infer(m: Any, k: Any = 0) -> TensorMeta:
        probed = probe(fn, m, k)
        shape = array_meta(m).shape
        rows, cols = (shape[-1], shape[-1]) if len(shape) == 1 else shape[-2:]
        return _result(probed, broadcast_shapes((rows, cols), shape))
    infer.__name__ = fn.__name__
    return infer


def _fill(a: Any, value: Any) -> None:
    if not is_ndarray(a):
        raise UnsupportedArguments("fill() of a NumPy scalar")
    probe_method("fill", a, value)
    if len(operand_shape(value)) > 0:
        raise ValueError("setting an array element with a sequence.")
    return None


def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    probe(np.copyto, dst, src, casting, where)
    target = array_meta(dst).shape
    for what, x in (("input array", src), ("where", where)):
        if isinstance(x, bool):
            continue
        shape = operand_shape(x)
        try:
            broadcast_to_shape(shape, target)
        except ValueError:
            raise ValueError(f"could not broadcast {what} from shape {shape_str(shape)} into shape "
                             f"{shape_str(target)}") from None
    return None


def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    if not is_ndarray(a):
        raise UnsupportedArguments("fill_diagonal of a NumPy scalar")
    probe(np.fill_diagonal, a, lift(val), wrap)  # ndim >= 2 and the cast of val
    shape = array_meta(a).shape
    if len(shape) > 2 and not all(sizes_equal(d, shape[0]) for d in shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    return None


def _register() -> None:
    rows = [
        OpInfo("numpy.copy", OpKind.COPY_SHAPE, (np.copy,), _copy),
        OpInfo("ndarray.copy", OpKind.COPY_SHAPE, (Method("copy"),), _copy_method),
        OpInfo("ndarray.flatten", OpKind.COPY_SHAPE, (Method("flatten"),), _flatten),
        OpInfo("ndarray.astype", OpKind.ELEMENTWISE, (Method("astype"),), _astype_method,
               view_of=_astype_view_of),
        OpInfo("numpy.sort", OpKind.OTHER, (np.sort,), _sort_rule(np.sort)),
        OpInfo("numpy.argsort", OpKind.OTHER, (np.argsort,), _sort_rule(np.argsort)),
        OpInfo("ndarray.argsort", OpKind.OTHER, (Method("argsort"),), _argsort_method),
        OpInfo("ndarray.sort", OpKind.OTHER, (Method("sort"),), _sort_method, mutates=(0,)),
        OpInfo("numpy.roll", OpKind.COPY_SHAPE, (np.roll,), _roll),
        OpInfo("numpy.diff", OpKind.OTHER, (np.diff,), _diff, view_of=_diff_view_of),
        OpInfo("numpy.tril", OpKind.COPY_SHAPE, (np.tril,), _triangle(np.tril)),
        OpInfo("numpy.triu", OpKind.COPY_SHAPE, (np.triu,), _triangle(np.triu)),
        OpInfo("ndarray.fill", OpKind.OTHER, (Method("fill"),), _fill, mutates=(0,)),
        OpInfo("numpy.copyto", OpKind.OTHER, (np.copyto,), _copyto, mutates=(0,)),
        OpInfo("numpy.fill_diagonal", OpKind.OTHER, (np.fill_diagonal,), _fill_diagonal, mutates=(0,)),
    ]
    if hasattr(np, "astype"):  # NumPy >= 2.1
        rows.append(OpInfo("numpy.astype", OpKind.ELEMENTWISE, (np.astype,), _astype,
                           view_of=_astype_fn_view_of))
    for row in rows:
        register(row)


_register()
