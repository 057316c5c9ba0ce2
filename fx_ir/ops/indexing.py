"""a[key] and a[key] = value: NumPy's basic and advanced indexing rules, on symbolic shapes.

Follows numpy/_core/src/multiarray/mapping.c, including where advanced-index dims are placed.
"""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np
from ..lazy_sympy import is_sympy

from ..tensor_meta import TensorMeta
from .errors import DataDependentShape, UnsupportedArguments
from .operands import array_meta, contains_meta, lift, operand_shape
from .promotion import ZerosMeta, check_dtype, meta_of, probe
from .registry import ArgRef, Method, OpInfo, OpKind, register
from .shapes import Shape, broadcast_shapes, broadcast_to_shape, normalize_axis, shape_str, slice_length
from .symbolic import (Size, at_least, is_nonnegative, is_symbolic, less_than, normalize, normalize_shape,
                       sizes_equal)

_VALID_INDICES = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                  "integer or boolean arrays are valid indices")


class Kind(enum.Enum):
    INTEGER = "integer"
    SLICE = "slice"
    NEWAXIS = "newaxis"
    ELLIPSIS = "ellipsis"
    FANCY = "fancy"          # an integer array (or one axis of a boolean array, after nonzero)
    BOOL0D = "bool0d"        # a 0-d boolean: a new axis of length 1 (True) or 0 (False)


@dataclass
class Item:
    kind: Kind
    value: Any = None                # INTEGER: int, sympy expr, or None (a traced scalar)
    shape: tuple[Any, ...] = ()      # FANCY/BOOL0D: index shape; a None size is data-dependent
    values: np.ndarray | None = None  # FANCY with constant values: for the bounds check
    covers: int = 0                  # ELLIPSIS: how many axes it stands for
    bool_axis_size: Any = None       # FANCY from a boolean array: the size the axis must have
    scalar_array: bool = False       # INTEGER from a 0-d array: the result is a copy


def _bool_items(mask_shape: Shape, count: Any, values: np.ndarray | None) -> list[Item]:
    """A boolean array of k dims becomes k 1-d integer indices (its nonzero), or BOOL0D."""
    if len(mask_shape) == 0:
        return [Item(Kind.BOOL0D, shape=(count,))]
    arrays = np.nonzero(values) if values is not None else [None] * len(mask_shape)
    return [Item(Kind.FANCY, shape=(count,), values=arr, bool_axis_size=d)
            for d, arr in zip(mask_shape, arrays)]


def _array_items(values: np.ndarray | None, meta: TensorMeta) -> list[Item]:
    dtype = meta.dtype
    if dtype.kind == "b":
        count = int(np.count_nonzero(values)) if values is not None else None
        return _bool_items(meta.shape, count, values)
    if dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer (or boolean) type, but the "
                         f"array dtype was {dtype}")
    if meta.ndim == 0:
        value = int(values) if values is not None else None
        return [Item(Kind.INTEGER, value=value, scalar_array=True)]
    return [Item(Kind.FANCY, shape=meta.shape, values=values)]


