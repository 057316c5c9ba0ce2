"""Size guards of one compiled entry: the facts of a ShapeEnv, checked on every call without sympy:
per-array sizes and relations between sizes in C, anything else by one generated Python predicate.

When NumPy's struct layout is verified, each array's own sizes (static ones, and `s >= 2`) are
checked by its `struct_is` instruction (an `ssize_pattern` field), and each relation
(`Eq(s0, s1)`, `s0 > 6`, `Eq(Mod(s0, 4), 0)`) by a `sizes` instruction: a small integer stack
program over the arrays' shape fields (`size_program`), with Python's integer semantics. What
is left (no verified layout, an expression with no such program) goes to the predicate; for `x`
of shape (s0, 4) and `y` of shape (s1,) it reads

    def check(sh0, sh1):
        s0 = sh0[0]
        s1 = sh1[0]
        if not (sh0[1] == 4): return _fail(0, (sh0, sh1))
        if not (s0 >= 2): return _fail(1, (sh0, sh1))
        if not (s1 >= 2): return _fail(2, (sh0, sh1))
        if not (s0 == s1): return _fail(3, (sh0, sh1))
        return True

`_fail` only keeps the index and the sizes (ints) for the recompile message
(`Eq(s0, 8) failed: L['x'].shape[0] is 9`); a failure in C is explained by running the whole
predicate once more (the slow path of a recompile).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fx_ir.lazy_sympy import sympy
from ..fx_ir.small_size import Relation, SizeExpr, sum_args
from ..fx_ir.size_source import python_source

from ..sources import AttrSource
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
        self.scalars = {source for source in self.sources if source in env.scalars}  # dynamic ints
        # per array: its sizes as a struct_is `ssize_pattern` (static sizes, -2 for a symbol >= 2)
        self.patterns = {source: tuple(n if isinstance(n, int) else -MIN_DYNAMIC_SIZE for n in shape)
                         for source, shape in env.arrays.items() if source not in self.scalars}
        self.programs: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}  # see c_checks
        self.texts: list[str] = []
        self.places: list[list[tuple[int, int | None]]] = []  # per entry: the (array, dim) sizes it reads (dim None: an int argument)
        self.conditions: list[str] = []
        self.owner: list[Any] = []  # per entry: the array whose own layout it is (None: a relation)
        names: dict[sympy.Symbol, str] = {}
        where: dict[sympy.Symbol, tuple[int, int | None]] = {}
        self.bindings: dict[sympy.Symbol, str] = {}
        for k, (source, shape) in enumerate(env.arrays.items()):
            if source in self.scalars:  # an int argument: its value is the symbol
                symbol = shape[0]
                names[symbol], where[symbol], self.bindings[symbol] = str(symbol), (k, None), f"sh{k}"
                at_least = Relation("Ge", symbol, MIN_DYNAMIC_SIZE) if isinstance(symbol, SizeExpr) \
                    else sympy.Ge(symbol, MIN_DYNAMIC_SIZE)
                self.programs[len(self.texts)] = size_program(at_least, where)
                self._add(f"{symbol} >= {MIN_DYNAMIC_SIZE}  ({symbol} = {env.symbols[symbol].origin})",
                          f"{symbol} >= {MIN_DYNAMIC_SIZE}", [(k, None)], source)
                continue
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
            try:
                self.programs[len(self.texts)] = size_program(relation, where)
            except NotImplementedError:
                pass
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

    def value_sources(self) -> list[Any]:
        """What the predicate takes per source: an array's shape, a dynamic int itself."""
        return [source if source in self.scalars else AttrSource(source, "shape") for source in self.sources]

    def c_checks(self) -> dict[int, tuple[tuple[Any, ...], tuple[int, ...]]]:
        """The relations the guard program checks in C (its `sizes` instruction): entry index ->
        (the arrays it reads, the program over them)."""
        return {i: (tuple(self.sources[k] for k in arrays), code) for i, (arrays, code) in self.programs.items()}

    def predicate(self, in_struct: set[Any], in_c: frozenset[int] = frozenset()) -> tuple[Any, list[Any]]:
        """(the generated check, the sources whose shapes it takes), leaving out what the
        struct_is instructions of the arrays in `in_struct` check already and the relations in
        `in_c`; (None, []) if nothing is left. Compiled here, once per compiled entry."""
        todo = [i for i, owner in enumerate(self.owner) if i not in in_c and (owner is None or owner not in in_struct)]
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

    def _add(self, text: str, code: str, places: list[tuple[int, int | None]], owner: Any) -> None:
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
            if d is None:
                seen.append(f"{self.sources[k].name()} is {shapes[k]!r}")
                continue
            shape = shapes[k]
            size = shape[d] if d < len(shape) else "missing"
            seen.append(f"{self.sources[k].name()}.shape[{d}] is {size}")
        return f"{self.texts[index].split('  ')[0]} failed: {', '.join(seen)}" if seen else f"{self.texts[index]} failed"


