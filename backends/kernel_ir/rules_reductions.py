"""Lowering rules for reductions (sum, mean, max, argmin, var, norm, ... along any axes, keepdims)
and for matmul, which is a sum of products over the contracted axis.
"""
from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy

from ...fx_ir import Node
from .exprs import Const, Expr, IndexValue, Op, cast
from .lowering import Lowerer, Unsupported, node_meta, rule
from .rules_elementwise import check_dtypes
from .values import TensorValue, broadcast_to, is_symbolic, sizes

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min, "argmax": np.argmax,
    "argmin": np.argmin, "any": np.any, "all": np.all, "std": np.std, "var": np.var,
}
_SIGNATURES = {name: inspect.signature(fn) for name, fn in _FUNCTIONS.items()}
_KIND = {"max": "max", "min": "min", "amax": "max", "amin": "min"}


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes):
        raise Unsupported(f"reduction axis {axis!r}")
    out = tuple(sorted({int(a) % ndim for a in axes})) if ndim else ()
    if len(out) != len(axes) or any(not -ndim <= a < ndim for a in axes):
        raise Unsupported(f"reduction axis {axis!r} for {ndim} dimensions")
    return out


def reduce_value(L: Lowerer, x: TensorValue, axes: tuple[int, ...], keepdims: bool, kind: str,
                 dtype: np.dtype, body: Callable[[Expr], Expr] | None = None,
                 shape: tuple[int, ...] | None = None) -> TensorValue:
    """`kind` of body(x) over `axes`. Nested reductions (one per axis) for the associative kinds; one
    reduction over the flattened axes for argmin/argmax, whose result is a flat position."""
    kept = [d for d in range(x.ndim) if d not in axes]
    origin = L.current.name if L.current is not None else ""
    out_shape = shape if shape is not None else tuple(1 if (d in axes) else x.shape[d] for d in range(x.ndim)) \
        if keepdims else tuple(x.shape[d] for d in kept)
    apply = body or (lambda e: e)

    def fn(index: Sequence[Any]) -> Expr:
        source: list[Any] = [0] * x.ndim
        outer = [index[d] for d in kept] if keepdims else list(index)
        for d, i in zip(kept, outer):
            source[d] = i
        if kind in ("argmin", "argmax"):
            sizes = [x.shape[d] for d in axes]

            def flat_body(r: sympy.Symbol) -> Expr:
                rest = r
                for d, n, stride in zip(axes, sizes, _c_strides(sizes)):
                    source[d] = sympy.Mod(sympy.floor(rest / stride), n) if stride != 1 else sympy.Mod(rest, n)
                return apply(x.at(tuple(source)))
            total = math.prod(sizes)
            return L.reduce(kind, total if is_symbolic(total) else max(total, 1), flat_body, dtype, origin)

        def nest(k: int) -> Expr:
            if k == len(axes):
                return apply(x.at(tuple(source)))
            d = axes[k]

            def inner(r: sympy.Symbol) -> Expr:
                source[d] = r
                return nest(k + 1)
            return L.reduce(kind, x.shape[d], inner, dtype, origin)
        return nest(0)
    return TensorValue(tuple(out_shape), np.dtype(dtype), fn)


