"""New arrays assembled from inputs: concatenate, stack and friends, tile, repeat.

Sizes along the joined axis add up symbolically; every other size must match (oracle).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor_meta import TensorMeta
from .errors import DataDependentShape, UnsupportedArguments
from .operands import array_meta, constant_array, lift, operand_shape, out_effects
from .promotion import ArrayOut, meta_of, probe
from .registry import Method, OpInfo, OpKind, register
from .shaping import atleast_shape
from .shapes import Shape, normalize_axis
from .symbolic import is_nonnegative, is_symbolic, normalize, normalize_shape, prod, sizes_equal


def _sequence(arrays: Any, what: str) -> list[Any]:
    if meta_of(arrays) is not None:
        raise UnsupportedArguments(f"{what} of one array (iterating its first axis) is not modelled")
    if not isinstance(arrays, Sequence):
        raise TypeError(f"{what}: expected a sequence of arrays")
    return [lift(a) for a in arrays]


def concatenated_shape(shapes: Sequence[Shape], axis: Any) -> Shape:
    """np.concatenate's shape rule (ndim checked by the caller's probe)."""
    if axis is None:
        return (normalize(sum(prod(s) for s in shapes)),)
    first = shapes[0]
    ax = normalize_axis(axis, len(first))
    for i, s in enumerate(shapes[1:], start=1):
        if len(s) != len(first):
            raise ValueError(f"all the input arrays must have same number of dimensions, but the array "
                             f"at index 0 has {len(first)} dimension(s) and the array at index {i} has "
                             f"{len(s)} dimension(s)")
        for d in range(len(first)):
            if d != ax and not (s[d] == first[d] or sizes_equal(s[d], first[d])):
                raise ValueError("all the input array dimensions except for the concatenation axis must "
                                 f"match exactly, but along dimension {d}, the array at index 0 has size "
                                 f"{first[d]} and the array at index {i} has size {s[d]}")
    total = normalize(sum(s[ax] for s in shapes))
    return normalize_shape((*first[:ax], total, *first[ax + 1:]))


def _check_join_out(out: Any, shape: Shape) -> TensorMeta:
    meta = meta_of(out)
    if meta is None or meta.scalar:
        raise TypeError("'out' must be an array")
    if meta.ndim != len(shape):
        raise ValueError("Output array has wrong dimensionality")
    if not all(a == b or sizes_equal(a, b) for a, b in zip(meta.shape, shape)):
        raise ValueError("Output array is the wrong shape")
    return meta


def _probe_join(fn: Any, items: list[Any], axis: Any, out: Any, kwargs: dict[str, Any]) -> Any:
    """Probe without out= (its size-1 stand-in cannot hold a join); then NumPy's cast check."""
    if out is not None and kwargs.get("dtype") is not None:
        raise TypeError(f"{fn.__name__}() only takes `out` or `dtype` as an argument, but both were provided.")
    probed = probe(fn, items, axis, **kwargs)
    out_meta = meta_of(out)
    if out_meta is not None and isinstance(probed, ArrayOut):
        casting = kwargs.get("casting", "same_kind")
        if not np.can_cast(probed.dtype, out_meta.dtype, casting=casting):
            raise TypeError(f"Cannot cast array data from {probed.dtype!r} to {out_meta.dtype!r} "
                            f"according to the rule {casting!r}")
    return probed


def _finish(probed: Any, shape: Shape, out: Any = None) -> TensorMeta:
    if out is not None:
        return _check_join_out(out, shape)
    if not isinstance(probed, ArrayOut):
        raise UnsupportedArguments("expected one array result")
    return probed.meta(shape)


def _concatenate(arrays: Any, /, axis: Any = 0, out: Any = None, **kwargs: Any) -> TensorMeta:
    items = _sequence(arrays, "concatenate")
    probed = _probe_join(np.concatenate, items, axis, out, kwargs)
    return _finish(probed, concatenated_shape([operand_shape(a) for a in items], axis), out)


def _stack(arrays: Any, axis: Any = 0, out: Any = None, **kwargs: Any) -> TensorMeta:
    items = _sequence(arrays, "stack")
    probed = _probe_join(np.stack, items, axis, out, kwargs)
    shapes = [operand_shape(a) for a in items]
    first = shapes[0]
    for s in shapes[1:]:
        if len(s) != len(first) or not all(a == b or sizes_equal(a, b) for a, b in zip(s, first)):
            raise ValueError("all input arrays must have the same shape")
    ax = normalize_axis(axis, len(first) + 1)
    return _finish(probed, (*first[:ax], len(items), *first[ax:]), out)


