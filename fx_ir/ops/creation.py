"""Arrays made from shapes and constants: zeros, full, arange, linspace, eye, *_like, asarray.

Probes run on size-1 shapes only: a rule never allocates what the user's sizes ask for.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from ..lazy_sympy import is_sympy, sympy

from ..tensor_meta import TensorMeta
from .errors import UnsupportedArguments
from .operands import PY_SCALARS, array_meta, is_ndarray, lift, operand_shape
from .promotion import ArrayOut, meta_of, probe
from .registry import ArgRef, OpInfo, OpKind, register
from .shapes import Shape, broadcast_shapes, broadcast_to_shape, normalize_axis, shape_arg
from .symbolic import (floordiv, is_nonnegative, is_symbolic, normalize, normalize_shape, prod,
                       sizes_equal)

_NoValue = np._NoValue


def _result(probed: Any, shape: Any) -> TensorMeta:
    if not isinstance(probed, ArrayOut):
        raise UnsupportedArguments("expected one array result")
    return probed.meta(shape)


def _check_like(like: Any) -> None:
    if like is not None:
        raise UnsupportedArguments("like= dispatches to another array library")


def creation_shape(shape: Any) -> Shape:
    dims = shape_arg(shape)
    for d in dims:
        if not is_nonnegative(d):
            raise ValueError("negative dimensions are not allowed")
    return dims


def _ones_of(dims: Shape) -> tuple[int, ...]:
    return (1,) * len(dims)


def _filled(fn: Any) -> Any:
    """zeros / ones / empty(shape, dtype=float, order='C', *, device=None, like=None)."""
    def infer(shape: Any, dtype: Any = float, order: str = "C", *, like: Any = None, **kwargs: Any) -> TensorMeta:
        _check_like(like)
        dims = creation_shape(shape)
        return _result(probe(fn, _ones_of(dims), dtype, order, **kwargs), dims)
    infer.__name__ = fn.__name__
    return infer


def _ndarray(shape: Any, dtype: Any = float, buffer: Any = None, offset: Any = 0, strides: Any = None,
             order: Any = None) -> TensorMeta:
    """np.ndarray(shape, dtype) as a constructor: np.empty's fresh, uninitialised array (over a buffer
    or with strides it is a view of other memory: not captured)."""
    if buffer is not None or strides is not None or offset != 0:
        raise UnsupportedArguments("np.ndarray over a buffer, at an offset or with strides")
    dims = creation_shape(shape)
    return _result(probe(np.empty, _ones_of(dims), dtype, order or "C"), dims)


def _full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", *, like: Any = None,
          **kwargs: Any) -> TensorMeta:
    _check_like(like)
    dims = creation_shape(shape)
    fill_value = lift(fill_value)
    probed = probe(np.full, _ones_of(dims), fill_value, dtype, order, **kwargs)
    _fits(operand_shape(fill_value), dims)
    return _result(probed, dims)


def _fits(value_shape: Shape, dims: Shape) -> None:
    try:
        broadcast_to_shape(value_shape, dims)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {value_shape} into shape "
                         f"{dims}") from None


def _like(fn: Any, filled: bool) -> Any:
    """zeros_like / ones_like / empty_like / full_like(a, [fill_value,] dtype, order, subok, shape)."""
    def infer(a: Any, *args: Any, **kwargs: Any) -> TensorMeta:
        params = ["fill_value"] if filled else []
        params += ["dtype", "order", "subok", "shape"]
        bound = dict(zip(params, args))
        overlap = set(bound) & set(kwargs)
        if overlap:
            raise TypeError(f"{fn.__name__}() got multiple values for argument {overlap.pop()!r}")
        bound.update(kwargs)
        shape = bound.get("shape")
        dims = creation_shape(shape) if shape is not None else array_meta(a).shape
        if shape is not None:
            bound["shape"] = _ones_of(dims)
        if "fill_value" in bound:
            bound["fill_value"] = lift(bound["fill_value"])
        probed = probe(fn, a, **bound)
        if filled:
            _fits(operand_shape(bound.get("fill_value")), dims)
        return _result(probed, dims)
    infer.__name__ = fn.__name__
    return infer


# ---------------------------------------------------------------- ranges

def arange_length(start: Any, stop: Any, step: Any) -> Any:
    """NumPy's length: ceil((stop - start) / step) in Python arithmetic, clipped at 0."""
    if any(is_symbolic(x) for x in (start, stop, step)):
        if not all(isinstance(x, int | sympy.Basic) and (isinstance(x, int) or x.is_integer)
                   for x in (start, stop, step)) or is_symbolic(step):
            raise UnsupportedArguments("arange with symbolic non-integer bounds or step")
        span = normalize(stop - start)
        length = floordiv(normalize(span + step - 1), step) if step > 0 else \
            floordiv(normalize(-span - step - 1), -step)
        return length if is_nonnegative(length) else 0
    if step == 0:
        raise ZeroDivisionError("division by zero")
    delta = stop - start
    value = delta / step
    if isinstance(value, complex):
        raise UnsupportedArguments("complex arange")
    if math.isnan(value):
        raise ValueError("arange: cannot compute length")
    if not math.isfinite(value) or math.ceil(value) > np.iinfo(np.intp).max:
        raise ValueError("Maximum allowed size exceeded")
    return max(math.ceil(value), 0)


