"""Lowering rules for views (basic indexing, transposes, reshapes, broadcasts), copies, joins,
array creation, and `a[index] = value` on arrays that no view can see (functionalized).
"""
from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy

from ...fx_ir import Node, TensorMeta
from .exprs import Const, Expr, IndexValue, cast, where
from .lowering import Constant, Lowerer, Unsupported, node_meta, rule
from .rules_elementwise import as_value, check_dtypes
from .values import (TensorValue, broadcast_to, clamp, parse_basic_index, permute, remap, reshape, sizes)


def _meta_shape(node: Node) -> tuple[int, ...]:
    meta = node_meta(node)
    if meta is None or not meta.is_static:
        raise Unsupported("no static shape recorded")
    return sizes(meta.shape)


def _array(x: Any, what: str) -> TensorValue:
    if not isinstance(x, TensorValue):
        raise Unsupported(f"{what} of a non-array")
    return x


def _view(node: Node, value: TensorValue) -> TensorValue:
    """Mark `value` as a view of the node's first argument (NumPy would share memory)."""
    base = node.args[0] if node.args else None
    if isinstance(base, Node):
        # a view that changes nothing (broadcast_to to its own shape) is its base's value: a new one,
        # so that the mark does not make the base a view of itself
        value = TensorValue(value.shape, value.dtype, value.fn, value.buffer, dict(value.notes))
        value.notes["view_of"] = base
    return value


@rule(operator.getitem)
def lower_getitem(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "indexing")
    basic = parse_basic_index(x.shape, args[1])
    if basic is None:
        raise Unsupported("advanced indexing (a gather) has no kernel lowering")
    value = remap(x, basic.shape, basic.to_source)
    meta = node_meta(node)
    if meta is not None and meta.scalar:
        return value  # an integer for every axis: NumPy returns a scalar, a copy read here, not a view
    return _view(node, value)


@rule(attributes=("T",))
def lower_T(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "transpose")
    return _view(node, permute(x, list(reversed(range(x.ndim)))))


@rule(np.transpose, methods=("transpose",))
def lower_transpose(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "transpose")
    axes: Any = kwargs.get("axes", args[1:] if node.op == "call_method" else (args[1] if len(args) > 1 else None))
    if node.op == "call_method" and len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    if axes is None or (isinstance(axes, tuple) and not axes):
        axes = list(reversed(range(x.ndim)))
    return _view(node, permute(x, list(axes)))


@rule(np.swapaxes, methods=("swapaxes",))
def lower_swapaxes(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "swapaxes")
    a, b = (args[1], args[2]) if len(args) == 3 else (kwargs["axis1"], kwargs["axis2"])
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return _view(node, permute(x, axes))


@rule(np.reshape, np.ravel, methods=("reshape", "ravel"))
def lower_reshape(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "reshape")
    if kwargs.get("order", "C") != "C" or any(a == "F" for a in args[1:] if isinstance(a, str)):
        raise Unsupported("reshape in Fortran order")
    shape = _meta_shape(node)
    if not _c_contiguous(x) and not _only_unit_axes_change(x.shape, shape) and L.writes_after(node):
        # NumPy returns a view when the strides allow it and a copy otherwise, which the run-time layout
        # of an argument decides: a later write must reach the one and not the other (fuzz-like corpus
        # case: `d = a.reshape(-1)[::3]; a[0] += 1` of a strided a)
        raise Unsupported("reshape whose argument's layout decides between a view and a copy, before a write")
    return _view(node, reshape(x, shape))


def _c_contiguous(x: TensorValue) -> bool:
    """Whether `x` is in C order whatever the call: computed by the program, not a view or an argument."""
    return "view_of" not in x.notes and (x.buffer is None or x.buffer.kind == "temp")


