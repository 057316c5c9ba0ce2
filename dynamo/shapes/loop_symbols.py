"""Induction variables of captured loops as size symbols: decisions about sizes that mention one
must hold for every iteration, proven from the loop's bounds, never taken from a traced value.

A loop symbol `i` of `range(start, stop, step)` lies in [start, stop - 1] (step > 0) or
[stop + 1, start] (step < 0) whenever the body runs. A question `e >= 0` is answered by the lowest
and highest value of `e` over those bounds (e linear in each loop symbol); an answer the bounds
do not give means the body's shapes depend on the iteration: the loop is not captured.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..exc import Category, Unsupported
from ..fx_ir.lazy_sympy import sympy

if TYPE_CHECKING:
    from .env import ShapeEnv


@dataclass
class LoopBounds:
    symbol: Any
    lower: Any  # int or sympy expression of outer symbols (outer loop symbols included)
    upper: Any
    name: str  # the loop variable's name in the program, for reasons


class IterationDependent(Unsupported):
    """A size decision inside a loop body that differs between iterations (or cannot be proven not to).
    `loop_symbols`: the induction symbols the question mentions (the loops that would have to unroll)."""

    loop_symbols: frozenset = frozenset()


def mentions_loop(env: "ShapeEnv", expr: Any) -> bool:
    if not env.loop_bounds:
        return False
    free = getattr(sympy.sympify(expr), "free_symbols", ())
    return any(s in env.loop_bounds for s in free)


def _extreme(env: "ShapeEnv", expr: Any, lowest: bool) -> Any | None:
    """The lowest (or highest) value of expr over the loop bounds, innermost loop first; None when
    expr is not monotone in a loop symbol (a sum of constant multiples of the symbol and of floors
    and ceilings of linear expressions of it: i, 2*i + n, i // 2)."""
    expr = sympy.expand(sympy.sympify(expr))
    for symbol in reversed(list(env.loop_bounds)):
        if symbol not in expr.free_symbols:
            continue
        direction = _direction(expr, symbol)
        if direction is None:
            return None
        bounds = env.loop_bounds[symbol]
        pick = bounds.lower if (direction > 0) == lowest else bounds.upper
        expr = sympy.expand(expr.subs(symbol, pick))
    return expr


def _direction(expr: Any, symbol: Any) -> int | None:
    """+1 if expr grows with symbol, -1 if it shrinks, None if neither is certain."""
    direction = 0
    for term in sympy.Add.make_args(expr):
        if symbol not in term.free_symbols:
            continue
        coeff, atom = term.as_coeff_Mul()
        if atom == symbol:
            inner = 1
        elif isinstance(atom, (sympy.floor, sympy.ceiling)):
            linear = sympy.expand(atom.args[0])
            slope = linear.coeff(symbol)
            if slope.free_symbols or slope == 0 or symbol in (linear - slope * symbol).free_symbols:
                return None
            inner = 1 if slope > 0 else -1
        else:
            return None
        sign = inner if coeff > 0 else -inner
        if direction and sign != direction:
            return None
        direction = sign
    return direction or None


def _holds_for_all(env: "ShapeEnv", expr: Any) -> bool:
    """Whether expr >= 0 for every value the outer sizes may take (a guard on outer sizes may be
    recorded for it, as for any size decision)."""
    if mentions_loop(env, expr):
        return False
    return env.decide_nonnegative(expr)


def loop_sign(env: "ShapeEnv", expr: Any, what: Callable[[], str]) -> bool:
    """Whether expr >= 0, the same for every iteration; raises IterationDependent otherwise, saying
    what() was asked (written only then: printing sympy expressions costs more than the decision)."""
    low = _extreme(env, expr, lowest=True)
    if low is not None and _holds_for_all(env, low):
        return True
    high = _extreme(env, expr, lowest=False)
    if high is not None and _holds_for_all(env, -high - 1):
        return False
    raise iteration_dependent(env, what())


def decide_equal_in_loop(env: "ShapeEnv", a: Any, b: Any) -> bool:
    d = sympy.expand(sympy.sympify(a) - b)
    if d == 0:
        return True
    low, high = _extreme(env, d, lowest=True), _extreme(env, d, lowest=False)
    if low is not None and _holds_for_all(env, low - 1):
        return False
    if high is not None and _holds_for_all(env, -high - 1):
        return False
    raise iteration_dependent(env, f"whether {a} == {b}")


def iteration_dependent(env: "ShapeEnv", what: str) -> IterationDependent:
    """The reason, in the program's names: `whether E - w >= 0 depends on the iteration (loop
    variables E, w)`, the loop symbols written as the variables they stand for."""
    named, mentioned = [], []
    for symbol, bounds in env.loop_bounds.items():
        text, count = re.subn(rf"\b{re.escape(str(symbol))}\b", bounds.name, what)
        if count:
            what = text
            named.append(bounds.name)
            mentioned.append(symbol)
    names = ", ".join(named or [b.name for b in env.loop_bounds.values()])
    plural = "s" if len(named) > 1 else ""
    error = IterationDependent(Category.LOOP_CAPTURE, f"{what} depends on the iteration (loop variable{plural} {names})",
                               "the loop runs in Python (unrolled where short enough)")
    error.loop_symbols = frozenset(mentioned)
    return error