# csrc/guards.c SizeOp
_SZ = {name: code for code, name in enumerate(
    ("dim", "const", "add", "mul", "floordiv", "mod", "neg", "abs", "min", "max", "eq", "ne", "lt", "le", "gt", "ge",
     "int"))}
_SZ_RELATIONS = {"Equality": "eq", "Unequality": "ne", "StrictLessThan": "lt", "LessThan": "le",
                 "StrictGreaterThan": "gt", "GreaterThan": "ge"}  # sympy's relation classes, by name
_SZ_SMALL_RELATIONS = {"Eq": "eq", "Ne": "ne", "Lt": "lt", "Le": "le", "Gt": "gt", "Ge": "ge"}
_SZ_STACK = 16  # SIZES_STACK


def size_program(relation: sympy.Basic, where: dict[sympy.Symbol, tuple[int, int | None]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the arrays it reads, the csrc `sizes` program) of one relation; NotImplementedError when
    it has no such program (then the Python predicate checks it)."""
    kind = _SZ_SMALL_RELATIONS[relation.kind] if isinstance(relation, Relation) \
        else _SZ_RELATIONS.get(type(relation).__name__)
    if kind is None:
        raise NotImplementedError(relation)
    arrays: list[int] = []
    code: list[int] = []
    depth = [0, 0]  # current, deepest

    def push(*items: int, change: int) -> None:
        code.extend(items)
        depth[0] += change
        depth[1] = max(depth[1], depth[0])

    def emit_constant(value: int) -> None:
        if not -2 ** 63 <= value < 2 ** 63:
            raise NotImplementedError(value)
        push(_SZ["const"], value, change=1)

    def emit_symbol(e: Any) -> None:
        if e not in where:
            raise NotImplementedError(e)
        k, d = where[e]
        if k not in arrays:
            arrays.append(k)
        if d is None:  # a dynamic int argument
            push(_SZ["int"], arrays.index(k), change=1)
        else:
            push(_SZ["dim"], arrays.index(k), d, change=1)

    def emit(e: sympy.Expr) -> None:
        if isinstance(e, int | SizeExpr):
            emit_small(e)
        elif e.is_Integer:
            emit_constant(int(e))
        elif isinstance(e, sympy.Symbol):
            emit_symbol(e)
        elif isinstance(e, (sympy.Add, sympy.Mul, sympy.Min, sympy.Max)):
            if isinstance(e, sympy.Mul) and any(not a.is_integer for a in e.args):
                raise NotImplementedError(e)
            op = {sympy.Add: "add", sympy.Mul: "mul", sympy.Min: "min", sympy.Max: "max"}[type(e)]
            first, *rest = e.args
            emit(first)
            for arg in rest:
                emit(arg)
                push(_SZ[op], change=-1)
        elif isinstance(e, sympy.Pow) and e.exp.is_Integer and 0 < e.exp <= 8:
            emit(e.base)
            for _ in range(int(e.exp) - 1):
                emit(e.base)
                push(_SZ["mul"], change=-1)
        elif isinstance(e, sympy.Mod):
            emit(e.args[0])
            emit(e.args[1])
            push(_SZ["mod"], change=-1)
        elif isinstance(e, (sympy.floor, sympy.ceiling)):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            emit(num if isinstance(e, sympy.floor) else -num)
            emit(den)
            push(_SZ["floordiv"], change=-1)
            if isinstance(e, sympy.ceiling):
                push(_SZ["neg"], change=0)
        elif isinstance(e, sympy.Abs):
            emit(e.args[0])
            push(_SZ["abs"], change=0)
        else:
            raise NotImplementedError(e)

    def emit_small(e: Any) -> None:
        if isinstance(e, int):
            emit_constant(e)
            return
        if e.is_Symbol:
            emit_symbol(e)
            return
        for n, arg in enumerate(sum_args(e)):
            if isinstance(arg, tuple):
                emit_small(arg[0])
                emit_small(arg[1])
                push(_SZ["mul"], change=-1)
            else:
                emit_small(arg)
            if n:
                push(_SZ["add"], change=-1)

    emit(relation.lhs)
    emit(relation.rhs)
    push(_SZ[kind], change=-2)
    if depth[1] > _SZ_STACK:
        raise NotImplementedError(relation)
    return tuple(arrays), tuple(code)


def remap_size_program(code: tuple[int, ...], registers: list[int]) -> list[int]:
    """`code` with the k-th register it reads renumbered registers[k] (to merge programs)."""
    out: list[int] = []
    pc = 0
    while pc < len(code):
        op = code[pc]
        if op in (_SZ["dim"], _SZ["int"]):
            out += [op, registers[code[pc + 1]], *code[pc + 2: pc + (3 if op == _SZ["dim"] else 2)]]
            pc += 3 if op == _SZ["dim"] else 2
        elif op == _SZ["const"]:
            out += code[pc: pc + 2]
            pc += 2
        else:
            out.append(op)
            pc += 1
    return out
