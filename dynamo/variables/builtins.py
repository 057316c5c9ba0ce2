"""BuiltinVariable: Python builtins and operator functions while tracing. Arrays among the
arguments send the call to the graph; constants fold; sequences are handled structurally."""
from __future__ import annotations

import builtins
import math
import operator
from typing import TYPE_CHECKING, Any, Callable

from ..exc import Category, unsupported
from .base import VariableTracker
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ..translator.core import InstructionTranslatorBase as Tx

Args = list[VariableTracker]
Kwargs = dict[str, VariableTracker]

# Builtins that are pure functions of constant arguments: calling them while tracing is exact.
_FOLDABLE = {
    abs, all, any, bin, bool, chr, complex, divmod, float, format, hash, hex, int, isinstance,
    issubclass, len, max, min, oct, ord, pow, repr, round, sorted, str, sum, tuple, type,
    *[getattr(math, name) for name in dir(math) if callable(getattr(math, name)) and not name.startswith("_")],
    *[getattr(operator, name) for name in dir(operator) if not name.startswith("_") and callable(getattr(operator, name))],
}


class BuiltinVariable(VariableTracker):
    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.fn

    def describe(self) -> str:
        name = getattr(self.fn, "__name__", repr(self.fn))
        return f"the builtin {name}" if getattr(builtins, name, None) is self.fn else f"operator.{name}"

    def call_function(self, tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker:
        handler = _HANDLERS.get(self.fn)
        if handler is not None:
            result = handler(tx, args, kwargs)
            if result is not None:
                return result
        if _involves_array(args, kwargs):
            return tx.output.numpy.call_function(tx, self.fn, args, kwargs, name=self.describe())
        if self.fn in _FOLDABLE and all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            return _fold(self.fn, args, kwargs)
        unsupported(Category.UNSUPPORTED_CALL, f"calling {self.describe()} with {_describe_args(args)}")

    def reconstruct(self, codegen: Any) -> None:
        if self.source is not None:
            return super().reconstruct(codegen)
        codegen.load_const(self.fn)


def _involves_array(args: Args, kwargs: Kwargs) -> bool:
    from .arrays import ArrayVariable

    return any(isinstance(a, ArrayVariable) for a in [*args, *kwargs.values()])


def _describe_args(args: Args) -> str:
    return ", ".join(a.describe() for a in args) or "no arguments"


def _fold(fn: Callable[..., Any], args: Args, kwargs: Kwargs) -> VariableTracker:
    from .builder import wrap_constant_result

    try:
        value = fn(*[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
    except Exception as error:  # the real code raises the same error when it runs
        unsupported(Category.EXCEPTION, f"{getattr(fn, '__name__', fn)} raises {type(error).__name__}: {error}")
    return wrap_constant_result(value)


# ---- structural handlers: they return None to fall through to the generic rules ------------------

def _len(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
    from .arrays import ArrayVariable

    if len(args) != 1 or kwargs:
        return None
    (value,) = args
    if isinstance(value, ArrayVariable):
        if value.meta.ndim == 0:
            unsupported(Category.EXCEPTION, "len() of a 0-d array raises TypeError")
        return tx.output.size_value(value.meta.shape[0])
    if value.is_python_constant():
        return None
    return ConstantVariable(len(value.unpack(tx)))


def _sequence_constructor(kind: str) -> Callable[["Tx", Args, Kwargs], VariableTracker | None]:
    def build(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
        from .sequences import ListVariable, TupleVariable

        if kwargs or len(args) > 1:
            return None
        items = args[0].unpack(tx) if args else []
        return ListVariable(items) if kind == "list" else TupleVariable(items)

    return build


def _range(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
    from .iterators import RangeVariable

    if kwargs or not all(a.is_python_constant() for a in args):
        return None
    return RangeVariable(range(*[operator.index(a.as_python_constant()) for a in args]))


def _zip_like(kind: str) -> Callable[["Tx", Args, Kwargs], VariableTracker | None]:
    def build(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
        from .iterators import ListIteratorVariable
        from .sequences import TupleVariable

        if kind == "zip":
            if kwargs and set(kwargs) != {"strict"}:
                return None
            columns = [a.unpack(tx) for a in args]
            if kwargs.get("strict") and kwargs["strict"].as_python_constant() and len({len(c) for c in columns}) > 1:
                unsupported(Category.EXCEPTION, "zip(strict=True) on iterables of different lengths raises ValueError")
            rows = [TupleVariable(list(row)) for row in zip(*columns)]
        elif kind == "enumerate":
            start = (kwargs.get("start") or (args[1] if len(args) > 1 else ConstantVariable(0))).as_python_constant()
            rows = [TupleVariable([ConstantVariable(start + i), item]) for i, item in enumerate(args[0].unpack(tx))]
        else:  # reversed
            rows = list(reversed(args[0].unpack(tx)))
        return ListIteratorVariable(rows)

    return build


def _isinstance(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
    if len(args) != 2 or kwargs or args[0].is_python_constant():
        return None
    classes = args[1].as_python_constant()
    return ConstantVariable(issubclass(args[0].python_type(), classes))


def _reduce_builtin(fn: Callable[..., Any]) -> Callable[["Tx", Args, Kwargs], VariableTracker | None]:
    """sum/min/max over a Python sequence of arrays or constants: unrolled into pairwise ops."""

    def reduce(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
        from .builtins import BuiltinVariable as B

        if kwargs or not args or all(a.is_python_constant() for a in args):
            return None
        if fn is builtins.sum:
            items = args[0].unpack(tx)
            total = args[1] if len(args) > 1 else ConstantVariable(0)
            for item in items:
                total = B(operator.add).call_function(tx, [total, item], {})
            return total
        items = args[0].unpack(tx) if len(args) == 1 else list(args)
        if any(not i.is_python_constant() for i in items):
            unsupported(Category.DATA_DEPENDENT_BRANCH, f"{fn.__name__}() compares values known only at run time",
                        f"use np.{'maximum' if fn is max else 'minimum'} for arrays")
        return None

    return reduce


def _is(negate: bool) -> Callable[["Tx", Args, Kwargs], VariableTracker | None]:
    def compare(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
        a, b = args
        if a.is_python_constant() and b.is_python_constant():
            return None
        same = a is b or (a.source is not None and a.source == b.source)
        if not same and (a.is_python_constant() or b.is_python_constant()):
            # an array, list or object is never identical to a constant such as None
            constant = a if a.is_python_constant() else b
            if constant.as_python_constant() is None or isinstance(constant.as_python_constant(), (bool, int, float, str)):
                return ConstantVariable(negate)
        if same:
            return ConstantVariable(not negate)
        unsupported(Category.UNSUPPORTED_VALUE, f"identity of {a.describe()} and {b.describe()} is not known while tracing")

    return compare


def _contains(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
    container, item = args
    if container.is_python_constant() and item.is_python_constant():
        return None
    if item.is_python_constant():
        elements = container.unpack(tx)
        if all(e.is_python_constant() for e in elements):
            return ConstantVariable(item.as_python_constant() in [e.as_python_constant() for e in elements])
    unsupported(Category.DATA_DEPENDENT_VALUE, f"membership test of {item.describe()} in {container.describe()}")


def _sequence_binary(fn: Callable[..., Any]) -> Callable[["Tx", Args, Kwargs], VariableTracker | None]:
    """tuple + tuple, list * n and friends on sequences holding arrays."""

    def apply(tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker | None:
        from .dicts import ConstDictVariable
        from .sequences import BaseSequenceVariable

        if len(args) != 2 or all(a.is_python_constant() for a in args):
            return None
        a, b = args
        if isinstance(a, BaseSequenceVariable) and isinstance(b, BaseSequenceVariable) and fn in (operator.add, operator.iadd):
            if type(a) is not type(b):
                return None
            if fn is operator.iadd and a.python_class is list:
                tx.output.side_effects.mutate(a)
                a.items.extend(b.items)
                return a
            return type(a)(a.items + b.items)
        if isinstance(a, BaseSequenceVariable) and b.is_python_constant() and fn in (operator.mul, operator.imul):
            return type(a)(a.items * operator.index(b.as_python_constant()))
        if fn is operator.getitem and (isinstance(a, BaseSequenceVariable) or isinstance(a, ConstDictVariable)):
            return a.getitem(tx, b)
        return None

    return apply


_HANDLERS: dict[Any, Callable[["Tx", Args, Kwargs], VariableTracker | None]] = {
    len: _len,
    list: _sequence_constructor("list"),
    tuple: _sequence_constructor("tuple"),
    range: _range,
    zip: _zip_like("zip"),
    enumerate: _zip_like("enumerate"),
    reversed: _zip_like("reversed"),
    isinstance: _isinstance,
    sum: _reduce_builtin(builtins.sum),
    min: _reduce_builtin(builtins.min),
    max: _reduce_builtin(builtins.max),
    operator.is_: _is(False),
    operator.is_not: _is(True),
    operator.contains: _contains,
    operator.add: _sequence_binary(operator.add),
    operator.iadd: _sequence_binary(operator.iadd),
    operator.mul: _sequence_binary(operator.mul),
    operator.imul: _sequence_binary(operator.imul),
    operator.getitem: _sequence_binary(operator.getitem),
}
