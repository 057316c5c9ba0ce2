"""Which class objects a trace relies on, for classes made by a call (guarded by their shape, so
another object on each call): `is`, isinstance() and operator order decided by shapes and source
relations, or by pinning the classes' identities when nothing else decides."""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ..class_shapes import made_by_a_call, own_shape
from ..exc import Unsupported
from ..guards import GuardKind
from ..sources import AttrSource, ItemSource
from .base import VariableTracker
from .objects import UserClassVariable, UserObjectVariable

if TYPE_CHECKING:
    from ..translator.core import InstructionTranslatorBase as Tx


def subclass_test(tx: "Tx", subject: VariableTracker, cls_variable: VariableTracker) -> bool | None:
    """isinstance(subject, cls) for a class `cls` made by a call, without pinning either to one
    call's class: False when no class of the subject's MRO has the shape of `cls`; for an object
    whose type is guarded by shape, the answer with a guard that `cls` is (or is not) that class
    of its MRO. None for anything else: the caller decides on identities (pin_for_isinstance)."""
    if not isinstance(cls_variable, UserClassVariable) or not made_by_a_call(cls_variable.value):
        return None
    cls = cls_variable.value
    try:
        kind = type(subject.value) if isinstance(subject, UserObjectVariable) else subject.python_type()
    except Unsupported:
        return None
    wanted = own_shape(cls)
    positions = [i for i, c in enumerate(kind.__mro__) if own_shape(c) == wanted]
    if not positions:
        return False  # (a value of a kind fixed by its guards, or an object of a class shaped otherwise)
    if not isinstance(subject, UserObjectVariable):
        return None
    class_source = subject._class_source()
    if len(positions) > 1 or not made_by_a_call(kind) or class_source is None or cls_variable.source is None \
            or inspect.getattr_static(kind, "__class__") is not object.__dict__["__class__"]:
        return None
    index = positions[0]
    found = class_source if index == 0 else ItemSource(AttrSource(class_source, "__mro__"), index)
    same = kind.__mro__[index] is cls
    if found != cls_variable.source:
        tx.output.guard(found, GuardKind.SAME_AS if same else GuardKind.DISTINCT_FROM, cls_variable.source)
    return same


def pin_for_isinstance(subject: VariableTracker, classes: Any) -> None:
    """isinstance(subject, classes) decided on identities: when one of the classes is made by a
    call, the answer holds only for the very class the subject's type is."""
    if isinstance(subject, UserObjectVariable) and any(
            isinstance(c, type) and made_by_a_call(c) for c in (classes if isinstance(classes, tuple) else (classes,))):
        subject.pin_type()


def same_class_by_shape(tx: "Tx", a: VariableTracker, b: VariableTracker) -> bool | None:
    """`a is b` where one is a class guarded by its shape: against another class with a source, a
    guarded relation between their sources; against any other constant, False (a class made by a
    call is none of them). None otherwise."""
    for shaped, other in ((a, b), (b, a)):
        if not isinstance(shaped, UserClassVariable) or shaped.identity_guard is None:
            continue
        if isinstance(other, UserClassVariable) and other.source is not None and shaped.source is not None:
            same = shaped.value is other.value
            tx.output.guard(shaped.source, GuardKind.SAME_AS if same else GuardKind.DISTINCT_FROM, other.source)
            return same
        if other.is_python_constant() and not isinstance(other, UserClassVariable):
            constant = other.as_python_constant()
            if not (isinstance(constant, type) and made_by_a_call(constant)):
                return False
    return None


def right_is_subclass(left_operand: UserObjectVariable, right_operand: UserObjectVariable) -> bool:
    """issubclass(type(right), type(left)) of two operands of different classes, for the order in
    which Python asks their operator methods."""
    left, right = left_operand.python_type(), right_operand.python_type()
    if made_by_a_call(left):  # a new class per call of its maker: shapes, or identities, decide
        if all(own_shape(c) != own_shape(left) for c in right.__mro__):
            return False  # no class of the right's MRO is shaped like the left: never its subclass
        left_operand.pin_type()
        right_operand.pin_type()
    return issubclass(right, left)
