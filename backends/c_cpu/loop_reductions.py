"""Reductions along axes in C loop bodies, in NumPy's order: NPBench's convolutions
(`np.sum(input[:, i:i + K, j:j + K, :, np.newaxis] * weights[np.newaxis], axis=(1, 2, 3))`) and
max pooling (`np.max(x[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :], axis=(1, 2))`).

NumPy's order: the reduced value is a view walked forwards, or a fresh array NumPy allocates in C
order, of C-contiguous arrays (checked per call and at compile time), and where the last axis is not
reduced and longer than 1, NumPy's reduction iterator walks the axes in C order with that axis
innermost, folding each value into its output element one after the other (a sum from 0.0, its
identity; max and min from the first values): no pairwise blocks. The C nest does the same ops in the
same order (checked bitwise against NumPy, tests/backends/test_c_loops_reductions.py). A reduction
along the last axis (NumPy's pairwise sum of each row) or whose last axis may be 1 long (NumPy then
coalesces the reduced axes and sums them pairwise) is refused.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import sympy

from ...fx_ir import TensorMeta
from .emitters import C_TYPES
from .loop_dtypes import ITEM_SIZES
from .loop_exprs import BROADCAST_STRIDE, Elementwise, Outer, View, emit_ufunc, loop_nest, unit_strides, walking_views

if TYPE_CHECKING:
    from .loop_vectors import Vectors


# the reductions along axes that lower: the NumPy function -> its ufunc
REDUCTIONS = {np.sum: "add", np.max: "maximum", np.min: "minimum"}
NO_IDENTITY = ("maximum", "minimum")  # error 6 of a loop: ints[0] indexes this tuple


def sums_where_stored(user: Any, node: Any) -> bool:
    """Whether `user` is a reduction along axes of `node` that reads node's expression where it reduces
    (axis_reduce)."""
    return (user.op == "call_function" and user.target in REDUCTIONS and bool(user.args) and user.args[0] is node
            and (len(user.args) > 1 or "axis" in user.kwargs))


def summed_axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    """The axes of `axis` (an int or a tuple of ints) as sorted non-negative ints; None where invalid."""
    parts = axis if type(axis) is tuple else (axis,)
    if not parts or any(type(a) is not int or not -ndim <= a < ndim for a in parts):
        return None
    axes = tuple(sorted(a % ndim for a in parts))
    return axes if len(set(axes)) == len(axes) else None


def longer_than_one(size: Any) -> bool:
    """Whether a size of a meta is more than 1 whatever the call (dynamo's size symbols are >= 2)."""
    return (type(size) is int and size > 1) or isinstance(size, sympy.Symbol)


def axis_reduce(vec: Vectors, node: Any, axis: Any) -> None:
    """np.sum / np.max / np.min(x, axis=...) of an elementwise expression or a forward view x: a
    temporary of the kept axes, NumPy's start (0.0 for a sum, the first values along the reduced axes
    for max and min), then one C nest over x's axes in C order folding each value into its output
    element (NumPy's order, above)."""
    ufunc = REDUCTIONS[node.target]
    source = node.args[0]
    x = vec.value(source)
    if not isinstance(x, (Elementwise, Outer, View)):
        raise vec.refuse("a reduction along axes of a value that is not an array")
    meta, out_meta = source.meta.get("val"), node.meta.get("val")
    if not isinstance(out_meta, TensorMeta) or np.dtype(out_meta.dtype) != np.dtype(x.dtype) \
            or (ufunc == "add" and x.dtype[0] != "f"):
        raise vec.refuse("a reduction along axes that changes the dtype, or an integer sum")
    ndim = len(x.lengths)
    axes = summed_axes(axis, ndim)
    if axes is None or not isinstance(meta, TensorMeta) or meta.ndim != ndim:
        raise vec.refuse("a reduction along axes that are not constant ints")
    if ndim - 1 in axes or not longer_than_one(meta.shape[-1]):
        raise vec.refuse("a reduction along the last axis, or whose last axis may be 1 long (NumPy's pairwise "
                         "order)")
    for view in x.views():
        if view in vec.reversed:
            raise vec.refuse("a reduction along axes of a view walked backwards (NumPy walks it in another "
                             "order)")
        if view.base in vec.w.array_vars:
            vec.contiguous.add(view.base)  # C-contiguous per call (loops.NativeLoop.native_allowed)
    w = vec.w
    kept = tuple(a for a in range(ndim) if a not in axes)
    out = vec.allocate(tuple(x.lengths[a] for a in kept), x.dtype)
    start_idx = tuple(w.var("e") for _ in kept)
    if ufunc == "add":
        count = w.var("k")
        w.lines.append(f"int64_t {count} = 0; "
                       + loop_nest(start_idx, out.lengths, f"(({C_TYPES[x.dtype]} *){out.data})[{count}++] = 0;"))
        w.ops.append("reduce")  # NumPy: "overflow encountered in reduce"
    else:  # NumPy copies the first values along the reduced axes (folding them in again changes no bit)
        empty = " || ".join(f"{x.lengths[a]} == 0" for a in axes)
        w.lines.append(f"if ({empty}) {{ ints[0] = {NO_IDENTITY.index(ufunc)}; goto no_identity; }}")
        first = list(start_idx)
        full = tuple(first.pop(0) if a in kept else "0" for a in range(ndim))
        w.lines.append(loop_nest(start_idx, out.lengths, f"{out.at(start_idx)} = {x.at(full)};"))
        vec.note_op(ufunc, x.dtype)
    idx = tuple(w.var("e") for _ in x.lengths)
    out_idx = tuple(idx[a] for a in kept)

    def fold(expr: Any) -> str:
        if ufunc == "add":
            return f"{out.at(out_idx)} = {out.at(out_idx)} + {expr.at(idx)};"
        return f"{out.at(out_idx)} = {emit_ufunc(ufunc, [out.at(out_idx), expr.at(idx)], x.dtype)};"
    walking = [v for v in walking_views(x) if v.strides[-1] != BROADCAST_STRIDE]
    unit = " && ".join(f"{v.strides[-1]} == {ITEM_SIZES[v.dtype]}" for v in dict.fromkeys(walking)) or "1"
    w.lines.append(f"if ({unit}) {{ {loop_nest(idx, x.lengths, fold(unit_strides(x)))} }}")
    w.lines.append(f"else {{ {loop_nest(idx, x.lengths, fold(x))} }}")
    w.bind(node, out, "vec", np.ndarray)
