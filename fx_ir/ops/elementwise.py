"""Ufuncs, Python operators and elementwise functions (where, clip, round, isclose, ...).

Shapes broadcast symbolically; dtypes and scalar-ness come from NumPy itself (NEP 50).
"""
from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..tensor_meta import TensorMeta
from .errors import DataDependentShape, UnsupportedArguments
from .gufunc import gufunc_shapes
from .operands import (PY_SCALARS, arg_ref, check_out, check_symbolic_scalars, is_ndarray,
                       is_numpy_operand, lift, operand_shape, out_effects)
from .promotion import ArrayOut, meta_of, probe, probe_method
from .registry import ArgRef, Method, OpInfo, OpKind, register
from .shapes import broadcast_shapes, fits_into, shape_str
from .symbolic import sizes_equal

# gufuncs are linear algebra; every other ufunc maps elements to elements
_LINALG_UFUNCS = {"matmul", "vecdot", "matvec", "vecmat"}


def numpy_ufuncs() -> dict[str, np.ufunc]:
    """Every ufunc object in the numpy namespace, by its attribute name (aliases included). The
    namespace's own dict, not dir(np): getattr of every name there imports numpy's lazily loaded
    submodules (f2py, ma, testing, polynomial: a third of the time of `import dynamo`)."""
    return {name: obj for name, obj in vars(np).items() if isinstance(obj, np.ufunc)}


def _single(probed: Any, what: str) -> ArrayOut:
    if not isinstance(probed, ArrayOut):
        raise UnsupportedArguments(f"{what} did not return an array")
    return probed


# ---------------------------------------------------------------- ufunc calls

