"""How the rules read call arguments: array operands, Python scalars, constant lists, out=.

An "operand" is anything NumPy turns into an array: TensorMeta, ndarray, scalar, nested list.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ..lazy_sympy import is_sympy

from ..tensor_meta import TensorMeta
from .errors import UnsupportedArguments
from .promotion import NUMERIC_KINDS, meta_of
from .registry import ArgRef
from .shapes import Shape, fits_into, shape_str
from .symbolic import at_least, is_symbolic, normalize_shape

PY_SCALARS = (bool, int, float, complex)


def contains_meta(x: Any) -> bool:
    if isinstance(x, TensorMeta) or is_sympy(x):  # is_sympy: a static trace never imports sympy
        return True
    if isinstance(x, list | tuple):
        return any(contains_meta(v) for v in x)
    return False


def constant_array(x: Any) -> np.ndarray:
    """A nested list/tuple of Python or NumPy scalars as NumPy sees it (numeric only)."""
    if contains_meta(x):
        raise UnsupportedArguments("a list mixing traced arrays and constants is not modelled")
    try:
        arr = np.asarray(x)
    except ValueError as exc:  # ragged nested sequences
        raise UnsupportedArguments(f"cannot model array-like {x!r}: {exc}") from None
    if arr.dtype.kind not in NUMERIC_KINDS:
        raise UnsupportedArguments(f"array-like of dtype {arr.dtype} is not modelled")
    return arr


def lift(x: Any) -> Any:
    """A constant nested list operand as the TensorMeta of np.asarray(x), so that probes see a
    size-1 stand-in like every other array (a list keeps its real sizes and would not fit)."""
    if isinstance(x, list | tuple):
        arr = constant_array(x)
        return TensorMeta(arr.shape, arr.dtype)
    return x


def operand_shape(x: Any) -> Shape:
    meta = meta_of(x)
    if meta is not None:
        return meta.shape
    if isinstance(x, PY_SCALARS):
        return ()
    if isinstance(x, np.generic):
        if x.dtype.kind not in NUMERIC_KINDS:
            raise UnsupportedArguments(f"NumPy scalars of dtype {x.dtype} are not modelled")
        return ()
    if is_sympy(x) and x.is_integer:
        return ()
    if isinstance(x, list | tuple):
        return normalize_shape(constant_array(x).shape)
    raise UnsupportedArguments(f"cannot model {type(x).__name__} as an array operand")


def operand_dtype(x: Any) -> np.dtype | None:
    """dtype of a strongly typed operand (arrays, NumPy scalars, lists); None for Python scalars."""
    meta = meta_of(x)
    if meta is not None:
        return meta.dtype
    if isinstance(x, np.generic):
        return x.dtype
    if isinstance(x, list | tuple):
        return constant_array(x).dtype
    return None


def array_meta(x: Any) -> TensorMeta:
    """The meta of what np.asarray(x) would give (TensorMeta kept as it is, scalar or not)."""
    meta = meta_of(x)
    if meta is not None:
        return meta
    if isinstance(x, np.generic):
        return TensorMeta((), x.dtype, scalar=True)
    if is_sympy(x) and x.is_integer:
        return TensorMeta((), np.dtype(np.int_))
    return TensorMeta(operand_shape(x), np.asarray(x).dtype if isinstance(x, PY_SCALARS)
                      else constant_array(x).dtype)


def is_numpy_operand(x: Any) -> bool:
    return meta_of(x) is not None or isinstance(x, np.generic)


def is_ndarray(x: Any) -> bool:
    """A (possibly 0-d) ndarray, not a NumPy scalar: what in-place operations can write."""
    meta = meta_of(x)
    return meta is not None and not meta.scalar


def check_symbolic_scalars(operands: Sequence[Any], exponent: Any = None) -> None:
    """A symbolic Python int meets integer arrays only when the oracle says it fits their dtype.

    NEP 50 converts a Python int to the array's integer dtype and raises OverflowError when it
    does not fit; with the value unknown, the fit is a decision (and a guard) about the symbol.
    """
    symbols = [x for x in operands if is_symbolic(x)]
    if not symbols and not is_symbolic(exponent):
        return
    dtypes = [d for d in (operand_dtype(x) for x in operands) if d is not None]
    if not dtypes:
        raise UnsupportedArguments("arithmetic on symbolic Python ints alone is not an array op")
    common = np.result_type(*dtypes)
    if common.kind in "iub":
        info = np.iinfo(common if common.kind != "b" else np.int64)
        for s in symbols:
            if not (at_least(s, int(info.min)) and at_least(int(info.max), s)):
                raise UnsupportedArguments(f"symbolic int {s} may not fit {common}")
        if is_symbolic(exponent) and not at_least(exponent, 0):
            raise UnsupportedArguments(f"integer power with exponent {exponent} that may be negative")


# ---------------------------------------------------------------- out= arguments

def arg_ref(args: Sequence[Any], kwargs: dict[str, Any], position: int, name: str) -> ArgRef | None:
    """Where the parameter `name` (positional index `position`) was passed, if it was."""
    if name in kwargs and kwargs[name] is not None:
        return name
    if len(args) > position and args[position] is not None:
        return position
    return None


def out_effects(position: int, name: str = "out") -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(view_of, mutates) functions for an op whose `out` parameter sits at `position`."""
    def view_of(*args: Any, **kwargs: Any) -> ArgRef | None:
        return arg_ref(args, kwargs, position, name)

    def mutates(*args: Any, **kwargs: Any) -> tuple[ArgRef, ...]:
        ref = arg_ref(args, kwargs, position, name)
        return () if ref is None else (ref,)
    return view_of, mutates


def check_out(out: Any, shape: Shape, *, exact: bool = False, what: str = "") -> TensorMeta:
    """The out= array, after NumPy's shape check (broadcast into it, or exact for reductions)."""
    meta = meta_of(out)
    if meta is None or meta.scalar:
        raise TypeError("return arrays must be of ArrayType")
    if exact:
        if len(meta.shape) != len(shape):
            raise ValueError(f"output parameter for reduction operation {what} has the wrong "
                             f"number of dimensions: Found {meta.ndim} but expected {len(shape)}")
        if not fits_into(shape, meta.shape) or not fits_into(meta.shape, shape):
            raise ValueError(f"output parameter for reduction operation {what} has a non-"
                             f"matching shape: {shape_str(meta.shape)} vs {shape_str(shape)}")
    elif not fits_into(shape, meta.shape):
        raise ValueError(f"non-broadcastable output operand with shape {shape_str(meta.shape)} "
                         f"doesn't match the broadcast shape {shape_str(shape)}")
    return meta