def _only_unit_axes_change(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    """A reshape that only adds or drops axes of length 1: a view in NumPy whatever the strides."""
    return [d for d in old if d != 1] == [d for d in new if d != 1]


@rule(methods=("flatten",))
def lower_flatten(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "flatten")
    if kwargs.get("order", "C") != "C" or len(args) > 1:
        raise Unsupported("flatten in another order")
    return reshape(x, _meta_shape(node))


@rule(np.expand_dims, np.squeeze, methods=("squeeze",))
def lower_unit_reshape(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "expand_dims/squeeze")
    return _view(node, reshape(x, _meta_shape(node)))


@rule(np.broadcast_to)
def lower_broadcast_to(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "broadcast_to")
    return _view(node, broadcast_to(x, _meta_shape(node)))


@rule(np.asarray, np.ascontiguousarray, np.asanyarray)
def lower_asarray(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = _array(args[0], "asarray")
    if node.target is np.ascontiguousarray:
        # the array itself when it is C-contiguous, else a copy: a layout kernel values do not carry
        # (as a view, a reversed array's copy saw the program's later writes into the array)
        raise Unsupported("ascontiguousarray: a copy or the array itself, by the array's layout")
    meta = node_meta(node)
    if meta is None or meta.dtype != x.dtype or set(kwargs) - {"dtype"}:
        raise Unsupported("asarray that converts")
    return _view(node, TensorValue(x.shape, x.dtype, x.fn))


@rule(np.copy, np.array, methods=("copy",))
def lower_copy(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x = args[0]
    if not isinstance(x, TensorValue):
        raise Unsupported("copy of a non-array")
    meta = node_meta(node)
    if meta is None or tuple(meta.shape) != x.shape or len(args) > (2 if node.target is np.array else 1):
        raise Unsupported("copy with conversions")
    if set(kwargs) - {"order", "dtype", "copy", "subok"} or kwargs.get("copy", True) is not True:
        raise Unsupported("copy with these keywords")
    dtype = meta.dtype
    return TensorValue(x.shape, dtype, lambda index: cast(x.at(index), dtype))


# ---------------------------------------------------------------- joining

def _join(node: Node, parts: Sequence[TensorValue], axis: int, shape: tuple[int, ...],
          new_axis: bool) -> TensorValue:
    meta = node_meta(node)
    assert meta is not None
    dtype = meta.dtype
    check_dtypes(dtype)
    bounds: list[int] = []
    total = 0
    for p in parts:
        total += 1 if new_axis else p.shape[axis]
        bounds.append(total)

    def fn(index: Sequence[Any]) -> Expr:
        c = index[axis]
        result: Expr | None = None
        start = 0
        pieces = []
        for p, stop in zip(parts, bounds):
            if new_axis:
                inner = tuple(index[:axis]) + tuple(index[axis + 1:])
            else:
                inner = tuple(index[:axis]) + (clamp(c - start, p.shape[axis]),) + tuple(index[axis + 1:])
            pieces.append((stop, cast(p.at(inner), dtype)))
            start = stop
        for stop, piece in reversed(pieces):
            if result is None:
                result = piece
            else:
                result = where(IndexValue(sympy.StrictLessThan(c, stop), bool), piece, result)
        assert result is not None
        return result
    return TensorValue(shape, dtype, fn)


def _parts(seq: Any) -> list[TensorValue]:
    if not isinstance(seq, (list, tuple)) or not seq:
        raise Unsupported("join of a non-sequence")
    return [as_value(p, np.result_type(p)) if not isinstance(p, TensorValue) else p for p in seq]


@rule(np.concatenate, np.hstack, np.vstack, np.stack, np.column_stack)
def lower_join(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    parts = _parts(args[0])
    shape = _meta_shape(node)
    if set(kwargs) - {"axis"} or len(args) > 2:
        raise Unsupported("join with out=, dtype= or casting=")
    target = node.target
    if target is np.concatenate:
        axis = kwargs.get("axis", args[1] if len(args) > 1 else 0)
        if axis is None:
            raise Unsupported("concatenate with axis=None")
    elif target is np.hstack:
        axis = 0 if parts[0].ndim == 1 else 1
    elif target is np.vstack:
        parts = [reshape(p, (1, p.shape[0])) if p.ndim == 1 else p for p in parts]
        axis = 0
    elif target is np.column_stack:
        parts = [reshape(p, (p.shape[0], 1)) if p.ndim == 1 else p for p in parts]
        axis = 1
    else:
        axis = kwargs.get("axis", args[1] if len(args) > 1 else 0)
        return _join(node, parts, axis % len(shape), shape, new_axis=True)
    if any(p.ndim != len(shape) for p in parts):
        raise Unsupported("join of arrays of different ranks")
    return _join(node, parts, axis % len(shape), shape, new_axis=False)


# ---------------------------------------------------------------- creation

def _filled(node: Node, value: Any) -> TensorValue:
    meta = node_meta(node)
    if meta is None or not meta.is_static:
        raise Unsupported("no static shape")
    check_dtypes(meta.dtype)
    const = Const(value, meta.dtype)
    return TensorValue(sizes(meta.shape), meta.dtype, lambda index: const)


@rule(np.zeros, np.zeros_like, np.empty, np.empty_like)
def lower_zeros(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    return _filled(node, 0)


@rule(np.ones, np.ones_like)
def lower_ones(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    return _filled(node, 1)


@rule(np.full, np.full_like)
def lower_full(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    fill = kwargs.get("fill_value", args[1] if len(args) > 1 else None)
    if not isinstance(fill, (bool, int, float, np.generic)):
        raise Unsupported("full with an array fill value")
    return _filled(node, fill)


@rule(np.arange)
def lower_arange(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    meta = node_meta(node)
    if meta is None or not meta.is_static or meta.ndim != 1:
        raise Unsupported("arange of unknown length")
    numbers = [a for a in args if a is not None]
    if not all(isinstance(a, (int, float, np.integer, np.floating)) for a in numbers) or set(kwargs) - {"dtype"}:
        raise Unsupported("arange with array bounds")
    start, step = (0, 1)
    if len(numbers) >= 2:
        start = numbers[0]
    if len(numbers) == 3:
        step = numbers[2]
    dtype = meta.dtype
    check_dtypes(dtype)

    def fn(index: Sequence[Any]) -> Expr:
        i = IndexValue(index[0], np.int64)
        if step == 1 and start == 0:
            return cast(i, dtype)
        from .exprs import Op
        scaled = Op("multiply", (cast(i, dtype), Const(step, dtype)), dtype) if step != 1 else cast(i, dtype)
        return Op("add", (Const(start, dtype), scaled), dtype) if start != 0 else scaled
    return TensorValue((int(meta.shape[0]),), dtype, fn)


@rule(np.eye, np.identity)
def lower_eye(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    meta = node_meta(node)
    if meta is None or not meta.is_static or kwargs.get("k", 0) != 0 or len(args) > 2:
        raise Unsupported("eye with an offset diagonal")
    dtype = meta.dtype
    one, zero = Const(1, dtype), Const(0, dtype)
    return TensorValue(sizes(meta.shape), dtype,
                       lambda index: where(IndexValue(sympy.Eq(index[0], index[1]), bool), one, zero))


# ---------------------------------------------------------------- assignment

def _raises_on_nan_or_infinity(value: Any) -> bool:
    """Whether storing `value` into integers is NumPy's scalar conversion, which raises ValueError on NaN and
    OverflowError on infinity where an array's cast only warns (fuzz seed 1063768: `ints[None] = a @ a`)."""
    if isinstance(value, Node):
        value = value.meta.get("val")
        if isinstance(value, TensorMeta):
            return value.scalar and value.dtype.kind in "fc"
        return isinstance(value, (float, complex, np.inexact))   # a run-time number
    return isinstance(value, (float, complex, np.inexact)) and not np.isfinite(value)


@rule(operator.setitem)
def lower_setitem(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Constant:
    """`a[index] = v` with a basic index: from here on `a` is where(in region, v, a)."""
    target = node.args[0]
    old = args[0]
    if not isinstance(target, Node) or not isinstance(old, TensorValue):
        raise Unsupported("assignment into a non-array")
    basic = parse_basic_index(old.shape, args[1])
    if basic is None:
        raise Unsupported("assignment with advanced indexing")
    root = L.functionalizable(target)
    dtype = old.dtype
    if dtype.kind in "iu" and _raises_on_nan_or_infinity(node.args[2]):
        raise Unsupported("a float scalar stored into integers (NumPy raises on NaN and infinity)")
    value = args[2]
    v = as_value(value, dtype) if not isinstance(value, TensorValue) else value
    try:
        v = broadcast_to(v, basic.shape)
    except ValueError:
        raise Unsupported(f"cannot broadcast {v.shape} into {basic.shape}") from None

    def fn(index: Sequence[Any]) -> Expr:
        inside, view_index = basic.region(tuple(index))
        return where(IndexValue(inside, bool), cast(v.at(tuple(view_index)), dtype), old.at(index))
    L.replace_value(root, TensorValue(old.shape, dtype, fn))
    return Constant(None)  # what `operator.setitem` returns


@rule(builtins.getattr)
def lower_getattr(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    raise Unsupported(f"attribute {node.args[1]!r}")
