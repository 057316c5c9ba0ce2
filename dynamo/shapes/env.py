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
import sys
from dataclasses import dataclass
from typing import Any, Callable

from ..fx_ir.lazy_sympy import forbidden, is_sympy, sympy
from ..fx_ir.small_size import Relation, SizeExpr, only_sizes, size_symbol

from ..exc import DynamoError, SourceLocation
from ..fx_ir.ops.symbolic import SizeOracle, is_symbolic
from . import loop_symbols

log = logging.getLogger("dynamo.dynamic")
guards_log = logging.getLogger("dynamo.guards")

# every symbol is at least this: sizes 0 and 1 stay static (broadcasting depends on them)
MIN_DYNAMIC_SIZE = 2
# call_many passes registers on the C stack (csrc/guards.c MAX_STACK_REGS)
MAX_DYNAMIC_ARRAYS = 32


class DynamicShapeError(DynamoError, ValueError):
    """A dimension marked dynamic (dynamo.mark_dynamic) that the program needs as a fixed value."""


class SmallVaryingSize(DynamoError):
    """A trace met an input array whose varying dimension is 0 or 1 long (ShapePolicy.small_varying_dims):
    the frame runs its original code for such inputs, under `guards` (the trace's so far, and this
    array's shape)."""

    def __init__(self, source: Any, shape: tuple[int, ...], dims: set[int], guards: list) -> None:
        self.source, self.shape, self.dims, self.guards = source, shape, dims, guards
        where = ", ".join(f"{source.name()}.shape[{d}] == {shape[d]}" for d in sorted(dims))
        super().__init__(f"{where}: a dimension whose size varies, 0 or 1 long here")


