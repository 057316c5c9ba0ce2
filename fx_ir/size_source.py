"""Sizes as Python source: the exact integer arithmetic that a sympy size expression or relation
stands for (`(s0 + 1) // 2`), for size guards checked at run time and for backends that compute sizes."""
from __future__ import annotations

from . import small_size
from .lazy_sympy import sympy
from .small_size import Relation, SizeExpr

_RELATIONS = {"Eq": "==", "Ne": "!=", "Ge": ">=", "Gt": ">", "Le": "<=", "Lt": "<"}  # sympy's names


def python_source(expr: sympy.Basic, names: dict[sympy.Symbol, str]) -> str:
    """Python source of an integer size expression or relation (exact integer arithmetic)."""
    if isinstance(expr, (SizeExpr, Relation, int)):
        return small_size.python_source(expr, names)
    go = lambda e: python_source(e, names)  # noqa: E731
    if isinstance(expr, sympy.Symbol):
        if expr not in names:
            raise NotImplementedError(expr)
        return names[expr]
    if expr.is_Integer:
        return str(int(expr))
    for kind, op in _RELATIONS.items():
        if isinstance(expr, getattr(sympy, kind)):
            return f"{go(expr.lhs)} {op} {go(expr.rhs)}"
    if isinstance(expr, sympy.Add):
        return "(" + " + ".join(go(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Mul):
        if any(not a.is_integer for a in expr.args):
            raise NotImplementedError(expr)
        return "(" + " * ".join(go(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        return f"({go(expr.base)} ** {int(expr.exp)})"
    if isinstance(expr, sympy.Mod):
        return f"({go(expr.args[0])} % {go(expr.args[1])})"
    if isinstance(expr, (sympy.floor, sympy.ceiling)):
        num, den = sympy.fraction(sympy.together(expr.args[0]))
        if isinstance(expr, sympy.floor):
            return f"({go(num)} // {go(den)})"
        return f"(-((-{go(num)}) // {go(den)}))"
    if isinstance(expr, sympy.Abs):
        return f"abs({go(expr.args[0])})"
    if isinstance(expr, (sympy.Min, sympy.Max)):
        return f"{'min' if isinstance(expr, sympy.Min) else 'max'}({', '.join(go(a) for a in expr.args)})"
    if isinstance(expr, sympy.And):
        return "(" + " and ".join(go(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Or):
        return "(" + " or ".join(go(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Not):
        return f"(not {go(expr.args[0])})"
    raise NotImplementedError(expr)
