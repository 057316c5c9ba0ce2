"""Whether a trace computed on the frame's inputs where other inputs would make a graph: a frame that
made no graph and did no such work runs as written for good (no guards); one that did keeps its guards.

A frame with no graph whose code is the original runs correctly whatever its inputs, so its guards only
serve to notice inputs that would make a graph. That can happen only where the trace did arithmetic or
NumPy calls on an input's value (`x * 2` on a float: on an array, a graph) or asked an input's type
(`isinstance(x, np.ndarray)`: another path for another type). Moving values around, calling methods of
objects, formatting strings or comparing numbers (a branch on an array would break the graph anyway)
cannot turn into a graph, and such frames are the most common ones in a whole program run compiled.
"""
from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from .base import VariableTracker
from .constant import ConstantVariable
from .sequences import BaseSequenceVariable
from .symbolic import RuntimeValueVariable

if TYPE_CHECKING:
    from ..output_graph import OutputGraph

# Builtins that compute on a number (each of them is a graph op when the number is an array)
_ARITHMETIC = frozenset({
    *[getattr(operator, n) for n in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and_", "or_", "xor",
        "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul", "ilshift", "irshift", "iand",
        "ior", "ixor", "neg", "pos", "invert", "abs")],
    abs, divmod, pow, round, sum, min, max, complex,
    *[getattr(math, name) for name in dir(math) if callable(getattr(math, name)) and not name.startswith("_")],
})

# Builtins that ask what an input is: the frame may take another path for another type
_TYPE_TESTS = frozenset({isinstance, issubclass, type, hasattr, callable})

_NUMBER_TYPES = (int, float, complex, np.generic)


def _from_inputs(value: VariableTracker) -> bool:
    """A value the program handed in (an argument, a global, an item or attribute of one), or a
    run-time number the trace made from one (a size or float that varies)."""
    return value.source is not None or isinstance(value, RuntimeValueVariable)


def _numeric(value: VariableTracker) -> bool:
    """A number, or a list or tuple (of numbers, as `sum(values)` reads it): an array would be one."""
    if isinstance(value, ConstantVariable):
        return isinstance(value.value, _NUMBER_TYPES)
    return isinstance(value, (RuntimeValueVariable, BaseSequenceVariable))


def note_builtin_call(output: "OutputGraph", fn: Any, args: Iterable[VariableTracker]) -> None:
    """Called for every builtin or operator the trace applies (BuiltinVariable.call_function)."""
    if output.computes_on_inputs:
        return
    try:
        tested = fn in _TYPE_TESTS
        computing = fn in _ARITHMETIC
    except TypeError:  # an unhashable callable: neither
        return
    if tested and any(_from_inputs(a) for a in args):
        output.computes_on_inputs = True
    elif computing and any(_from_inputs(a) and _numeric(a) for a in args):
        output.computes_on_inputs = True


def note_numpy_call(output: "OutputGraph", args: Iterable[VariableTracker]) -> None:
    """Called for every NumPy function the trace applies: on an input (folded or not), it counts."""
    if not output.computes_on_inputs and any(_from_inputs(a) for a in args):
        output.computes_on_inputs = True
