"""Size guards of one compiled entry: the relations of a ShapeEnv, compiled once into a Python
predicate over the input arrays' shapes (run by the guard program's `call_many`).

The generated predicate for `x` of shape (s0, 4) and `y` of shape (s1,) reads

    def check(sh0, sh1):
        s0 = sh0[0]
        s1 = sh1[0]
        if not (sh0[1] == 4): return fail(0, (sh0, sh1))
        if not (s0 >= 2): return fail(1, (sh0, sh1))
        if not (s1 >= 2): return fail(2, (sh0, sh1))
        if not (s0 == s1): return fail(3, (sh0, sh1))
        return True

When NumPy's struct layout is verified, each array's own sizes (static ones, and `s >= 2`) are
checked in C by its `struct_is` instruction (an `ssize_pattern` field) and only the relations
between symbols are left to the predicate (none: no predicate at all). Nothing is re-derived by
sympy per call; `fail` only keeps the index and the sizes (ints) for the
recompile message (`Eq(s0, 8) failed: L['x'].shape[0] is 9`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy

from .env import MIN_DYNAMIC_SIZE, ShapeEnv


@dataclass(frozen=True, eq=False)
class SizeEntry:
    """One line of the size guards (a GuardSet entry); the first one carries the check."""

    guards: "SizeGuards"
    index: int

    def describe(self, name: str) -> str:
        return self.guards.texts[self.index]


class SizeGuards:
    def __init__(self, env: ShapeEnv) -> None:
        self.sources = list(env.arrays)
        # per source: its sizes as a struct_is `ssize_pattern` (static sizes, -2 for a symbol >= 2)
        self.patterns = {source: tuple(n if isinstance(n, int) else -MIN_DYNAMIC_SIZE for n in shape)
                         for source, shape in env.arrays.items()}
        self.texts: list[str] = []
        self.places: list[list[tuple[int, int]]] = []  # per entry: the (array, dim) sizes it reads
        self.conditions: list[str] = []
        self.owner: list[Any] = []  # per entry: the array whose own layout it is (None: a relation)
        names: dict[sympy.Symbol, str] = {}
        where: dict[sympy.Symbol, tuple[int, int]] = {}
        self.bindings: dict[sympy.Symbol, str] = {}
        for k, (source, shape) in enumerate(env.arrays.items()):
            for d, size in enumerate(shape):
                if isinstance(size, int):
                    self._add(f"{source.name()}.shape[{d}] == {size}", f"sh{k}[{d}] == {size}", [(k, d)], source)
                elif size not in names:
                    names[size] = str(size)
                    where[size] = (k, d)
                    self.bindings[size] = f"sh{k}[{d}]"
                    self._add(f"{size} >= {MIN_DYNAMIC_SIZE}  ({size} = {env.symbols[size].origin})",
                              f"{size} >= {MIN_DYNAMIC_SIZE}", [(k, d)], source)
        self._slow: dict[str, Any] = {}
        for relation, note in env.relations.items():
            places = [where[s] for s in sorted(relation.free_symbols, key=str) if s in where]
            text = str(relation) + (f"  # {note}" if note else "")
            try:
                code = python_source(relation, names)
            except NotImplementedError:  # evaluated by sympy: correct, slower (not met so far)
                key = f"_slow{len(self._slow)}"
                symbols = sorted(relation.free_symbols, key=str)
                self._slow[key] = sympy.lambdify(symbols, relation, modules=[{"Mod": lambda a, b: a % b}, "math"])
                code = f"{key}({', '.join(names[s] for s in symbols)})"
            self._add(text, code, places, None)
        self.last_failure: tuple[int, tuple] | None = None
        self.source = ""
        self.check = self.predicate(set())[0]

    def predicate(self, in_struct: set[Any]) -> tuple[Any, list[Any]]:
        """(the generated check, the sources whose shapes it takes), leaving out what the
        struct_is instructions of the arrays in `in_struct` check already; (None, []) if nothing
        is left. Compiled here, once per compiled entry."""
        todo = [i for i, owner in enumerate(self.owner) if owner is None or owner not in in_struct]
        if not todo:
            return None, []
        args = ", ".join(f"sh{k}" for k in range(len(self.sources)))
        lines = [f"def check({args}):"]
        lines += [f"    {symbol} = {place}" for symbol, place in self.bindings.items()]
        for i in todo:
            lines.append(f"    if not ({self.conditions[i]}): return _fail({i}, ({args},))")
        lines.append("    return True")
        self.source = "\n".join(lines)
        namespace: dict[str, Any] = {"_fail": self._fail, **self._slow}
        exec(compile(self.source, "<dynamo size guards>", "exec"), namespace)
        return namespace["check"], list(self.sources)

    def _add(self, text: str, code: str, places: list[tuple[int, int]], owner: Any) -> None:
        self.texts.append(text)
        self.places.append(places)
        self.conditions.append(code)
        self.owner.append(owner)

    def _fail(self, index: int, shapes: tuple) -> bool:
        self.last_failure = (index, shapes)
        return False

    def entries(self) -> list[SizeEntry]:
        return [SizeEntry(self, i) for i in range(len(self.texts))]

    def __str__(self) -> str:
        """What failed last (read right after the program reported this check failing)."""
        if self.last_failure is None:
            return "size guards failed"
        index, shapes = self.last_failure
        seen = []
        for k, d in self.places[index]:
            shape = shapes[k]
            size = shape[d] if d < len(shape) else "missing"
            seen.append(f"{self.sources[k].name()}.shape[{d}] is {size}")
        return f"{self.texts[index].split('  ')[0]} failed: {', '.join(seen)}" if seen else f"{self.texts[index]} failed"


_RELATIONS = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Ge: ">=", sympy.Gt: ">", sympy.Le: "<=", sympy.Lt: "<"}


def python_source(expr: sympy.Basic, names: dict[sympy.Symbol, str]) -> str:
    """Python source of an integer size expression or relation (exact integer arithmetic)."""
    go = lambda e: python_source(e, names)  # noqa: E731
    if isinstance(expr, sympy.Symbol):
        if expr not in names:
            raise NotImplementedError(expr)
        return names[expr]
    if expr.is_Integer:
        return str(int(expr))
    for kind, op in _RELATIONS.items():
        if isinstance(expr, kind):
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
    if isinstance(expr, (sympy.Min, sympy.Max)):
        return f"{'min' if isinstance(expr, sympy.Min) else 'max'}({', '.join(go(a) for a in expr.args)})"
    if isinstance(expr, sympy.And):
        return "(" + " and ".join(go(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Or):
        return "(" + " or ".join(go(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Not):
        return f"(not {go(expr.args[0])})"
    raise NotImplementedError(expr)
