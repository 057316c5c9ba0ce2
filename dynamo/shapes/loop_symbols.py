"""Induction variables of captured loops as size symbols: decisions about sizes that mention one
must hold for every iteration, proven from the loop's bounds, never taken from a traced value.

A loop symbol `i` of `range(start, stop, step)` lies in [start, stop - 1] (step > 0) or
[stop + 1, start] (step < 0) whenever the body runs. A question `e >= 0` is answered by the lowest
and highest value of `e` over those bounds (e linear in each loop symbol); an answer the bounds
do not give means the body's shapes depend on the iteration: the loop is not captured.

A loop over int bounds has a small form too (fx_ir/int_expr.py): `decide_small` answers the
comparisons a body makes of its variable (`if i % 50 == 0`) as the sympy path would, without
importing sympy, and says None when it cannot be sure of that (the caller then asks sympy).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..exc import Category, Unsupported
from ..fx_ir.int_expr import Extremum, FloorDiv, IntExpr, LoopSym, Mod, lift
from ..fx_ir.lazy_sympy import sympy

if TYPE_CHECKING:
    from .env import ShapeEnv


@dataclass
class LoopBounds:
    symbol: Any
    lower: Any  # int or sympy expression of outer symbols (outer loop symbols included)
    upper: Any
    name: str  # the loop variable's name in the program, for reasons


@dataclass
class SmallLoop:
    """A loop over int bounds whose variable is in its small form (an IntExpr symbol)."""

    lower: int
    upper: int
    name: str  # the loop variable's name in the program, for reasons
    make_sympy: Callable[[], Any]  # the sympy symbol, made and bound to the bounds on first call


class IterationDependent(Unsupported):
    """A size decision inside a loop body that differs between iterations (or cannot be proven not to).
    `loop_symbols`: the induction symbols the question mentions (the loops that would have to unroll)."""

    loop_symbols: frozenset = frozenset()  # their names


def mentions_loop(env: "ShapeEnv", expr: Any) -> bool:
    if not env.loop_bounds:
        return False
    free = getattr(sympy.sympify(expr), "free_symbols", ())
    return any(s in env.loop_bounds for s in free)


def _extreme(env: "ShapeEnv", expr: Any, lowest: bool) -> Any | None:
    """The lowest (or highest) value of expr over the loop bounds, innermost loop first; None when
    expr is not monotone in a loop symbol (a sum of constant multiples of the symbol and of floors
    and ceilings of linear expressions of it: i, 2*i + n, i // 2)."""
    expr = _bound_atoms(env, sympy.expand(sympy.sympify(expr)), lowest)
    if expr is None:
        return None
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


def _bound_atoms(env: "ShapeEnv", expr: Any, lowest: bool) -> Any | None:
    """expr with each remainder, minimum and maximum of a loop symbol replaced by a bound of it over
    every iteration: the lowest value (highest where its coefficient is negative) when `lowest`, else
    the highest. `k*Mod(x, m)` (m a positive integer) lies in [0, m - 1] whatever x (`x[i % n]`); Max(a, b)
    is at least the larger of their lowest values and at most the larger of their highest, Min
    likewise with the smaller (`x[max(i - 1, 0)]`). None where no such bound is certain."""
    replaced = []
    for term in sympy.Add.make_args(expr):
        coeff, atom = term.as_coeff_Mul()
        if isinstance(atom, (sympy.Mod, sympy.Min, sympy.Max)) and mentions_loop(env, atom):
            if not coeff.is_number:
                return None
            low = (coeff > 0) == lowest
            if isinstance(atom, sympy.Mod):
                divisor = atom.args[1]
                if not (divisor.is_Integer and divisor > 0):
                    return None
                term = 0 if low else coeff * (divisor - 1)
            else:
                ends = [_extreme(env, arg, low) for arg in atom.args]
                if any(end is None for end in ends):
                    return None
                # ends free of loop symbols: a Max of sizes left here is guarded like any size decision
                term = coeff * (sympy.Max if isinstance(atom, sympy.Max) else sympy.Min)(*ends)
        replaced.append(term)
    return sympy.Add(*replaced)


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
    loops = {str(symbol): bounds.name for symbol, bounds in env.loop_bounds.items()}
    loops.update((symbol, loop.name) for symbol, loop in env.small_loops.items())
    for symbol, name in loops.items():
        text, count = re.subn(rf"\b{re.escape(symbol)}\b", name, what)
        if count:
            what = text
            named.append(name)
            mentioned.append(symbol)
    names = ", ".join(named or list(loops.values()))
    plural = "s" if len(named) > 1 else ""
    error = IterationDependent(Category.LOOP_CAPTURE, f"{what} depends on the iteration (loop variable{plural} {names})",
                               "the loop runs in Python (unrolled where short enough)")
    error.loop_symbols = frozenset(mentioned)
    return error


# ---- the small form ------------------------------------------------------------------------------
_SYMPY_NAMES = {"Eq": "Eq({}, {})", "Ne": "Ne({}, {})", "Lt": "{} < {}", "Le": "{} <= {}", "Gt": "{} > {}",
                "Ge": "{} >= {}"}


def decide_small(env: "ShapeEnv", kind: str, a: int | IntExpr, b: int | IntExpr) -> bool | None:
    """The truth of `a <kind> b` (kind: Eq Ne Lt Le Gt Ge) for small forms of loop variables: what
    ShapeEnv.decide_relation answers for their sympy expressions, or its IterationDependent; None
    where that is not certain (a variable of no small loop, sympy's assumptions might decide)."""
    d = lift(a).add(b, -1)
    if not d.symbols() <= env.small_loops.keys():
        return None
    if d.is_constant():  # sympy evaluates the relation itself
        return _holds(kind, d.const)
    evaluated = _sympy_evaluates(kind, d)
    if evaluated is not _UNDECIDED:
        return evaluated  # type: ignore[return-value]
    if kind in ("Eq", "Ne"):
        low, high = _small_extreme(env, d, lowest=True), _small_extreme(env, d, lowest=False)
        if (low is not None and low - 1 >= 0) or (high is not None and -high - 1 >= 0):
            return kind == "Ne"
        raise iteration_dependent(env, f"whether {a} == {b}")
    # a > b is a - b - 1 >= 0; a < b and a <= b the same with the sides swapped
    sign = d if kind in ("Ge", "Gt") else d.neg()
    if kind in ("Gt", "Lt"):
        sign = sign.add(-1)
    low = _small_extreme(env, sign, lowest=True)
    if low is not None and low >= 0:
        return True
    high = _small_extreme(env, sign, lowest=False)
    if high is not None and -high - 1 >= 0:
        return False
    raise iteration_dependent(env, "whether " + _SYMPY_NAMES[kind].format(a, b))


def _holds(kind: str, d: int) -> bool:
    return {"Eq": d == 0, "Ne": d != 0, "Lt": d < 0, "Le": d <= 0, "Gt": d > 0, "Ge": d >= 0}[kind]


_UNDECIDED = object()


def _sympy_evaluates(kind: str, d: IntExpr) -> object:
    """What sympy makes of the relation `d <kind> 0` from its assumptions before any loop bound is
    looked at: _UNDECIDED when it leaves it unevaluated, its truth when it evaluates it, None
    when this cannot tell. Symbols, floors and extrema of variables have no known sign (loop
    symbols are integers of any sign), so a sum with one of them stays unevaluated; a single
    remainder `k*Mod(x, m) + c` is only known to be >= 0 when scaled."""
    if kind in ("Eq", "Ne") and _parity(d) == 1:
        return None  # an odd number is never 0: sympy decides that from its parity assumptions
    known = [(atom, c) for atom, c in d.terms if _sign_known(atom)]
    if not known:
        return _UNDECIDED
    if len(d.terms) != 1 or type(known[0][0]) is not Mod:
        return None
    k, c = known[0][1], d.const
    nonneg = True if k > 0 and c >= 0 else (False if k < 0 and c < 0 else None)  # d >= 0
    positive = True if k > 0 and c > 0 else (False if k < 0 and c <= 0 else None)  # d > 0
    nonpos = None if positive is None else not positive  # d <= 0
    negative = None if nonneg is None else not nonneg  # d < 0
    zero = False if (k > 0 and c > 0) or (k < 0 and c < 0) else None
    answer = {"Ge": nonneg, "Gt": positive, "Le": nonpos, "Lt": negative, "Eq": zero,
              "Ne": None if zero is None else not zero}[kind]
    return _UNDECIDED if answer is None else answer


def _parity(expr: IntExpr) -> int | None:
    """0 or 1 where sympy may know the parity of expr (every odd multiple of an atom whose parity
    may be known: an even remainder of an even sum, an extremum of sums of one parity), else None."""
    parity = expr.const % 2
    for atom, coefficient in expr.terms:
        if coefficient % 2 == 0:
            continue
        inner = getattr(atom, "inner", None)
        if type(atom) is Mod and atom.divisor % 2 == 0 and inner is not None and _parity(inner) is not None:
            parity += _parity(inner)  # type: ignore[operator]
            continue
        args = [_parity(a) for a in getattr(atom, "args", ())]
        if args and None not in args and len(set(args)) == 1:
            parity += args[0]  # type: ignore[operator]
            continue
        return None
    return parity % 2


def _sign_known(atom: Any) -> bool:
    """Whether sympy's assumptions give the atom a sign: a remainder (>= 0), an extremum with a
    constant argument (Max(i, 0) >= 0); a variable or a floor of variables has none."""
    if type(atom) is Mod:
        return True
    args = getattr(atom, "args", ())
    return any(a.is_constant() for a in args)


def _small_extreme(env: "ShapeEnv", expr: IntExpr, lowest: bool) -> int | None:
    """`_extreme` for a small form: its lowest (highest) value over the loops' int bounds, None
    when it is not monotone in a variable (floors going both ways). Remainders and extrema count as
    the bounds `_bound_atoms` gives them."""
    bound = 0
    for atom, c in expr.terms:
        low = (c > 0) == lowest
        if type(atom) is Mod:
            bound += 0 if low else c * (atom.divisor - 1)
        elif type(atom) is Extremum:
            ends = [_small_extreme(env, arg, low) for arg in atom.args]
            known = [end for end in ends if end is not None]
            if len(known) < len(ends):
                return None
            bound += c * (max if atom.kind == "Max" else min)(known)
    expr = IntExpr(expr.const, tuple(t for t in expr.terms if type(t[0]) not in (Mod, Extremum)))
    values: dict[str, int] = {}
    for name in expr.symbols():
        direction = _small_direction(expr, name)
        if direction is None:
            return None
        loop = env.small_loops[name]
        values[name] = loop.lower if (direction > 0) == lowest else loop.upper
    return bound + expr.value(values)


def _small_direction(expr: IntExpr, name: str) -> int | None:
    direction = 0
    for atom, coefficient in expr.terms:
        if name not in atom.symbols():
            continue
        if type(atom) is LoopSym:
            inner = 1
        elif type(atom) is FloorDiv:
            slope = next(c for a, c in atom.inner.terms if a.key == name)
            inner = 1 if slope > 0 else -1
        else:
            return None
        sign = inner if coefficient > 0 else -inner
        if direction and sign != direction:
            return None
        direction = sign
    return direction or None
