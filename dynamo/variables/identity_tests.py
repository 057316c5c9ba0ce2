"""`is` and `is not` between trackers, decided while tracing: constants, objects read from the
frame (guarded by identity or by relations between their sources), classes made by a call."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..exc import Category, unsupported
from ..guards import GuardKind
from .base import VariableTracker
from .class_identity import same_class_by_shape
from .constant import ConstantVariable
from .symbolic import not_the_same_object

if TYPE_CHECKING:
    from ..translator.core import InstructionTranslatorBase as Tx


def identity_test(negate: bool) -> Callable[..., VariableTracker | None]:
    """The handler of operator.is_ (negate: is_not): decided while tracing, with the guards the
    answer needs, or None to fold two constants on their values."""

    def compare(tx: "Tx", a: VariableTracker, b: VariableTracker, /) -> VariableTracker | None:
        if a is b:
            return ConstantVariable(not negate)
        if not_the_same_object(a, b):  # `n is None` of a size: False, without its value
            return ConstantVariable(negate)
        same_class = same_class_by_shape(tx, a, b)
        if same_class is not None:
            return ConstantVariable(same_class != negate)
        if a.is_python_constant() and b.is_python_constant():
            if not _equal_values(a.as_python_constant(), b.as_python_constant()):
                return None  # singletons, classes, functions, or unequal values: fold on the values
            # two equal numbers, strings or tuples may or may not be one object at run time:
            # two made by this frame are the objects the trace made (each is rebuilt as itself)
            if a.source is None and b.source is None and isinstance(a, ConstantVariable) \
                    and isinstance(b, ConstantVariable):
                return ConstantVariable((a.value is b.value) != negate)
            # guards check values: for one read from the frame, whether it is a given object
            if a.source is None or b.source is None or not isinstance(a, ConstantVariable) \
                    or not isinstance(b, ConstantVariable):
                unsupported(Category.DATA_DEPENDENT_VALUE,
                            f"whether {a.describe()} and {b.describe()}, which are equal, are one object is known only at run time")
            same = a.value is b.value  # the objects this call was traced with
            tx.output.guard(a.source, GuardKind.SAME_AS if same else GuardKind.DISTINCT_FROM, b.source)
            return ConstantVariable(same != negate)
        if not (a.kind_is_known() and b.kind_is_known()):
            unsupported(Category.DATA_DEPENDENT_VALUE, f"identity of {a.describe()} and {b.describe()} is known only at run time")
        member = _member_constant_and_object(a, b)
        if member is not None and getattr(member[1], "value", None) is member[0].value:
            # an IntEnum member folded to a constant (TE['dupe']) and the same member read as an
            # object (TE.dupe): the object it is, as long as the source yields that object
            tx.output.guard(member[1].source, GuardKind.ID_IS, member[0].value)
            return ConstantVariable(not negate)
        if _is_numpy_scalar_result(a) or _is_numpy_scalar_result(b):
            # NumPy returns its interned bools (np.True_) and may hand back a scalar it was given
            unsupported(Category.DATA_DEPENDENT_VALUE,
                        f"identity of {a.describe()} and {b.describe()} is known only at run time")
        pair = _constant_and_frame_object(a, b)
        if pair is not None:
            # `type(self).__init__ is object.__init__`: an object read from the frame may be the
            # very object a constant is (a slot wrapper, a function, a sentinel): ask it, and guard
            constant, other = pair
            same = other.value is constant
            if same:
                tx.output.guard(other.source, GuardKind.ID_IS, constant)
            else:
                tx.output.guard(other.source, GuardKind.CALL, _IsNot(constant))
            return ConstantVariable(same != negate)
        if a.is_python_constant() or b.is_python_constant() or (a.identity_is_tracked() and b.identity_is_tracked()):
            # a constant is never the same object as a container, array or object, and two
            # trackers of kinds with tracked identity are two objects
            return ConstantVariable(negate)
        if a.python_type() is not b.python_type():  # objects of two types are two objects
            return ConstantVariable(negate)
        unsupported(Category.UNSUPPORTED_VALUE, f"identity of {a.describe()} and {b.describe()} is not known while tracing")

    return compare


class _IsNot:
    """Guard predicate: the value is not a given object (compared by identity, never by ==)."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def __call__(self, value: Any) -> bool:
        return value is not self.target

    def describe(self, source_name: str) -> str:
        return f"{source_name} is not {self.target!r}"


def _constant_and_frame_object(a: VariableTracker, b: VariableTracker) -> tuple[Any, Any] | None:
    """(the constant, the other) when one side is a constant and the other a real object read
    from the frame of the constant's very type, which may or may not be that object."""
    for constant, other in ((a, b), (b, a)):
        if constant.is_python_constant() and not other.is_python_constant() and other.source is not None \
                and hasattr(other, "value") and not isinstance(other, ConstantVariable):
            value = constant.as_python_constant()
            if type(other.value) is type(value):
                return value, other
    return None


def _is_numpy_scalar_result(value: VariableTracker) -> bool:
    from .arrays import ArrayVariable

    return isinstance(value, ArrayVariable) and value.meta.scalar


def _member_constant_and_object(a: VariableTracker, b: VariableTracker) -> tuple | None:
    """(constant, object) when one is a constant of a subclass of a builtin type (an enum member,
    which is an object however it was reached) and the other an object read through a source."""
    for constant, other in ((a, b), (b, a)):
        if isinstance(constant, ConstantVariable) and type(constant.value) not in _EXACT_CONSTANT_TYPES \
                and not isinstance(constant.value, (np.generic, np.dtype, type)) and other.source is not None \
                and not other.is_python_constant():
            return constant, other
    return None


_EXACT_CONSTANT_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes, type(Ellipsis),
                                   type(NotImplemented), frozenset, range})


# Immutable values that Python may or may not share between equal instances
_VALUE_TYPES = (int, float, complex, str, bytes, tuple, frozenset)


def _equal_values(x: Any, y: Any) -> bool:
    """x and y are equal values of a kind whose identity is not decided by its value."""
    kinds = (*_VALUE_TYPES, np.generic)
    if type(x) is not type(y) or type(x) is bool or not isinstance(x, kinds):
        return False
    try:
        return bool(x == y)
    except Exception:  # a tuple holding values whose comparison raises: do not decide
        return True
