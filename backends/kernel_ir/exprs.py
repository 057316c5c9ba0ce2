"""Kernel IR values: scalar expressions of index variables (loads, constants, ops, reductions).

Every array value is a function from its index (sympy integers) to one of these; no target syntax here.
"""
from __future__ import annotations

import math
import struct
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import sympy

# Index variables: `x<k>` for a kernel's output dimensions, `r<k>` bound by a reduction, `d<k>` while
# a reduction's body is being built. Strides of graph inputs are parameters named `s_<buffer>_<dim>`.
INDEX_PREFIXES = ("x", "r", "d")


def index_var(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


def stride_param(buffer: str, dim: int) -> sympy.Symbol:
    return sympy.Symbol(f"s_{buffer}_{dim}", integer=True)


def is_index_var(symbol: sympy.Basic) -> bool:
    return isinstance(symbol, sympy.Symbol) and symbol.name[:1] in INDEX_PREFIXES and symbol.name[1:].isdigit()


def index_vars_of(expr: Any) -> frozenset[sympy.Symbol]:
    if not isinstance(expr, sympy.Basic):
        return frozenset()
    return frozenset(s for s in expr.free_symbols if is_index_var(s))


# Structurally equal expressions are one object (hash-consing): the emitter then computes each shared
# subexpression once, and equality stays O(1) on DAGs. The table only memoizes; it holds no state.
_interned: weakref.WeakValueDictionary[tuple[Any, ...], Expr] = weakref.WeakValueDictionary()


class Expr:
    """A scalar-per-index value. `dtype` is NumPy's; `free` are the index variables it depends on."""

    __slots__ = ("dtype", "free", "key", "__weakref__")
    dtype: np.dtype
    free: frozenset[sympy.Symbol]
    key: tuple[Any, ...]

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        return format_expr(self)


def _intern(cls: type[Expr], key: tuple[Any, ...], dtype: Any, free: frozenset[sympy.Symbol],
            fields: dict[str, Any]) -> Any:
    full_key = (cls, np.dtype(dtype).str, *key)
    found = _interned.get(full_key)
    if found is not None:
        return found
    obj = object.__new__(cls)
    object.__setattr__(obj, "dtype", np.dtype(dtype))
    object.__setattr__(obj, "free", free)
    object.__setattr__(obj, "key", full_key)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    _interned[full_key] = obj
    return obj


class Load(Expr):
    """Element `index` (a flat element offset, sympy) of a buffer."""

    __slots__ = ("buffer", "index")
    buffer: str
    index: sympy.Expr

    def __new__(cls, buffer: str, index: Any, dtype: Any) -> Load:
        index = sympy.sympify(index)
        return _intern(cls, (buffer, index), dtype, index_vars_of(index), {"buffer": buffer, "index": index})


class Const(Expr):
    """A constant of a given dtype (value kept as a Python scalar)."""

    __slots__ = ("value",)
    value: Any

    def __new__(cls, value: Any, dtype: Any) -> Const:
        if np.iscomplexobj(value) and np.dtype(dtype).kind != "c":
            # NumPy's cast warns (ComplexWarning) on every call: folded here, it warned once, at compile
            # time, from this file (fuzz seed 1010067). The caller's node runs as a NumPy step.
            raise OverflowError(f"the complex constant {value!r} is cast to {np.dtype(dtype)}")
        with np.errstate(over="raise", invalid="raise"):
            try:
                value = np.asarray(value).astype(dtype).item()
            except FloatingPointError as exc:
                # NumPy casts the program's scalar (and warns) on every call: folded here, the warning
                # came once, at compile time, from this line. The caller's node runs as a NumPy step.
                raise OverflowError(f"the constant {value!r} does not fit {np.dtype(dtype)}") from exc
        # 0.0 and -0.0, and NaNs of either sign or payload, must stay distinct keys (repr says 'nan' for all)
        key = (repr(value), struct.pack("<d", value) if isinstance(value, float) else None)
        return _intern(cls, key, dtype, frozenset(), {"value": value})


class IndexValue(Expr):
    """The value of an index expression (an arange, a position) or of an index predicate (bool)."""

    __slots__ = ("expr",)
    expr: sympy.Basic

    def __new__(cls, expr: Any, dtype: Any) -> IndexValue:
        expr = sympy.sympify(expr)
        return _intern(cls, (expr,), dtype, index_vars_of(expr), {"expr": expr})


class Op(Expr):
    """An elementwise operation named as NumPy names its ufunc (`add`, `exp`, `where`, `cast`...)."""

    __slots__ = ("name", "args")
    name: str
    args: tuple[Expr, ...]

    def __new__(cls, name: str, args: Iterable[Expr], dtype: Any) -> Op:
        args = tuple(args)
        free = frozenset().union(*(a.free for a in args)) if args else frozenset()
        return _intern(cls, (name, *(id(a) for a in args)), dtype, free, {"name": name, "args": args})

    def children(self) -> tuple[Expr, ...]:
        return self.args


class Reduce(Expr):
    """`kind` (sum, prod, max, min, argmax, argmin, any, all) of `body` over `var` in [0, extent).

    argmin/argmax give the position along `var`. `origin` names the graph node it came from.
    """

    __slots__ = ("kind", "var", "extent", "body", "origin")
    kind: str
    var: sympy.Symbol
    extent: int
    body: Expr
    origin: str

    def __new__(cls, kind: str, var: sympy.Symbol, extent: int, body: Expr, dtype: Any, origin: str = "") -> Reduce:
        free = body.free - {var}
        return _intern(cls, (kind, var, extent, id(body), origin), dtype, free,
                       {"kind": kind, "var": var, "extent": extent if isinstance(extent, sympy.Basic) and
                        not extent.is_number else int(extent), "body": body, "origin": origin})

    def children(self) -> tuple[Expr, ...]:
        return (self.body,)


REDUCTION_KINDS = frozenset({"sum", "prod", "max", "min", "argmax", "argmin", "any", "all"})


def reduction_identity(kind: str, dtype: Any) -> Any:
    """The value a reduction of `kind` over `dtype` values starts from: combining it changes nothing
    (the lowest value for max/argmax, the highest for min/argmin). Each code generator prints it."""
    neutral = {"sum": 0, "prod": 1, "any": False, "all": True}
    if kind in neutral:
        return neutral[kind]
    dtype = np.dtype(dtype)
    low = kind in ("max", "argmax")
    if dtype.kind == "f":
        return -math.inf if low else math.inf
    if dtype.kind == "b":
        return not low
    info = np.iinfo(dtype)
    return info.min if low else info.max


def cast(x: Expr, dtype: Any) -> Expr:
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    if isinstance(x, Const):
        return Const(x.value, dtype)
    return Op("cast", (x,), dtype)


def op(name: str, *args: Expr, dtype: Any) -> Expr:
    return Op(name, args, dtype)


def where(cond: Expr, a: Expr, b: Expr) -> Expr:
    if isinstance(cond, IndexValue) and cond.expr in (sympy.true, sympy.false):
        return a if cond.expr == sympy.true else b
    return Op("where", (cond, a, b), np.result_type(a.dtype, b.dtype))


# ---------------------------------------------------------------- traversal

def walk(roots: Iterable[Expr]) -> list[Expr]:
    """Every expression reachable from `roots`, children before parents, each once."""
    seen: set[int] = set()
    order: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(list(roots))]
    while stack:
        expr, expanded = stack.pop()
        if expanded:
            order.append(expr)
            continue
        if id(expr) in seen:
            continue
        seen.add(id(expr))
        stack.append((expr, True))
        for child in reversed(expr.children()):
            if id(child) not in seen:
                stack.append((child, False))
    return order