@dataclass
class SymbolInfo:
    symbol: sympy.Symbol
    hint: int
    source: Any  # the array's Source (or the int's, for a dynamic int argument)
    dim: int | None  # None: the symbol is the int at `source` itself
    marked: bool  # mark_dynamic: specializing it is an error
    why: str = ""  # why the dimension is dynamic (mark_dynamic, dynamic=True, automatic)

    @property
    def origin(self) -> str:
        return self.source.name() if self.dim is None else f"{self.source.name()}.shape[{self.dim}]"


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
        self.kept_static: list[str] = []  # dimensions asked to be dynamic that stay static, and why
        self.scalars: set[Any] = set()  # sources of dynamic int arguments (in `arrays` as (symbol,))
        self._known: dict[sympy.Symbol, sympy.Expr] = {}  # s -> t + 2 (t >= 0), or its value once specialized
        # symbolic sizes at run time (shapes.runtime): graph nodes and generated functions, by expression
        self.size_nodes: dict[sympy.Expr, Any] = {}
        self.size_functions: dict[sympy.Expr, Callable[..., int]] = {}
        # induction variables of the loop bodies being traced (shapes/loop_symbols.py), outermost first
        self.loop_bounds: dict[sympy.Symbol, Any] = {}
        self.loop_nodes: dict[sympy.Symbol, Any] = {}  # their values in the body graphs
        # loops over int bounds whose variables are in their small form (fx_ir/int_expr.py), by symbol name
        self.small_loops: dict[str, loop_symbols.SmallLoop] = {}
        # sizes in their small form (fx_ir/small_size.py) while the trace runs without sympy
        self.small = forbidden()
        self._small_values: dict[str, int] = {}  # specialized symbols, by name

    def extent(self) -> tuple[int, ...]:
        """How much this trace has recorded of sizes (symbols, relations, specializations, run-time
        sizes): equal before and after an instruction that recorded nothing."""
        return (len(self.symbols), len(self.arrays), len(self.relations), len(self.specializations),
                len(self.kept_static), len(self.scalars), len(self._known), len(self.size_nodes),
                len(self.size_functions), len(self.loop_bounds), len(self.small_loops), len(self._small_values))

    # ---- symbols ---------------------------------------------------------------------------------
    def array_shape(self, source: Any, shape: tuple[int, ...], dynamic: set[int], marked: set[int],
                    why: str = "dynamic") -> tuple[Any, ...]:
        """The traced shape of an input array: a symbol for each dimension in `dynamic` (>= 2)."""
        dims = {d for d in dynamic if shape[d] >= MIN_DYNAMIC_SIZE}
        for d in sorted(set(dynamic) - dims):
            self.kept_static.append(f"{source.name()}.shape[{d}] == {shape[d]}: sizes 0 and 1 stay specialized "
                                    "(broadcasting depends on them)")
        if dims and len(self.arrays) >= MAX_DYNAMIC_ARRAYS:
            self.kept_static.append(f"{source.name()}: static, past {MAX_DYNAMIC_ARRAYS} arrays with dynamic sizes")
        if not dims or len(self.arrays) >= MAX_DYNAMIC_ARRAYS:
            return tuple(shape)
        sizes = tuple(self._new_symbol(source, d, n, d in marked, "mark_dynamic" if d in marked else why)
                      if d in dims else n for d, n in enumerate(shape))
        self.arrays[source] = sizes
        log.debug("%s: shape %s", source.name(), sizes)
        return sizes

    def int_symbol(self, source: Any, value: int, why: str) -> sympy.Symbol | None:
        """A symbol for a dynamic int argument (>= 2, like a size), or None when it stays static."""
        if value < MIN_DYNAMIC_SIZE or value >= 2 ** 63 or len(self.arrays) >= MAX_DYNAMIC_ARRAYS:
            return None  # (the size guards read an int as a C int64)
        if source in self.arrays:
            return self.arrays[source][0]
        symbol = self._new_symbol(source, None, value, False, why)
        self.arrays[source] = (symbol,)
        self.scalars.add(source)
        return symbol

    def _new_symbol(self, source: Any, dim: int | None, hint: int, marked: bool, why: str) -> sympy.Symbol:
        name = f"s{len(self.symbols)}"
        symbol = size_symbol(name) if self.small else sympy.Symbol(name, integer=True, positive=True)
        self.symbols[symbol] = SymbolInfo(symbol, int(hint), source, dim, marked, why)
        log.debug("%s = %s (%s; traced with %d)", symbol, self.symbols[symbol].origin, why, hint)
        self.hints[symbol] = int(hint)
        if self.small:
            return symbol
        shifted = sympy.Symbol(f"_t{len(self.symbols)}", integer=True, nonnegative=True)
        self._known[symbol] = shifted + MIN_DYNAMIC_SIZE
        return symbol

    def small_to_sympy(self, expr: Any, why: str) -> Any:
        """The sympy expression of a small form (an IntExpr): a variable of a loop being traced is
        its loop's symbol (made and bound now), any other the unbound symbol of that name."""
        def resolve(name: str) -> Any:
            loop = self.small_loops.get(name)
            return loop.make_sympy() if loop is not None else sympy.Symbol(name, integer=True)

        if "sympy" not in sys.modules:  # the first expression that needs it: say what it cost
            guards_log.debug("importing sympy: %s leaves the small integer fragment (%s)", expr, why)
        log.debug("sympy needed for %s: %s", expr, why)
        return expr.to_sympy(resolve)

    def hint(self, expr: Any) -> int:
        if isinstance(expr, SizeExpr):
            return expr.value({s.key: n for s, n in self._hint_names().items()})
        if isinstance(expr, int):
            return expr
        value = sympy.sympify(expr).xreplace(self.hints)
        return int(value)

    # ---- SizeOracle -----------------------------------------------------------------------------
    def _reduced(self, expr: Any) -> sympy.Expr:
        """expr with every symbol as what is known of it (>= 2, or its specialized value)."""
        return sympy.expand(sympy.sympify(expr).xreplace(self._known))

    def _hint_names(self) -> dict[Any, int]:
        return {atom: n for symbol, n in self.hints.items() for atom, _ in symbol.terms}

    def _small_sign(self, expr: Any) -> tuple[int, bool | None, bool | None]:
        """Of a small size expression: (its value for the hints, whether it is >= 0 for every size
        the guards allow, whether it is 0 for every one of them; None: that depends on the sizes).
        Every symbol is t + 2 with t >= 0, or its specialized value: what sympy's assumptions see
        in ShapeEnv._reduced, decided as they decide it (signs of the coefficients, and parity)."""
        if isinstance(expr, int):
            return expr, expr >= 0, expr == 0
        const, slopes = expr.const, []
        for atom, coefficient in expr.terms:
            if atom.key in self._small_values:
                const += coefficient * self._small_values[atom.key]
            else:
                const += coefficient * MIN_DYNAMIC_SIZE
                slopes.append(coefficient)
        value = self.hint(expr)
        if not slopes:
            return value, const >= 0, const == 0
        sign: bool | None = None
        zero: bool | None = None
        if all(k > 0 for k in slopes) and const >= 0:
            sign, zero = True, (False if const > 0 else None)
        elif all(k < 0 for k in slopes) and const <= 0:
            sign, zero = (False if const < 0 else None), (False if const < 0 else None)
        if all(k % 2 == 0 for k in slopes) and const % 2 == 1:  # an odd number is never 0
            zero = False
        return value, sign, zero

    def _small_decide_equal(self, a: Any, b: Any) -> bool:
        value, _, zero = self._small_sign(a - b)
        if zero is not None:
            return zero
        equal = value == 0
        self.record(Relation("Eq" if equal else "Ne", a, b))
        return equal

    def _small_decide_nonnegative(self, a: Any) -> bool:
        value, sign, _ = self._small_sign(a)
        if sign is not None:
            return sign
        nonneg = value >= 0
        self.record(_small_ordered(a, nonneg))
        return nonneg

    def decide_equal(self, a: Any, b: Any) -> bool:
        if self.small and only_sizes(a) and only_sizes(b):
            return self._small_decide_equal(a, b)
        if loop_symbols.mentions_loop(self, sympy.sympify(a) - b):
            return loop_symbols.decide_equal_in_loop(self, a, b)
        d = self._reduced(sympy.sympify(a) - b)
        if d.is_zero is not None:
            return bool(d.is_zero)
        if d.is_positive or d.is_negative:
            return False
        if loop_symbols.mentions_loop(self, a) or loop_symbols.mentions_loop(self, b):
            # the loop symbol cancels (n - 1 - i against m - 1 - i): the guard is on what is left
            a, b = sympy.expand(sympy.sympify(a) - b), 0
        equal = self.hint(a) == self.hint(b)
        self.record(_equality(sympy.sympify(a), sympy.sympify(b), equal))
        return equal

    def decide_nonnegative(self, a: Any) -> bool:
        if self.small and only_sizes(a):
            return self._small_decide_nonnegative(a)
        if loop_symbols.mentions_loop(self, a):
            return loop_symbols.loop_sign(self, a, lambda: f"whether {a} >= 0")
        known = self._nonnegative(a)
        if known is not None:
            return known
        nonneg = self.hint(a) >= 0
        self.record(_ordered(sympy.sympify(a), nonneg))
        return nonneg

    def decide_relation(self, relation: sympy.Basic) -> bool:
        """The truth of a comparison of sizes the program branches on (`n > 100`, `n == m`):
        from what is known of the symbols when it follows from it, else from the hints,
        recording the relation (or its negation) as the guard, never the sizes themselves."""
        relation = sympy.sympify(relation)
        if relation in (sympy.true, sympy.false):
            return bool(relation)
        lhs, rhs = relation.lhs, relation.rhs
        if isinstance(relation, (sympy.Eq, sympy.Ne)):
            return self.decide_equal(lhs, rhs) == isinstance(relation, sympy.Eq)
        # integers: a > b is a >= b + 1; a < b and a <= b are the same with the sides swapped
        low, high = (lhs, rhs) if isinstance(relation, (sympy.Ge, sympy.Gt)) else (rhs, lhs)
        strict = isinstance(relation, (sympy.Gt, sympy.Lt))
        if loop_symbols.mentions_loop(self, relation):
            return loop_symbols.loop_sign(self, sympy.sympify(low) - high - (1 if strict else 0),
                                          lambda: f"whether {relation}")
        known = self._nonnegative(sympy.sympify(low) - high - (1 if strict else 0))
        if known is not None:
            return bool(known)
        holds = bool(relation.xreplace(self.hints))
        self.record(relation if holds else sympy.Not(relation))
        return holds

    def _nonnegative(self, a: Any) -> bool | None:
        """a >= 0 when it follows from what is known of the symbols, else None. Floors and
        remainders (x[:n // 2], n % 4), minima and maxima are replaced by their bounds: floor(u)
        lies in (u - 1, u], Mod(u, m) in [0, m - 1] for m > 0, Min(a, b) <= a; a lower bound >= 0
        proves it, an upper one < 0 refutes it."""
        e = self._reduced(a)
        tries: list[tuple[sympy.Expr, bool | None]] = [(e, None)]
        for lower in (True, False):  # two levels: floor(Min(n, 10) / 3)
            level = _bounds(e, lower)
            tries += [(b, lower) for b in level + [c for b in level for c in _bounds(b, lower)]]
        for bound, proves in tries:
            known = bound.is_nonnegative
            if known is None and bound.is_integer:
                known = True if (bound + 1).is_positive else (False if bound.is_negative else None)
            if known is not None and (proves is None or known is proves):
                return known
        return None

    def record(self, relation: sympy.Basic, note: str = "") -> None:
        if relation in self.relations or (not isinstance(relation, Relation) and relation in (sympy.true, sympy.false)):
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
        if is_sympy(value):
            if loop_symbols.mentions_loop(self, value):
                raise loop_symbols.iteration_dependent(self, f"the value of {value} ({why})")
            for symbol in sorted(value.free_symbols, key=str):
                self._specialize_symbol(symbol, why)
            if isinstance(value, SizeExpr):
                return value.xreplace(self.hints)
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
        log.debug("%s (%s) specialized to %d: %s%s", symbol, info.origin, info.hint, spec,
                  f"\n    {location.text}" if location and location.text else "")
        if isinstance(symbol, SizeExpr):
            self._small_values[str(symbol)] = info.hint
            self.record(Relation("Eq", symbol, info.hint), f"specialized: {spec}")
            return
        self._known[symbol] = sympy.Integer(info.hint)
        self.record(sympy.Eq(symbol, info.hint), f"specialized: {spec}")

    def has_symbols(self, value: Any) -> bool:
        if isinstance(value, (tuple, list)):
            return any(self.has_symbols(v) for v in value)
        return is_symbolic(value)

    def describe_symbols(self) -> list[str]:
        return [f"{s} = {i.origin}" for s, i in self.symbols.items()]

    def report(self) -> list[str]:
        """What explain() shows of this trace's dynamic sizes: each symbol with its origin, the
        size guards, which sizes were specialized and by which line, which stayed static."""
        lines = [f"{s} = {i.origin}  ({i.why}; traced with {i.hint})" for s, i in self.symbols.items()]
        for symbol, spec in self.specializations.items():
            where = spec.location
            line = f"specialized {symbol} = {spec.value} ({self.symbols[symbol].origin}): {spec.why}"
            if where is not None:
                line += f" at {where.filename}:{where.lineno}" + (f"\n      {where.text}" if where.text else "")
            lines.append(line)
        lines.extend(f"static {text}" for text in self.kept_static)
        relations = [str(r) for r, note in self.relations.items() if not note]
        if relations:
            lines.append(f"size guards: {', '.join(relations)}")
        return lines


