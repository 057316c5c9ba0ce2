"""Dynamic sizes without sympy: `SizeExpr`, a sum of size symbols times integer constants plus a
constant (`s0 - 2`, `s0 + s1`), and `Relation`, a comparison of two of them (a size guard).

A trace with dynamic sizes starts with these (lazy_sympy.sympy_forbidden): broadcasting, slices
with constant bounds, joins and reductions stay in this fragment. Anything else (a product of two
symbols, a floor division, an attribute only sympy has, a comparison left to Python) leaves it:
while sympy is forbidden that raises SympyNeeded and the trace is redone with sympy; after the
trace (a backend reading a graph's metas) the SizeExpr stands for its sympy expression. Printed
as sympy prints the same expression, so that guards and graphs read the same either way.
"""
from __future__ import annotations

from typing import Any

from .int_expr import IntExpr, SizeSym
from . import lazy_sympy
from .lazy_sympy import SympyNeeded, forbidden


def size_symbol(name: str) -> SizeExpr:
    """The size symbol `name` (a positive integer)."""
    return SizeExpr(0, ((SizeSym(name), 1),))


class DataSym(SizeSym):
    """An integer the graph computes from data (any sign): sympy's `Symbol(name, integer=True)`."""

    def to_sympy(self, resolve: Any) -> Any:
        from .lazy_sympy import sympy

        return sympy.Symbol(self.name, integer=True)


def data_symbol(name: str) -> SizeExpr:
    """The meta of an int the graph computes from data: no size, never decided about."""
    return SizeExpr(0, ((DataSym(name), 1),))


def only_sizes(expr: Any) -> bool:
    """An int, or a SizeExpr of size symbols only (no data int)."""
    return isinstance(expr, int) or (isinstance(expr, SizeExpr) and not any(type(a) is DataSym for a, _ in expr.terms))


def _settle(result: IntExpr) -> Any:
    """An int for a constant, else the SizeExpr."""
    return result.const if result.is_constant() else SizeExpr(result.const, result.terms)


def _operand(value: Any) -> IntExpr | None:
    """value as an IntExpr of sizes, None when it is something else (a sympy object, a float)."""
    if isinstance(value, SizeExpr):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return IntExpr(value)
    if type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iu":
        return IntExpr(int(value))
    return None


