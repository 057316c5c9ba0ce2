"""Shape arithmetic shared by the rules: broadcasting, axis normalisation, reduced shapes.

Every size may be an int or a sympy expression; comparisons go through the size oracle.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from .errors import UnsupportedArguments
from .symbolic import (Size, ceildiv, is_nonnegative, is_symbolic, less_than, normalize, normalize_shape,
                       size_is_one, sizes_equal)

Shape = tuple[Size, ...]


def shape_str(shape: Sequence[Any]) -> str:
    """NumPy's spelling of a shape in messages: (3,) and (2,3)."""
    dims = ",".join(str(d) for d in shape)
    return f"({dims},)" if len(shape) == 1 else f"({dims})"


def broadcast_dim(a: Size, b: Size) -> Size | None:
    """The broadcast of two sizes, or None when they are incompatible."""
    if a == b:
        return a
    # a literal 1 needs no question; then ask about b before a (the usual "x op 1-dim" case)
    if not is_symbolic(a) and a == 1:
        return b
    if not is_symbolic(b) and b == 1:
        return a
    if size_is_one(b):
        return a
    if size_is_one(a):
        return b
    if sizes_equal(a, b):
        # keep the static one: it is the more specific spelling of the same size
        return b if is_symbolic(a) else a
    return None


def broadcast_shapes(*shapes: Sequence[Size], message: str | None = None) -> Shape:
    """NumPy broadcasting; ValueError worded like a ufunc's when shapes are incompatible."""
    ndim = max((len(s) for s in shapes), default=0)
    result: list[Size] = []
    for i in range(ndim, 0, -1):
        dim: Size = 1
        for s in shapes:
            if len(s) >= i:
                merged = broadcast_dim(dim, s[len(s) - i])
                if merged is None:
                    if message is None:
                        listed = " ".join(shape_str(x) for x in shapes)
                        message = f"operands could not be broadcast together with shapes {listed} "
                    raise ValueError(message)
                dim = merged
        result.append(dim)
    return normalize_shape(result)


def shapes_equal(a: Sequence[Size], b: Sequence[Size]) -> bool:
    return len(a) == len(b) and all(x == y or sizes_equal(x, y) for x, y in zip(a, b))


def fits_into(shape: Sequence[Size], target: Sequence[Size]) -> bool:
    """True when `shape` broadcasts to exactly `target` (out= operands, in-place operators)."""
    try:
        return shapes_equal(broadcast_shapes(shape, target), target)
    except ValueError:
        return False


def broadcast_shapes_api(*shapes: Sequence[Size]) -> Shape:
    """np.broadcast_shapes / np.broadcast_arrays wording of the same rule."""
    try:
        return broadcast_shapes(*shapes, message="")
    except ValueError:
        pass
    # find the first incompatible pair for the message, as NumPy does
    for j in range(1, len(shapes)):
        for i in range(j):
            try:
                broadcast_shapes(shapes[i], shapes[j], message="")
            except ValueError:
                raise ValueError(
                    "shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                    f"between arg {i} with shape {shape_str(shapes[i])} and arg {j} with shape "
                    f"{shape_str(shapes[j])}.") from None
    raise ValueError("shape mismatch: objects cannot be broadcast to a single shape.")


def broadcast_to_shape(shape: Sequence[Size], target: Sequence[Size]) -> Shape:
    """Checks that `shape` broadcasts to exactly `target` (np.broadcast_to, out=, setitem)."""
    if len(shape) > len(target):
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    offset = len(target) - len(shape)
    for i, d in enumerate(shape):
        t = target[offset + i]
        if not (d == t or size_is_one(d) or sizes_equal(d, t)):
            raise ValueError(
                "operands could not be broadcast together with remapped shapes "
                f"[original->remapped]: {shape_str(shape)}  and requested shape {shape_str(target)}")
    return normalize_shape(target)


def as_int(value: Any) -> int:
    """operator.index with NumPy's TypeError for non-integers (axis, counts, steps, ...).

    A symbolic value here (a dynamic axis, section count or slice step) cannot be modelled.
    """
    if is_symbolic(value):
        raise UnsupportedArguments(f"{value} must be a concrete integer here")
    return operator.index(value)


def normalize_axis(axis: Any, ndim: int) -> int:
    return int(normalize_axis_index(as_int(axis), ndim))


def normalize_axes(axis: Any, ndim: int, argname: str | None = None) -> tuple[int, ...]:
    """axis=None -> every axis; an int or a tuple -> non-negative axes in the given order.

    Raises AxisError (out of range) and ValueError (repeated axis) worded like NumPy.
    """
    if axis is None:
        return tuple(range(ndim))
    return tuple(int(a) for a in normalize_axis_tuple(axis, ndim, argname))


def reduction_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """Axes a reduction removes; NumPy lets a 0-d array be reduced over axis 0 or -1 (a no-op)."""
    if ndim == 0:
        return ()
    return normalize_axes(axis, ndim)


def reduced_shape(shape: Sequence[Size], axes: Sequence[int], keepdims: bool) -> Shape:
    if keepdims:
        return normalize_shape(1 if i in axes else d for i, d in enumerate(shape))
    return normalize_shape(d for i, d in enumerate(shape) if i not in axes)


def shape_arg(shape: Any) -> Shape:
    """A shape argument as NumPy accepts it: an int or a sequence of ints (sympy allowed)."""
    if isinstance(shape, Sequence) and not isinstance(shape, str):
        return tuple(normalize(d) for d in shape)
    return (normalize(shape),)


def slice_length(dim: Size, start: Any, stop: Any, step: Any) -> Size:
    """len(range(dim)[start:stop:step]) with Python's clamping, for int or symbolic bounds.

    Each clamp is one oracle question; for `a[1:-1]` on s0 the only undecided one is
    s0 - 2 >= 0, so the answer is `s0 - 2` rather than a Max().
    """
    step = 1 if step is None else as_int(step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start = None if start is None else normalize(start)
    stop = None if stop is None else normalize(stop)

    def adjust(bound: Size | None, default: Size, low: Size, high: Size) -> Size:
        # Python's PySlice_AdjustIndices: negative bounds count from the end, then clamp
        if bound is None:
            return default
        if not is_nonnegative(bound):
            bound = normalize(bound + dim)
            return bound if is_nonnegative(bound) else low
        return high if less_than(high, bound) else bound

    if step > 0:
        lo = adjust(start, 0, 0, dim)
        hi = adjust(stop, dim, 0, dim)
        span = normalize(hi - lo)
        return ceildiv(span, step) if is_nonnegative(span) else 0
    lo_default = normalize(dim - 1)
    first = adjust(start, lo_default, -1, lo_default)
    last = adjust(stop, -1, -1, lo_default)
    span = normalize(first - last)
    return ceildiv(span, -step) if is_nonnegative(span) else 0