def _arange(*args: Any, dtype: Any = None, like: Any = None, **kwargs: Any) -> TensorMeta:
    """np.arange([start,] stop[, step], dtype=None): positional or keyword bounds."""
    _check_like(like)
    named = {k: kwargs.pop(k) for k in ("start", "stop", "step") if k in kwargs}
    if len(args) == 4:
        dtype, args = args[3], args[:3]
    if len(args) == 1 and not ({"start", "stop"} & set(named)):
        spec = {"stop": args[0], **named}
    else:
        spec = dict(zip(("start", "stop", "step"), args))
        if len(args) > 3 or set(spec) & set(named) or "stop" not in {*spec, *named}:
            probe(np.arange, *args, dtype=dtype, **named, **kwargs)  # NumPy's own TypeError
            raise TypeError("arange() requires stop to be specified.")
        spec.update(named)
    for v in spec.values():
        if meta_of(v) is not None:
            raise UnsupportedArguments("arange bounds held in arrays are data")
    start, stop, step = spec.get("start", 0), spec["stop"], spec.get("step", 1)
    length = arange_length(_plain(start), _plain(stop), _plain(step))
    # same argument types (they set the dtype), small values: never allocate the real range
    probed = probe(np.arange, _small(start), _small(stop), _small(step), dtype=dtype, **kwargs)
    return _result(probed, (length,))


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _small(x: Any) -> Any:
    if is_sympy(x):
        return 1
    if isinstance(x, (np.generic, *PY_SCALARS)) and not isinstance(x, bool | np.bool_):
        return type(x)(1)
    return x


def _linspace_like(fn: Any) -> Any:
    def infer(start: Any, stop: Any, num: Any = 50, *args: Any, **kwargs: Any) -> Any:
        names = ["endpoint", "retstep", "dtype", "axis"] if fn is np.linspace else \
            (["endpoint", "base", "dtype", "axis"] if fn is np.logspace else ["endpoint", "dtype", "axis"])
        bound = dict(zip(names, args))
        bound.update(kwargs)
        if bound.get("retstep"):
            raise UnsupportedArguments("linspace(retstep=True) returns a (samples, step) pair")
        if isinstance(num, TensorMeta):
            raise UnsupportedArguments("linspace num held in an array is data")
        count = normalize(num) if is_sympy(num) else num
        if not is_symbolic(count):
            count = int(np.asarray(count).__index__()) if not isinstance(count, int) else count
            if count < 0:
                raise ValueError(f"Number of samples, {count}, must be non-negative.")
        probed = probe(fn, start, stop, 2, *args, **kwargs)
        base = broadcast_shapes(operand_shape(start), operand_shape(stop))
        axis = normalize_axis(bound.get("axis", 0), len(base) + 1)
        return _result(probed, (*base[:axis], count, *base[axis:]))
    infer.__name__ = fn.__name__
    return infer