def _classify(obj: Any) -> list[Item]:
    if obj is Ellipsis:
        return [Item(Kind.ELLIPSIS)]
    if obj is None:
        return [Item(Kind.NEWAXIS)]
    if isinstance(obj, slice):
        for bound in (obj.start, obj.stop, obj.step):
            if isinstance(bound, TensorMeta):
                raise DataDependentShape("slice bounds held in arrays are data")
            if bound is not None and not is_sympy(bound):
                operator.index(bound)  # TypeError as Python raises for slice(1, 3.0)
        return [Item(Kind.SLICE, value=obj)]
    if isinstance(obj, bool | np.bool_):
        return _bool_items((), int(bool(obj)), None)
    if isinstance(obj, int | np.integer):
        return [Item(Kind.INTEGER, value=int(obj))]
    if is_sympy(obj):
        if obj.is_integer:
            return [Item(Kind.INTEGER, value=normalize(obj))]
        raise IndexError(_VALID_INDICES)
    if isinstance(obj, TensorMeta):
        check_dtype(obj.dtype)
        if obj.scalar:  # a NumPy scalar converts through __index__: a plain integer index
            if obj.dtype.kind in "iu":
                return [Item(Kind.INTEGER, value=None)]
            if obj.dtype.kind == "b":
                raise DataDependentShape("a traced boolean scalar index adds an axis of length 0 or 1")
            raise IndexError(_VALID_INDICES)
        if obj.dtype.kind == "b":
            raise DataDependentShape("boolean mask indexing: the result size is the number of True values")
        return _array_items(None, obj)
    if isinstance(obj, np.generic):
        raise IndexError(_VALID_INDICES)
    if isinstance(obj, np.ndarray | list | tuple):
        if isinstance(obj, list | tuple) and contains_meta(obj):
            raise UnsupportedArguments("an index list holding traced values is not modelled")
        try:
            values = np.asarray(obj)
        except ValueError:
            raise
        if values.size == 0 and not isinstance(obj, np.ndarray):
            values = values.astype(np.intp)  # NumPy reads an empty list as an integer index
        if not isinstance(obj, np.ndarray) and values.dtype.kind not in "iub":
            raise IndexError(_VALID_INDICES)
        return _array_items(values, TensorMeta(values.shape, values.dtype))
    raise IndexError(_VALID_INDICES)


def _bool_mask_items(key: Any, ndim: int) -> list[Item] | None:
    """Setitem's one data-dependent case that is still shape-safe: a traced boolean mask."""
    if isinstance(key, TensorMeta) and key.dtype.kind == "b" and not key.scalar and key.ndim > 0:
        return _bool_items(key.shape, None, None)
    return None


@dataclass
class Parsed:
    items: list[Item]
    has_fancy: bool
    full_integer: bool       # every axis indexed by an integer: the result is a NumPy scalar
    scalar_array: bool       # an integer came from a 0-d array: basic indexing copies
    single_mask: bool = False  # one boolean index with the array's ndim (NumPy's HAS_BOOL path)


def parse_index(shape: Shape, key: Any, allow_mask: bool = False) -> Parsed:
    raw = list(key) if isinstance(key, tuple) else [key]
    ndim = len(shape)
    items: list[Item] = []
    for obj in raw:
        mask = _bool_mask_items(obj, ndim) if allow_mask else None
        items.extend(mask if mask is not None else _classify(obj))
    if sum(1 for it in items if it.kind is Kind.ELLIPSIS) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for it in items if it.kind in (Kind.INTEGER, Kind.SLICE, Kind.FANCY))
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    ellipsis = next((it for it in items if it.kind is Kind.ELLIPSIS), None)
    if ellipsis is None and used < ndim:
        ellipsis = Item(Kind.ELLIPSIS)
        items.append(ellipsis)
    if ellipsis is not None:
        ellipsis.covers = ndim - used
    kinds = {it.kind for it in items}
    has_fancy = bool(kinds & {Kind.FANCY, Kind.BOOL0D})
    full_integer = kinds <= {Kind.INTEGER} and (used == ndim)
    scalar_array = any(it.scalar_array for it in items)
    _check_bool_axes(shape, items)
    single_mask = len(raw) == 1 and _boolean_ndim(raw[0]) == ndim
    return Parsed(items, has_fancy, full_integer, scalar_array, single_mask)


def _boolean_ndim(obj: Any) -> int | None:
    """ndim of a boolean index object, or None when it is not boolean."""
    if isinstance(obj, bool | np.bool_):
        return 0
    meta = meta_of(obj)
    if meta is not None:
        return meta.ndim if meta.dtype.kind == "b" else None
    if isinstance(obj, list | tuple) and not contains_meta(obj):
        arr = np.asarray(obj)
        return arr.ndim if arr.dtype.kind == "b" else None
    return None


def _check_bool_axes(shape: Shape, items: list[Item]) -> None:
    axis = 0
    for it in items:
        if it.kind is Kind.FANCY and it.bool_axis_size is not None:
            if not (it.bool_axis_size == shape[axis] or _equal(it.bool_axis_size, shape[axis])):
                raise IndexError(f"boolean index did not match indexed array along axis {axis}; size "
                                 f"of axis is {shape[axis]} but size of corresponding boolean axis "
                                 f"is {it.bool_axis_size}")
        axis += it.covers if it.kind is Kind.ELLIPSIS else (
            1 if it.kind in (Kind.INTEGER, Kind.SLICE, Kind.FANCY) else 0)


