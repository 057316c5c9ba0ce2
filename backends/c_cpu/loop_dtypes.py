"""Dtypes of array values in C loop bodies: which dtypes lower, their C types and item sizes, NumPy's
ufuncs on them as the kernels' exact C (emitters.EMITTERS), and constants as NumPy converts them.

NumPy's rules kept: integer + - * wrap around (computed unsigned), float32 ops are single IEEE float
ops, maximum/minimum keep NumPy's NaN and tie rules (compared quietly: such a loop is not vectorized,
as GCC's vectorizer makes quiet compares signaling), a Python int or float constant is converted to
the array's dtype as NumPy 2 does with a weak scalar (a value that does not fit is refused).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .emitters import C_TYPES, EMITTERS, QUIET_OPS, _float_helpers, _int_helpers, literal, refuse_op, uses_numpy_loop

ITEM_SIZES = {key: int(key[1:]) for key in C_TYPES if key[0] in "iuf"}

# ufuncs whose float C code compares values (dyn_max/min, sign): kept out of the vectorizer
COMPARING = frozenset({"maximum", "minimum", "fmax", "fmin", "sign"})

# what the C helpers of emitters.EMITTERS need in a loop module (the kernels' PRELUDE defines them)
UFUNC_HELPERS = r"""/* NumPy's ufuncs on slices: the kernels' exact C (emitters.EMITTERS) and its helpers */
#if defined(__GNUC__) && !defined(__clang__)
#define DYN_QUIET_COMPARES __attribute__((optimize("no-tree-vectorize")))
#else
#define DYN_QUIET_COMPARES
#endif
#define dyn_isless(a, b) __builtin_isless(a, b)
#define dyn_islessequal(a, b) __builtin_islessequal(a, b)
#define dyn_isgreater(a, b) __builtin_isgreater(a, b)
#define dyn_isgreaterequal(a, b) __builtin_isgreaterequal(a, b)
#define dyn_isinf(x) (__builtin_isinf(x) != 0)
#define dyn_isfinite(x) (__builtin_isfinite(x) != 0)
"""


def ufunc_helpers() -> str:
    return UFUNC_HELPERS + _int_helpers() + _float_helpers() + "\n"


def loop_dtype(dtype: Any) -> str:
    """The key ("f8", "i4", ...) of an array's dtype in loop bodies; LookupError where it does not lower."""
    dtype = np.dtype(dtype)
    key = f"{dtype.kind}{dtype.itemsize}"
    if key not in ITEM_SIZES or not dtype.isnative:
        raise LookupError(f"an array of dtype {dtype}")
    return key


def emit_ufunc(name: str, parts: Sequence[str], dtype: str) -> str:
    """C of ufunc `name` on values of dtype `dtype` (every operand and the result)."""
    d = np.dtype(dtype)
    return EMITTERS[name](parts, [d] * len(parts), d)


def refuse_ufunc(name: str, dtype: str) -> str | None:
    """Why ufunc `name` with every operand and its result of `dtype` does not lower (None: it does)."""
    d = np.dtype(dtype)
    nin = getattr(np, name).nin if isinstance(getattr(np, name, None), np.ufunc) else 2
    if name not in EMITTERS or uses_numpy_loop(name, [d] * nin, d):
        return f"np.{name} of {d} slices (NumPy's own loop) in a C loop body"
    return refuse_op(name, [d] * nin, d)


def raises_flags(name: str, dtype: str) -> bool:
    """Whether the op can raise a floating-point flag NumPy reports (named in the loop's warnings)."""
    if dtype[0] == "f":
        return name not in QUIET_OPS
    return name in ("floor_divide", "remainder")


def compares_floats(name: str, dtype: str) -> bool:
    return dtype[0] == "f" and name in COMPARING


def constant(value: Any, dtype: str) -> str | None:
    """A Python int or float constant as NumPy 2 converts a weak scalar to an array's `dtype`: its C
    literal, or None where the value does not convert exactly and silently (NumPy raises, warns or
    rounds to infinity: left to NumPy)."""
    if type(value) not in (int, float) or dtype == "f8":
        return None
    d = np.dtype(dtype)
    if d.kind in "iu":
        if type(value) is not int or not np.iinfo(d).min <= value <= np.iinfo(d).max:
            return None
        return literal(value, d)
    if not np.isfinite(value) or abs(value) > float(np.finfo(d).max):
        return None
    return literal(value, d)
