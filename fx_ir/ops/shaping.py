"""Views that rearrange an array's shape: reshape, transpose, squeeze, broadcast_to, flip, split.

Each result shares memory with its input (view_of=0) when the input is an ndarray.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor_meta import TensorMeta
from .errors import DataDependentShape, UnsupportedArguments
from .operands import array_meta, is_ndarray, lift
from .promotion import ArrayOut, check_dtype, meta_of, probe, probe_method
from .registry import ArgRef, Method, OpInfo, OpKind, register
from .shapes import (Shape, as_int, broadcast_shapes_api, broadcast_to_shape, normalize_axes,
                     normalize_axis, shape_arg, shape_str, slice_length)
from .symbolic import (at_least, exact_quotient, floordiv, is_nonnegative, is_symbolic, is_zero,
                       normalize, normalize_shape, prod, size_is_one, sizes_equal)

_NoValue = np._NoValue


def _result(probed: Any, shape: Sequence[Any]) -> TensorMeta:
    if not isinstance(probed, ArrayOut):
        raise UnsupportedArguments("expected one array result")
    return probed.meta(shape)


def view_of_first(a: Any, *args: Any, **kwargs: Any) -> ArgRef | None:
    return 0 if is_ndarray(a) else None


def _permute(shape: Shape, perm: Sequence[int]) -> Shape:
    return tuple(shape[p] for p in perm)


# ---------------------------------------------------------------- reshape and ravel

def reshape_target(shape: Shape, spec: Sequence[Any]) -> Shape:
    """The shape `spec` (one negative entry = unknown) resolves to for an array of `shape`."""
    dims = [normalize(d) for d in spec]
    unknown = [i for i, d in enumerate(dims) if not is_symbolic(d) and d < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    for d in dims:
        if is_symbolic(d) and not is_nonnegative(d):
            raise ValueError("negative dimensions not allowed")
    total = prod(shape)
    known = prod(d for i, d in enumerate(dims) if i not in unknown)
    spelled = shape_str(["newaxis" if i in unknown else d for i, d in enumerate(dims)])
    error = ValueError(f"cannot reshape array of size {total} into shape {spelled}")
    if unknown:
        if is_zero(known):
            raise error
        quotient = exact_quotient(total, known)
        if quotient is None:
            quotient = floordiv(total, known)
            if is_symbolic(quotient) and not sizes_equal(normalize(quotient * known), total):
                raise error
            if not is_symbolic(quotient) and not sizes_equal(quotient * known, total):
                raise error
        dims[unknown[0]] = quotient
    elif not sizes_equal(total, known):
        raise error
    return normalize_shape(dims)


def _shape_spec(shape: tuple[Any, ...]) -> list[Any]:
    if len(shape) == 1 and isinstance(shape[0], Sequence | np.ndarray):
        return list(shape[0])
    return list(shape)


def _check_order(order: Any, what: str) -> None:
    if order != "C":
        raise UnsupportedArguments(f"{what}(order={order!r}): only C order is modelled")


def _reshape(a: Any, /, shape: Any, order: str = "C", *, copy: Any = None) -> TensorMeta:
    _check_order(order, "reshape")
    if copy is False:
        raise UnsupportedArguments("reshape(copy=False) raises only when the layout needs a copy")
    spec = _shape_spec((shape,)) if isinstance(shape, Sequence | np.ndarray) else [shape]
    probed = probe(np.reshape, a, (1,) * len(spec), order=order, copy=copy)
    return _result(probed, reshape_target(array_meta(a).shape, spec))


def _reshape_method(a: Any, *shape: Any, order: str = "C", copy: Any = None) -> TensorMeta:
    _check_order(order, "reshape")
    if copy is False:
        raise UnsupportedArguments("reshape(copy=False) raises only when the layout needs a copy")
    if not shape:
        probe_method("reshape", a, order=order, copy=copy)  # NumPy's TypeError for a.reshape()
    spec = _shape_spec(shape)
    probed = probe_method("reshape", a, (1,) * len(spec), order=order, copy=copy)
    return _result(probed, reshape_target(array_meta(a).shape, spec))


def _reshape_view_of(a: Any, *args: Any, copy: Any = None, **kwargs: Any) -> ArgRef | None:
    return None if copy else view_of_first(a)


def _ravel(a: Any, order: str = "C") -> TensorMeta:
    _check_order(order, "ravel")
    return _result(probe(np.ravel, a, order), (prod(array_meta(a).shape),))


def _ravel_method(a: Any, order: str = "C") -> TensorMeta:
    _check_order(order, "ravel")
    return _result(probe_method("ravel", a, order), (prod(array_meta(a).shape),))


# ---------------------------------------------------------------- axis permutations

def _transpose(a: Any, axes: Any = None) -> TensorMeta:
    probed = probe(np.transpose, a, axes)
    shape = array_meta(a).shape
    perm = range(len(shape) - 1, -1, -1) if axes is None else [normalize_axis(x, len(shape)) for x in axes]
    return _result(probed, _permute(shape, list(perm)))


def _transpose_method(a: Any, *axes: Any) -> TensorMeta:
    probed = probe_method("transpose", a, *axes)
    shape = array_meta(a).shape
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], Sequence)):
        axes = () if axes[0] is None else tuple(axes[0])
    perm = [normalize_axis(x, len(shape)) for x in axes] if axes else range(len(shape) - 1, -1, -1)
    return _result(probed, _permute(shape, list(perm)))


def matrix_transpose_shape(shape: Shape) -> Shape:
    if len(shape) < 2:
        raise ValueError("matrix transpose with ndim < 2 is undefined")
    return (*shape[:-2], shape[-1], shape[-2])


def _matrix_transpose(x: Any, /) -> TensorMeta:
    return _result(probe(np.matrix_transpose, x), matrix_transpose_shape(array_meta(x).shape))


def _swapaxes(a: Any, axis1: Any, axis2: Any) -> TensorMeta:
    probed = probe(np.swapaxes, a, axis1, axis2)
    shape = array_meta(a).shape
    perm = list(range(len(shape)))
    i, j = normalize_axis(axis1, len(shape)), normalize_axis(axis2, len(shape))
    perm[i], perm[j] = perm[j], perm[i]
    return _result(probed, _permute(shape, perm))


def _swapaxes_method(a: Any, axis1: Any, axis2: Any) -> TensorMeta:
    probe_method("swapaxes", a, axis1, axis2)
    return _swapaxes(a, axis1, axis2)


def _moveaxis(a: Any, source: Any, destination: Any) -> TensorMeta:
    probed = probe(np.moveaxis, a, source, destination)
    shape = array_meta(a).shape
    src = normalize_axes(source, len(shape), "source")
    dst = normalize_axes(destination, len(shape), "destination")
    order = [n for n in range(len(shape)) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _result(probed, _permute(shape, order))


def _rollaxis(a: Any, axis: Any, start: Any = 0) -> TensorMeta:
    probed = probe(np.rollaxis, a, axis, start)
    shape = array_meta(a).shape
    n = len(shape)
    axis, start = normalize_axis(axis, n), as_int(start)
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return _result(probed, _permute(shape, order))


# ---------------------------------------------------------------- adding and removing unit axes

def _expand_dims(a: Any, axis: Any) -> TensorMeta:
    probed = probe(np.expand_dims, a, axis)
    shape = array_meta(a).shape
    count = len(axis) if isinstance(axis, Sequence) else 1
    axes = normalize_axes(axis, len(shape) + count)
    dims = iter(shape)
    return _result(probed, [1 if i in axes else next(dims) for i in range(len(shape) + count)])


def _squeeze_shape(shape: Shape, axis: Any) -> Shape:
    if len(shape) == 0:
        return ()  # NumPy accepts axis 0 / -1 on a 0-d array
    if axis is None:
        return tuple(d for d in shape if not size_is_one(d))
    axes = normalize_axes(axis, len(shape))
    for i in axes:
        if not size_is_one(shape[i]):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _squeezed(probed: Any, a: Any, axis: Any) -> TensorMeta:
    # the probe's stand-in has every size 1, so only its dtype and scalar-ness are meaningful here
    meta = array_meta(a)
    return TensorMeta(_squeeze_shape(meta.shape, axis), probed.dtype, scalar=probed.scalar)


def _squeeze(a: Any, axis: Any = None) -> TensorMeta:
    return _squeezed(probe(np.squeeze, a, axis), a, axis)


def _squeeze_method(a: Any, axis: Any = None) -> TensorMeta:
    return _squeezed(probe_method("squeeze", a, axis), a, axis)


def atleast_shape(shape: Shape, k: int) -> Shape:
    """np.atleast_{1,2,3}d: a 1-d array becomes (1, n) for 2-d but (1, n, 1) for 3-d."""
    if len(shape) >= k:
        return shape
    if len(shape) == 0:
        return (1,) * k
    if k == 2:
        return (1, *shape)
    return (1, shape[0], 1) if len(shape) == 1 else (*shape, 1)


def _atleast(fn: Any, k: int) -> tuple[Any, Any]:
    def infer(*arys: Any) -> Any:
        probed = probe(fn, *arys)
        metas = [TensorMeta(atleast_shape(m.shape, k), m.dtype) for m in map(array_meta, arys)]
        return metas[0] if isinstance(probed, ArrayOut) else type(probed)(metas)

    def view_of(*arys: Any) -> Any:
        refs = tuple(i if is_ndarray(x) else None for i, x in enumerate(arys))
        return refs[0] if len(arys) == 1 else refs
    infer.__name__ = fn.__name__
    return infer, view_of


def _broadcast_to(array: Any, shape: Any, subok: bool = False) -> TensorMeta:
    array = lift(array)
    target = shape_arg(shape)
    if any(not is_symbolic(d) and d < 0 for d in target):
        raise ValueError("all elements of broadcast shape must be non-negative")
    probe(np.broadcast_to, array, (1,) * len(target), subok)
    meta = array_meta(array)
    return TensorMeta(broadcast_to_shape(meta.shape, target), meta.dtype)


def _broadcast_arrays(*args: Any, subok: bool = False) -> Any:
    args = tuple(lift(a) for a in args)
    probed = probe(np.broadcast_arrays, *args, subok=subok)
    metas = [array_meta(a) for a in args]
    shape = broadcast_shapes_api(*(m.shape for m in metas))
    return type(probed)(TensorMeta(shape, m.dtype) for m in metas)


def _broadcast_arrays_view_of(*args: Any, **kwargs: Any) -> tuple[ArgRef | None, ...]:
    return tuple(i if is_ndarray(a) else None for i, a in enumerate(args))


# ---------------------------------------------------------------- flips and diagonals

def _flip(m: Any, axis: Any = None) -> TensorMeta:
    return _result(probe(np.flip, m, axis), array_meta(m).shape)


def _flip_fixed(fn: Any) -> Any:
    def infer(m: Any) -> TensorMeta:
        return _result(probe(fn, m), array_meta(m).shape)
    infer.__name__ = fn.__name__
    return infer


def diagonal_shape(shape: Shape, offset: Any, axis1: Any, axis2: Any) -> Shape:
    offset = as_int(offset)
    i, j = normalize_axis(axis1, len(shape)), normalize_axis(axis2, len(shape))
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    rows, cols = shape[i], shape[j]
    if offset >= 0:
        rows, cols = rows, normalize(cols - offset)
    else:
        rows, cols = normalize(rows + offset), cols
    length = rows if at_least(cols, rows) else cols
    length = length if is_nonnegative(length) else 0
    return (*(d for k, d in enumerate(shape) if k not in (i, j)), length)


def _diagonal(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> TensorMeta:
    probed = probe(np.diagonal, a, offset, axis1, axis2)
    return _result(probed, diagonal_shape(array_meta(a).shape, offset, axis1, axis2))


def _diagonal_method(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> TensorMeta:
    probed = probe_method("diagonal", a, offset, axis1, axis2)
    return _result(probed, diagonal_shape(array_meta(a).shape, offset, axis1, axis2))


# ---------------------------------------------------------------- split

def split_sizes(n: Any, indices_or_sections: Any, equal: bool) -> list[Any]:
    """Lengths of the pieces np.split / np.array_split cut an axis of length n into."""
    if meta_of(indices_or_sections) is not None:
        raise DataDependentShape("split points held in an array are data")
    if isinstance(indices_or_sections, Sequence):
        bounds = [0, *(as_int(i) for i in indices_or_sections), n]
        return [slice_length(n, bounds[k], bounds[k + 1], None) for k in range(len(bounds) - 1)]
    sections = as_int(indices_or_sections)
    quotient = _even_quotient(n, sections) if sections != 0 else None
    if equal:  # np.split tests `len % sections` first, then hands over to array_split
        if sections == 0:
            raise ZeroDivisionError("integer modulo by zero")
        if quotient is None:
            raise ValueError("array split does not result in an equal division")
    if sections <= 0:
        raise ValueError("number sections must be larger than 0.")
    if quotient is not None:
        return [quotient] * sections
    if is_symbolic(n):
        raise UnsupportedArguments(f"array_split of a symbolic length {n} into uneven pieces")
    each, extra = divmod(int(n), sections)
    return [each + 1] * extra + [each] * (sections - extra)


def _even_quotient(n: Any, sections: int) -> Any:
    """n // sections when sections divides n (asking the oracle for symbolic n), else None."""
    quotient = exact_quotient(n, sections)
    if quotient is None and is_symbolic(n):
        q = floordiv(n, sections)
        if sizes_equal(normalize(q * sections), n):
            return q
    return quotient


