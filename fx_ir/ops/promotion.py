"""Result dtypes and NumPy-scalar-ness, read off the real NumPy function run on tiny stand-ins.

Stand-ins keep dtype and ndim (sizes 1) and Python scalars' values (NEP 50 overflow checks).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ..lazy_sympy import is_sympy

from ..tensor_meta import TensorMeta
from ..thread_warnings import warnings_ignored
from .errors import UnsupportedArguments
from .symbolic import normalize_shape

# bool, signed, unsigned, float, complex: the dtypes whose semantics the rules know
NUMERIC_KINDS = frozenset("biufc")


@dataclass(frozen=True)
class ArrayOut:
    """What a probe returned in one result position: an ndarray or a NumPy scalar."""

    dtype: np.dtype
    ndim: int
    scalar: bool

    def meta(self, shape: Sequence[Any]) -> TensorMeta:
        shape = normalize_shape(shape)
        if len(shape) != self.ndim:  # a rule disagreeing with NumPy: give up rather than guess
            raise UnsupportedArguments(f"internal: shape rule gave {shape}, NumPy gives a "
                                       f"{self.ndim}-d result")
        return TensorMeta(shape, self.dtype, scalar=self.scalar)


def check_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind not in NUMERIC_KINDS:
        raise UnsupportedArguments(f"arrays of dtype {dtype} are not modelled (numeric and bool only)")
    return dtype


def meta_of(x: Any) -> TensorMeta | None:
    """The TensorMeta of an array-valued argument (TensorMeta or a constant ndarray), else None."""
    if isinstance(x, TensorMeta):
        return x
    if isinstance(x, np.ndarray):
        return TensorMeta(x.shape, x.dtype)
    return None


@dataclass(frozen=True)
class ZerosMeta:
    """An array argument whose stand-in must be zeros, not ones (index arrays: 0 is in bounds)."""

    meta: TensorMeta


def standin(x: Any) -> Any:
    """Replace arrays (anywhere in lists and tuples) by all-ones arrays of size 1."""
    if isinstance(x, ZerosMeta):
        check_dtype(x.meta.dtype)
        return np.zeros((1,) * x.meta.ndim, dtype=x.meta.dtype)
    meta = meta_of(x)
    if meta is not None:
        check_dtype(meta.dtype)
        if meta.scalar:
            return meta.dtype.type(1)
        return np.ones((1,) * meta.ndim, dtype=meta.dtype)
    if is_sympy(x):
        if x.is_integer:
            return 1  # a symbolic Python int; callers check any value-dependent range first
        raise UnsupportedArguments(f"symbolic value {x} is not an integer")
    if isinstance(x, list | tuple):
        return type(x)(standin(v) for v in x)
    if isinstance(x, np.generic) and x.dtype.kind not in NUMERIC_KINDS:
        raise UnsupportedArguments(f"NumPy scalars of dtype {x.dtype} are not modelled")
    return x


_UNHASHABLE = object()


def freeze(x: Any) -> Any:
    """A hashable key that determines the probe's outcome (types, dtypes, ndims, scalar values)."""
    if isinstance(x, ZerosMeta):
        return ("zeros", x.meta.dtype, x.meta.ndim)
    meta = meta_of(x)
    if meta is not None:
        return _UNHASHABLE if meta.dtype.metadata is not None else ("array", meta.dtype, meta.ndim, meta.scalar)
    if isinstance(x, np.dtype):
        # == and hash ignore the scalar type (np.record or np.void) and the metadata
        return _UNHASHABLE if x.metadata is not None else (np.dtype, x, x.type)
    if is_sympy(x):
        return ("symbolic", bool(x.is_integer))
    if isinstance(x, list | tuple):
        items = tuple(freeze(v) for v in x)
        return _UNHASHABLE if _UNHASHABLE in items else (type(x), items)
    if isinstance(x, slice):
        return (slice, freeze(x.start), freeze(x.stop), freeze(x.step))
    try:
        hash(x)
    except (TypeError, ValueError):  # ValueError: NumPy's generic (unitless) timedelta64 other than 0
        return _UNHASHABLE
    # the type tag keeps 1, 1.0 and True apart; the value matters for NEP 50 overflow checks
    return (type(x), x)


