"""Exact integer expressions of loop variables without sympy: sums of symbols, floor divisions and
remainders by positive constants, minima and maxima, times integer constants, plus a constant.

A loop variable and the arithmetic a body does on it (`i % 50`, `2 * i + 1`, `max(i - 1, 0)`) stay
in this small form, which answers the questions loop capture asks of it without importing sympy
(0.25-0.35 s of CPU); anything outside the fragment (a product of two variables, a negative
divisor, a floor of a floor) gives None, and `to_sympy` hands the expression to sympy when it
leaves the fragment (a graph node, a shape, a guard). Every normalisation here is an identity of
integer arithmetic, so the value is always the one sympy's expression has.
"""
from __future__ import annotations

from typing import Any, Callable, Union

Operand = Union[int, "IntExpr"]


class Atom:
    """A non-linear part of an expression (or a symbol); `key` orders and identifies it."""

    key: str

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, Atom) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def symbols(self) -> frozenset[str]:
        raise NotImplementedError

    def value(self, values: dict[str, int]) -> int:
        raise NotImplementedError

    def to_sympy(self, resolve: Callable[[str], Any]) -> Any:
        raise NotImplementedError


class LoopSym(Atom):
    """An integer symbol (a loop variable), known by its name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.key = name

    def symbols(self) -> frozenset[str]:
        return frozenset((self.name,))

    def value(self, values: dict[str, int]) -> int:
        return values[self.name]

    def to_sympy(self, resolve: Callable[[str], Any]) -> Any:
        return resolve(self.name)

    def __str__(self) -> str:
        return self.name


class SizeSym(LoopSym):
    """A positive integer symbol: a dynamic size of the trace (`s0`), sympy's
    `Symbol(name, integer=True, positive=True)`."""

    def to_sympy(self, resolve: Callable[[str], Any]) -> Any:
        from .lazy_sympy import sympy

        return sympy.Symbol(self.name, integer=True, positive=True)


class FloorDiv(Atom):
    """inner // divisor, divisor > 0, inner a sum of symbols (no atom of its own)."""

    def __init__(self, inner: IntExpr, divisor: int) -> None:
        self.inner, self.divisor = inner, divisor
        self.key = f"floor({inner}/{divisor})"

    def symbols(self) -> frozenset[str]:
        return self.inner.symbols()

    def value(self, values: dict[str, int]) -> int:
        return self.inner.value(values) // self.divisor

    def to_sympy(self, resolve: Callable[[str], Any]) -> Any:
        from .lazy_sympy import sympy

        return sympy.floor(self.inner.to_sympy(resolve) / sympy.Integer(self.divisor))

    def __str__(self) -> str:
        return self.key


class Mod(Atom):
    """inner % divisor (Python's: in [0, divisor - 1]), divisor > 0."""

    def __init__(self, inner: IntExpr, divisor: int) -> None:
        self.inner, self.divisor = inner, divisor
        self.key = f"Mod({inner}, {divisor})"

    def symbols(self) -> frozenset[str]:
        return self.inner.symbols()

    def value(self, values: dict[str, int]) -> int:
        return self.inner.value(values) % self.divisor

    def to_sympy(self, resolve: Callable[[str], Any]) -> Any:
        from .lazy_sympy import sympy

        return sympy.Mod(self.inner.to_sympy(resolve), self.divisor)

    def __str__(self) -> str:
        return self.key


class Extremum(Atom):
    """Min or Max of two or more sums of symbols and constants."""

    def __init__(self, kind: str, args: tuple[IntExpr, ...]) -> None:
        self.kind, self.args = kind, args
        self.key = f"{kind}({', '.join(map(str, args))})"

    def symbols(self) -> frozenset[str]:
        return frozenset().union(*(a.symbols() for a in self.args))

    def value(self, values: dict[str, int]) -> int:
        pick = min if self.kind == "Min" else max
        return pick(a.value(values) for a in self.args)

    def to_sympy(self, resolve: Callable[[str], Any]) -> Any:
        from .lazy_sympy import sympy

        return getattr(sympy, self.kind)(*(a.to_sympy(resolve) for a in self.args))

    def __str__(self) -> str:
        return self.key


