"""Reductions (sum, mean, max, argmin, ...) and scans (cumsum, cumprod) over axes.

Arguments bind with the NumPy function's own signature; methods share it, `self` first.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..tensor_meta import TensorMeta
from .errors import UnsupportedArguments
from .operands import check_out, constant_array, lift, operand_shape, out_effects
from .promotion import ArrayOut, probe, probe_method
from .registry import Method, OpInfo, OpKind, register
from .shapes import Shape, broadcast_shapes, reduced_shape, reduction_axes, shape_str, shapes_equal
from .symbolic import is_zero, prod

_NoValue = np._NoValue


def _given(value: Any) -> bool:
    return value is not _NoValue and value is not None


def _check_where(shape: Shape, where: Any) -> None:
    if _given(where) and not isinstance(where, bool):
        where_shape = operand_shape(where)
        merged = broadcast_shapes(shape, where_shape)
        if not shapes_equal(merged, shape):
            raise ValueError(f"operands could not be broadcast together with remapped shapes "
                             f"[original->remapped]: {shape_str(where_shape)}  and requested shape "
                             f"{shape_str(shape)}")


class ReductionRule:
    """infer for a NumPy reduction or scan, called as `np.<fn>(a, ...)` or `a.<method>(...)`."""

    def __init__(self, fn: Callable[..., Any], *, method: str | None = None,
                 needs_identity: str | None = None, scan: bool = False) -> None:
        self.fn = fn
        self.method = method
        # name NumPy uses when reducing an empty axis without an identity (max, argmin, ...)
        self.needs_identity = needs_identity
        self.scan = scan
        self.signature = inspect.signature(fn)
        self.out_position = list(self.signature.parameters).index("out")

    def _probe(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.method is not None:
            return probe_method(self.method, *args, **kwargs)
        return probe(self.fn, *args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            probed = self._probe(args, kwargs)  # NumPy validates axis, dtype, ddof, where, ...
        except Exception:
            self._empty_error_first(args, kwargs)
            raise
        bound = self.signature.bind(*args, **kwargs).arguments
        a = bound.get("a", bound.get("x"))
        if _given(bound.get("mean")):
            raise UnsupportedArguments(f"{self.fn.__name__}(mean=...) is not modelled")
        if self.fn in (np.median, np.nanmedian) and (
                bound.get("axis") == () or any(is_zero(d) for d in operand_shape(a))):
            raise UnsupportedArguments("median of empty arrays or over no axes differs across NumPy versions")
        if bound.get("overwrite_input"):
            raise UnsupportedArguments(f"{self.fn.__name__}(overwrite_input=True) writes its input")
        shape = operand_shape(a)
        _check_where(shape, bound.get("where", _NoValue))
        axis = bound.get("axis")
        if self.scan:
            result = self._scan_shape(shape, axis, bool(bound.get("include_initial", False)))
        else:
            axes = reduction_axes(axis, len(shape))
            if self.needs_identity and not _given(bound.get("initial", _NoValue)):
                self._check_nonempty(shape, axes, axis)
            keepdims = bound.get("keepdims", _NoValue)
            result = reduced_shape(shape, axes, keepdims is not _NoValue and bool(keepdims))
        out = bound.get("out")
        if out is not None:
            return check_out(out, result, exact=True, what=self.needs_identity or self.fn.__name__)
        if not isinstance(probed, ArrayOut):
            raise UnsupportedArguments(f"{self.fn.__name__} did not return an array")
        return probed.meta(result)

    def _empty_error_first(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """NumPy reports an empty axis without identity before a dtype error (ptp of bools)."""
        if not self.needs_identity or self.scan:
            return
        try:
            bound = self.signature.bind(*args, **kwargs).arguments
            shape = operand_shape(bound.get("a", bound.get("x")))
            axis = bound.get("axis")
            if self.needs_identity in ("argmin", "argmax") and isinstance(axis, tuple | list):
                return  # arg reductions take one axis: NumPy's TypeError stands
            axes = reduction_axes(axis, len(shape))
            if _given(bound.get("initial", _NoValue)):
                return
        except Exception:
            return
        self._check_nonempty(shape, axes, bound.get("axis"))

    def _scan_shape(self, shape: Shape, axis: Any, include_initial: bool) -> Shape:
        if axis is None or len(shape) == 0:  # a 0-d input scans as if flattened
            size = prod(shape)
            return (size + 1 if include_initial else size,)
        ax = reduction_axes(axis, len(shape))[0]
        return tuple(d + 1 if (i == ax and include_initial) else d for i, d in enumerate(shape))

    def _check_nonempty(self, shape: Shape, axes: tuple[int, ...], axis: Any) -> None:
        if not any(is_zero(shape[i]) for i in axes):
            return
        name = self.needs_identity
        if name in ("argmin", "argmax"):
            raise ValueError(f"attempt to get {name} of an empty sequence")
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")

    def effects(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        return out_effects(self.out_position)


# (function, method name or None, name NumPy reports when an empty axis has no identity)
_REDUCTIONS: list[tuple[Callable[..., Any], str | None, str | None]] = [
    (np.sum, "sum", None), (np.prod, "prod", None), (np.mean, "mean", None),
    (np.std, "std", None), (np.var, "var", None),
    (np.max, "max", "maximum"), (np.min, "min", "minimum"),
    (np.argmax, "argmax", "argmax"), (np.argmin, "argmin", "argmin"),
    (np.any, "any", None), (np.all, "all", None),
    (np.nansum, None, None), (np.nanprod, None, None), (np.nanmean, None, None),
    (np.nanstd, None, None), (np.nanvar, None, None),
    (np.nanmax, None, "fmax"), (np.nanmin, None, "fmin"),
    (np.nanargmax, None, "argmax"), (np.nanargmin, None, "argmin"),
    (np.ptp, None, "maximum"), (np.median, None, None), (np.nanmedian, None, None),
]
_ALIASES = {np.amax: np.max, np.amin: np.min}

_SCANS: list[tuple[Callable[..., Any], str | None]] = [
    (np.cumsum, "cumsum"), (np.cumprod, "cumprod"), (np.nancumsum, None), (np.nancumprod, None),
]
for _name in ("cumulative_sum", "cumulative_prod"):  # NumPy >= 2.1
    if hasattr(np, _name):
        _SCANS.append((getattr(np, _name), None))


def _count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> TensorMeta:
    probed = probe(np.count_nonzero, a, axis, keepdims=keepdims)
    shape = operand_shape(a)
    return probed.meta(reduced_shape(shape, reduction_axes(axis, len(shape)), keepdims))


def _quantile_rule(fn: Callable[..., Any], scale: float) -> Callable[..., Any]:
    """percentile/quantile (and nan*): the result is q's shape followed by the reduced shape."""
    what = "Percentiles must be in the range [0, 100]" if scale == 100 else \
        "Quantiles must be in the range [0, 1]"

    def infer(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
              method: str = "linear", keepdims: Any = False, *, weights: Any = None) -> TensorMeta:
        if overwrite_input or weights is not None:
            raise UnsupportedArguments(f"{fn.__name__}(overwrite_input=/weights=) is not modelled")
        shape = operand_shape(a)
        if any(is_zero(d) for d in shape):
            raise UnsupportedArguments(f"{fn.__name__} of an empty array differs across NumPy versions")
        if isinstance(q, list | tuple):
            values = constant_array(q)
            if values.size and not (values.min() >= 0 and values.max() <= scale):
                raise ValueError(what)
        q = lift(q)
        extra = {} if keepdims is _NoValue else {"keepdims": keepdims}
        probed = probe(fn, a, q, axis, None, False, method, **extra)
        axes = reduction_axes(axis, len(shape))
        result = (*operand_shape(q), *reduced_shape(shape, axes, keepdims is not _NoValue and bool(keepdims)))
        if out is not None:
            return check_out(out, result, exact=True, what=fn.__name__)
        return probed.meta(result)
    infer.__name__ = fn.__name__
    return infer


