"""What a captured `for` loop iterates over, as the range of its loop node and the item each
iteration gets: a range (the item is the induction variable), the rows of an array (A[i]), and
enumerate() and zip() of those (the loop runs over the iteration number t, the item is a tuple).

`plan_of(tx, iterable)` returns an ItemPlan, or None when the iterable is none of these (the loop
is iterated while tracing, as before).
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .fx_ir.lazy_sympy import sympy
from .fx_ir.ops import symbolic as sizes
from .variables.arrays import ArrayVariable
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.iterators import EnumerateVariable, RangeVariable, ZipVariable
from .variables.loop_range import SymbolicRangeVariable
from .variables.sequences import TupleVariable
from .variables.symbolic import SymbolicIntVariable

if TYPE_CHECKING:
    from .translator.core import InstructionTranslatorBase as Tx

# (tx, the loop node's index as a tracker) -> the item the iteration gets
MakeItem = Callable[["Tx", VariableTracker], VariableTracker]


@dataclass
class ItemPlan:
    start: Any  # the loop node's range(start, stop, step): ints or sympy expressions, step an int
    stop: Any
    step: int
    make_item: MakeItem | None  # None: the item is the index itself

    @property
    def length(self) -> Any:
        """The trip count: an int, or a sympy expression of sizes."""
        return trip_count(self.start, self.stop, self.step)

    def item(self, tx: "Tx", index: VariableTracker) -> VariableTracker:
        return index if self.make_item is None else self.make_item(tx, index)


def trip_count(start: Any, stop: Any, step: int) -> Any:
    if not any(sizes.is_symbolic(v) for v in (start, stop)):
        return len(range(start, stop, step))
    return sympy.Max(0, sizes.ceildiv(sympy.sympify(stop) - start, step) if step > 0
                     else sizes.ceildiv(sympy.sympify(start) - stop, -step))


def plan_of(tx: "Tx", iterable: VariableTracker) -> ItemPlan | None:
    rows = rows_of(iterable)
    if rows is not None:
        return ItemPlan(0, rows.meta.shape[0], 1, lambda tx, i: row(tx, rows, i))
    if isinstance(iterable, (RangeVariable, SymbolicRangeVariable)):
        bounds = range_bounds(iterable)
        return None if bounds is None else ItemPlan(*bounds, None)
    if isinstance(iterable, (ZipVariable, EnumerateVariable)) and not iterable.started():
        return _numbered(tx, iterable)
    return None


def _numbered(tx: "Tx", iterable: ZipVariable | EnumerateVariable) -> ItemPlan | None:
    """zip() or enumerate(): a loop over the iteration number t, each part's item made from t."""
    if isinstance(iterable, EnumerateVariable):
        assert iterable.iterable is not None
        parts = [plan_of(tx, iterable.iterable)]
    else:
        assert iterable.iterables is not None
        if iterable.strict:
            return None  # zip(strict=True) raises on unequal lengths: iterated while tracing
        parts = [plan_of(tx, i) for i in iterable.iterables]
    if any(p is None for p in parts):
        return None
    plans = [p for p in parts if p is not None]
    length = _common_length(tx, [p.length for p in plans])
    if length is None:
        return None
    items = [_item_at(p) for p in plans]
    if isinstance(iterable, EnumerateVariable):
        count = iterable.count

        def make_item(tx: "Tx", t: VariableTracker) -> VariableTracker:
            return TupleVariable([_add(tx, t, count), items[0](tx, t)])
    else:
        def make_item(tx: "Tx", t: VariableTracker) -> VariableTracker:
            return TupleVariable([item(tx, t) for item in items])
    return ItemPlan(0, length, 1, make_item)


def _item_at(plan: ItemPlan) -> MakeItem:
    """The item of `plan` at iteration number t (its index is start + step * t)."""
    def make(tx: "Tx", t: VariableTracker) -> VariableTracker:
        if plan.start == 0 and plan.step == 1:
            index = t
        else:
            index = SymbolicIntVariable.create(tx.output, sympy.sympify(plan.start) + plan.step * _expr(t))
        return plan.item(tx, index)
    return make


def _add(tx: "Tx", t: VariableTracker, count: int) -> VariableTracker:
    if count == 0:
        return t
    return SymbolicIntVariable.create(tx.output, sympy.sympify(_expr(t)) + count)


def _expr(t: VariableTracker) -> Any:
    """The iteration number as an int or sympy expression (a constant in a peeled first iteration)."""
    if isinstance(t, SymbolicIntVariable):
        return t.expr
    assert isinstance(t, ConstantVariable) and type(t.value) is int
    return t.value


def _common_length(tx: "Tx", lengths: list[Any]) -> Any:
    """The trip count of zip() over parts of these lengths: the shortest (which one is a guarded
    decision about sizes: zip(x, y) of arrays of equal dynamic lengths guards s0 == s1 or s0 < s1)."""
    if all(not sizes.is_symbolic(n) for n in lengths):
        return min(int(n) for n in lengths)
    env = tx.output.shape_env
    shortest = sympy.sympify(lengths[0])
    for n in lengths[1:]:
        n = sympy.sympify(n)
        if sympy.expand(n - shortest) != 0 and env.decide_relation(sympy.Lt(n, shortest)):
            shortest = n  # the decision is guarded, as any comparison of sizes
    return shortest


def rows_of(iterable: VariableTracker) -> ArrayVariable | None:
    """The array when `iterable` is a host NumPy array of the graph with a first axis (`for row in A`:
    row i is A[i], read when the iteration starts, as NumPy's iterator does), else None."""
    if type(iterable) is not ArrayVariable or iterable.meta.scalar or iterable.meta.ndim == 0:
        return None
    if iterable.node.meta.get("device") or iterable.node.meta.get("array_type"):
        return None
    return iterable


def row(tx: "Tx", rows: ArrayVariable, index: VariableTracker) -> VariableTracker:
    """rows[index]: a view of a row, or a scalar copy of an element of a 1-d array."""
    return tx.output.numpy.call_function(tx, operator.getitem, [rows, index], {})


def range_bounds(iterable: VariableTracker) -> tuple[Any, Any, int] | None:
    """(start, stop, step): start and stop ints or sympy expressions, step a nonzero int."""
    if isinstance(iterable, RangeVariable):
        r = iterable.value
        return r.start, r.stop, r.step
    assert isinstance(iterable, SymbolicRangeVariable)
    parts = []
    for part in iterable.bounds():
        if isinstance(part, SymbolicIntVariable):
            parts.append(part.expr)
        elif isinstance(part, ConstantVariable) and type(part.value) is int:
            parts.append(part.value)
        else:
            return None
    if not isinstance(parts[2], int) or parts[2] == 0:
        return None  # a symbolic step: its sign decides the bounds
    return parts[0], parts[1], parts[2]
