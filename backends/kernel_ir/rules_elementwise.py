"""Lowering rules for elementwise calls: ufuncs and operators (NumPy's loop dtypes), powers, where,
clip, astype, rounding, and in-place operators (functionalized).
"""
from __future__ import annotations

import builtins
import functools
import operator
from typing import Any

import numpy as np

from ...fx_ir import Node
from ...fx_ir.ops import lookup_function
from .exprs import Const, Expr, Op, cast, where
from .lowering import Lowerer, Unsupported, node_meta, rule
from .values import TensorValue, broadcast_to, constant_value, kernel_dtype, sizes

PY_SCALARS = (bool, int, float, complex)


def operand_type(x: Any) -> Any:
    """What ufunc.resolve_dtypes takes for an operand: a dtype, or a Python type for weak scalars."""
    if isinstance(x, TensorValue):
        return x.dtype
    if isinstance(x, np.generic):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, (int, float, complex)):
        return type(x)
    raise Unsupported(f"operand of type {type(x).__name__}")


def as_value(x: Any, dtype: Any) -> TensorValue:
    if isinstance(x, TensorValue):
        return x
    dtype = np.dtype(dtype)
    if isinstance(x, int) and not isinstance(x, bool) and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            # NumPy compares such a value exactly and raises for arithmetic: leave both to NumPy
            raise Unsupported(f"the Python int {x} does not fit the loop's {dtype}")
    if isinstance(x, (*PY_SCALARS, np.generic)):
        return constant_value(x, dtype)
    raise Unsupported(f"operand of type {type(x).__name__}")


def result_shape(node: Node, operands: list[Any]) -> tuple[int, ...]:
    meta = node_meta(node)
    if meta is not None:
        return sizes(meta.shape)
    shapes = [x.shape for x in operands if isinstance(x, TensorValue)]
    return tuple(np.broadcast_shapes(*shapes)) if shapes else ()


def check_dtypes(*dtypes: np.dtype) -> None:
    for d in dtypes:
        if not kernel_dtype(d) or np.dtype(d).itemsize > (16 if np.dtype(d).kind == "c" else 8):
            raise Unsupported(f"dtype {d} has no kernel support")


def apply_ufunc(L: Lowerer, node: Node, ufunc: np.ufunc, operands: list[Any],
                name: str | None = None, dtype: Any = None) -> TensorValue:
    """`dtype`: the ufunc's dtype= keyword, which picks the loop (np.add(f8, i1, dtype=f4) adds in float32,
    both inputs cast first: corpus test_ufunc_keywords), not a cast of the result."""
    if ufunc.nout != 1 or ufunc.signature is not None or len(operands) != ufunc.nin:
        raise Unsupported(f"ufunc {ufunc.__name__} with these arguments")
    chosen: dict[str, Any] = {} if dtype is None else {"signature": (None,) * ufunc.nin + (np.dtype(dtype),)}
    try:
        loop = ufunc.resolve_dtypes((*(operand_type(x) for x in operands), None), **chosen)
    except TypeError as exc:  # NumPy has no loop for these dtypes (or refuses them, like -bool)
        raise Unsupported(f"no NumPy loop for {ufunc.__name__}: {exc}") from None
    check_dtypes(*loop)
    op_name = name or ufunc.__name__
    if op_name not in L.supported_ops:
        raise Unsupported(f"no kernel op for np.{ufunc.__name__}")
    if ufunc is np.reciprocal and np.dtype(loop[-1]).kind in "iu":
        # NumPy's value for 0 is its CPU's (INT_MIN on x86; triton gave 0: fuzz seed 2013244)
        raise Unsupported("integer reciprocal is left to NumPy (its value for 0 is the CPU's)")
    shape = result_shape(node, operands)
    values = [broadcast_to(as_value(x, loop[i]), shape) for i, x in enumerate(operands)]
    meta = node_meta(node)
    out_dtype = meta.dtype if meta is not None else loop[-1]

    def fn(index: Any) -> Expr:
        args = [cast(v.at(index), loop[i]) for i, v in enumerate(values)]
        return cast(Op(op_name, args, loop[-1]), out_dtype)
    return TensorValue(shape, np.dtype(out_dtype), fn)


def ufunc_of(node: Node) -> np.ufunc:
    target = node.target
    if isinstance(target, np.ufunc):
        return target
    row = lookup_function(target)
    if row is None or row.ufunc is None:
        raise Unsupported(f"{target!r} is not a ufunc")
    return row.ufunc


def lower_ufunc_call(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    ufunc = ufunc_of(node)
    extra = {k: v for k, v in kwargs.items() if v is not None}
    if set(extra) - {"dtype", "casting"} or "out" in extra:
        raise Unsupported(f"np.{ufunc.__name__} with keywords {sorted(extra)}")
    if ufunc is np.power or ufunc is np.float_power:
        return lower_power(L, node, args[0], args[1], operator_form=node.target is operator.pow, ufunc=ufunc)
    if "casting" in extra and extra["casting"] != "same_kind":
        raise Unsupported(f"np.{ufunc.__name__} with casting={extra['casting']!r}")
    return apply_ufunc(L, node, ufunc, list(args), dtype=extra.get("dtype"))


_UFUNCS = [u for u in vars(np).values() if isinstance(u, np.ufunc)]
_OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
              operator.pow, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
              operator.lt, operator.le, operator.eq, operator.ne, operator.ge, operator.gt,
              operator.neg, operator.pos, operator.abs, builtins.abs, operator.invert, builtins.pow]
