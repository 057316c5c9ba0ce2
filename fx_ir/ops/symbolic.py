"""Sizes that are ints or sympy expressions, and the oracle that decides questions about them.

Shape rules never compare symbolic sizes themselves: they ask the current `SizeOracle`.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Union

import numpy as np
from ..lazy_sympy import is_sympy, sympy
from ..small_size import SizeExpr
from .errors import SymbolicDecisionNeeded

Size = Union[int, "sympy.Expr"]


# ---------------------------------------------------------------- normalisation

def is_symbolic(x: Any) -> bool:
    """True for a sympy expression that is not a plain integer, or a size in its small form."""
    return isinstance(x, SizeExpr) or (is_sympy(x) and not isinstance(x, sympy.Integer))


def is_size_like(x: Any) -> bool:
    """An int (not bool), a NumPy integer, or an integer-valued sympy expression."""
    if isinstance(x, bool | np.bool_):
        return False
    if isinstance(x, int | np.integer | SizeExpr):
        return True
    return (is_sympy(x) and isinstance(x, sympy.Expr)) and x.is_integer is True


def normalize(x: Any) -> Size:
    """Plain int for anything static (never a sympy Integer), else the sympy expression."""
    if isinstance(x, bool | np.bool_):
        raise TypeError(f"a size must be an integer, not {type(x).__name__}")
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, SizeExpr):
        return x
    if (is_sympy(x) and isinstance(x, sympy.Integer)):
        return int(x)
    if (is_sympy(x) and isinstance(x, sympy.Expr)):
        if x.is_integer is False:
            raise TypeError(f"a size must be integer-valued, not {x}")
        return x
    return operator.index(x)


def normalize_shape(shape: Iterable[Any]) -> tuple[Size, ...]:
    return tuple(normalize(d) for d in shape)


def prod(sizes: Iterable[Any]) -> Size:
    return normalize(math.prod(sizes, start=1))


def floordiv(a: Size, b: Size) -> Size:
    if not is_symbolic(a) and not is_symbolic(b):
        return int(a) // int(b)
    exact = _small_exact_quotient(a, b)
    if exact is not None:
        return exact
    return normalize(sympy.floor(sympy.sympify(a) / b))


def ceildiv(a: Size, b: Size) -> Size:
    if not is_symbolic(a) and not is_symbolic(b):
        return -(-int(a) // int(b))
    exact = _small_exact_quotient(a, b)
    if exact is not None:
        return exact
    return normalize(sympy.ceiling(sympy.sympify(a) / b))


def _small_exact_quotient(a: Any, b: Any) -> Any:
    """a / b for a small size a and an int b that divides each of its coefficients and its
    constant (a slice's length for step 1: (s0 - 2) / 1), where sympy's floor and ceiling of it
    are the quotient itself; else None."""
    if not isinstance(a, SizeExpr) or not isinstance(b, int | np.integer) or b == 0:
        return None
    b = int(b)
    if a.const % b or any(coefficient % b for _, coefficient in a.terms):
        return None
    return a if b == 1 else normalize(SizeExpr(a.const // b, tuple((atom, c // b) for atom, c in a.terms)))


def exact_quotient(a: Size, b: Size) -> Size | None:
    """a / b when it is structurally an integer expression (3*s0 / 3 -> s0), else None."""
    if not is_symbolic(a) and not is_symbolic(b):
        return int(a) // int(b) if int(b) != 0 and int(a) % int(b) == 0 else None
    exact = _small_exact_quotient(a, b)
    if exact is not None:
        return exact
    q = sympy.cancel(sympy.sympify(a) / b)
    if q.is_integer:
        return normalize(q)
    num, den = sympy.fraction(q)
    return normalize(num) if den == 1 and num.is_integer else None


# ---------------------------------------------------------------- oracles

class SizeOracle:
    """Decides facts about sizes that may be symbolic; the shape environment subclasses it.

    Each method is called only when an argument is symbolic (ints are decided inline). An
    implementation either answers (and may record the answer as a guard) or raises
    SymbolicDecisionNeeded. `decide_nonnegative` is the primitive; the others default to it.
    """

    def sizes_equal(self, a: Size, b: Size) -> bool:
        if isinstance(a, SizeExpr | int) and isinstance(b, SizeExpr | int):
            if (a - b) == 0:
                return True
            return self.decide_equal(a, b)
        d = sympy.expand(sympy.sympify(a) - b)
        if d == 0:
            return True
        return self.decide_equal(a, b)

    def size_is_one(self, a: Size) -> bool:
        return self.sizes_equal(a, 1)

    def is_nonnegative(self, a: Size) -> bool:
        return self.decide_nonnegative(a)

    # primitives: override these two to plug in a shape environment
    def decide_equal(self, a: Size, b: Size) -> bool:
        raise SymbolicDecisionNeeded(sympy.Eq(a, b))

    def decide_nonnegative(self, a: Size) -> bool:
        raise SymbolicDecisionNeeded(sympy.Ge(a, 0))


def _structural_sign(expr: sympy.Expr) -> bool | None:
    """expr >= 0 when sympy's assumptions can prove or refute it, else None."""
    known = expr.is_nonnegative
    if known is not None:
        return bool(known)
    if expr.is_integer:
        # For integers, e >= 0  <=>  e + 1 > 0; sympy proves `s0*s1 - 1 + 1 > 0` but not `s0*s1 - 1 >= 0`.
        positive = (expr + 1).is_positive
        if positive is not None:
            return bool(positive)
    return None


class StructuralOracle(SizeOracle):
    """Decides what sympy's assumptions prove (s0 - 1 >= 0 for a positive s0); raises otherwise."""

    def decide_equal(self, a: Size, b: Size) -> bool:
        d = sympy.expand(sympy.sympify(a) - b)
        zero = d.is_zero
        if zero is None:
            raise SymbolicDecisionNeeded(sympy.Eq(a, b))
        return bool(zero)

    def decide_nonnegative(self, a: Size) -> bool:
        sign = _structural_sign(sympy.expand(sympy.sympify(a)))
        if sign is None:
            raise SymbolicDecisionNeeded(sympy.Ge(a, 0))
        return sign


class HintOracle(StructuralOracle):
    """Decides undecidable questions from example values and records each answer as a guard.

    `guards` collects the relations that held (e.g. `Eq(s0, 3)`, `s0 - 2 >= 0`,
    `Ne(s0, 1)`); `on_guard`, if given, is called with each one as it is recorded.
    """

    def __init__(self, hints: Mapping[sympy.Symbol, int],
                 on_guard: Callable[[sympy.Basic], None] | None = None) -> None:
        self.hints = dict(hints)
        self.on_guard = on_guard
        self.guards: list[sympy.Basic] = []

    def _value(self, expr: Any) -> int:
        value = sympy.sympify(expr).subs(self.hints)
        if not value.is_Integer:
            raise SymbolicDecisionNeeded(expr, f"no hint for every symbol of {expr}")
        return int(value)

    def _record(self, relation: sympy.Basic) -> None:
        self.guards.append(relation)
        if self.on_guard is not None:
            self.on_guard(relation)

    def decide_equal(self, a: Size, b: Size) -> bool:
        try:
            return super().decide_equal(a, b)
        except SymbolicDecisionNeeded:
            equal = self._value(a) == self._value(b)
            self._record(sympy.Eq(a, b) if equal else sympy.Ne(a, b))
            return equal

    def decide_nonnegative(self, a: Size) -> bool:
        try:
            return super().decide_nonnegative(a)
        except SymbolicDecisionNeeded:
            nonneg = self._value(a) >= 0
            self._record(sympy.Ge(a, 0) if nonneg else sympy.Lt(a, 0))
            return nonneg


_ORACLE: contextvars.ContextVar[SizeOracle] = contextvars.ContextVar(
    "dynamo_fx_ir_size_oracle", default=StructuralOracle())  # noqa: B039  (the oracle keeps no state)


def current_oracle() -> SizeOracle:
    return _ORACLE.get()


@contextlib.contextmanager
def using_oracle(oracle: SizeOracle) -> Iterator[SizeOracle]:
    """Make `oracle` answer every symbolic question asked by rules run inside the block."""
    token = _ORACLE.set(oracle)
    try:
        yield oracle
    finally:
        _ORACLE.reset(token)


# ---------------------------------------------------------------- decisions used by the rules

def sizes_equal(a: Any, b: Any) -> bool:
    if not is_symbolic(a) and not is_symbolic(b):
        return int(a) == int(b)
    return current_oracle().sizes_equal(a, b)


def size_is_one(a: Any) -> bool:
    if not is_symbolic(a):
        return int(a) == 1
    return current_oracle().size_is_one(a)


def is_nonnegative(a: Any) -> bool:
    if not is_symbolic(a):
        return int(a) >= 0
    return current_oracle().is_nonnegative(a)


def is_zero(a: Any) -> bool:
    return sizes_equal(a, 0)


def less_than(a: Any, b: Any) -> bool:
    """a < b for integer-valued sizes."""
    if not is_symbolic(a) and not is_symbolic(b):
        return int(a) < int(b)
    return not is_nonnegative(normalize(_difference(a, b)))


def at_least(a: Any, b: Any) -> bool:
    """a >= b for integer-valued sizes."""
    if not is_symbolic(a) and not is_symbolic(b):
        return int(a) >= int(b)
    return is_nonnegative(normalize(_difference(a, b)))


def _difference(a: Any, b: Any) -> Any:
    """a - b of two sizes, one symbolic: in the small form where both are in it."""
    a, b = (int(v) if isinstance(v, np.integer) else v for v in (a, b))
    if isinstance(a, SizeExpr | int | np.integer) and isinstance(b, SizeExpr | int | np.integer):
        return a - b
    return sympy.sympify(a) - b
