"""Exceptions raised by the op registry's shape and dtype rules.

NumPy's own exceptions (ValueError, TypeError, AxisError, ...) mean "NumPy would raise this too".
"""
from __future__ import annotations

from typing import Any


class OpRuleError(Exception):
    """Root of the registry's own exceptions: the call is valid NumPy, but cannot enter a graph."""


class DataDependentShape(OpRuleError):
    """The result's shape depends on array values (boolean masks, nonzero, unique, ...)."""


class UnsupportedArguments(OpRuleError):
    """The registry cannot model these arguments (an unknown kwarg value, order='F', ...).

    Raised instead of guessing; the frontend falls back to running the call eagerly.
    """


class SymbolicDecisionNeeded(OpRuleError):
    """A shape rule needs to know a fact about symbolic sizes that the size oracle cannot decide.

    `condition` is the sympy relation in question (e.g. `Eq(s0, 3)` or `s0 - 2 >= 0`).
    """

    def __init__(self, condition: Any, message: str | None = None) -> None:
        self.condition = condition
        super().__init__(message or f"cannot decide {condition} from the symbolic sizes")