class IntExpr:
    """const + sum(coefficient * atom), immutable; terms sorted by atom key, no zero coefficient."""

    __slots__ = ("const", "terms")

    def __init__(self, const: int, terms: tuple[tuple[Atom, int], ...] = ()) -> None:
        self.const = const
        self.terms = terms

    @staticmethod
    def symbol(name: str) -> IntExpr:
        return IntExpr(0, ((LoopSym(name), 1),))

    @staticmethod
    def _of(const: int, coefficients: dict[Atom, int]) -> IntExpr:
        terms = tuple(sorted(((a, c) for a, c in coefficients.items() if c), key=lambda t: t[0].key))
        return IntExpr(const, terms)

    # ---- what it is ---------------------------------------------------------------------------
    def is_constant(self) -> bool:
        return not self.terms

    def symbols(self) -> frozenset[str]:
        return frozenset().union(*(a.symbols() for a, _ in self.terms))

    def is_affine(self) -> bool:
        """Only symbols (no floor, Mod, Min or Max)."""
        return all(isinstance(a, LoopSym) for a, _ in self.terms)

    def value(self, values: dict[str, int]) -> int:
        return self.const + sum(c * a.value(values) for a, c in self.terms)

    def to_sympy(self, resolve: Callable[[str], Any]) -> Any:
        """The sympy expression (imports sympy), each symbol given by `resolve(name)`."""
        from .lazy_sympy import sympy

        result = sympy.Integer(self.const)
        for atom, coefficient in self.terms:
            result = result + coefficient * atom.to_sympy(resolve)
        return result

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            return not self.terms and self.const == other
        return isinstance(other, IntExpr) and other.const == self.const and other.terms == self.terms

    def __hash__(self) -> int:
        return hash((self.const, self.terms))

    def __str__(self) -> str:
        text = ""
        for atom, coefficient in self.terms:
            magnitude = "" if abs(coefficient) == 1 else f"{abs(coefficient)}*"
            sign = "-" if coefficient < 0 else ""
            if text:
                text += f" {'-' if coefficient < 0 else '+'} "
                sign = ""
            text += f"{sign}{magnitude}{atom}"
        if not text:
            return str(self.const)
        return f"{text} {'-' if self.const < 0 else '+'} {abs(self.const)}" if self.const else text

    __repr__ = __str__

    # ---- arithmetic (None: the result leaves the fragment) -------------------------------------------
    def add(self, other: Operand, sign: int = 1) -> IntExpr:
        other = lift(other)
        coefficients = dict(self.terms)
        for atom, coefficient in other.terms:
            coefficients[atom] = coefficients.get(atom, 0) + sign * coefficient
        return IntExpr._of(self.const + sign * other.const, coefficients)

    def scale(self, factor: int) -> IntExpr:
        if factor == 0:
            return IntExpr(0)
        return IntExpr(self.const * factor, tuple((a, c * factor) for a, c in self.terms))

    def mul(self, other: Operand) -> IntExpr | None:
        other = lift(other)
        if other.is_constant():
            return self.scale(other.const)
        if self.is_constant():
            return other.scale(self.const)
        return None  # a product of symbols

    def floordiv(self, by: Operand) -> IntExpr | None:
        """self // by for a constant by > 0: the terms that are multiples of it and the
        constant's multiple of it come out of the floor ((2*i + 5) // 2 is i + 2 + 1 // 2)."""
        divisor = _positive_constant(by)
        if divisor is None or not self.is_affine():
            return None
        if divisor == 1:
            return self
        outside = {a: c // divisor for a, c in self.terms if c % divisor == 0}
        inside = IntExpr._of(self.const % divisor, {a: c for a, c in self.terms if c % divisor})
        result = IntExpr._of(self.const // divisor, outside)
        if inside.is_constant():  # 0 <= const % divisor < divisor: its floor is 0
            return result
        return result.add(IntExpr(0, ((FloorDiv(inside, divisor), 1),)))

    def mod(self, by: Operand) -> IntExpr | None:
        """self % by for a constant by > 0, coefficients and constant reduced modulo it."""
        divisor = _positive_constant(by)
        if divisor is None or not self.is_affine():
            return None
        inside = IntExpr._of(self.const % divisor, {a: c % divisor for a, c in self.terms})
        if inside.is_constant():
            return inside
        return IntExpr(0, ((Mod(inside, divisor), 1),))

    def neg(self) -> IntExpr:
        return self.scale(-1)


def lift(value: Operand) -> IntExpr:
    return value if isinstance(value, IntExpr) else IntExpr(int(value))


def _positive_constant(value: Operand) -> int | None:
    value = lift(value)
    return value.const if value.is_constant() and value.const > 0 else None


def extremum(kind: str, operands: list[Operand]) -> IntExpr | None:
    """Min or Max ("Min"/"Max") of sums of symbols and constants; operands that differ from
    another by a constant are dropped for the smaller (larger) one, as is every duplicate."""
    pick = min if kind == "Min" else max
    args: list[IntExpr] = []
    for operand in operands:
        operand = lift(operand)
        if not operand.is_affine():
            return None
        for k, kept in enumerate(args):
            if kept.terms == operand.terms:
                args[k] = IntExpr(pick(kept.const, operand.const), kept.terms)
                break
        else:
            args.append(operand)
    if len(args) == 1:
        return args[0]
    args.sort(key=lambda a: (bool(a.terms), str(a)))  # sympy's order: numbers first
    return IntExpr(0, ((Extremum(kind, tuple(args)), 1),))