rule(*_UFUNCS, *_OPERATORS)(lower_ufunc_call)


def lower_power(L: Lowerer, node: Node, base: Any, exponent: Any, operator_form: bool,
                ufunc: np.ufunc = np.power) -> TensorValue:
    """`x ** c` as NumPy computes it: its fast paths (square, sqrt, reciprocal for the exponents this NumPy
    takes them for: numpy_fast_power) for float and complex bases, repeated products for small
    non-negative integer powers of ints."""
    if ufunc is not np.power or not isinstance(base, TensorValue):  # float_power: always in float64
        # float_power's own loop where the target has one: NumPy's float64 power is another (SIMD) loop
        # whose last bits differ from float_power's (libm's pow)
        name = "float_power" if ufunc is np.float_power and "float_power" in L.supported_ops else "power"
        value = apply_ufunc(L, node, ufunc, [base, exponent], name=name)
        if value.dtype.kind not in "fc":
            raise Unsupported("integer power with an array exponent")
        return value
    if isinstance(exponent, (int, float, np.integer, np.floating)) and not isinstance(exponent, bool):
        loop = np.power.resolve_dtypes((base.dtype, operand_type(exponent), None))
        if loop[0].kind in "fc":
            fast = numpy_fast_power(base.dtype, exponent) if operator_form else None
            if fast is not None:
                return apply_ufunc(L, node, fast, [astype_value(base, loop[0])])
        elif loop[0].kind in "iu" and float(exponent).is_integer() and 0 <= exponent <= 64:
            return integer_power(node, astype_value(base, loop[0]), int(exponent))
    elif isinstance(exponent, TensorValue) and np.result_type(base.dtype, exponent.dtype).kind not in "fc":
        raise Unsupported("integer power with an array exponent")
    return apply_ufunc(L, node, np.power, [base, exponent], name="power")


class _UfuncCalled(Exception):
    def __init__(self, ufunc: np.ufunc) -> None:
        self.ufunc = ufunc


class _PowerProbe(np.ndarray):
    """An array that tells which ufunc `array ** exponent` calls (NumPy's fast_scalar_power)."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise _UfuncCalled(ufunc)


def numpy_fast_power(dtype: np.dtype, exponent: Any) -> np.ufunc | None:
    """The ufunc NumPy calls for `array ** exponent` instead of np.power (None: power itself). Which
    exponents take a fast path, and of which Python or NumPy type, changed across NumPy versions (1.x:
    any number equal to 2, 0.5, -1, 1, 0; 2.x: the int 2 or -1 and the float 0.5 only, so `x ** 2.0`
    warns 'in power'): asked of this NumPy, once per (dtype, exponent type, value)."""
    return _fast_power(np.dtype(dtype), type(exponent).__qualname__, exponent)


@functools.cache
def _fast_power(dtype: np.dtype, kind: str, exponent: Any) -> np.ufunc | None:
    """`kind`: the exponent's type name, in the key (2 and 2.0 are one key, and NumPy treats them apart)."""
    try:
        np.zeros(1, dtype).view(_PowerProbe) ** exponent
    except _UfuncCalled as called:
        return None if called.ufunc is np.power else called.ufunc
    return None


def integer_power(node: Node, base: TensorValue, exponent: int) -> TensorValue:
    meta = node_meta(node)
    dtype = meta.dtype if meta is not None else base.dtype

    def fn(index: Any) -> Expr:
        x = cast(base.at(index), dtype)
        result: Expr = Const(1, dtype)
        square, e = x, exponent
        while e:
            if e & 1:
                result = square if isinstance(result, Const) else Op("multiply", (result, square), dtype)
            e >>= 1
            if e:
                square = Op("multiply", (square, square), dtype)
        return result
    return TensorValue(base.shape, np.dtype(dtype), fn)


def astype_value(value: TensorValue, dtype: np.dtype) -> TensorValue:
    check_dtypes(dtype)
    if value.dtype == dtype:
        return value
    return TensorValue(value.shape, dtype, lambda index: cast(value.at(index), dtype))