def _stacker(fn: Any, k: int, axis_rule: Any) -> Any:
    """hstack/vstack/dstack: promote each input to k dims, then concatenate along one axis."""
    def infer(tup: Any, **kwargs: Any) -> TensorMeta:
        items = _sequence(tup, fn.__name__)
        probed = probe(fn, items, **kwargs)
        shapes = [atleast_shape(operand_shape(a), k) for a in items]
        return _finish(probed, concatenated_shape(shapes, axis_rule(shapes)))
    infer.__name__ = fn.__name__
    return infer


def _column_stack(tup: Any) -> TensorMeta:
    items = _sequence(tup, "column_stack")
    probed = probe(np.column_stack, items)
    shapes = []
    for a in items:
        s = operand_shape(a)
        shapes.append(s if len(s) >= 2 else ((1, 1) if len(s) == 0 else (s[0], 1)))
    return _finish(probed, concatenated_shape(shapes, 1))


def _tile(A: Any, reps: Any) -> TensorMeta:
    meta = array_meta(A)
    tup = tuple(reps) if isinstance(reps, Sequence) else (reps,)
    tup = tuple(normalize(r) for r in tup)
    if any(not is_symbolic(r) and r < 0 for r in tup):
        raise ValueError("negative dimensions are not allowed")
    probe(np.tile, A, (1,) * len(tup))
    d = max(len(tup), meta.ndim)
    tup = (1,) * (d - len(tup)) + tup
    shape = (1,) * (d - meta.ndim) + tuple(meta.shape)
    return TensorMeta(normalize_shape(normalize(s * r) for s, r in zip(shape, tup)), meta.dtype)


def repeated_length(dim: Any, repeats: Any) -> Any:
    if meta_of(repeats) is not None:
        raise DataDependentShape("repeat counts held in an array are data")
    if isinstance(repeats, Sequence | np.ndarray):
        counts = constant_array(repeats).ravel()
        if counts.size != 1:
            if not sizes_equal(dim, counts.size):
                raise ValueError(f"operands could not be broadcast together with shape "
                                 f"({dim},) ({counts.size},)")
            if (counts < 0).any():
                raise ValueError("repeats may not contain negative values.")
            return int(counts.sum())
        repeats = counts[0]
    r = normalize(repeats)
    if not is_nonnegative(r):
        raise ValueError("negative dimensions are not allowed")
    return normalize(dim * r)


def _repeat(a: Any, repeats: Any, axis: Any = None) -> TensorMeta:
    meta = array_meta(a)
    probe(np.repeat, meta, 1, axis)  # validates axis
    if axis is None:
        return TensorMeta((repeated_length(prod(meta.shape), repeats),), meta.dtype)
    ax = normalize_axis(axis, meta.ndim)
    shape = list(meta.shape)
    shape[ax] = repeated_length(shape[ax], repeats)
    return TensorMeta(normalize_shape(shape), meta.dtype)


def _register() -> None:
    concat_view, concat_mut = out_effects(2)
    register(OpInfo("numpy.concatenate", OpKind.COPY_SHAPE, (np.concatenate,), _concatenate,
                    view_of=concat_view, mutates=concat_mut))
    register(OpInfo("numpy.stack", OpKind.COPY_SHAPE, (np.stack,), _stack,
                    view_of=concat_view, mutates=concat_mut))
    fn: Any  # NumPy functions of different overloads, which mypy would join to `object`
    for fn, k, axis_rule in [
        (np.hstack, 1, lambda shapes: 0 if len(shapes[0]) == 1 else 1),
        (np.vstack, 2, lambda shapes: 0),
        (np.dstack, 3, lambda shapes: 2),
    ]:
        register(OpInfo(f"numpy.{fn.__name__}", OpKind.COPY_SHAPE, (fn,), _stacker(fn, k, axis_rule)))
    register(OpInfo("numpy.column_stack", OpKind.COPY_SHAPE, (np.column_stack,), _column_stack))
    register(OpInfo("numpy.tile", OpKind.COPY_SHAPE, (np.tile,), _tile))
    register(OpInfo("numpy.repeat", OpKind.COPY_SHAPE, (np.repeat,), _repeat))
    register(OpInfo("ndarray.repeat", OpKind.COPY_SHAPE, (Method("repeat"),), _repeat))


_register()