def _bounds(expr: sympy.Expr, lower: bool) -> list[sympy.Expr]:
    """Lower (or upper) bounds of expr with its floor, ceiling, Mod, Min and Max terms (with
    constant coefficients) replaced by bounds of theirs; Min(a, b) <= a and <= b give one
    candidate each (any one that proves the question does); [] if it has none of them."""
    candidates: list[list[sympy.Expr]] = [[]]
    replaced = False
    for term in sympy.Add.make_args(expr):
        coeff, atom = term.as_coeff_Mul()
        low_high = _atom_bounds(atom)
        choices = None if low_high is None else low_high[0 if (coeff > 0) == lower else 1]
        if not choices:
            candidates = [c + [term] for c in candidates]
            continue
        replaced = True
        candidates = [c + [coeff * choice] for c in candidates for choice in choices][:8]
    return [sympy.expand(sympy.Add(*c)) for c in candidates] if replaced else []


def _atom_bounds(atom: sympy.Expr) -> tuple[list[sympy.Expr], list[sympy.Expr]] | None:
    """(lower bounds, upper bounds) of a term's atom, each list of alternatives (any one holds)."""
    if isinstance(atom, sympy.floor):
        return [atom.args[0] - 1], [atom.args[0]]
    if isinstance(atom, sympy.ceiling):
        return [atom.args[0]], [atom.args[0] + 1]
    if isinstance(atom, sympy.Mod) and atom.args[1].is_positive:
        return [sympy.Integer(0)], [atom.args[1] - 1]
    if isinstance(atom, sympy.Min):
        return [], list(atom.args)
    if isinstance(atom, sympy.Max):
        return list(atom.args), []
    return None