class SizeExpr(IntExpr):
    """A dynamic size in the small form: const + sum(coefficient * size symbol), never a constant
    (arithmetic that gives one gives an int)."""

    __slots__ = ()

    # ---- leaving the fragment ------------------------------------------------------------------------
    def to_sympy_expr(self) -> Any:
        return self.to_sympy(lambda name: None)

    def _leave(self, why: str) -> Any:
        """The sympy expression, or SympyNeeded while sympy is forbidden."""
        if forbidden():
            raise SympyNeeded(f"{why} of the size {self}")
        return self.to_sympy_expr()

    def _sympy_(self) -> Any:  # sympy.sympify's protocol
        return self._leave("sympy's form")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._leave(f"the attribute {name}"), name)

    # ---- what sympy code reads of a size ---------------------------------------------------------------
    is_integer = True
    is_Integer = False
    is_number = False

    @property
    def is_Symbol(self) -> bool:
        return self.const == 0 and len(self.terms) == 1 and self.terms[0][1] == 1

    @property
    def sympy_class(self) -> str:
        """The name of the class of its sympy form."""
        return "Symbol" if self.is_Symbol else ("Mul" if self.const == 0 and len(self.terms) == 1 else "Add")

    @property
    def free_symbols(self) -> set[SizeExpr]:
        return {SizeExpr(0, ((atom, 1),)) for atom, _ in self.terms}

    def xreplace(self, mapping: dict[Any, Any]) -> Any:
        """Each symbol replaced by mapping's value for it (an int or a SizeExpr), where it has one."""
        result: Any = self.const
        for atom, coefficient in self.terms:
            symbol = SizeExpr(0, ((atom, 1),))
            result = result + coefficient * mapping.get(symbol, symbol)
        return result

    def __int__(self) -> int:
        if forbidden():
            raise SympyNeeded(f"the value of the size {self}")
        raise TypeError(f"cannot convert the size {self} to an int")

    __index__ = __int__

    # ---- arithmetic --------------------------------------------------------------------------------------
    def _binary(self, other: Any, op: str, reflected: bool = False) -> Any:
        operand = _operand(other)
        if operand is None:
            sympy_self = self._leave(f"{op} with {other!r}")
            return getattr(sympy_self, f"__{'r' if reflected else ''}{op}__")(other)
        if op == "add":
            return _settle(self.add(operand))
        if op == "sub":
            return _settle(operand.add(self, -1) if reflected else self.add(operand, -1))
        product = self.mul(operand)
        if product is None:
            return self._leave("a product")  * (other.to_sympy_expr() if isinstance(other, SizeExpr) else other)
        return _settle(product)

    def __add__(self, other: Any) -> Any:
        return self._binary(other, "add")

    def __radd__(self, other: Any) -> Any:
        return self._binary(other, "add", True)

    def __sub__(self, other: Any) -> Any:
        return self._binary(other, "sub")

    def __rsub__(self, other: Any) -> Any:
        return self._binary(other, "sub", True)

    def __mul__(self, other: Any) -> Any:
        return self._binary(other, "mul")

    def __rmul__(self, other: Any) -> Any:
        return self._binary(other, "mul", True)

    def __neg__(self) -> Any:
        return _settle(self.neg())

    def __pos__(self) -> SizeExpr:
        return self

    def __abs__(self) -> Any:
        return abs(self._leave("abs"))

    def __float__(self) -> float:
        return float(self._leave("float"))

    def _other(self, name: str, other: Any, reflected: bool = False) -> Any:
        sympy_self = self._leave(name)
        return getattr(sympy_self, f"__{'r' if reflected else ''}{name}__")(other)

    def __floordiv__(self, other: Any) -> Any:
        return self._other("floordiv", other)

    def __rfloordiv__(self, other: Any) -> Any:
        return self._other("floordiv", other, True)

    def __mod__(self, other: Any) -> Any:
        return self._other("mod", other)

    def __rmod__(self, other: Any) -> Any:
        return self._other("mod", other, True)

    def __truediv__(self, other: Any) -> Any:
        return self._other("truediv", other)

    def __rtruediv__(self, other: Any) -> Any:
        return self._other("truediv", other, True)

    def __pow__(self, other: Any) -> Any:
        return self._other("pow", other)

    def __lt__(self, other: Any) -> Any:
        return self._other("lt", other)

    def __le__(self, other: Any) -> Any:
        return self._other("le", other)

    def __gt__(self, other: Any) -> Any:
        return self._other("gt", other)

    def __ge__(self, other: Any) -> Any:
        return self._other("ge", other)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IntExpr) or isinstance(other, int):
            return IntExpr.__eq__(self, other)
        if not forbidden() and type(other).__module__.startswith("sympy"):
            return bool(self.to_sympy_expr() == other)
        return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return IntExpr.__hash__(self)

    def __str__(self) -> str:
        # sympy's printer: terms by symbol name, the constant last, except `c - k*s` (one symbol, a
        # negative coefficient, a positive constant)
        if len(self.terms) == 1 and self.terms[0][1] < 0 < self.const:
            atom, coefficient = self.terms[0]
            return f"{self.const} - {'' if coefficient == -1 else f'{-coefficient}*'}{atom}"
        return IntExpr.__str__(self)

    __repr__ = __str__


lazy_sympy.SIZE_TYPES = (SizeExpr,)


