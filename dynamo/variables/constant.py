"""ConstantVariable: an immutable Python value known while tracing (None, bool, int, float,
complex, str, bytes, Ellipsis, numpy dtypes and scalar types). Arithmetic on it folds."""
from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exc import Category, unsupported
from .base import VariableTracker, unsupported_method
from .fold_limits import check_container_size, check_fold_size, warnings_run_in_python

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx

CONSTANT_TYPES = (
    type(None), bool, int, float, complex, str, bytes, type(Ellipsis), type(NotImplemented),
    np.dtype, types.CodeType, frozenset, range,
)

# Methods of immutable builtins that are pure, so calling them while tracing is exact.
_PURE_METHOD_TYPES = (bool, int, float, complex, str, bytes, frozenset, range, np.dtype)


def is_constant_value(value: Any) -> bool:
    if isinstance(value, CONSTANT_TYPES):
        return True
    # numpy scalar types such as np.float32 used as dtype arguments
    return isinstance(value, type) and issubclass(value, np.generic)


class ConstantVariable(VariableTracker):
    literal = False  # the object a LOAD_CONST of the frame pushed (set by that handler)

    def __init__(self, value: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def describe(self) -> str:
        text = repr(self.value)
        return f"the constant {text if len(text) < 40 else text[:37] + '...'}"

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.value)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        from .functions import wrap_constant_attribute

        try:
            attribute = getattr(self.value, name)
        except AttributeError:
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r}")
        return wrap_constant_attribute(attribute, self.value, name)

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        # numpy scalar types (np.float32(1.5)) are pure constructors of constants
        if not (isinstance(self.value, type) and issubclass(self.value, np.generic)):
            return super().call_function(tx, args, kwargs)
        if not all(a.has_constant_contents() for a in [*args, *kwargs.values()]):
            # np.float32(array) converts an array: the op registry's business
            return tx.output.numpy.call_function(tx, self.value, args, kwargs, name=f"np.{self.value.__name__}")
        return _call_pure(tx, self.value, self.value.__name__, args, kwargs)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if not isinstance(self.value, _PURE_METHOD_TYPES) or name.startswith("__") and name not in _DUNDER_OK:
            unsupported_method(self, name)
        if name == "join" and len(args) == 1 and not args[0].has_constant_contents():
            from .sequences import TupleVariable

            args = [TupleVariable(args[0].unpack(tx))]  # str.join takes any iterable of strings
        return _call_pure(tx, getattr(self.value, name), f"{type(self.value).__name__}.{name}", args, kwargs)

    def contains(self, tx: "Tx", item: VariableTracker) -> bool:
        if not item.has_constant_contents():
            return super().contains(tx, item)
        try:
            return item.as_python_constant() in self.value
        except TypeError as error:
            unsupported(Category.EXCEPTION, f"`in` {self.describe()} raises TypeError: {error}")

    def has_attribute(self, tx: "Tx", name: str) -> bool:
        return hasattr(self.value, name)

    def reversed_iterator(self, tx: "Tx") -> VariableTracker:
        from .builder import wrap_constant_result
        from .iterators import ListIteratorVariable

        try:
            return ListIteratorVariable([wrap_constant_result(v) for v in reversed(self.value)])
        except TypeError as error:
            unsupported(Category.EXCEPTION, f"reversed({self.describe()}) raises TypeError: {error}")

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        if isinstance(self.value, (str, bytes, range, frozenset)):
            from .builder import wrap_constant_result

            check_container_size(countable_length(self.value), f"unpacking {self.describe()}", "fold_size_limit")
            return [wrap_constant_result(v) for v in self.value]
        return super().unpack(tx)

    def as_graph_argument(self) -> Any:
        return self.value

    def as_meta_argument(self) -> Any:
        return self.value

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None and not _is_canonical(self.value):
            # the object the frame was given, not an equal one from the first call's constants
            # (`return x` of a string, guarded by value, would return the first call's string)
            codegen.load_source(self.source)
        elif self.literal or _is_canonical(self.value):
            codegen.load_const(self.value)
        else:
            # a value computed while tracing: its own object, as the trace made it. LOAD_CONST
            # would merge it with an equal constant (co_consts are deduplicated and interned), so
            # `a[:3] + b[3:] is a` would become True after a graph break
            codegen.load_const([self.value])
            codegen.load_const(0)
            codegen.binary_subscr()


def _is_canonical(value: Any) -> bool:
    """CPython keeps one object of this value, so any way of loading it gives that object."""
    kind = type(value)
    if kind is int:
        return -5 <= value <= 256
    if kind is str:
        return len(value) == 0 or (len(value) == 1 and ord(value) < 256)
    if kind is bytes:
        return len(value) <= 1
    if isinstance(value, np.dtype):
        # builtin dtypes are singletons; others (structured, 'U5', '>f8') are made per call, and
        # a structured one can be renamed in place: the program's own object must be the one used
        return value.isbuiltin == 1
    return kind not in _VALUES_WITH_IDENTITY and not isinstance(value, np.generic)


# Immutable kinds whose equal values may be distinct objects (`is` tells them apart)
_VALUES_WITH_IDENTITY = frozenset({int, float, complex, str, bytes, frozenset, range})


def _call_pure(tx: "Tx", fn: Any, label: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """Call a pure function of constants now (arguments may be snapshots of constant lists)."""
    from .builder import wrap_constant_result

    if not all(a.has_constant_contents() for a in [*args, *kwargs.values()]):
        culprit = next(a for a in [*args, *kwargs.values()] if not a.has_constant_contents())
        unsupported(Category.DATA_DEPENDENT_VALUE, f"{label} needs the value of {culprit.describe()}",
                    "keep such values out of the compiled function, or accept a graph break here")
    raw_args = [a.as_python_constant() for a in args]
    check_fold_size(fn, raw_args, kwargs)
    with warnings_run_in_python(label):
        try:
            result = fn(*raw_args, **{k: v.as_python_constant() for k, v in kwargs.items()})
        except Exception as error:  # the real code raises the same error when it runs
            unsupported(Category.EXCEPTION, f"{label} raises {type(error).__name__}: {error}")
    return wrap_constant_result(result)


_DUNDER_OK = frozenset({"__add__", "__sub__", "__mul__", "__getitem__", "__len__", "__contains__"})


def countable_length(value: Any) -> int:
    """len(value), or sys.maxsize for a range of more items: len() of one raises OverflowError, and
    no loop over it is unrolled anyway."""
    try:
        return len(value)
    except OverflowError:
        return sys.maxsize