def _average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
             keepdims: Any = _NoValue) -> TensorMeta:
    if returned:
        raise UnsupportedArguments("average(returned=True) returns a pair")
    extra = {} if keepdims is _NoValue else {"keepdims": keepdims}
    weights = lift(weights)
    probed = probe(np.average, a, axis, weights, **extra)  # ndim rules of weights, dtypes
    shape = operand_shape(a)
    axes = reduction_axes(axis, len(shape))
    if weights is not None:
        wshape = operand_shape(weights)
        if len(wshape) == len(shape):
            if not shapes_equal(wshape, shape):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
        elif not shapes_equal(wshape, [shape[i] for i in axes]):
            raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
    return probed.meta(reduced_shape(shape, axes, keepdims is not _NoValue and bool(keepdims)))


def _register() -> None:
    for fn, method, identity in _REDUCTIONS:
        targets: tuple[Any, ...] = (fn, *(alias for alias, orig in _ALIASES.items() if orig is fn))
        rule = ReductionRule(fn, needs_identity=identity)
        view_of, mutates = rule.effects()
        register(OpInfo(f"numpy.{fn.__name__}", OpKind.REDUCTION, targets, rule,
                        view_of=view_of, mutates=mutates))
        if method is not None:
            mrule = ReductionRule(fn, method=method, needs_identity=identity)
            register(OpInfo(f"ndarray.{method}", OpKind.REDUCTION, (Method(method),), mrule,
                            view_of=view_of, mutates=mutates))
    for fn, method in _SCANS:
        rule = ReductionRule(fn, scan=True)
        view_of, mutates = rule.effects()
        register(OpInfo(f"numpy.{fn.__name__}", OpKind.SCAN, (fn,), rule,
                        view_of=view_of, mutates=mutates))
        if method is not None:
            mrule = ReductionRule(fn, method=method, scan=True)
            register(OpInfo(f"ndarray.{method}", OpKind.SCAN, (Method(method),), mrule,
                            view_of=view_of, mutates=mutates))
    register(OpInfo("numpy.count_nonzero", OpKind.REDUCTION, (np.count_nonzero,), _count_nonzero))
    for fn, scale in ((np.percentile, 100), (np.nanpercentile, 100), (np.quantile, 1), (np.nanquantile, 1)):
        view_of, mutates = out_effects(3)
        register(OpInfo(f"numpy.{fn.__name__}", OpKind.REDUCTION, (fn,), _quantile_rule(fn, scale),
                        view_of=view_of, mutates=mutates))
    register(OpInfo("numpy.average", OpKind.REDUCTION, (np.average,), _average))


_register()
