"""Python int counters of captured `for` loops (`k = 0; for i in ...: ...; k += 3`): each is the
closed form k0 + c * (number of iterations before this one), a symbolic int of the loop variable.

A counter is not a carried value of the loop node: the body computes it from the induction
variable (it can index arrays, bound slices: decisions about it are proven from the loop's bounds
like any expression of the loop variable), and after the loop it is k0 + c * trip count, an exact
Python int. The step c is read from the body's stores of the counter (`k += c`, `k = k + c`,
`k -= c`, `k = c + k` with an int literal c) and checked after tracing: the body must leave the
counter exactly c above its value at the iteration's start, else the loop is not captured.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bytecode import BinaryOp

from .fx_ir.lazy_sympy import sympy
from .fx_ir.ops import symbolic as sizes
from .loop_body import LOCAL_STORES, NotCaptured
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.symbolic import SymbolicIntVariable

if TYPE_CHECKING:
    from .translator.core import InstructionTranslatorBase as Tx

_ADD = frozenset({BinaryOp.ADD, BinaryOp.INPLACE_ADD})
_SUBTRACT = frozenset({BinaryOp.SUBTRACT, BinaryOp.INPLACE_SUBTRACT})
_INT64 = 2 ** 63
# A symbolic trip count is a size: it is taken to stay under 2**40 iterations (a Python-speed loop
# of more would run for days) when bounding a counter by int64.
_LONGEST_SYMBOLIC_TRIP = 2 ** 40


@dataclass
class Counter:
    name: str
    initial: Any  # int or sympy expression (of sizes and outer loop variables)
    step: int  # added per iteration

    def at(self, iterations: Any) -> Any:
        """Its value after `iterations` iterations (int or sympy expression)."""
        return sympy.sympify(self.initial) + self.step * iterations


def find_counters(tx: "Tx", names: list[str], body_start: int, body_end: int) -> dict[str, Counter]:
    """The carried locals among `names` that hold a Python int before the loop and that the body
    only ever adds an int literal to."""
    from .branch_capture import body_post_dominators

    found: dict[str, Counter] = {}
    every_iteration: frozenset[int] = frozenset()  # the instructions each iteration runs (no branch skips them)
    for name in names:
        initial = _int_value(tx.symbolic_locals.get(name))
        if initial is None:
            continue
        step = _literal_step(tx, name, body_start, body_end)
        if step is None:
            continue
        if not every_iteration:
            every_iteration = body_post_dominators(tx, body_start, body_end, body_start - 1)[body_start]
        if all(index in every_iteration for index in _stores(tx, name, body_start, body_end)):
            found[name] = Counter(name, initial, step)
    return found


def _stores(tx: "Tx", name: str, start: int, end: int) -> list[int]:
    """The indexes of the instructions in [start, end) that assign the local `name`."""
    return [index for index in range(start, end) if tx.instructions[index].name in LOCAL_STORES
            and name in (arg if isinstance(arg := tx.instructions[index].arg, tuple) else (arg,))]


def _int_value(value: VariableTracker | None) -> Any:
    if isinstance(value, ConstantVariable) and type(value.value) is int:
        return value.value
    if isinstance(value, SymbolicIntVariable):
        return value.expr
    return None


def _literal_step(tx: "Tx", name: str, start: int, end: int) -> int | None:
    """The sum of the int literals the stores of `name` in [start, end) add, when every store of
    it is `name = name + c` (or -, +=, -=, `c + name`); None otherwise."""
    total, stores = 0, 0
    for index in range(start, end):
        inst = tx.instructions[index]
        if inst.name not in LOCAL_STORES:
            continue
        arg: Any = inst.arg
        targets = arg if isinstance(arg, tuple) else (arg,)
        if name not in targets:
            continue
        if inst.name != "STORE_FAST" or index - 3 < start:
            return None
        first, second, op = tx.instructions[index - 3:index]
        if op.name != "BINARY_OP":
            return None
        if (first.name, first.arg) == ("LOAD_FAST", name) and second.name == "LOAD_CONST":
            literal, sign = second.arg, (1 if op.arg in _ADD else -1 if op.arg in _SUBTRACT else 0)
        elif first.name == "LOAD_CONST" and (second.name, second.arg) == ("LOAD_FAST", name):
            literal, sign = first.arg, (1 if op.arg in _ADD else 0)
        else:
            return None
        if type(literal) is not int or sign == 0:
            return None
        total += sign * literal
        stores += 1
    return total if stores else None


def iterations_before(symbol: Any, start: Any, step: int) -> Any:
    """How many iterations ran before the one where the loop variable is `symbol`."""
    if step in (1, -1):
        return (symbol - sympy.sympify(start)) * step
    return sympy.floor((symbol - sympy.sympify(start)) / step)


def check_fits_int64(counter: Counter, trip: Any) -> None:
    """Refuse a counter that might leave int64 (a backend may compute counters in 64 bits)."""
    longest = trip if isinstance(trip, int) else _LONGEST_SYMBOLIC_TRIP
    if sizes.is_symbolic(counter.initial):  # a size, far below 2**62: the steps must stay under 2**62 too
        ends: tuple[int, ...] = (counter.step * longest * 2,)
    else:
        ends = (int(counter.initial), int(counter.initial) + counter.step * longest)
    if any(not -_INT64 <= end < _INT64 for end in ends):
        raise NotCaptured(f"the int counter {counter.name} might exceed 64 bits ({counter.initial} + "
                          f"{counter.step} per iteration)")


def check_step(counter: Counter, start_value: Any, end_value: VariableTracker | None) -> None:
    """The body must leave the counter exactly `step` above its value at the iteration's start."""
    end = _int_value(end_value)
    if end is None or sympy.expand(sympy.sympify(end) - start_value - counter.step) != 0:
        what = "nothing" if end_value is None else end_value.describe()
        raise NotCaptured(f"the int {counter.name} is not a counter stepped by {counter.step} per iteration "
                          f"(it becomes {what})")


def value_of(tx: "Tx", expr: Any) -> VariableTracker:
    """The counter's value `expr` as the int the frame holds (a symbolic int, or a constant)."""
    return SymbolicIntVariable.create(tx.output, sympy.expand(sympy.sympify(expr)))