def _equal(a: Any, b: Any) -> bool:
    return sizes_equal(a, b)


def _check_integer(value: Any, dim: Size, axis: int) -> None:
    if value is None:
        return  # a traced integer: NumPy checks it when the graph runs
    if is_nonnegative(value):
        ok = less_than(value, dim)
    else:
        ok = at_least(normalize(value + dim), 0)
    if not ok:
        raise IndexError(f"index {value} is out of bounds for axis {axis} with size {dim}")


def _check_fancy_values(it: Item, dim: Size, axis: int) -> None:
    if it.values is None or it.values.size == 0:
        return
    for value in (int(it.values.max()), int(it.values.min())):
        _check_integer(value, dim, axis)


def index_result_shape(shape: Shape, parsed: Parsed, fancy_bounds: bool = True) -> tuple[Any, ...]:
    """Result shape of a[key]; a None entry marks a size only the data knows.

    Integer indices are bounds-checked at once; constant index arrays only if `fancy_bounds`
    (assignment checks the value's shape first, as NumPy does).
    """
    sub: list[Any] = []      # the basic-indexing ("subspace") dims in order
    fancy_shapes: list[tuple[Any, ...]] = []
    consec, status, axis = 0, -1, 0
    for it in parsed.items:
        # NumPy's mapiter_fill_info: integers and arrays are "advanced" together when any array
        # is present; they stay in place only if nothing else separates them
        advanced = it.kind in (Kind.FANCY, Kind.BOOL0D, Kind.INTEGER)
        if advanced:
            if status == -1:
                consec, status = len(sub), 0
            elif status == 1:
                consec, status = 0, 2
        elif status == 0:
            status = 1
        if it.kind is Kind.INTEGER:
            _check_integer(it.value, shape[axis], axis)
            axis += 1
        elif it.kind is Kind.SLICE:
            s = it.value
            sub.append(slice_length(shape[axis], s.start, s.stop, s.step))
            axis += 1
        elif it.kind is Kind.NEWAXIS:
            sub.append(1)
        elif it.kind is Kind.ELLIPSIS:
            sub.extend(shape[axis:axis + it.covers])
            axis += it.covers
        elif it.kind is Kind.FANCY:
            fancy_shapes.append(it.shape)
            axis += 1
        else:  # BOOL0D
            fancy_shapes.append(it.shape)
    if not parsed.has_fancy:
        return tuple(sub)
    if any(d is None for s in fancy_shapes for d in s):
        fancy: tuple[Any, ...] = (None,)
    else:
        try:
            fancy = broadcast_shapes(*fancy_shapes)
        except ValueError:
            listed = " ".join(shape_str(s) for s in fancy_shapes)
            raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                             f"with shapes {listed} ") from None
        if fancy_bounds:
            check_fancy_bounds(shape, parsed, fancy)
    return (*sub[:consec], *fancy, *sub[consec:])


def check_fancy_bounds(shape: Shape, parsed: Parsed, fancy: tuple[Any, ...]) -> None:
    if any(d == 0 for d in fancy):
        return  # NumPy skips the bounds check when the broadcast index is empty
    axis = 0
    for it in parsed.items:
        if it.kind is Kind.FANCY:
            _check_fancy_values(it, shape[axis], axis)
        axis += it.covers if it.kind is Kind.ELLIPSIS else (
            1 if it.kind in (Kind.INTEGER, Kind.SLICE, Kind.FANCY) else 0)


# ---------------------------------------------------------------- getitem / setitem

def getitem(a: Any, key: Any) -> TensorMeta:
    meta = array_meta(a)
    if not isinstance(a, TensorMeta | np.ndarray | np.generic):
        raise UnsupportedArguments("indexing a non-array value is not a NumPy op")
    check_dtype(meta.dtype)
    if meta.scalar:
        return _scalar_getitem(meta, key)
    parsed = parse_index(meta.shape, key)
    shape = index_result_shape(meta.shape, parsed)
    if parsed.full_integer and not parsed.has_fancy:
        return TensorMeta((), meta.dtype, scalar=True)
    return TensorMeta(normalize_shape(shape), meta.dtype)


