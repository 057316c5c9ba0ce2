"""The Triton emitter table: kernel IR op -> Triton source, and sympy index expressions -> Triton.

Its keys are the ops the lowering may put in kernels; any other op makes its node run as NumPy code.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import sympy

from ..kernel_ir.exprs import is_index_var

TL_DTYPES = {
    "b": "tl.int1", "i1": "tl.int8", "i2": "tl.int16", "i4": "tl.int32", "i8": "tl.int64",
    "u1": "tl.uint8", "u2": "tl.uint16", "u4": "tl.uint32", "u8": "tl.uint64",
    "f2": "tl.float16", "f4": "tl.float32", "f8": "tl.float64",
}


def tl_dtype(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    return TL_DTYPES["b" if dtype.kind == "b" else f"{dtype.kind}{dtype.itemsize}"]


# An emitter takes the argument sources, the argument dtypes and the result dtype.
Emitter = Callable[[Sequence[str], Sequence[np.dtype], np.dtype], str]


def _fmt(template: str) -> Emitter:
    return lambda a, dt, out: template.format(*a)


def _lib(name: str) -> Emitter:
    return _float32_math(lambda a, dt, out: f"libdevice.{name}({', '.join(a)})")


def _maximum(fn: str) -> Emitter:
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        if out.kind == "f":
            return f"tl.{fn}({a[0]}, {a[1]}, propagate_nan=tl.PropagateNan.ALL)"
        if out.kind == "b":
            return f"({a[0]} {'|' if fn == 'maximum' else '&'} {a[1]})"
        return f"tl.{fn}({a[0]}, {a[1]})"
    return emit


def _floor_divide(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    if out.kind == "f":
        return f"_float_floor_div({a[0]}, {a[1]})"
    return f"_floor_div({_as(a[0], out)}, {_as(a[1], out)})"


def _remainder(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    if out.kind == "f":
        return f"_float_mod({a[0]}, {a[1]})"
    return f"_py_mod({_as(a[0], out)}, {_as(a[1], out)})"


def _as(x: str, out: np.dtype) -> str:
    """An integer operand in the result's type: Triton refuses / and % between signed and unsigned
    operands (fuzz seed 2023085: an int32 constant with a uint8 tensor, InterpreterError)."""
    return f"({x}).to({tl_dtype(out)})"


def _cast(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    if out.kind == "b":
        return f"({a[0]} != 0)"
    return f"{a[0]}.to({tl_dtype(out)})"


def _sign(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    x = a[0]
    if out.kind == "u":
        return f"({x} != 0).to({tl_dtype(out)})"
    return f"tl.where({x} > 0, 1, tl.where({x} < 0, -1, {x})).to({tl_dtype(out)})"


def _divide(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    """Triton divides float16 in float32 and keeps that type: rounded back, as NumPy's float16 loop
    rounds each quotient (fuzz seed 2000804: np.where(..., s / a16) read the unrounded quotient)."""
    quotient = f"({a[0]} / {a[1]})"
    return f"{quotient}.to(tl.float16)" if out == np.float16 else quotient


def _float_only(emit: Emitter, fallback: Emitter) -> Emitter:
    return lambda a, dt, out: emit(a, dt, out) if dt[0].kind == "f" else fallback(a, dt, out)


def _is_literal(text: str) -> bool:
    """A constant printed in place (codegen's operand()): Python numbers have no `.to`."""
    if text.startswith("float("):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _float32_math(emit: Emitter) -> Emitter:
    """Triton's math functions take fp32/fp64 only: float16 is computed in float32 and rounded back,
    as NumPy's float16 loops do."""
    def wrapped(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        if all(d == np.float16 for d in dt) and out == np.float16:
            wide = [x if _is_literal(x) else f"{x}.to(tl.float32)" for x in a]
            return f"{emit(wide, [np.dtype(np.float32)] * len(dt), np.dtype(np.float32))}.to(tl.float16)"
        return emit(a, dt, out)
    return wrapped


def _rounding(fn: str) -> Emitter:
    """floor, ceil, trunc, rint of an integer or bool (NumPy has identity loops for those)."""
    on_float = _float32_math(lambda a, dt, out: fn.format(a[0]))

    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        return on_float(a, dt, out) if dt[0].kind == "f" else a[0]
    return emit


def _logical(op: str) -> Emitter:
    """logical_and/or/xor: truth values of any dtype (`&` on ints would be bitwise)."""
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        x, y = (v if d.kind == "b" else f"({v} != 0)" for v, d in zip(a, dt))
        return f"({x} {op} {y})"
    return emit


# NumPy compares a signed with an unsigned integer by value; C-like promotion would make -1 huge
_MIXED_SIGN = {"<": ("|", "<"), "<=": ("|", "<="), ">": ("&", ">"), ">=": ("&", ">="),
               "==": ("&", "=="), "!=": ("|", "!=")}
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _compare(op: str) -> Emitter:
    def emit(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
        x, y = a
        if {dt[0].kind, dt[1].kind} == {"i", "u"}:
            rel = op
            if dt[0].kind == "u":  # put the signed operand first
                x, y, rel = y, x, _MIRROR[op]
            join, cmp = _MIXED_SIGN[rel]
            negative = f"({x} < 0)" if join == "|" else f"({x} >= 0)"
            return f"({negative} {join} ({x}.to(tl.uint64) {cmp} {y}.to(tl.uint64)))"
        return f"({x} {op} {y})"
    return emit


def _reciprocal(a: Sequence[str], dt: Sequence[np.dtype], out: np.dtype) -> str:
    return f"(1.0 / {a[0]})" if out.kind == "f" else f"(1 // {a[0]})"


EMITTERS: dict[str, Emitter] = {
    "add": _fmt("({0} + {1})"),
    "subtract": _fmt("({0} - {1})"),
    "multiply": _fmt("({0} * {1})"),
    "divide": _divide,
    "floor_divide": _float32_math(_floor_divide),
    "remainder": _float32_math(_remainder),
    "power": _lib("pow"),
    "negative": _fmt("(-{0})"),
    "positive": _fmt("{0}"),
    "absolute": lambda a, dt, out: a[0] if out.kind in "bu" else f"tl.abs({a[0]})",
    "sign": _sign,
    "square": _fmt("({0} * {0})"),
    "reciprocal": _reciprocal,
    "sqrt": _float32_math(lambda a, dt, out: f"tl.sqrt_rn({a[0]})" if out == np.float32 else f"tl.sqrt({a[0]})"),
    "cbrt": _lib("cbrt"),
    "exp": _float32_math(_fmt("tl.exp({0})")),
    "exp2": _float32_math(_fmt("tl.exp2({0})")),
    "expm1": _lib("expm1"),
    "log": _float32_math(_fmt("tl.log({0})")),
    "log2": _float32_math(_fmt("tl.log2({0})")),
    "log10": _lib("log10"),
    "log1p": _lib("log1p"),
    "sin": _float32_math(_fmt("tl.sin({0})")),
    "cos": _float32_math(_fmt("tl.cos({0})")),
    "tan": _lib("tan"),
    "arcsin": _lib("asin"),
    "arccos": _lib("acos"),
    "arctan": _lib("atan"),
    "sinh": _lib("sinh"),
    "cosh": _lib("cosh"),
    "tanh": _lib("tanh"),
    "arcsinh": _lib("asinh"),
    "arccosh": _lib("acosh"),
    "arctanh": _lib("atanh"),
    "arctan2": _lib("atan2"),
    "hypot": _lib("hypot"),
    "copysign": _lib("copysign"),
    "floor": _rounding("tl.floor({0})"),
    "ceil": _rounding("tl.ceil({0})"),
    "trunc": _rounding("libdevice.trunc({0})"),
    "rint": _rounding("libdevice.rint({0})"),
    "maximum": _maximum("maximum"),
    "minimum": _maximum("minimum"),
    "less": _compare("<"),
    "less_equal": _compare("<="),
    "greater": _compare(">"),
    "greater_equal": _compare(">="),
    "equal": _compare("=="),
    "not_equal": _compare("!="),
    "logical_and": _logical("&"),
    "logical_or": _logical("|"),
    "logical_xor": _logical("^"),
    "logical_not": _fmt("({0} == 0)"),
    "bitwise_and": _fmt("({0} & {1})"),
    "bitwise_or": _fmt("({0} | {1})"),
    "bitwise_xor": _fmt("({0} ^ {1})"),
    "invert": lambda a, dt, out: f"({a[0]} == 0)" if out.kind == "b" else f"(~{a[0]})",
    "left_shift": _fmt("({0} << {1})"),
    "right_shift": _fmt("({0} >> {1})"),
    "isnan": _float_only(_fmt("({0} != {0})"), _fmt("({0} != {0})")),
    "isinf": _float_only(_fmt("(tl.abs({0}) == float('inf'))"), _fmt("({0} != {0})")),
    "isfinite": _float_only(_fmt("(tl.abs({0}) < float('inf'))"), _fmt("({0} == {0})")),
    "where": _fmt("tl.where({0}, {1}, {2})"),
    "cast": _cast,
}

SUPPORTED_OPS = frozenset(EMITTERS)

# Ops printed as Triton operators or tl.where/maximum/minimum, which give a Python number the type of
# the tensor beside it. Function calls (libdevice, the helpers below) type a number as float32 or
# int32 instead, so their constants are passed as tensors of the constant's own dtype.
TYPES_ITS_LITERALS = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "less", "less_equal", "greater",
    "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "where",
})

# Helpers the emitted code may call: NumPy's floor division and remainder for integers (Triton's
# // and % truncate toward zero, like C).
PRELUDE = '''
@triton.jit
def _floor_div(a, b):
    q = a // b
    return tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)


@triton.jit
def _py_mod(a, b):
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def _float_floor_div(a, b):
    # NumPy's float floor division: from fmod, so that inf // 1 is nan and 5 // -inf is -1
    mod = libdevice.fmod(a, b)
    div = (a - mod) / b
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    low = tl.floor(div)
    low = tl.where(div - low > 0.5, low + 1.0, low)
    low = tl.where(div != 0, low, libdevice.copysign(tl.zeros_like(div), a / b))
    return tl.where(b == 0, a / b, low)


@triton.jit
def _float_mod(a, b):
    # NumPy's float remainder: the sign of the divisor, a zero result signed like it
    r = libdevice.fmod(a, b)
    r = tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return tl.where((r == 0) & (b != 0), libdevice.copysign(tl.zeros_like(r), b), r)


@triton.jit
def _nan_max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _nan_min(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _prod(a, b):
    return a * b
'''


# ---------------------------------------------------------------- index expressions

class IndexPrinter:
    """sympy index expressions as Triton source: index variables become their tile axes' names."""

    def __init__(self, axis_name: Callable[[sympy.Symbol], str]) -> None:
        self.axis_name = axis_name

    def __call__(self, expr: sympy.Basic) -> str:
        return self.go(expr)

    def divisor(self, e: sympy.Basic) -> str:
        """The right operand of // or %: a product in parentheses (`r // s0*s1` is (r // s0) * s1 in
        Python: the flat position of an argmin over a (2, s0, s1) array read the wrong element, fuzz
        seed 2061294)."""
        text = self.go(e)
        return text if isinstance(e, (sympy.Symbol, sympy.Integer)) else f"({text})"

    def go(self, e: sympy.Basic) -> str:
        if e is sympy.true or e == sympy.true:
            return "True"
        if e is sympy.false or e == sympy.false:
            return "False"
        if isinstance(e, sympy.Symbol):
            return self.axis_name(e) if is_index_var(e) else e.name
        if isinstance(e, sympy.Integer):
            return str(int(e))
        if isinstance(e, sympy.Add):
            # terms ordered by their printed form, so that equal offsets print (and are CSE'd) alike
            # whichever index variables of one axis they came from
            signed = []
            for t in e.args:
                negative = t.as_coeff_Mul()[0] < 0
                signed.append((t.is_number, self.go(-t if negative else t), negative))
            signed.sort(key=lambda s: (s[0], s[1]))
            out = ("-" if signed[0][2] else "") + signed[0][1]
            for _, text, negative in signed[1:]:
                out += f" - {text}" if negative else f" + {text}"
            return f"({out})"
        if isinstance(e, sympy.Mul):
            coeff, rest = e.as_coeff_Mul()
            if coeff == -1:
                return f"(-{self.go(rest)})"
            factors = sorted(self.go(f) for f in sympy.Mul.make_args(e))
            return "*".join(sorted(factors, key=lambda f: not f.lstrip("-").isdigit()))
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
            return "*".join([self.go(e.base)] * int(e.exp))
        if isinstance(e, sympy.Mod):
            return f"({self.go(e.args[0])} % {self.divisor(e.args[1])})"
        if isinstance(e, sympy.floor):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            return f"({self.go(num)} // {self.divisor(den)})"
        if isinstance(e, (sympy.Min, sympy.Max)):
            fn = "tl.minimum" if isinstance(e, sympy.Min) else "tl.maximum"
            args = [self.go(a) for a in e.args]
            out = args[0]
            for a in args[1:]:
                out = f"{fn}({out}, {a})"
            return out
        if isinstance(e, sympy.And):
            return " & ".join(f"({self.go(a)})" if isinstance(a, (sympy.And, sympy.Or)) else self.go(a)
                              for a in e.args)
        if isinstance(e, sympy.Or):
            return "(" + " | ".join(self.go(a) for a in e.args) + ")"
        if isinstance(e, sympy.Not):
            return f"({self.go(e.args[0])} == 0)"
        if isinstance(e, sympy.core.relational.Relational):
            ops = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
            return f"({self.go(e.lhs)} {ops[e.rel_op]} {self.go(e.rhs)})"
        raise NotImplementedError(f"index expression {e} ({type(e).__name__})")