def _c_strides(sizes: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for n in reversed(sizes):
        strides.append(step)
        step *= n
    return list(reversed(strides))


def _bind(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        bound = _SIGNATURES[name].bind(*args, **kwargs)
    except TypeError as exc:
        raise Unsupported(f"{name} arguments: {exc}") from None
    arguments = dict(bound.arguments)
    for key in ("out", "where", "initial", "mean", "correction"):
        value = arguments.get(key, np._NoValue)
        if value is not np._NoValue and value is not None and not (key == "where" and value is True):
            raise Unsupported(f"{name} with {key}=")
    return arguments


def lower_reduction(L: Lowerer, node: Node, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = _bind(name, args, kwargs)
    x = bound["a"]
    if not isinstance(x, TensorValue):
        raise Unsupported(f"{name} of a non-array")
    meta = node_meta(node)
    if meta is None:
        raise Unsupported("no meta")
    check_dtypes(meta.dtype, x.dtype)
    axes = normalize_axes(bound.get("axis"), x.ndim)
    keepdims = bound.get("keepdims", False)
    keepdims = False if keepdims is np._NoValue else bool(keepdims)
    dtype = np.dtype(meta.dtype)
    count = math.prod(x.shape[d] for d in axes)
    shape = sizes(meta.shape)
    if name in ("sum", "prod"):
        return reduce_value(L, x, axes, keepdims, name, dtype, lambda e: cast(e, dtype), shape)
    if name in ("max", "min"):
        if count == 0:
            raise Unsupported("max/min of an empty array raises")
        return reduce_value(L, x, axes, keepdims, name, dtype, None, shape)
    if name in ("argmax", "argmin"):
        if bound.get("axis") is None and x.ndim > 1 and keepdims:
            raise Unsupported("argmin/argmax over all axes with keepdims")
        if count == 0:
            raise Unsupported("argmin/argmax of an empty array raises")
        return reduce_value(L, x, axes, keepdims, name, dtype, None, shape)
    if name in ("any", "all"):
        return reduce_value(L, x, axes, keepdims, name, np.dtype(bool), lambda e: cast(e, bool), shape)
    if count == 0:
        raise Unsupported(f"{name} of an empty array")
    if dtype.kind != "f":
        raise Unsupported(f"{name} with dtype {dtype}")
    # NumPy's mean of float16 sums and divides in float32; its var and std keep every step in float16,
    # each sum rounded to it (fuzz seed 2029861: a sum of squares past float16's range is inf, and so
    # is the std; kept in float32 until the end, it was 119.4)
    acc = np.dtype(np.float32) if dtype == np.float16 and name == "mean" else dtype
    total = reduce_value(L, x, axes, True, "sum", acc, lambda e: cast(e, acc))
    mean = _map(total, lambda e: Op("divide", (e, size_value(count, acc)), acc))
    if name == "mean":
        return _finish(mean, axes, keepdims, dtype, shape)
    ddof = bound.get("ddof", 0)
    if not isinstance(ddof, (int, float)) or isinstance(ddof, bool):
        raise Unsupported("ddof must be a number")
    if (ddof > 1 if is_symbolic(count) else count - ddof <= 0):  # a symbolic count is at least 2
        # NumPy warns "Degrees of freedom <= 0 for slice" from Python code before it divides
        raise Unsupported(f"{name} with no degrees of freedom (or as many as ddof={ddof} may leave)")
    centred = broadcast_to(mean, x.shape)

    squares = TensorValue(x.shape, acc, lambda index: _square(Op("subtract", (cast(x.at(index), acc),
                                                                              centred.at(index)), acc)))
    var_sum = reduce_value(L, squares, axes, True, "sum", acc)
    divisor = sympy.Max(count - ddof, 0) if is_symbolic(count) else max(count - ddof, 0)
    var = _map(var_sum, lambda e: Op("divide", (e, size_value(divisor, acc)), acc))
    if name == "std":
        var = _map(var, lambda e: Op("sqrt", (e,), acc))
    return _finish(var, axes, keepdims, dtype, shape)


def size_value(n: Any, dtype: np.dtype) -> Expr:
    """A count as a value: a constant, or the run-time value of a symbolic size."""
    return IndexValue(n, dtype) if is_symbolic(n) else Const(n, dtype)


def _square(e: Expr) -> Expr:
    return Op("multiply", (e, e), e.dtype)


def _map(value: TensorValue, f: Callable[[Expr], Expr]) -> TensorValue:
    return TensorValue(value.shape, value.dtype, lambda index: f(value.at(index)))


def _finish(value: TensorValue, axes: tuple[int, ...], keepdims: bool, dtype: np.dtype,
            shape: tuple[int, ...]) -> TensorValue:
    """`value` has keepdims shape; drop the reduced axes unless keepdims, and cast to `dtype`."""
    kept = [d for d in range(value.ndim) if d not in axes]

    def fn(index: Sequence[Any]) -> Expr:
        if keepdims:
            return cast(value.at(index), dtype)
        source: list[Any] = [0] * value.ndim
        for d, i in zip(kept, index):
            source[d] = i
        return cast(value.at(tuple(source)), dtype)
    return TensorValue(shape, dtype, fn)


def _make_rule(name: str) -> Any:
    def lower(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return lower_reduction(L, node, name, args, kwargs)
    lower.__name__ = f"lower_{name}"
    return lower


for _name, _fn in _FUNCTIONS.items():
    rule(_fn, methods=(_name,))(_make_rule(_name))
rule(np.amax)(_make_rule("max"))
rule(np.amin)(_make_rule("min"))


@rule(np.linalg.norm)
def lower_norm(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    bound = inspect.signature(np.linalg.norm).bind(*args, **kwargs).arguments
    x, axis, keepdims = bound["x"], bound.get("axis"), bool(bound.get("keepdims", False))
    if bound.get("ord") is not None or not isinstance(x, TensorValue):
        raise Unsupported("norm with ord=")
    if axis is None and x.ndim > 2:
        raise Unsupported("norm over all axes of an array of more than 2 dimensions")
    meta = node_meta(node)
    if meta is None or meta.dtype.kind != "f":
        raise Unsupported("norm with a non-float result")
    dtype = meta.dtype
    axes = normalize_axes(axis, x.ndim)
    total = reduce_value(L, x, axes, keepdims, "sum", dtype, lambda e: _square(cast(e, dtype)),
                         sizes(meta.shape))
    return _map(total, lambda e: Op("sqrt", (e,), dtype))


# ---------------------------------------------------------------- matmul

@rule(operator.matmul, np.matmul, np.dot, methods=("dot",))
def lower_matmul(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    if kwargs or len(args) != 2:
        raise Unsupported("matmul with out= or other keywords")
    a, b = args
    if not isinstance(a, TensorValue) or not isinstance(b, TensorValue) or a.ndim == 0 or b.ndim == 0:
        raise Unsupported("matmul of scalars")
    if node.target is np.dot or node.op == "call_method":
        if a.ndim > 2 or b.ndim > 2:
            raise Unsupported("np.dot of arrays of more than 2 dimensions")
    meta = node_meta(node)
    if meta is None or meta.dtype.kind not in "iuf":
        raise Unsupported("matmul of this dtype")
    dtype = meta.dtype
    a2 = a if a.ndim > 1 else TensorValue((1, a.shape[0]), a.dtype, lambda i: a.at((i[1],)))
    b2 = b if b.ndim > 1 else TensorValue((b.shape[0], 1), b.dtype, lambda i: b.at((i[0],)))
    k = a2.shape[-1]
    if b2.shape[-2] != k:
        raise Unsupported("matmul shapes do not match")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    full = (*batch, a2.shape[-2], b2.shape[-1])
    A = broadcast_to(a2, (*batch, *a2.shape[-2:]))
    B = broadcast_to(b2, (*batch, *b2.shape[-2:]))
    origin = node.name

    def fn2(index: Sequence[Any]) -> Expr:
        *bi, i, j = index

        def body(r: sympy.Symbol) -> Expr:
            return Op("multiply", (cast(A.at((*bi, i, r)), dtype), cast(B.at((*bi, r, j)), dtype)), dtype)
        return L.reduce("sum", k, body, dtype, origin)
    product = TensorValue(tuple(full), dtype, fn2)
    if a.ndim == 1 and b.ndim == 1:
        return TensorValue((), dtype, lambda i: product.at((0, 0)))
    if a.ndim == 1:
        return TensorValue(tuple(full[:-2] + full[-1:]), dtype, lambda i: product.at((*i[:-1], 0, i[-1])))
    if b.ndim == 1:
        return TensorValue(tuple(full[:-1]), dtype, lambda i: product.at((*i, 0)))
    return product
