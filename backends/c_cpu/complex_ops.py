"""Complex64/complex128 values in C kernels: the ops C computes with NumPy's exact bits (by parts) and
their C helpers; every other complex op calls NumPy's own loop inside the kernel (ufunc_loops.py).

Why parts: C's own `_Complex` arithmetic is not NumPy's (a real operand is not widened to a complex
one, so `x + (b, -0.0)` keeps -0.0 where NumPy adds +0.0; `*` calls __muldc3 for NaN results). The
helpers write NumPy's loops as they are: add, subtract, negative, conjugate by parts; == and != by parts
(quiet compares); isnan/isinf/isfinite of either part. Multiply is NumPy's loop: its SIMD code uses FMA
where the CPU has it (re = fma(ar, br, -(ai * bi)), im = fma(ar, bi, ai * br) on this machine, while
NumPy's scalar math is the naive formula), and which NaN an FMA returns depends on the instruction form
its compiler picked, so no C formula is provably NumPy's. Division (Smith's), abs (npy_hypot), square,
exp, log, sqrt, power, ... are NumPy's loops too.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .ufunc_loops import dtype_key

COMPLEX_TYPES = {"c8": "float _Complex", "c16": "double _Complex"}
PART_KEYS = {"c8": "f4", "c16": "f8"}  # the dtype key of each part

Emitter = Callable[[Sequence[str], Sequence[np.dtype], np.dtype], str]


def refuse_complex(name: str, arg_dtypes: Sequence[np.dtype], out: np.dtype) -> str | None:
    """Why this op has no exact C code with these (complex) dtypes (None: it has)."""
    if name == "cast" and np.dtype(out).kind in "iuf":
        return "a complex value cast to a real one (NumPy's ComplexWarning) is left to NumPy"
    if name not in COMPLEX_EMITTERS:
        return f"no exact C code for complex {name}"
    return None


def is_complex_op(arg_dtypes: Sequence[np.dtype], out: np.dtype) -> bool:
    return np.dtype(out).kind == "c" or any(np.dtype(d).kind == "c" for d in arg_dtypes)


def _as(key: str, x: str, dtype: np.dtype) -> str:
    """`x` of `dtype` as a complex of `key`, as NumPy casts it (a real value gets imaginary part +0.0)."""
    d = dtype_key(dtype)
    part = "float" if key == "c8" else "double"
    if d == key:
        return x
    if d in COMPLEX_TYPES:
        return f"dyn_cx_make_{key}(({part})__real__ {x}, ({part})__imag__ {x})"
    return f"dyn_cx_make_{key}(({part}){x}, ({part})0)"


def _common(dt: Sequence[np.dtype], out: np.dtype) -> str:
    """The complex type both operands are widened to (the loop NumPy picks)."""
    return dtype_key(out) if out.kind == "c" else dtype_key(np.result_type(*dt))


def _binary(helper: str) -> Emitter:
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        key = _common(dt, out)
        return f"dyn_cx_{helper}_{key}({_as(key, a[0], dt[0])}, {_as(key, a[1], dt[1])})"
    return emit


def _unary(helper: str) -> Emitter:
    return lambda a, dt, out: f"dyn_cx_{helper}_{dtype_key(out)}({a[0]})"


def _test(helper: str) -> Emitter:
    return lambda a, dt, out: f"dyn_cx_{helper}_{dtype_key(dt[0])}({a[0]})"


def _where(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    key = dtype_key(out)
    return f"({a[0]} ? {_as(key, a[1], dt[1])} : {_as(key, a[2], dt[2])})"


def _cast(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    if out.kind == "b":
        return f"dyn_cx_nonzero_{dtype_key(dt[0])}({a[0]})"
    return _as(dtype_key(out), a[0], dt[0])


COMPLEX_EMITTERS: dict[str, Emitter] = {
    "add": _binary("add"),
    "subtract": _binary("sub"),
    "negative": _unary("neg"),
    "positive": lambda a, dt, out: a[0],
    "conjugate": _unary("conj"),
    "equal": _binary("eq"),
    "not_equal": _binary("ne"),
    "isnan": _test("isnan"),
    "isinf": _test("isinf"),
    "isfinite": _test("isfinite"),
    "where": _where,
    "cast": _cast,
}


# A complex value is made from its parts through memory: built with __real__/__imag__ stores (or
# __builtin_complex), GCC 12 folds the round trip complex128 -> complex64 -> complex128 to the value itself
# (z.astype(np.complex64).astype(np.complex128) - z was 0 at -O2, and for the last element of a loop at -O3)
def _helpers(key: str, t: str, part: str) -> str:
    neg = f"dyn_neg_{PART_KEYS[key]}"
    return f"""