def ufunc_outs(ufunc: np.ufunc, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> list[tuple[ArgRef, Any] | None]:
    """The out operands of a ufunc call by output position: (where it was passed, value)."""
    nin, nout = ufunc.nin, ufunc.nout
    slots: list[tuple[ArgRef, Any] | None] = [None] * nout
    for k, value in enumerate(args[nin:nin + nout]):
        if value is not None:
            slots[k] = (nin + k, value)
    out = kwargs.get("out")
    if isinstance(out, tuple):
        for k, value in enumerate(out[:nout]):
            if value is not None:
                slots[k] = (("out", k), value)
    elif out is not None:
        slots[0] = ("out", out)
    return slots


class UfuncRule:
    """infer for `ufunc(*inputs, out=..., where=..., dtype=..., casting=..., ...)`."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self.ufunc = ufunc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ufunc = self.ufunc
        args = (*(lift(x) for x in args[:ufunc.nin]), *args[ufunc.nin:])
        if "where" in kwargs:
            kwargs = {**kwargs, "where": lift(kwargs["where"])}
        probed = probe(ufunc, *args, **kwargs)  # NumPy validates arity, dtypes, casting, out dtype
        if kwargs.get("axes") is not None or kwargs.get("axis") is not None or kwargs.get("keepdims"):
            raise UnsupportedArguments(f"{ufunc.__name__}: axes=/axis=/keepdims= are not modelled")
        inputs = args[:ufunc.nin]
        shapes = [operand_shape(x) for x in inputs]
        check_symbolic_scalars(inputs, exponent=inputs[1] if ufunc is np.power else None)
        slots = ufunc_outs(ufunc, args, kwargs)
        out_shapes = [None if s is None else operand_shape(s[1]) for s in slots]
        if ufunc.signature is not None:
            result_shapes = gufunc_shapes(ufunc.__name__, ufunc.signature, shapes, out_shapes)
        else:
            where = kwargs.get("where", True)
            if not isinstance(where, bool):
                shapes.append(operand_shape(where))
            loop = broadcast_shapes(*shapes)
            for slot in slots:
                if slot is not None:
                    loop = check_out(slot[1], loop).shape
            result_shapes = [loop] * ufunc.nout
        outputs = probed if ufunc.nout > 1 else (probed,)
        # a given out= array is the result itself; the rest are fresh arrays (or NumPy scalars)
        results = [meta_of(slot[1]) if slot is not None else _single(out, ufunc.__name__).meta(shape)
                   for slot, out, shape in zip(slots, outputs, result_shapes)]
        return tuple(results) if ufunc.nout > 1 else results[0]

    def view_of(self, *args: Any, **kwargs: Any) -> Any:
        refs = [None if s is None else s[0] for s in ufunc_outs(self.ufunc, args, kwargs)]
        if self.ufunc.nout == 1:
            return refs[0]
        return tuple(refs) if any(r is not None for r in refs) else None

    def mutates(self, *args: Any, **kwargs: Any) -> tuple[ArgRef, ...]:
        return tuple(s[0] for s in ufunc_outs(self.ufunc, args, kwargs) if s is not None)

    def nondeterministic(self, *args: Any, **kwargs: Any) -> bool:
        # where= leaves the unselected elements of a fresh output uninitialised
        where = kwargs.get("where", True)
        return where is not True and any(s is None for s in ufunc_outs(self.ufunc, args, kwargs))


def ufunc_row(ufunc: np.ufunc) -> OpInfo:
    rule = UfuncRule(ufunc)
    kind = OpKind.LINALG if ufunc.__name__ in _LINALG_UFUNCS else OpKind.ELEMENTWISE
    return OpInfo(f"numpy.{ufunc.__name__}", kind, (ufunc,), rule, view_of=rule.view_of,
                  mutates=rule.mutates, nondeterministic=rule.nondeterministic, ufunc=ufunc)


# ---------------------------------------------------------------- Python operators

def _require_numpy(name: str, operands: tuple[Any, ...]) -> None:
    if not any(is_numpy_operand(x) for x in operands):
        raise UnsupportedArguments(f"{name} without an array operand is plain Python")


def _operator_shape(op: Callable[..., Any], a: Any, b: Any, out: Any = None) -> Any:
    if op in (operator.matmul, operator.imatmul):
        outs = [] if out is None else [operand_shape(out)]
        return gufunc_shapes("matmul", np.matmul.signature, [operand_shape(a), operand_shape(b)], outs)[0]
    return broadcast_shapes(operand_shape(a), operand_shape(b))


def binary_operator_rule(op: Callable[..., Any], name: str) -> Callable[..., Any]:
    def infer(a: Any, b: Any) -> Any:
        _require_numpy(name, (a, b))
        a, b = lift(a), lift(b)
        probed = probe(op, a, b)
        check_symbolic_scalars((a, b), exponent=b if op is operator.pow else None)
        shape = _operator_shape(op, a, b)
        if isinstance(probed, tuple):  # divmod
            return tuple(_single(p, name).meta(shape) for p in probed)
        return _single(probed, name).meta(shape)
    infer.__name__ = name
    return infer


def inplace_operator_rule(iop: Callable[..., Any], op: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`a op= b`: writes into ndarray `a` (same dtype; same_kind casting), else acts like `op`."""
    fallback = binary_operator_rule(op, name)

    def infer(a: Any, b: Any) -> Any:
        if not is_ndarray(a):
            return fallback(a, b)  # NumPy scalars and Python numbers have no in-place form
        b = lift(b)
        probe(iop, a, b)  # raises UFuncTypeError when the result cannot be cast back into a
        check_symbolic_scalars((a, b), exponent=b if iop is operator.ipow else None)
        target = operand_shape(a)
        if iop is operator.imatmul:
            _operator_shape(iop, a, b, out=a)
        else:
            shape = broadcast_shapes(target, operand_shape(b))
            if not fits_into(shape, target):
                raise ValueError(f"non-broadcastable output operand with shape {shape_str(target)} "
                                 f"doesn't match the broadcast shape {shape_str(shape)}")
        return a
    infer.__name__ = name
    return infer


def _inplace_view_of(a: Any, *args: Any) -> ArgRef | None:
    return 0 if is_ndarray(a) else None


def _inplace_mutates(a: Any, *args: Any) -> tuple[ArgRef, ...]:
    return (0,) if is_ndarray(a) else ()


def unary_operator_rule(op: Callable[..., Any], name: str) -> Callable[..., Any]:
    def infer(x: Any) -> Any:
        _require_numpy(name, (x,))
        return _single(probe(op, x), name).meta(operand_shape(x))
    infer.__name__ = name
    return infer


_BINARY_OPERATORS: list[tuple[Callable[..., Any], np.ufunc, Callable[..., Any] | None]] = [
    (operator.add, np.add, operator.iadd),
    (operator.sub, np.subtract, operator.isub),
    (operator.mul, np.multiply, operator.imul),
    (operator.truediv, np.true_divide, operator.itruediv),
    (operator.floordiv, np.floor_divide, operator.ifloordiv),
    (operator.mod, np.remainder, operator.imod),
    (operator.pow, np.power, operator.ipow),
    (operator.matmul, np.matmul, operator.imatmul),
    (operator.and_, np.bitwise_and, operator.iand),
    (operator.or_, np.bitwise_or, operator.ior),
    (operator.xor, np.bitwise_xor, operator.ixor),
    (operator.lshift, np.left_shift, operator.ilshift),
    (operator.rshift, np.right_shift, operator.irshift),
    (operator.lt, np.less, None),
    (operator.le, np.less_equal, None),
    (operator.eq, np.equal, None),
    (operator.ne, np.not_equal, None),
    (operator.ge, np.greater_equal, None),
    (operator.gt, np.greater, None),
    (builtins.divmod, np.divmod, None),
]

_UNARY_OPERATORS: list[tuple[Callable[..., Any], np.ufunc]] = [
    (operator.neg, np.negative),
    (operator.pos, np.positive),
    (operator.abs, np.absolute),
    (builtins.abs, np.absolute),
    (operator.invert, np.invert),
    (operator.inv, np.invert),
]


_pow_rule = binary_operator_rule(operator.pow, "builtins.pow")


def _builtin_pow(base: Any, exp: Any, mod: Any = None) -> Any:
    if mod is not None:
        raise UnsupportedArguments("pow(a, b, mod) is not a NumPy operation")
    return _pow_rule(base, exp)


def _register_operators() -> None:
    for op, ufunc, iop in _BINARY_OPERATORS:
        module = "builtins" if op is builtins.divmod else "operator"
        name = f"{module}.{op.__name__}"
        kind = OpKind.LINALG if op is operator.matmul else OpKind.ELEMENTWISE
        register(OpInfo(name, kind, (op,), binary_operator_rule(op, name), ufunc=ufunc))
        if iop is not None:
            iname = f"operator.{iop.__name__}"
            register(OpInfo(iname, kind, (iop,), inplace_operator_rule(iop, op, iname),
                            view_of=_inplace_view_of, mutates=_inplace_mutates, ufunc=ufunc))
    register(OpInfo("builtins.pow", OpKind.ELEMENTWISE, (builtins.pow,), _builtin_pow, ufunc=np.power))
    for op, ufunc in _UNARY_OPERATORS:
        module = "builtins" if op is builtins.abs else "operator"
        name = f"{module}.{op.__name__}"
        register(OpInfo(name, OpKind.ELEMENTWISE, (op,), unary_operator_rule(op, name), ufunc=ufunc))


# ---------------------------------------------------------------- elementwise functions

_NoValue = np._NoValue  # NumPy's "argument not given" marker, so defaults forward unchanged


def _kwargs(**named: Any) -> dict[str, Any]:
    return {k: v for k, v in named.items() if v is not _NoValue}


def _where(condition: Any, x: Any = _NoValue, y: Any = _NoValue, /) -> TensorMeta:
    if x is _NoValue and y is _NoValue:
        raise DataDependentShape("np.where(condition) is np.nonzero: its shape depends on values")
    args = [lift(a) for a in (condition, x, y) if a is not _NoValue]
    probed = probe(np.where, *args)
    return _single(probed, "where").meta(broadcast_shapes(*(operand_shape(a) for a in args)))


def _clip_operands(a: Any, bounds: list[Any]) -> list[Any]:
    return [a, *(b for b in bounds if b is not None and b is not _NoValue)]


def _clip(a: Any, a_min: Any = _NoValue, a_max: Any = _NoValue, out: Any = None, *,
          min: Any = _NoValue, max: Any = _NoValue, **kwargs: Any) -> TensorMeta:
    a, a_min, a_max, min, max = (lift(x) for x in (a, a_min, a_max, min, max))
    probed = probe(np.clip, a, a_min, a_max, out, **_kwargs(min=min, max=max), **kwargs)
    return _finish_elementwise(probed, _clip_operands(a, [a_min, a_max, min, max]), out, kwargs)


def _clip_method(a: Any, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> TensorMeta:
    min, max = lift(min), lift(max)
    probed = probe(np.clip, a, min, max, out, **kwargs)
    return _finish_elementwise(probed, _clip_operands(a, [min, max]), out, kwargs)


def _finish_elementwise(probed: Any, operands: list[Any], out: Any, kwargs: dict[str, Any]) -> TensorMeta:
    shapes = [operand_shape(x) for x in operands]
    where = kwargs.get("where", True)
    if not isinstance(where, bool):
        shapes.append(operand_shape(where))
    shape = broadcast_shapes(*shapes)
    if out is not None:
        return check_out(out, shape)
    return _single(probed, "elementwise function").meta(shape)


def _round(a: Any, decimals: Any = 0, out: Any = None) -> TensorMeta:
    return _finish_elementwise(probe(np.round, a, decimals, out), [a], out, {})


def _round_method(a: Any, decimals: Any = 0, out: Any = None) -> TensorMeta:
    return _finish_elementwise(probe(np.round, a, decimals, out), [a], out, {})


def _isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> TensorMeta:
    a, b, rtol, atol = (lift(x) for x in (a, b, rtol, atol))
    probed = probe(np.isclose, a, b, rtol, atol, equal_nan)
    return _finish_elementwise(probed, [a, b, rtol, atol], None, {})


def _nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
                neginf: Any = None) -> TensorMeta:
    if not copy:
        raise UnsupportedArguments("nan_to_num(copy=False) writes into its argument")
    return _finish_elementwise(probe(np.nan_to_num, x, copy, nan, posinf, neginf), [x], None, {})


def _interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> TensorMeta:
    x, xp, fp = lift(x), lift(xp), lift(fp)
    probed = probe(np.interp, x, xp, fp, left, right, period)  # 1-d xp/fp, dtypes
    sizes = operand_shape(xp), operand_shape(fp)
    if len(sizes[0]) == len(sizes[1]) == 1 and not sizes_equal(sizes[0][0], sizes[1][0]):
        raise ValueError("fp and xp are not of the same length.")
    return _single(probed, "interp").meta(operand_shape(x))


def _unary_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Rule for a NumPy function of one array whose extra arguments are plain options."""
    def infer(x: Any, *args: Any, **kwargs: Any) -> TensorMeta:
        if not is_numpy_operand(x) and not isinstance(x, list | tuple):
            raise UnsupportedArguments(f"{fn.__name__} of a Python scalar returns a Python value")
        x = lift(x)
        return _finish_elementwise(probe(fn, x, *args, **kwargs), [x], None, {})
    infer.__name__ = fn.__name__
    return infer


def _conj_method(name: str) -> Callable[..., Any]:
    """a.conj(): np.conjugate for complex arrays, but a real array returns itself (any dtype)."""
    def infer(a: Any, out: Any = None, /) -> TensorMeta:  # the method takes no keywords
        probed = probe_method(name, a, out)
        return _finish_elementwise(probed, [a], out, {})
    infer.__name__ = name
    return infer


def _conj_view_of(a: Any, *args: Any, **kwargs: Any) -> ArgRef | None:
    ref = arg_ref((a, *args), kwargs, 1, "out")
    if ref is not None:
        return ref
    meta = meta_of(a)
    return 0 if meta is not None and not meta.scalar and meta.dtype.kind != "c" else None


def _register_functions() -> None:
    clip_view, clip_mut = out_effects(3)
    round_view, round_mut = out_effects(2)
    rows = [
        OpInfo("numpy.where", OpKind.ELEMENTWISE, (np.where,), _where),
        OpInfo("numpy.clip", OpKind.ELEMENTWISE, (np.clip,), _clip, view_of=clip_view, mutates=clip_mut),
        OpInfo("ndarray.clip", OpKind.ELEMENTWISE, (Method("clip"),), _clip_method,
               view_of=clip_view, mutates=clip_mut),
        OpInfo("numpy.round", OpKind.ELEMENTWISE, (np.round, np.around), _round,
               view_of=round_view, mutates=round_mut),
        OpInfo("ndarray.round", OpKind.ELEMENTWISE, (Method("round"),), _round_method,
               view_of=round_view, mutates=round_mut),
        OpInfo("numpy.isclose", OpKind.ELEMENTWISE, (np.isclose,), _isclose),
        OpInfo("numpy.nan_to_num", OpKind.ELEMENTWISE, (np.nan_to_num,), _nan_to_num),
        OpInfo("numpy.interp", OpKind.OTHER, (np.interp,), _interp),
    ]
    for fn in (np.angle, np.fix, np.isreal, np.iscomplex, np.isposinf, np.isneginf, np.sinc,
               np.i0, np.signbit):
        if isinstance(fn, np.ufunc):
            continue  # registered with the ufuncs
        rows.append(OpInfo(f"numpy.{fn.__name__}", OpKind.ELEMENTWISE, (fn,), _unary_function(fn)))
    for name in ("conj", "conjugate"):
        rows.append(OpInfo(f"ndarray.{name}", OpKind.ELEMENTWISE, (Method(name),), _conj_method(name),
                           view_of=_conj_view_of, mutates=out_effects(1)[1], ufunc=np.conjugate))
    for row in rows:
        register(row)


def numpy_scalar_types() -> list[type]:
    """np.float32, np.int8, np.bool_, ...: the numeric scalar types, each once."""
    seen: dict[int, type] = {}
    for t in np.sctypeDict.values():
        if np.dtype(t).kind in "biufc":
            seen.setdefault(id(t), t)
    return sorted(seen.values(), key=lambda t: t.__name__)


def _scalar_type_rule(scalar_type: type) -> Callable[..., Any]:
    """np.float32(x): a NumPy scalar from a scalar or 0-d input, a cast array from an array."""
    def infer(value: Any = 0, /) -> TensorMeta:
        if not isinstance(value, PY_SCALARS) and not is_numpy_operand(value) \
                and not isinstance(value, list | tuple):
            raise UnsupportedArguments(f"{scalar_type.__name__}({type(value).__name__}) is not modelled")
        value = lift(value)
        return _single(probe(scalar_type, value), scalar_type.__name__).meta(operand_shape(value))
    infer.__name__ = scalar_type.__name__
    return infer


def _scalar_type_view_of(scalar_type: type) -> Callable[..., Any]:
    def view_of(value: Any = 0, /) -> ArgRef | None:
        # an array that already has this dtype comes back as itself
        meta = meta_of(value)
        if meta is None or meta.scalar or meta.ndim == 0:
            return None
        return 0 if meta.dtype == np.dtype(scalar_type) else None
    return view_of


def _register_scalar_types() -> None:
    for t in numpy_scalar_types():
        register(OpInfo(f"numpy.{t.__name__}", OpKind.ELEMENTWISE, (t,), _scalar_type_rule(t),
                        view_of=_scalar_type_view_of(t)))


def _register_ufuncs() -> None:
    seen: set[int] = set()
    for ufunc in numpy_ufuncs().values():
        if id(ufunc) not in seen:
            seen.add(id(ufunc))
            register(ufunc_row(ufunc))


_register_ufuncs()
_register_operators()
_register_functions()
_register_scalar_types()
