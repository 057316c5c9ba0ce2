"""The C emitter table: kernel IR op -> C source with NumPy's exact semantics, and C literals and types.

Only ops whose bits (and floating-point flags) C reproduces exactly are here; any other op runs as NumPy.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

import numpy as np

from .complex_ops import (COMPLEX_EMITTERS, COMPLEX_SOURCE, COMPLEX_TYPES, complex_literal, is_complex_op,
                          refuse_complex, uses_complex)
from .ufunc_loops import dtype_key, refuse_numpy_loop

C_TYPES = {
    "b": "bool", "i1": "int8_t", "i2": "int16_t", "i4": "int32_t", "i8": "int64_t",
    "u1": "uint8_t", "u2": "uint16_t", "u4": "uint32_t", "u8": "uint64_t",
    "f4": "float", "f8": "double", **COMPLEX_TYPES,
}
# how each dtype is held in memory (NumPy's bool is one byte holding 0 or 1)
STORAGE_TYPES = {**C_TYPES, "b": "uint8_t"}


def supported_dtype(dtype: np.dtype) -> bool:
    return dtype_key(dtype) in C_TYPES and np.dtype(dtype).isnative


def c_type(dtype: np.dtype) -> str:
    return C_TYPES[dtype_key(dtype)]


def storage_type(dtype: np.dtype) -> str:
    return STORAGE_TYPES[dtype_key(dtype)]


def unsigned_of(dtype: np.dtype) -> str:
    return f"uint{np.dtype(dtype).itemsize * 8}_t"


def literal(value: object, dtype: np.dtype, floats: Callable[[object, np.dtype], str] | None = None) -> str:
    """An exact C literal: floats in hexadecimal (NaN payloads and signed zeros kept by bits); `floats`
    writes the float constants (a complex one's parts) instead where given."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return "true" if value else "false"
    if dtype.kind == "c":
        return complex_literal(value, dtype, floats or literal)
    if dtype.kind == "f" and floats is not None:
        return floats(value, dtype)
    if dtype.kind == "f":
        v = float(value)  # type: ignore[arg-type]
        if dtype.itemsize == 8:
            if math.isnan(v) or math.isinf(v):
                bits = struct.unpack("<Q", struct.pack("<d", v))[0]
                return f"dyn_f64_bits(0x{bits:016x}ULL)"
            return f"{v.hex()}"
        v32 = np.float32(v)
        if np.isnan(v32) or np.isinf(v32):
            bits = int(np.array(v32).view(np.uint32))
            return f"dyn_f32_bits(0x{bits:08x}U)"
        return f"{float(v32).hex()}f"
    n = int(value)  # type: ignore[call-overload]
    t = c_type(dtype)
    if dtype.kind == "u":
        return f"(({t}){n}ULL)"
    if n == -(1 << 63):
        return "INT64_MIN"
    return f"(({t}){n}LL)"


# An emitter takes the argument sources, the argument dtypes and the result dtype.
Emitter = Callable[[Sequence[str], Sequence[np.dtype], np.dtype], str]


def _wrapping(op: str) -> Emitter:
    """Integer + - * wrap around as NumPy's do: computed in the unsigned type (signed overflow is UB in C)."""
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        if out.kind == "b":
            return f"({a[0]} {'|' if op == '+' else '&'} {a[1]})" if op in "+*" else f"({a[0]} ^ {a[1]})"
        if out.kind == "f":
            return f"({a[0]} {op} {a[1]})"
        u = unsigned_of(out)
        return f"(({c_type(out)})(({u}){a[0]} {op} ({u}){a[1]}))"
    return emit


def _negative(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    if out.kind == "f":
        return f"dyn_neg_{dtype_key(out)}({a[0]})"
    return f"(({c_type(out)})(0 - ({unsigned_of(out)}){a[0]}))"


def _absolute(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    if out.kind in "bu":
        return a[0]
    if out.kind == "f":
        return f"{'fabsf' if out.itemsize == 4 else 'fabs'}({a[0]})"
    return f"({a[0]} < 0 ? ({c_type(out)})(0 - ({unsigned_of(out)}){a[0]}) : {a[0]})"


def _square(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    return _wrapping("*")([a[0], a[0]], [dt[0], dt[0]], out)


def _sign(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    x, t = a[0], c_type(out)
    if out.kind == "u":
        return f"(({t})({x} != 0))"
    if out.kind == "f":
        # NumPy: 1, -1, +0 for either zero, and a NaN as it is
        return f"(dyn_isgreater({x}, 0) ? ({t})1 : dyn_isless({x}, 0) ? ({t})-1 : {x} == 0 ? ({t})0 : {x})"
    return f"(({t})(({x} > 0) - ({x} < 0)))"


def _minmax(which: str) -> Emitter:
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        x, y = a
        if out.kind == "b":
            return f"({x} {'|' if which == 'max' else '&'} {y})"
        if out.kind == "f":
            # NumPy: the first NaN wins; on a tie (0.0 and -0.0) the second operand
            return f"dyn_{which}_{dtype_key(out)}({x}, {y})"
        return f"({x} {'>' if which == 'max' else '<'} {y} ? {x} : {y})"
    return emit


def _floor_divide(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    return f"dyn_floordiv_{dtype_key(out)}({a[0]}, {a[1]}, &fpflags)"


def _remainder(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    return f"dyn_mod_{dtype_key(out)}({a[0]}, {a[1]}, &fpflags)"


def _shift(direction: str) -> Emitter:
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        return f"dyn_{direction}_{dtype_key(out)}({a[0]}, {a[1]})"
    return emit


def _cast(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    src, x = dt[0], a[0]
    if out.kind == "b":
        return f"({x} != 0)"
    if src.kind == "f" and out.kind in "iu":
        return f"dyn_cast_{dtype_key(src)}_{dtype_key(out)}({x}, &fpflags)"
    return f"(({c_type(out)}){x})"


# NumPy compares a signed with an unsigned integer by value; C's conversions would make -1 huge
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_QUIET = {"<": "dyn_isless", "<=": "dyn_islessequal", ">": "dyn_isgreater", ">=": "dyn_isgreaterequal"}


def _compare(op: str) -> Emitter:
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        x, y = a
        kinds = {dt[0].kind, dt[1].kind}
        if kinds == {"i", "u"}:
            rel = op
            if dt[0].kind == "u":  # the signed operand first
                x, y, rel = y, x, _MIRROR[op]
            if rel in ("<", "<=", "!="):
                return f"({x} < 0 || (uint64_t){x} {rel} (uint64_t){y})"
            return f"({x} >= 0 && (uint64_t){x} {rel} (uint64_t){y})"
        if "f" in kinds and op in _QUIET:
            # quiet comparisons: NumPy's never raise the invalid flag on NaN
            return f"{_QUIET[op]}({x}, {y})"
        return f"({x} {op} {y})"
    return emit


def _logical(op: str) -> Emitter:
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        x, y = (v if d.kind == "b" else f"({v} != 0)" for v, d in zip(a, dt))
        return f"({x} {op} {y})"
    return emit


def _fmt(template: str) -> Emitter:
    return lambda a, dt, out: template.format(*a)


def _float_fn(name: str) -> Emitter:
    """A correctly rounded C function (sqrt, floor, ceil, trunc, rint): identity for integers."""
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        if out.kind != "f":
            return a[0]
        return f"{name}{'f' if out.itemsize == 4 else ''}({a[0]})"
    return emit


def _float_test(float_template: str, other: str) -> Emitter:
    return lambda a, dt, out: float_template.format(a[0]) if dt[0].kind == "f" else other


def _reciprocal(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    return f"(({c_type(out)})1 / {a[0]})"


def _invert(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    return f"(!{a[0]})" if out.kind == "b" else f"(({c_type(out)})~{a[0]})"


def _divide(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    return f"({a[0]} / {a[1]})"


def _bitwise(op: str) -> Emitter:
    return lambda a, dt, out: f"(({c_type(out)})({a[0]} {op} {a[1]}))"


EMITTERS: dict[str, Emitter] = {
    "add": _wrapping("+"),
    "subtract": _wrapping("-"),
    "multiply": _wrapping("*"),
    "divide": _divide,
    "floor_divide": _floor_divide,
    "remainder": _remainder,
    "negative": _negative,
    "positive": _fmt("{0}"),
    "absolute": _absolute,
    "sign": _sign,
    "square": _square,
    "reciprocal": _reciprocal,
    "sqrt": _float_fn("sqrt"),
    "floor": _float_fn("floor"),
    "ceil": _float_fn("ceil"),
    "trunc": _float_fn("trunc"),
    "rint": _float_fn("rint"),
    "maximum": _minmax("max"),
    "minimum": _minmax("min"),
    "less": _compare("<"),
    "less_equal": _compare("<="),
    "greater": _compare(">"),
    "greater_equal": _compare(">="),
    "equal": _compare("=="),
    "not_equal": _compare("!="),
    "logical_and": _logical("&&"),
    "logical_or": _logical("||"),
    "logical_xor": _logical("!="),
    "logical_not": _fmt("({0} == 0)"),
    "bitwise_and": _bitwise("&"),
    "bitwise_or": _bitwise("|"),
    "bitwise_xor": _bitwise("^"),
    "invert": _invert,
    "left_shift": _shift("lshift"),
    "right_shift": _shift("rshift"),
    "isnan": _float_test("({0} != {0})", "false"),
    "isinf": _float_test("(dyn_isinf({0}))", "false"),
    "isfinite": _float_test("(dyn_isfinite({0}))", "true"),
    "where": _fmt("({0} ? {1} : {2})"),
    "cast": _cast,
}

# NumPy's ufuncs: those without exact C code above call NumPy's own loop (ufunc_loops.py)
SUPPORTED_OPS = frozenset(EMITTERS) | frozenset(
    name for name, u in vars(np).items() if isinstance(u, np.ufunc) and u.nout == 1 and u.signature is None)


# ops that never set a floating-point flag
QUIET_OPS = frozenset({"where", "maximum", "minimum", "less", "less_equal", "greater", "greater_equal", "equal",
                       "not_equal", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_xor",
                       "logical_not", "positive", "absolute", "negative", "sign"})


def _samples(dtype: np.dtype) -> np.ndarray:
    """Values of `dtype` that tell a function of them from a constant: zero, ones, the extremes, NaN."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array(sorted({0, 1, 2, 3, info.max, info.min, max(info.min, -1), info.max // 2}), dtype=dtype)
    return np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan], dtype=dtype)


def ignores_operand(name: str, constant: object, constant_dtype: np.dtype, constant_position: int, other: np.dtype,
                    out: np.dtype) -> bool:
    """Whether binary op `name` with `constant` as its operand at `constant_position` gives one value
    whatever its other operand: the C compiler folds it (`false & x` is false, `x << 99` is 0) and
    drops the float ops only that operand read, with their flags (fuzz seed 1072985)."""
    ufunc = getattr(np, name, None)
    if not isinstance(ufunc, np.ufunc) or ufunc.nin != 2:
        return False
    others = _samples(other)
    try:
        fixed = np.full(others.shape, constant, dtype=constant_dtype)
        pair = (fixed, others) if constant_position == 0 else (others, fixed)
        with np.errstate(all="ignore"):
            results = np.asarray(ufunc(*pair)).astype(out)
    except (TypeError, ValueError, OverflowError):
        return False
    first = results[:1].tobytes()
    return all(results[k:k + 1].tobytes() == first for k in range(1, len(results)))


def emitter(name: str, arg_dtypes: Sequence[np.dtype], out: np.dtype) -> Emitter:
    """The C of op `name` with these dtypes (complex values have their own, by parts: complex_ops.py)."""
    return COMPLEX_EMITTERS[name] if is_complex_op(arg_dtypes, out) else EMITTERS[name]


def uses_numpy_loop(name: str, arg_dtypes: Sequence[np.dtype], out: np.dtype) -> bool:
    """Whether the C code calls NumPy's own loop for this op (no exact C expression for its bits)."""
    if is_complex_op(arg_dtypes, out):
        return refuse_complex(name, arg_dtypes, out) is not None
    if name not in EMITTERS:
        return True
    # float floor division and remainder: NumPy's divmod, its signed zeros and flags
    return name in ("floor_divide", "remainder") and np.dtype(out).kind == "f"


def refuse_op(name: str, arg_dtypes: Sequence[np.dtype], out: np.dtype) -> str | None:
    """Why this op is not lowered to C with these dtypes (None: it is, with NumPy's exact bits)."""
    if uses_numpy_loop(name, arg_dtypes, out):
        why = refuse_numpy_loop(name, arg_dtypes, out)
        return why and (refuse_complex(name, arg_dtypes, out) if is_complex_op(arg_dtypes, out) else why)
    for d in (*arg_dtypes, out):
        if not supported_dtype(d):
            return f"dtype {np.dtype(d)} has no C kernel support"
    kinds = {np.dtype(d).kind for d in arg_dtypes}
    if name == "reciprocal" and out.kind != "f":
        return "integer reciprocal is left to NumPy"
    if name == "divide" and out.kind != "f":
        return "integer true division is left to NumPy"
    if name == "cast" and kinds == {"f"} and out.kind in "iu" and dtype_key(out) not in ("i4", "i8"):
        # out-of-range conversions to narrow or unsigned types depend on NumPy's SIMD code
        return f"cast from float to {np.dtype(out)} is left to NumPy"
    return None


# ---------------------------------------------------------------- C helpers

def _int_helpers() -> str:
    parts = []
    for key, t in C_TYPES.items():
        if key[0] not in "iu":
            continue
        bits = int(key[1:]) * 8
        u = f"uint{bits}_t"
        signed = key[0] == "i"
        lo = f"(({t})(({u})1 << {bits - 1}))"
        if signed:
            parts.append(f"""
static inline {t} dyn_floordiv_{key}({t} a, {t} b, int *fl) {{
    if (b == 0) {{ *fl |= FE_DIVBYZERO; return 0; }}
    if (b == -1 && a == {lo}) {{ *fl |= FE_OVERFLOW; return a; }}
    {t} q = ({t})(a / b);
    return ((a % b) != 0 && ((a < 0) != (b < 0))) ? ({t})(q - 1) : q;
}}
static inline {t} dyn_mod_{key}({t} a, {t} b, int *fl) {{
    if (b == 0) {{ *fl |= FE_DIVBYZERO; return 0; }}
    if (b == -1) return 0;
    {t} r = ({t})(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? ({t})(r + b) : r;
}}
static inline {t} dyn_rshift_{key}({t} a, {t} b) {{
    return ({u})b < {bits} ? ({t})(a >> b) : (a < 0 ? ({t})-1 : ({t})0);
}}""")
        else:
            parts.append(f"""
static inline {t} dyn_floordiv_{key}({t} a, {t} b, int *fl) {{
    if (b == 0) {{ *fl |= FE_DIVBYZERO; return 0; }}
    return ({t})(a / b);
}}
static inline {t} dyn_mod_{key}({t} a, {t} b, int *fl) {{
    if (b == 0) {{ *fl |= FE_DIVBYZERO; return 0; }}
    return ({t})(a % b);
}}
static inline {t} dyn_rshift_{key}({t} a, {t} b) {{
    return ({u})b < {bits} ? ({t})(a >> b) : ({t})0;
}}""")
        parts.append(f"""
static inline {t} dyn_lshift_{key}({t} a, {t} b) {{
    return ({u})b < {bits} ? ({t})(({u})a << b) : ({t})0;
}}""")
    return "".join(parts)


def _float_helpers() -> str:
    parts = []
    for key, t in (("f4", "float"), ("f8", "double")):
        parts.append(f"""
static inline {t} dyn_max_{key}({t} a, {t} b) {{ return a != a ? a : (b != b ? b : (dyn_isgreater(a, b) ? a : b)); }}
static inline {t} dyn_min_{key}({t} a, {t} b) {{ return a != a ? a : (b != b ? b : (dyn_isless(a, b) ? a : b)); }}""")
        for target, lo, hi in (("i4", "-0x1p31", "0x1p31"), ("i8", "-0x1p63", "0x1p63")):
            ct = C_TYPES[target]
            bits = int(target[1:]) * 8
            # x86's conversion: truncation in range; the "integer indefinite" value (and invalid) outside
            parts.append(f"""
static inline {ct} dyn_cast_{key}_{target}({t} x, int *fl) {{
    if (dyn_isgreaterequal(x, {lo}) && dyn_isless(x, {hi})) return ({ct})x;
    *fl |= FE_INVALID;
    return ({ct})((uint{bits}_t)1 << {bits - 1});
}}""")
    return "".join(parts)


# The bits of NaNs as NumPy leaves them: the C compiler may rewrite x + (-c) as x - c, (-a) * (-b) as
# a * b, x * -1.0 as -x (and more), which is exact for numbers but moves a NaN's sign bit (x86 returns
# the NaN operand as it is). So a float's negation is a flip of its sign bit that the compiler does not
# see as one, and a NaN or -1.0 constant is a value it cannot see (dyn_*_opaque, read once per rows
# function: KernelWriter.hidden_constant). (-fsignaling-nans would stop the folds too, but GCC then
# tests NaNs with signaling compares: np.isnan raised 'invalid value'.)
NAN_SAFE_SOURCE = r"""#include <stdint.h>
#include <string.h>
static inline double dyn_neg_f8(double x) {
    uint64_t b; memcpy(&b, &x, 8); b ^= UINT64_C(1) << 63; memcpy(&x, &b, 8); return x;
}
static inline float dyn_neg_f4(float x) {
    uint32_t b; memcpy(&b, &x, 4); b ^= UINT32_C(1) << 31; memcpy(&x, &b, 4); return x;
}
static inline double dyn_f64_opaque(uint64_t b) {
#if defined(__GNUC__)
    __asm__("" : "+r"(b));
#else
    volatile uint64_t h = b; b = h;
#endif
    double d; memcpy(&d, &b, 8); return d;
}
static inline float dyn_f32_opaque(uint32_t b) {
#if defined(__GNUC__)
    __asm__("" : "+r"(b));
#else
    volatile uint32_t h = b; b = h;
#endif
    float f; memcpy(&f, &b, 4); return f;
}
"""


def with_nan_safe_helpers(head: str, body: str) -> str:
    """`head` + the helpers of NAN_SAFE_SOURCE where `body` uses them + `body` (a module that uses none
    is the same text as before they existed: its disk cache entry stays valid)."""
    complex_values = uses_complex(body)
    uses = complex_values or "dyn_neg_f" in body or "_opaque(" in body
    return head + (NAN_SAFE_SOURCE if uses else "") + (COMPLEX_SOURCE if complex_values else "") + body


PRELUDE = r"""/* generated by dynamo's C backend */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <math.h>
#include <fenv.h>
#include <stdlib.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct { char *data; const Py_ssize_t_ *shape; const Py_ssize_t_ *strides; } dyn_arg;
/* a NumPy ufunc inner loop (PyUFuncGenericFunction): set by the loader from NumPy's own table */
typedef void (*dyn_loop_fn)(char **args, const Py_ssize_t_ *dimensions, const Py_ssize_t_ *steps, void *data);
/* values per call of a NumPy loop inside a kernel's innermost loop (its tiles live on the stack) */
#define DYN_TILE 256

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
#define DYN_FLAGS (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)
/* the flags of SSE math: on x86-64 every float op runs there, and glibc's FE_* bits are MXCSR's;
 * reading and writing MXCSR costs a few cycles where feclearexcept also resets the x87 unit. The
 * compiler may move float ops across these (not across calls): used only around a rows function's call */
#if defined(__x86_64__) && defined(__SSE2__) && FE_INVALID == 0x01 && FE_DIVBYZERO == 0x04 \
    && FE_OVERFLOW == 0x08 && FE_UNDERFLOW == 0x10
#include <xmmintrin.h>
#define dyn_clear_flags() _mm_setcsr(_mm_getcsr() & ~0x3Fu)
#define dyn_test_flags() ((int)(_mm_getcsr() & DYN_FLAGS))
#else
#define dyn_clear_flags() feclearexcept(FE_ALL_EXCEPT)
#define dyn_test_flags() fetestexcept(DYN_FLAGS)
#endif

static inline double dyn_f64_bits(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }
static inline float dyn_f32_bits(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
/* a float's order key for argmin/argmax: integers in the floats' order with -0.0 equal to 0.0 and
 * NaN at nan_key (the first NaN wins, as in NumPy), compared without a float compare (no flag) */
static inline int64_t dyn_key_f8(double v, int64_t nan_key) {
    uint64_t b; memcpy(&b, &v, 8);
    b = (b << 1) == 0 ? 0 : b;
    const int64_t k = (int64_t)b ^ (int64_t)((uint64_t)((int64_t)b >> 63) >> 1);
    return (b << 1) > (UINT64_C(0x7ff0000000000000) << 1) ? nan_key : k;
}
static inline int32_t dyn_key_f4(float v, int32_t nan_key) {
    uint32_t b; memcpy(&b, &v, 4);
    b = (b << 1) == 0 ? 0 : b;
    const int32_t k = (int32_t)b ^ (int32_t)((uint32_t)((int32_t)b >> 31) >> 1);
    return (b << 1) > (UINT32_C(0x7f800000) << 1) ? nan_key : k;
}
static inline int64_t dyn_floordiv_idx(int64_t a, int64_t b) {
    int64_t q = a / b;
    return ((a % b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t dyn_mod_idx(int64_t a, int64_t b) { int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static inline int64_t dyn_min_idx(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t dyn_max_idx(int64_t a, int64_t b) { return a > b ? a : b; }

/* threads: set by the loader from dynamo.config (0: OpenMP's default) */
int dyn_threads = 0;
int64_t dyn_parallel_work = 131072;
/* a machine whose load average is above this runs kernels on one thread: OpenMP's barriers wait for
 * threads the scheduler does not run (the load average is read at most twice a second) */
double dyn_busy_load = 1e9;
static double dyn_load_value = 0.0, dyn_load_when = -1.0;
static int dyn_machine_busy(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double t = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    if (t - dyn_load_when > 0.5) {
        double load[1];
        dyn_load_value = getloadavg(load, 1) == 1 ? load[0] : 0.0;
        dyn_load_when = t;
    }
    return dyn_load_value > dyn_busy_load;
}
""".replace("Py_ssize_t_", "intptr_t") + _int_helpers() + _float_helpers() + "\n"