def _scalar_getitem(meta: TensorMeta, key: Any) -> TensorMeta:
    # NumPy scalars index like 0-d arrays, but any integer is "invalid index to scalar variable"
    if isinstance(key, tuple) and not key:
        return meta
    parsed = parse_index((), key)
    return TensorMeta(normalize_shape(index_result_shape((), parsed)), meta.dtype)


def getitem_view_of(a: Any, key: Any) -> ArgRef | None:
    meta = meta_of(a)
    if meta is None or meta.scalar:
        return None
    parsed = parse_index(meta.shape, key)
    if parsed.has_fancy or parsed.full_integer or parsed.scalar_array:
        return None
    return 0


def _assign_probe(dtype: np.dtype, value: Any, element: bool) -> None:
    """Casting check of `a[...] = value` (element=True: a single element, `a[i, j] = value`)."""
    if element:
        target = np.zeros(1, dtype)
        target[0] = value
    else:
        target = np.zeros(np.shape(value), dtype)
        target[...] = value


def setitem(a: Any, key: Any, value: Any) -> None:
    meta = meta_of(a)
    if meta is None or meta.scalar:
        raise TypeError(f"'{'numpy.' + meta.dtype.name if meta is not None else type(a).__name__}' "
                        "object does not support item assignment")
    check_dtype(meta.dtype)
    parsed = parse_index(meta.shape, key, allow_mask=True)
    target = index_result_shape(meta.shape, parsed, fancy_bounds=False)
    element = parsed.full_integer and not parsed.has_fancy
    probe(_assign_probe, meta.dtype, value, element)
    value_shape = list(operand_shape(value))
    if element:
        return None
    if parsed.single_mask:
        return _assign_through_mask(parsed, value_shape)
    if not parsed.has_fancy and isinstance(value, list | tuple) and len(value_shape) > len(target):
        # a view takes a nested list only up to its own ndim (arrays may carry leading 1s)
        raise ValueError("setting an array element with a sequence. The requested array would "
                         f"exceed the maximum number of dimension of {len(target)}.")
    while len(value_shape) > len(target) and value_shape[0] == 1:
        value_shape.pop(0)  # NumPy drops leading unit dims of the assigned value
    if any(d is None for d in target):
        if any(d != 1 for d in value_shape):
            raise DataDependentShape("assigning an array through a boolean mask: its length "
                                     "must equal the number of True values")
        return None
    try:
        broadcast_to_shape(value_shape, target)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {shape_str(value_shape)} "
                         f"into shape {shape_str(target)}") from None
    if parsed.has_fancy:
        index_result_shape(meta.shape, parsed)  # now the bounds of constant index arrays
    return None


def _assign_through_mask(parsed: Parsed, value_shape: list[Any]) -> None:
    """a[mask] = v with one full-rank mask: v has 0 or 1 dims, 1 or count(mask) values."""
    if len(value_shape) > 1:
        raise TypeError("NumPy boolean array indexing assignment requires a 0 or 1-dimensional "
                        f"input, input has {len(value_shape)} dimensions")
    if not value_shape or value_shape[0] == 1:
        return None
    count = parsed.items[0].shape[0]
    if count is None:
        raise DataDependentShape("assigning an array through a boolean mask: its length must "
                                 "equal the number of True values")
    if not _equal(value_shape[0], count):
        raise ValueError(f"NumPy boolean array indexing assignment cannot assign {value_shape[0]} "
                         f"input values to the {count} output values where the mask is true")
    return None


# ---------------------------------------------------------------- take and data-dependent ops