def summarize(result: Any) -> Any:
    if isinstance(result, np.ndarray):
        return ArrayOut(result.dtype, result.ndim, False)
    if isinstance(result, np.generic):
        return ArrayOut(result.dtype, 0, True)
    if isinstance(result, list | tuple):
        return type(result)(summarize(r) for r in result)
    return result


class _ProbeMemo:
    """Memo of probe outcomes (a summary or the exception NumPy raised), bounded in size."""

    LIMIT = 20000

    def __init__(self) -> None:
        self._entries: dict[Any, tuple[bool, Any]] = {}

    def get(self, key: Any) -> tuple[bool, Any] | None:
        return self._entries.get(key)

    def put(self, key: Any, value: tuple[bool, Any]) -> None:
        if len(self._entries) >= self.LIMIT:
            self._entries.clear()
        self._entries[key] = value


_MEMO = _ProbeMemo()


def _run(call: Callable[[], Any]) -> tuple[bool, Any]:
    try:
        with warnings_ignored(), np.errstate(all="ignore"):
            return True, summarize(call())
    except Exception as exc:  # NumPy's own error for these argument types: replayed to the caller
        return False, exc.with_traceback(None)  # keep no frames alive in the memo


def _memoized(key: Any, call: Callable[[], Any]) -> Any:
    hit = _MEMO.get(key) if _UNHASHABLE not in key else None
    if hit is None:
        hit = _run(call)
        if _UNHASHABLE not in key:
            _MEMO.put(key, hit)
    ok, value = hit
    if not ok:
        raise _fresh(value)
    return value


def _fresh(error: BaseException) -> BaseException:
    """A new instance of the memoized error, as each call of NumPy raises a new one: raising the
    memo's own instance gave it the traceback of that raise, whose frames (the tracer's, up to the
    compiled frame's) the memo then kept alive with every value they held. Made by __new__ with
    the same args and attributes (copy.copy would call an __init__ that takes other arguments,
    such as _UFuncNoLoopError's); an error that cannot be made so is replayed as it is."""
    try:
        fresh = type(error).__new__(type(error), *error.args)
        fresh.__dict__.update(vars(error))
        for cls in type(error).__mro__:  # attributes in __slots__ (NumPy's AxisError keeps its axis there)
            for slot in getattr(cls, "__slots__", ()):
                if hasattr(error, slot):
                    setattr(fresh, slot, getattr(error, slot))
        same = type(fresh) is type(error) and str(fresh) == str(error)
    except Exception:
        same = False
    if not same:
        error.__context__ = error.__cause__ = None
        return error.with_traceback(None)
    return fresh


def probe(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run `fn` on stand-ins; return ArrayOut (or a tuple/list of them) or raise NumPy's error."""
    key = (fn, freeze(args), freeze(tuple(sorted(kwargs.items()))))
    return _memoized(key, lambda: fn(*standin(args), **{k: standin(v) for k, v in kwargs.items()}))


def probe_method(name: str, self: Any, *args: Any, **kwargs: Any) -> Any:
    """Like probe, for the ndarray method `name` called on the stand-in of `self`."""
    key = ("method", name, freeze(self), freeze(args), freeze(tuple(sorted(kwargs.items()))))
    return _memoized(key, lambda: getattr(standin(self), name)(
        *standin(args), **{k: standin(v) for k, v in kwargs.items()}))


def result_dtype(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> np.dtype:
    out = probe(fn, *args, **kwargs)
    if not isinstance(out, ArrayOut):
        raise UnsupportedArguments(f"{getattr(fn, '__name__', fn)} did not return one array")
    return out.dtype