@rule(np.where)
def lower_where(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    if len(args) != 3 or kwargs:
        raise Unsupported("np.where with one argument (indices)")
    meta = node_meta(node)
    if meta is None:
        raise Unsupported("no meta")
    shape = tuple(meta.shape)
    cond = broadcast_to(as_value(args[0], bool), shape)
    a = broadcast_to(as_value(args[1], meta.dtype), shape)
    b = broadcast_to(as_value(args[2], meta.dtype), shape)

    def fn(index: Any) -> Expr:
        return where(cast(cond.at(index), bool), cast(a.at(index), meta.dtype), cast(b.at(index), meta.dtype))
    return TensorValue(shape, meta.dtype, fn)


@rule(np.clip, methods=("clip",))
def lower_clip(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    names = ("a", "a_min", "a_max")
    bound = dict(zip(names, args))
    for key, alias in (("a_min", "min"), ("a_max", "max")):
        if alias in kwargs:
            bound[key] = kwargs[alias]
        if key in kwargs:
            bound[key] = kwargs[key]
    if set(kwargs) - {"a_min", "a_max", "min", "max"}:
        raise Unsupported(f"clip with keywords {sorted(kwargs)}")
    lo, hi = bound.get("a_min"), bound.get("a_max")
    if lo is None or hi is None:  # NumPy clips against one bound with np.maximum or np.minimum
        if lo is not None:
            return apply_ufunc(L, node, np.maximum, [bound["a"], lo])
        return apply_ufunc(L, node, np.minimum, [bound["a"], hi])
    meta = node_meta(node)
    if meta is None:
        raise Unsupported("no meta")
    shape, dtype = tuple(meta.shape), meta.dtype
    check_dtypes(dtype)
    # NumPy's clip loop compares and picks in the result's type: each operand is cast to it (fuzz seed 2024381:
    # float16 clipped by int32 bounds is float64, Triton compared and picked in float16)
    x, low, high = (broadcast_to(astype_value(as_value(v, dtype), dtype), shape) for v in (bound["a"], lo, hi))
    limits = [(low, "less"), (high, "greater")]

    def fn(index: Any) -> Expr:
        # NumPy's clip loop, bound by bound: the bound where x is past it (or the bound is NaN), else x.
        # A tie keeps x (clip(0.0, -0.0, 1) is 0.0), where np.maximum would give the second zero
        value = x.at(index)
        for limit, past in limits:
            b = limit.at(index)
            passed = Op(past, (value, b), np.bool_)
            if dtype.kind == "f":
                passed = Op("logical_or", (passed, Op("isnan", (b,), np.bool_)), np.bool_)
            value = where(passed, b, value)
        return value
    return TensorValue(shape, dtype, fn)


@rule(methods=("astype",))
def lower_astype(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    x, dtype = args[0], (args[1] if len(args) > 1 else kwargs.get("dtype"))
    if set(kwargs) - {"dtype", "copy"} or len(args) > 2:
        raise Unsupported("astype with order or casting arguments")
    if not isinstance(x, TensorValue):
        raise Unsupported("astype of a non-array")
    if np.dtype(dtype) == x.dtype:
        if kwargs.get("copy", True) is not True:
            raise Unsupported("astype(copy=False) of the same dtype: the array itself")
        # a copy, even of the same dtype: not the array's own value, or its buffer (fuzz seed 1000569:
        # `v = a.astype(np.float64); v *= a` wrote into a float64 argument)
        return TensorValue(x.shape, x.dtype, x.fn)
    return astype_value(x, np.dtype(dtype))


@rule(np.round, np.around, np.rint, methods=("round",))
def lower_round(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    decimals = args[1] if len(args) > 1 else kwargs.get("decimals", 0)
    if decimals != 0 or (set(kwargs) - {"decimals"}):
        raise Unsupported("round with decimals")
    x = args[0]
    meta = node_meta(node)
    if isinstance(x, TensorValue) and x.dtype.kind in "biu" and meta is not None and meta.dtype == x.dtype:
        return x  # rounding an integer array to 0 decimals returns it as it is (bools become float16)
    return apply_ufunc(L, node, np.rint, [x])


# ---------------------------------------------------------------- in-place operators

_INPLACE = {
    operator.iadd: np.add, operator.isub: np.subtract, operator.imul: np.multiply,
    operator.itruediv: np.true_divide, operator.ifloordiv: np.floor_divide, operator.imod: np.remainder,
    operator.ipow: np.power, operator.iand: np.bitwise_and, operator.ior: np.bitwise_or,
    operator.ixor: np.bitwise_xor, operator.ilshift: np.left_shift, operator.irshift: np.right_shift,
}


@rule(*_INPLACE)
def lower_inplace(L: Lowerer, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorValue:
    """`a += b` writes a's memory: the value of `a` from here on is the result, cast to a's dtype."""
    target = node.args[0]
    if not isinstance(target, Node) or not isinstance(args[0], TensorValue):
        raise Unsupported("in-place operator on a non-array")
    root = L.functionalizable(target)
    ufunc = _INPLACE[node.target]
    if ufunc is np.power:
        value = lower_power(L, node, args[0], args[1], operator_form=True)
    else:
        value = apply_ufunc(L, node, ufunc, [args[0], args[1]])
    if value.shape != args[0].shape:
        raise Unsupported("in-place result does not fit its target")
    new = astype_value(value, args[0].dtype)
    L.replace_value(root, new)
    L.root[node] = root
    return new
