"""ShapeEnv: the symbols of one trace's dynamic sizes and every fact the trace relied on.

Each dynamic dimension of an input array gets its own symbol `s<i>` (integer, positive), with
the size seen while tracing as its hint. Sizes 0 and 1 are never symbols, so every symbol is
known to be >= 2 (the input guard checks it): questions the registry asks about broadcasting
(`is s0 == 1?`) are then answered without a guard. Anything else is decided from the hints and
recorded once as a relation (`Eq(s0, s1)`, `s0 >= 4`, `Eq(Mod(s0, 4), 0)`); a size the program
needs as a Python value specializes its symbols (`Eq(s0, 7)`), noting the line that forced it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

import sympy

from ..exc import DynamoError, SourceLocation
from ..fx_ir.ops.symbolic import SizeOracle, is_symbolic

log = logging.getLogger("dynamo.dynamic")

# every symbol is at least this: sizes 0 and 1 stay static (broadcasting depends on them)
MIN_DYNAMIC_SIZE = 2
# call_many passes registers on the C stack (csrc/guards.c MAX_STACK_REGS)
MAX_DYNAMIC_ARRAYS = 32


class DynamicShapeError(DynamoError, ValueError):
    """A dimension marked dynamic (dynamo.mark_dynamic) that the program needs as a fixed value."""


@dataclass
class SymbolInfo:
    symbol: sympy.Symbol
    hint: int
    source: Any  # the array's Source
    dim: int
    marked: bool  # mark_dynamic: specializing it is an error

    @property
    def origin(self) -> str:
        return f"{self.source.name()}.shape[{self.dim}]"


@dataclass
class Specialization:
    symbol: sympy.Symbol
    value: int
    why: str
    location: SourceLocation | None

    def __str__(self) -> str:
        where = f" at {self.location.filename}:{self.location.lineno}" if self.location else ""
        return f"{self.why}{where}"


class ShapeEnv(SizeOracle):
    """The op registry's SizeOracle for one trace; see the module docstring."""

    def __init__(self, location: Callable[[], SourceLocation | None] | None = None) -> None:
        self.location = location or (lambda: None)
        self.symbols: dict[sympy.Symbol, SymbolInfo] = {}
        self.hints: dict[sympy.Symbol, int] = {}
        self.arrays: dict[Any, tuple[Any, ...]] = {}  # source -> symbolic shape, for arrays with symbols
        self.relations: dict[sympy.Basic, str] = {}  # relation -> note ("" or why it was specialized)
        self.specializations: dict[sympy.Symbol, Specialization] = {}
        self._known: dict[sympy.Symbol, sympy.Expr] = {}  # s -> t + 2 (t >= 0), or its value once specialized

    # ---- symbols ---------------------------------------------------------------------------------
    def array_shape(self, source: Any, shape: tuple[int, ...], dynamic: set[int], marked: set[int]) -> tuple[Any, ...]:
        """The traced shape of an input array: a symbol for each dimension in `dynamic` (>= 2)."""
        dims = {d for d in dynamic if shape[d] >= MIN_DYNAMIC_SIZE}
        if not dims or len(self.arrays) >= MAX_DYNAMIC_ARRAYS:
            return tuple(shape)
        sizes = tuple(self._new_symbol(source, d, n, d in marked) if d in dims else n for d, n in enumerate(shape))
        self.arrays[source] = sizes
        log.debug("%s: shape %s", source.name(), sizes)
        return sizes

    def _new_symbol(self, source: Any, dim: int, hint: int, marked: bool) -> sympy.Symbol:
        symbol = sympy.Symbol(f"s{len(self.symbols)}", integer=True, positive=True)
        self.symbols[symbol] = SymbolInfo(symbol, int(hint), source, dim, marked)
        self.hints[symbol] = int(hint)
        shifted = sympy.Symbol(f"_t{len(self.symbols)}", integer=True, nonnegative=True)
        self._known[symbol] = shifted + MIN_DYNAMIC_SIZE
        return symbol

    def hint(self, expr: Any) -> int:
        value = sympy.sympify(expr).xreplace(self.hints)
        return int(value)

    # ---- SizeOracle -----------------------------------------------------------------------------
    def _reduced(self, expr: Any) -> sympy.Expr:
        """expr with every symbol as what is known of it (>= 2, or its specialized value)."""
        return sympy.expand(sympy.sympify(expr).xreplace(self._known))

    def decide_equal(self, a: Any, b: Any) -> bool:
        d = self._reduced(sympy.sympify(a) - b)
        if d.is_zero is not None:
            return bool(d.is_zero)
        if d.is_positive or d.is_negative:
            return False
        equal = self.hint(a) == self.hint(b)
        self.record(_equality(sympy.sympify(a), sympy.sympify(b), equal))
        return equal

    def decide_nonnegative(self, a: Any) -> bool:
        e = self._reduced(a)
        if e.is_nonnegative is not None:
            return bool(e.is_nonnegative)
        if e.is_integer and (e + 1).is_positive:
            return True
        nonneg = self.hint(a) >= 0
        self.record(_ordered(sympy.sympify(a), nonneg))
        return nonneg

    def record(self, relation: sympy.Basic, note: str = "") -> None:
        if relation in (sympy.true, sympy.false) or relation in self.relations:
            return
        self.relations[relation] = note
        log.debug("size guard %s%s", relation, f"  ({note})" if note else "")

    # ---- sizes the program needs as Python values -------------------------------------------------
    def specialize(self, value: Any, why: str) -> Any:
        """`value` (a size, or a tuple/list of them) with every symbol fixed to its hint, each
        fixed with an `Eq(s, n)` guard that notes `why` and the current line."""
        if isinstance(value, tuple):
            return tuple(self.specialize(v, why) for v in value)
        if isinstance(value, list):
            return [self.specialize(v, why) for v in value]
        if isinstance(value, sympy.Basic):
            for symbol in sorted(value.free_symbols, key=str):
                self._specialize_symbol(symbol, why)
            result = sympy.sympify(value.xreplace(self.hints))
            return int(result) if result.is_Integer else (bool(result) if result in (sympy.true, sympy.false) else result)
        return value

    def _specialize_symbol(self, symbol: sympy.Symbol, why: str) -> None:
        info = self.symbols.get(symbol)
        if info is None or symbol in self.specializations:
            return
        location = self.location()
        where = f" ({location.filename}, line {location.lineno}: {location.text})" if location else ""
        if info.marked:
            raise DynamicShapeError(
                f"{info.origin} was marked dynamic with dynamo.mark_dynamic, but the program needs its "
                f"value ({why}){where}; remove the mark_dynamic call, or keep the size out of Python "
                f"control flow")
        spec = Specialization(symbol, info.hint, why, location)
        self.specializations[symbol] = spec
        self._known[symbol] = sympy.Integer(info.hint)
        self.record(sympy.Eq(symbol, info.hint), f"specialized: {spec}")

    def has_symbols(self, value: Any) -> bool:
        if isinstance(value, (tuple, list)):
            return any(self.has_symbols(v) for v in value)
        return is_symbolic(value)

    def describe_symbols(self) -> list[str]:
        return [f"{s} = {i.origin}" for s, i in self.symbols.items()]


def _ordered(expr: sympy.Expr, nonneg: bool) -> sympy.Basic:
    """expr >= 0 (or < 0) written with the constant on the right: s0 - 4 >= 0 -> s0 >= 4."""
    const, rest = expr.as_coeff_Add()
    if rest == 0:
        rest, const = expr, sympy.Integer(0)
    return sympy.Ge(rest, -const) if nonneg else sympy.Lt(rest, -const)


def _equality(a: sympy.Expr, b: sympy.Expr, equal: bool) -> sympy.Basic:
    """Eq(a, b) (or Ne), written as divisibility when it is one: 4*floor(s0/4) == s0 is
    Eq(Mod(s0, 4), 0), what a reshape to (-1, 4) relies on."""
    d = sympy.expand(a - b)
    for term in d.atoms(sympy.floor):
        num, den = sympy.fraction(sympy.together(term.args[0]))
        if den.is_Integer and den > 1:
            pattern = sympy.expand(den * term - num)
            if sympy.expand(d - pattern) == 0 or sympy.expand(d + pattern) == 0:
                a, b = sympy.Mod(num, den), sympy.Integer(0)
                break
    return sympy.Eq(a, b) if equal else sympy.Ne(a, b)