def _small_ordered(expr: SizeExpr, nonneg: bool) -> Relation:
    """_ordered of a small size expression (the same relation, as sympy writes it)."""
    pos = sum((coefficient * size_symbol(atom.key) for atom, coefficient in expr.terms if coefficient > 0), 0)
    neg = sum((-coefficient * size_symbol(atom.key) for atom, coefficient in expr.terms if coefficient < 0), 0)
    if isinstance(pos, int):  # 20 - s0 >= 0 -> s0 <= 20
        return Relation("Le" if nonneg else "Gt", neg, expr.const)
    return Relation("Ge" if nonneg else "Lt", pos, neg - expr.const)


def _ordered(expr: sympy.Expr, nonneg: bool) -> sympy.Basic:
    """expr >= 0 (or < 0) written with the constant on the right: s0 - 4 >= 0 -> s0 >= 4."""
    const, rest = expr.as_coeff_Add()
    if rest == 0:
        rest, const = expr, sympy.Integer(0)
    terms = sympy.Add.make_args(rest)
    neg = sympy.Add(*[-t for t in terms if t.could_extract_minus_sign()])
    pos = sympy.Add(*[t for t in terms if not t.could_extract_minus_sign()])
    if pos == 0:  # 20 - s0 >= 0 -> s0 <= 20
        return sympy.Le(neg, const) if nonneg else sympy.Gt(neg, const)
    # s1 - s0 >= 0 -> s1 >= s0
    return sympy.Ge(pos, neg - const) if nonneg else sympy.Lt(pos, neg - const)


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