class Relation:
    """A comparison of two sizes (`Eq(s1, s0)`, `s0 >= 4`), as sympy's relation of them prints."""

    __slots__ = ("kind", "lhs", "rhs")
    _TEXT = {"Ge": ">=", "Gt": ">", "Le": "<=", "Lt": "<"}
    _NEGATION = {"Eq": "Ne", "Ne": "Eq", "Ge": "Lt", "Lt": "Ge", "Gt": "Le", "Le": "Gt"}

    def __init__(self, kind: str, lhs: Any, rhs: Any) -> None:
        self.kind, self.lhs, self.rhs = kind, lhs, rhs

    def negated(self) -> Relation:
        return Relation(self._NEGATION[self.kind], self.lhs, self.rhs)

    @property
    def free_symbols(self) -> set[SizeExpr]:
        return {s for side in (self.lhs, self.rhs) if isinstance(side, SizeExpr) for s in side.free_symbols}

    def holds(self, values: dict[str, int]) -> bool:
        a, b = (side.value(values) if isinstance(side, IntExpr) else int(side) for side in (self.lhs, self.rhs))
        return {"Eq": a == b, "Ne": a != b, "Ge": a >= b, "Gt": a > b, "Le": a <= b, "Lt": a < b}[self.kind]

    def to_sympy(self) -> Any:
        from .lazy_sympy import sympy

        sides = [side.to_sympy_expr() if isinstance(side, SizeExpr) else side for side in (self.lhs, self.rhs)]
        return getattr(sympy, self.kind)(*sides)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Relation) and (other.kind, other.lhs, other.rhs) == (self.kind, self.lhs, self.rhs)

    def __hash__(self) -> int:
        return hash((self.kind, self.lhs, self.rhs))

    def __str__(self) -> str:
        if self.kind in ("Eq", "Ne"):
            return f"{self.kind}({self.lhs}, {self.rhs})"
        return f"{self.lhs} {self._TEXT[self.kind]} {self.rhs}"

    __repr__ = __str__


_OPERATORS = {"Eq": "==", "Ne": "!=", "Ge": ">=", "Gt": ">", "Le": "<=", "Lt": "<"}


def sum_args(expr: SizeExpr) -> list[Any]:
    """The summands of expr, in sympy's order of Add.args where it is simple (the constant, the
    symbols, then their multiples): each an int, a symbol, or (coefficient, symbol)."""
    args: list[Any] = [expr.const] if expr.const else []
    multiples: list[Any] = []
    for atom, coefficient in expr.terms:
        symbol = SizeExpr(0, ((atom, 1),))
        (args if coefficient == 1 else multiples).append(symbol if coefficient == 1 else (coefficient, symbol))
    return args + multiples


def python_source(expr: Any, names: dict[Any, str]) -> str:
    """size_source.python_source of a SizeExpr, an int or a Relation (written as sympy's form is)."""
    if isinstance(expr, Relation):
        return f"{python_source(expr.lhs, names)} {_OPERATORS[expr.kind]} {python_source(expr.rhs, names)}"
    if isinstance(expr, int):
        return str(expr)
    if expr.is_Symbol:
        if expr not in names:
            raise NotImplementedError(expr)
        return names[expr]
    parts = [f"({k} * {python_source(s, names)})" if isinstance(a, tuple) else python_source(a, names)
             for a in sum_args(expr) for k, s in [a if isinstance(a, tuple) else (1, a)]]
    return parts[0] if len(parts) == 1 else "(" + " + ".join(parts) + ")"


def _to_sympy(value: Any) -> Any:
    from .tensor_meta import TensorMeta

    if isinstance(value, SizeExpr):
        return value.to_sympy_expr()
    if isinstance(value, TensorMeta) and any(isinstance(d, SizeExpr) for d in value.shape):
        shape = tuple(d.to_sympy_expr() if isinstance(d, SizeExpr) else d for d in value.shape)
        return TensorMeta(shape, value.dtype, value.scalar)
    return value


def graph_to_sympy(graph_module: Any) -> None:
    """Rewrite the small sizes in the metas of a GraphModule and of the graphs it holds (loop
    bodies) as sympy's, for backends that read sizes as sympy expressions (imports sympy)."""
    from .graph_module import GraphModule
    from .node import map_aggregate

    pending, seen = [graph_module], set()
    while pending:
        module = pending.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        for value in vars(module).values():  # loop bodies: GraphModules of the loop targets it holds
            held = [value] if isinstance(value, GraphModule) else list(getattr(value, "__dict__", {}).values())
            pending += [v for v in held if isinstance(v, GraphModule)]
        for node in module.graph.nodes:
            if "val" in node.meta:
                node.meta["val"] = map_aggregate(node.meta["val"], _to_sympy)
