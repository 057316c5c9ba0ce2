"""Recompiles that only chase values: a frame whose guards keep failing on new numbers (or on new
objects of a kind made per call) stops compiling after config.recompiles_for_values of them."""
from __future__ import annotations

import numbers
import types
import weakref
from typing import Any

import numpy as np

from . import config
from .guards import FloatIs, Guard, GuardKind, IsReferent, TimeIs


def _made_per_call(value: Any) -> bool:
    """A class or function defined inside a function: a new object each time its maker runs."""
    return isinstance(value, (type, types.FunctionType)) and "<locals>" in getattr(value, "__qualname__", "")


def changes_only_a_value(failed: Any) -> bool:
    """Whether a failed guard check (a Guard, a size check, an array layout) is about a value
    that differs from call to call rather than about a kind of input: a number (its exact value
    was needed by the trace), a dynamic int fixed by a size relation, a function or class that
    its maker creates anew on each call."""
    if isinstance(failed, Guard):
        if failed.kind is GuardKind.EQUALS:
            value = failed.value
            return isinstance(value, (numbers.Number, np.number)) and not isinstance(value, (bool, np.bool_))
        if failed.kind is GuardKind.CALL:
            return isinstance(failed.value, (FloatIs, TimeIs, IsReferent))
        if failed.kind in (GuardKind.ID_IS, GuardKind.TYPE_IS):
            return _made_per_call(failed.value)
        return False
    sizes = getattr(failed, "sizes", failed)  # a SizeCheck, or the SizeGuards of a predicate
    return bool(getattr(sizes, "scalars", None))


_FLOAT_TYPES = (float, np.float64, np.float32, np.float16)


def float_value_guard(failed: Any) -> bool:
    """A failed guard on the value of a float (a Python float or a NumPy floating scalar), or on
    its type being float or np.float64 (the same number, either type: one the program started
    with, the other its arithmetic made)."""
    if not isinstance(failed, Guard):
        return False
    if failed.kind is GuardKind.CALL and isinstance(failed.value, FloatIs):
        return not isinstance(failed.value.value, (complex, np.complexfloating))
    if failed.kind is GuardKind.TYPE_IS:
        return failed.value in (float, np.float64)
    return failed.kind is GuardKind.EQUALS and type(failed.value) in _FLOAT_TYPES


class ValueChurn:
    """Per code object, the recompiles caused by new values alone."""

    def __init__(self) -> None:
        self._count: "weakref.WeakKeyDictionary[types.CodeType, int]" = weakref.WeakKeyDictionary()

    def keeps_changing(self, code: types.CodeType, failed: list[Any]) -> bool:
        """Called on a cache miss with what failed in each entry: True when every entry failed on
        a value and the frame has recompiled for values as often as allowed (then it should run
        its original code for such inputs); otherwise counts this recompile if it is one."""
        if not failed or not all(changes_only_a_value(f) for f in failed):
            return False
        count = self._count.get(code, 0)
        if count >= config.recompiles_for_values:
            return True
        self._count[code] = count + 1
        return False