def substitute(expr: Expr, mapping: dict[sympy.Symbol, Any]) -> Expr:
    """`expr` with index variables replaced by index expressions (bound variables are never replaced)."""
    if not mapping:
        return expr
    memo: dict[int, Expr] = {}
    keys = frozenset(mapping)

    def go(e: Expr) -> Expr:
        if not (e.free & keys):
            return e
        done = memo.get(id(e))
        if done is not None:
            return done
        if isinstance(e, Load):
            out: Expr = Load(e.buffer, e.index.xreplace(mapping), e.dtype)
        elif isinstance(e, IndexValue):
            out = IndexValue(e.expr.xreplace(mapping), e.dtype)
        elif isinstance(e, Op):
            out = Op(e.name, tuple(go(a) for a in e.args), e.dtype)
        elif isinstance(e, Reduce):
            out = Reduce(e.kind, e.var, e.extent, go(e.body), e.dtype, e.origin)
        else:
            out = e
        memo[id(e)] = out
        return out

    return go(expr)


def loads(roots: Iterable[Expr]) -> list[Load]:
    return [e for e in walk(roots) if isinstance(e, Load)]


def reductions(roots: Iterable[Expr]) -> list[Reduce]:
    return [e for e in walk(roots) if isinstance(e, Reduce)]


# ---------------------------------------------------------------- printing

FORMAT_LIMIT = 4000  # characters of leaves printed; a DAG shared many times prints as a tree: cut there


def format_expr(expr: Expr, names: Callable[[Expr], str | None] | None = None) -> str:
    """A compact readable form, e.g. `exp(sub(load(x, 4*x0 + x1), r_max))`, cut with `...` past
    FORMAT_LIMIT characters (x = x * x - x twenty times is one small DAG but a tree of 3^20 leaves)."""
    budget = [FORMAT_LIMIT]

    def leaf(text: str) -> str:
        budget[0] -= len(text)
        return text

    def go(e: Expr) -> str:
        if budget[0] <= 0:
            return "..."
        if names is not None:
            named = names(e)
            if named is not None:
                return leaf(named)
        if isinstance(e, Load):
            return leaf(f"{e.buffer}[{e.index}]")
        if isinstance(e, Const):
            return leaf(f"{e.value!r}:{e.dtype}")
        if isinstance(e, IndexValue):
            return leaf(f"index({e.expr}):{e.dtype}")
        if isinstance(e, Op):
            budget[0] -= len(e.name) + 2
            inner = ", ".join(go(a) for a in e.args)
            return f"{e.name}({inner}):{e.dtype}" if e.name == "cast" else f"{e.name}({inner})"
        if isinstance(e, Reduce):
            return f"{e.kind}[{e.var}<{e.extent}]({go(e.body)})"
        return type(e).__name__
    return go(expr)