def _eye(N: Any, M: Any = None, k: Any = 0, dtype: Any = float, order: str = "C", *,
         like: Any = None, **kwargs: Any) -> TensorMeta:
    _check_like(like)
    dims = creation_shape((N, N if M is None else M))
    return _result(probe(np.eye, 1, 1, 0, dtype, order, **kwargs), dims)


def _identity(n: Any, dtype: Any = None, *, like: Any = None) -> TensorMeta:
    _check_like(like)
    dims = creation_shape((n, n))
    return _result(probe(np.identity, 1, dtype), dims)


# ---------------------------------------------------------------- asarray and array

def nested_shape(obj: Any) -> Shape:
    """Shape NumPy discovers for nested lists whose leaves may be traced arrays."""
    meta = meta_of(obj)
    if meta is not None:
        return meta.shape
    if isinstance(obj, list | tuple):
        if not obj:
            return (0,)
        children = [nested_shape(x) for x in obj]
        first = children[0]
        for c in children[1:]:
            if len(c) != len(first) or not all(a == b or sizes_equal(a, b) for a, b in zip(c, first)):
                raise ValueError("setting an array element with a sequence. The requested array has "
                                 "an inhomogeneous shape")
        return normalize_shape((len(obj), *first))
    operand_shape(obj)  # rejects what NumPy would store as objects
    return ()


def _leaves(obj: Any) -> list[Any]:
    """Leaves for the dtype probe: arrays become 0-d metas of their dtype, scalars stay."""
    meta = meta_of(obj)
    if meta is not None:
        return [TensorMeta((), meta.dtype, scalar=meta.scalar)]
    if isinstance(obj, list | tuple):
        return [leaf for x in obj for leaf in _leaves(x)]
    return [obj]


def _array_probe_obj(obj: Any) -> Any:
    if isinstance(obj, list | tuple):
        leaves = _leaves(obj)
        return leaves if leaves else obj
    return obj


def _array_rule(fn: Any, copy_default: Any) -> Any:
    def infer(obj: Any, dtype: Any = None, *args: Any, copy: Any = copy_default, ndmin: int = 0,
              like: Any = None, **kwargs: Any) -> TensorMeta:
        _check_like(like)
        if copy is False and meta_of(obj) is None:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        extra = {"ndmin": ndmin} if ndmin else {}
        probed = probe(fn, _array_probe_obj(obj), dtype, *args, copy=copy, **extra, **kwargs)
        shape = nested_shape(obj)
        shape = (1,) * max(0, ndmin - len(shape)) + tuple(shape)
        if copy is False and probed.dtype != array_meta(obj).dtype:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        # the probe saw the leaves flattened (it only decides the dtype); array() is never a scalar
        return TensorMeta(normalize_shape(shape), probed.dtype)
    infer.__name__ = fn.__name__
    return infer


def _array_view_of(obj: Any, dtype: Any = None, *args: Any, copy: Any = None, **kwargs: Any) -> ArgRef | None:
    if copy or not is_ndarray(obj) or kwargs.get("ndmin", 0) > array_meta(obj).ndim:
        return None
    return 0 if dtype is None or np.dtype(dtype) == array_meta(obj).dtype else None


def _np_array_view_of(obj: Any, dtype: Any = None, *args: Any, copy: Any = True, **kwargs: Any) -> ArgRef | None:
    return _array_view_of(obj, dtype, *args, copy=copy, **kwargs)


def _ascontiguousarray(a: Any, dtype: Any = None, *, like: Any = None) -> TensorMeta:
    _check_like(like)
    probed = probe(np.ascontiguousarray, _array_probe_obj(a), dtype)
    shape = nested_shape(a)
    return TensorMeta(normalize_shape(shape if shape else (1,)), probed.dtype)


def meshgrid_shapes(sizes: list[Any], sparse: bool, indexing: str) -> list[Shape]:
    """Output shapes of np.meshgrid for 1-d lengths `sizes` ('xy' swaps the first two axes)."""
    full = list(sizes)
    axes = list(range(len(sizes)))
    if indexing == "xy" and len(sizes) > 1:
        full[0], full[1] = full[1], full[0]
        axes[0], axes[1] = 1, 0
    if not sparse:
        return [tuple(full)] * len(sizes)
    return [tuple(d if k == axes[i] else 1 for k, d in enumerate(full)) for i in range(len(sizes))]