static inline {t} dyn_cx_make_{key}({part} re, {part} im) {{
    const {part} parts[2] = {{re, im}}; {t} z; memcpy(&z, parts, sizeof z); return z; }}
static inline {t} dyn_cx_add_{key}({t} a, {t} b) {{
    return dyn_cx_make_{key}(__real__ a + __real__ b, __imag__ a + __imag__ b); }}
static inline {t} dyn_cx_sub_{key}({t} a, {t} b) {{
    return dyn_cx_make_{key}(__real__ a - __real__ b, __imag__ a - __imag__ b); }}
static inline {t} dyn_cx_neg_{key}({t} a) {{ return dyn_cx_make_{key}({neg}(__real__ a), {neg}(__imag__ a)); }}
static inline {t} dyn_cx_conj_{key}({t} a) {{ return dyn_cx_make_{key}(__real__ a, {neg}(__imag__ a)); }}
static inline bool dyn_cx_eq_{key}({t} a, {t} b) {{ return __real__ a == __real__ b && __imag__ a == __imag__ b; }}
static inline bool dyn_cx_ne_{key}({t} a, {t} b) {{ return __real__ a != __real__ b || __imag__ a != __imag__ b; }}
static inline bool dyn_cx_isnan_{key}({t} a) {{ return __real__ a != __real__ a || __imag__ a != __imag__ a; }}
static inline bool dyn_cx_isinf_{key}({t} a) {{ return dyn_isinf(__real__ a) || dyn_isinf(__imag__ a); }}
static inline bool dyn_cx_isfinite_{key}({t} a) {{ return dyn_isfinite(__real__ a) && dyn_isfinite(__imag__ a); }}
static inline bool dyn_cx_nonzero_{key}({t} a) {{ return __real__ a != 0 || __imag__ a != 0; }}"""


# NumPy's loop on one value with complex operands or result: the steps are the items' sizes, as NumPy's own
# calls on 0-d and 1-element arrays pass them (with an output step of 0, NumPy's complex multiply takes
# its scalar fallback, the naive formula without FMA: (1e300+1e300j) ** 2 was nan+infj, NumPy's -inf+infj)
CALL_ITEMS = r"""
#define DYN_CX_NP_CALL1(fn, a, out) do { char *args_[2] = {(char *)&(a), (char *)&(out)}; \
    const intptr_t n_ = 1, steps_[2] = {(intptr_t)sizeof(a), (intptr_t)sizeof(out)}; \
    fpflags |= fetestexcept(DYN_FLAGS); fn(args_, &n_, steps_, fn##_data); } while (0)
#define DYN_CX_NP_CALL2(fn, a, b, out) do { char *args_[3] = {(char *)&(a), (char *)&(b), (char *)&(out)}; \
    const intptr_t n_ = 1, steps_[3] = {(intptr_t)sizeof(a), (intptr_t)sizeof(b), (intptr_t)sizeof(out)}; \
    fpflags |= fetestexcept(DYN_FLAGS); fn(args_, &n_, steps_, fn##_data); } while (0)
"""

COMPLEX_SOURCE = "/* complex values by parts, as NumPy's loops compute them (complex_ops.py) */" + CALL_ITEMS + \
    _helpers("c8", "float _Complex", "float") + _helpers("c16", "double _Complex", "double") + "\n"


def uses_complex(body: str) -> bool:
    """Whether generated C needs COMPLEX_SOURCE."""
    return "dyn_cx_" in body or "DYN_CX_" in body


def complex_literal(value: object, dtype: np.dtype, part_literal: Callable[[object, np.dtype], str]) -> str:
    """A complex constant from its parts, each written by `part_literal` (exact, or opaque to the compiler)."""
    key = dtype_key(dtype)
    part = np.dtype(np.float32 if key == "c8" else np.float64)
    z = complex(value)  # type: ignore[call-overload]
    return f"dyn_cx_make_{key}({part_literal(z.real, part)}, {part_literal(z.imag, part)})"