def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> TensorMeta:
    probed = probe(np.take, a, _zero_index(indices), axis, None, mode)  # values are checked below
    meta = array_meta(a)
    idx_shape = operand_shape(indices)
    if out is not None:
        raise UnsupportedArguments("take(out=...) is not modelled")
    if axis is None:
        shape: tuple[Any, ...] = idx_shape
        total = meta.size
        _check_take_values(indices, total, 0, mode)
    else:
        ax = normalize_axis(axis, meta.ndim)
        _check_take_values(indices, meta.shape[ax], ax, mode)
        shape = (*meta.shape[:ax], *idx_shape, *meta.shape[ax + 1:])
    return probed.meta(shape)


def _zero_index(indices: Any) -> Any:
    """An index of the same type whose probe stand-in is 0, in bounds of the size-1 stand-in."""
    index = lift(indices)
    meta = meta_of(index)
    if meta is not None:
        return ZerosMeta(meta) if not meta.scalar else meta.dtype.type(0)
    if isinstance(index, np.integer):
        return type(index)(0)
    if (isinstance(index, int) or is_sympy(index)) and not isinstance(index, bool):
        return 0
    return index


def _check_take_values(indices: Any, dim: Size, axis: int, mode: str) -> None:
    if mode != "raise" or contains_meta(indices) or meta_of(indices) is not None:
        return
    values = np.asarray(indices)
    if values.size == 0:
        return
    if is_symbolic(dim) or int(dim) == 0 or not (-int(dim) <= values.min() and values.max() < int(dim)):
        for v in (int(values.max()), int(values.min())):
            _check_integer(v, dim, axis)


def _take_method(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> TensorMeta:
    return _take(a, indices, axis, out, mode)


def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> TensorMeta:
    indices = lift(indices)
    probed = probe(np.take_along_axis, arr, _zero_index(indices), axis)
    meta, idx = array_meta(arr), operand_shape(indices)
    if axis is None:
        return probed.meta(idx)
    ax = normalize_axis(axis, meta.ndim)
    rest_a = [d for k, d in enumerate(meta.shape) if k != ax]
    rest_i = [d for k, d in enumerate(idx) if k != ax]
    merged = broadcast_shapes(rest_a, rest_i)
    return probed.meta((*merged[:ax], idx[ax], *merged[ax:]))


def _searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> TensorMeta:
    v = lift(v)
    probed = probe(np.searchsorted, lift(a), v, side, None if sorter is None else _zero_index(sorter))
    return probed.meta(operand_shape(v))


def _searchsorted_method(a: Any, v: Any, side: str = "left", sorter: Any = None) -> TensorMeta:
    return _searchsorted(a, v, side, sorter)


def _data_dependent(name: str) -> Any:
    def infer(*args: Any, **kwargs: Any) -> Any:
        raise DataDependentShape(f"{name}: the result's shape depends on the array's values")
    infer.__name__ = name
    return infer


def _register() -> None:
    register(OpInfo("operator.getitem", OpKind.INDEXING, (operator.getitem,), getitem,
                    view_of=getitem_view_of))
    register(OpInfo("operator.setitem", OpKind.INDEXING, (operator.setitem,), setitem,
                    mutates=(0,)))
    register(OpInfo("numpy.take", OpKind.INDEXING, (np.take,), _take))
    register(OpInfo("ndarray.take", OpKind.INDEXING, (Method("take"),), _take_method))
    register(OpInfo("numpy.searchsorted", OpKind.OTHER, (np.searchsorted,), _searchsorted))
    register(OpInfo("ndarray.searchsorted", OpKind.OTHER, (Method("searchsorted"),), _searchsorted_method))
    register(OpInfo("numpy.take_along_axis", OpKind.INDEXING, (np.take_along_axis,), _take_along_axis))
    for fn in (np.nonzero, np.argwhere, np.flatnonzero, np.unique, np.extract, np.compress,
               np.trim_zeros, *(getattr(np, n) for n in ("unique_values", "unique_counts",
                                                          "unique_inverse", "unique_all")
                                if hasattr(np, n))):
        register(OpInfo(f"numpy.{fn.__name__}", OpKind.OTHER, (fn,), _data_dependent(fn.__name__)))
    for name in ("nonzero", "compress"):
        register(OpInfo(f"ndarray.{name}", OpKind.OTHER, (Method(name),), _data_dependent(name)))


_register()