def _split_rule(fn: Any, equal: bool, axis_rule: Any) -> Any:
    def infer(ary: Any, indices_or_sections: Any, *args: Any, **kwargs: Any) -> list[TensorMeta]:
        meta = array_meta(ary)
        axis = axis_rule(meta.shape, *args, **kwargs)
        axis = normalize_axis(axis, len(meta.shape))
        pieces = split_sizes(meta.shape[axis], indices_or_sections, equal)
        return [TensorMeta(normalize_shape((*meta.shape[:axis], p, *meta.shape[axis + 1:])), meta.dtype)
                for p in pieces]

    def view_of(ary: Any, *args: Any, **kwargs: Any) -> tuple[ArgRef | None, ...]:
        count = len(infer(ary, *args, **kwargs))
        return (0 if is_ndarray(ary) else None,) * count
    infer.__name__ = fn.__name__
    return infer, view_of


def _axis_arg(shape: Shape, axis: Any = 0) -> Any:
    return axis


def _fixed_axis(name: str, min_ndim: int, axis: int | None) -> Any:
    def rule(shape: Shape) -> int:
        if len(shape) < min_ndim:
            raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
        return axis if axis is not None else (1 if len(shape) > 1 else 0)
    return rule


def _unstack(x: Any, /, *, axis: Any = 0) -> tuple[TensorMeta, ...]:
    probe(np.unstack, x, axis=axis)
    meta = array_meta(x)
    ax = normalize_axis(axis, len(meta.shape))
    count = meta.shape[ax]
    if is_symbolic(count):
        raise UnsupportedArguments("unstack along a symbolic axis gives a symbolic number of arrays")
    piece = TensorMeta(tuple(d for k, d in enumerate(meta.shape) if k != ax), meta.dtype)
    return (piece,) * count