def _meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
    xi = tuple(lift(x) for x in xi)
    probed = probe(np.meshgrid, *xi, copy=copy, sparse=sparse, indexing=indexing)
    sizes = [prod(operand_shape(x)) for x in xi]
    shapes = meshgrid_shapes(sizes, sparse, indexing)
    return type(probed)(_result(p, s) for p, s in zip(probed, shapes))


def _meshgrid_view_of(*xi: Any, copy: bool = True, **kwargs: Any) -> tuple[ArgRef | None, ...]:
    # copy=False gives broadcast views of (the ravelled) inputs
    return tuple(None if copy or not is_ndarray(x) else i for i, x in enumerate(xi))


def _indices(dimensions: Any, dtype: Any = int, sparse: bool = False) -> Any:
    dims = creation_shape(tuple(dimensions))
    probed = probe(np.indices, _ones_of(dims), dtype, sparse)
    if sparse:
        return type(probed)(_result(p, tuple(d if k == i else 1 for k, d in enumerate(dims)))
                            for i, p in enumerate(probed))
    return _result(probed, (len(dims), *dims))


def _ascontiguous_view_of(a: Any, dtype: Any = None, **kwargs: Any) -> ArgRef | None:
    # a C-contiguous array of the same dtype comes back as itself (a 0-d one as a (1,) view)
    if not is_ndarray(a):
        return None
    return 0 if dtype is None or np.dtype(dtype) == array_meta(a).dtype else None


def _register() -> None:
    constructors: tuple[Any, ...] = (np.zeros, np.ones, np.empty)  # NumPy's stubs give them no common type
    rows = [OpInfo(f"numpy.{fn.__name__}", OpKind.CREATION, (fn,), _filled(fn),
                   nondeterministic=fn is np.empty) for fn in constructors]
    rows += [OpInfo(f"numpy.{fn.__name__}", OpKind.CREATION, (fn,), _like(fn, filled),
                    nondeterministic=fn is np.empty_like)
             for fn, filled in ((np.zeros_like, False), (np.ones_like, False),
                                (np.empty_like, False), (np.full_like, True))]
    rows += [
        OpInfo("numpy.ndarray", OpKind.CREATION, (np.ndarray,), _ndarray, nondeterministic=True),
        OpInfo("numpy.full", OpKind.CREATION, (np.full,), _full),
        OpInfo("numpy.arange", OpKind.CREATION, (np.arange,), _arange),
        OpInfo("numpy.linspace", OpKind.CREATION, (np.linspace,), _linspace_like(np.linspace)),
        OpInfo("numpy.logspace", OpKind.CREATION, (np.logspace,), _linspace_like(np.logspace)),
        OpInfo("numpy.geomspace", OpKind.CREATION, (np.geomspace,), _linspace_like(np.geomspace)),
        OpInfo("numpy.eye", OpKind.CREATION, (np.eye,), _eye),
        OpInfo("numpy.identity", OpKind.CREATION, (np.identity,), _identity),
        OpInfo("numpy.asarray", OpKind.CREATION, (np.asarray,), _array_rule(np.asarray, None),
               view_of=_array_view_of),
        OpInfo("numpy.asanyarray", OpKind.CREATION, (np.asanyarray,), _array_rule(np.asanyarray, None),
               view_of=_array_view_of),
        OpInfo("numpy.array", OpKind.CREATION, (np.array,), _array_rule(np.array, True),
               view_of=_np_array_view_of),
        OpInfo("numpy.meshgrid", OpKind.CREATION, (np.meshgrid,), _meshgrid, view_of=_meshgrid_view_of),
        OpInfo("numpy.indices", OpKind.CREATION, (np.indices,), _indices),
        OpInfo("numpy.ascontiguousarray", OpKind.CREATION, (np.ascontiguousarray,), _ascontiguousarray,
               view_of=_ascontiguous_view_of, layout_view=True),
    ]
    for row in rows:
        register(row)


_register()