def _view_method(a: Any, *args: Any, **kwargs: Any) -> TensorMeta:
    """a.view() and a.view(dtype) of the same itemsize; other itemsizes depend on the strides."""
    meta = meta_of(a)
    if meta is None:
        raise UnsupportedArguments("view() of a NumPy scalar")
    dtype = kwargs.pop("dtype", args[0] if args else None)
    if kwargs.pop("type", None) is not None or len(args) > 1 or kwargs:
        raise UnsupportedArguments("view(type=...) makes an ndarray subclass")
    if isinstance(dtype, type) and issubclass(dtype, np.ndarray):
        raise UnsupportedArguments("view(ndarray subclass) is not modelled")
    new = meta.dtype if dtype is None else np.dtype(dtype)
    check_dtype(new)
    if new.itemsize != meta.dtype.itemsize:
        raise UnsupportedArguments("view() with another itemsize needs a contiguous last axis")
    return TensorMeta(meta.shape, new)


# ---------------------------------------------------------------- registration

def _register() -> None:
    views: list[tuple[str, tuple[Any, ...], Any]] = [
        ("numpy.transpose", (np.transpose,), _transpose),
        ("ndarray.transpose", (Method("transpose"),), _transpose_method),
        ("numpy.matrix_transpose", (np.matrix_transpose,), _matrix_transpose),
        ("numpy.swapaxes", (np.swapaxes,), _swapaxes),
        ("ndarray.swapaxes", (Method("swapaxes"),), _swapaxes_method),
        ("numpy.moveaxis", (np.moveaxis,), _moveaxis),
        ("numpy.rollaxis", (np.rollaxis,), _rollaxis),
        ("numpy.expand_dims", (np.expand_dims,), _expand_dims),
        ("numpy.squeeze", (np.squeeze,), _squeeze),
        ("ndarray.squeeze", (Method("squeeze"),), _squeeze_method),
        ("numpy.broadcast_to", (np.broadcast_to,), _broadcast_to),
        ("numpy.flip", (np.flip,), _flip),
        ("numpy.fliplr", (np.fliplr,), _flip_fixed(np.fliplr)),
        ("numpy.flipud", (np.flipud,), _flip_fixed(np.flipud)),
        ("numpy.diagonal", (np.diagonal,), _diagonal),
        ("ndarray.diagonal", (Method("diagonal"),), _diagonal_method),
        ("ndarray.view", (Method("view"),), _view_method),
    ]
    for name, targets, infer in views:
        register(OpInfo(name, OpKind.VIEW, targets, infer, view_of=view_of_first))
    reshapes: list[tuple[str, tuple[Any, ...], Any]] = [
        ("numpy.reshape", (np.reshape,), _reshape),
        ("ndarray.reshape", (Method("reshape"),), _reshape_method),
    ]
    for name, targets, infer in reshapes:
        register(OpInfo(name, OpKind.VIEW, targets, infer, view_of=_reshape_view_of, layout_view=True))
    register(OpInfo("numpy.ravel", OpKind.VIEW, (np.ravel,), _ravel, view_of=view_of_first,
                    layout_view=True))
    register(OpInfo("ndarray.ravel", OpKind.VIEW, (Method("ravel"),), _ravel_method,
                    view_of=view_of_first, layout_view=True))
    register(OpInfo("numpy.broadcast_arrays", OpKind.VIEW, (np.broadcast_arrays,), _broadcast_arrays,
                    view_of=_broadcast_arrays_view_of))
    fn: Any  # NumPy functions of different overloads, which mypy would join to `object`
    for k, fn in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)):
        infer, view_of = _atleast(fn, k)
        register(OpInfo(f"numpy.{fn.__name__}", OpKind.VIEW, (fn,), infer, view_of=view_of))
    for fn, equal, axis_rule in [
        (np.split, True, _axis_arg), (np.array_split, False, _axis_arg),
        (np.hsplit, True, _fixed_axis("hsplit", 1, None)),
        (np.vsplit, True, _fixed_axis("vsplit", 2, 0)),
        (np.dsplit, True, _fixed_axis("dsplit", 3, 2)),
    ]:
        infer, view_of = _split_rule(fn, equal, axis_rule)
        register(OpInfo(f"numpy.{fn.__name__}", OpKind.VIEW, (fn,), infer, view_of=view_of))
    if hasattr(np, "unstack"):
        register(OpInfo("numpy.unstack", OpKind.VIEW, (np.unstack,), _unstack,
                        view_of=lambda x, **kw: (0 if is_ndarray(x) else None,) * len(_unstack(x, **kw))))


_register()
