"""Array dimensions a trace found equal, given one symbol in the graph: `x * y` with x of size s0 and
y of size s1 guards s0 == s1, and the graph's metas then say s0 for both, so that backends fuse them.

Without it every backend saw (s0,) and (s1,) as sizes that may differ: the c backend ran each
elementwise op after the first as NumPy code ("cannot broadcast (s0,) to (s1,)") once a graph of two
inputs recompiled with dynamic sizes. The guards stay the trace's, so the sizes are equal whenever
the graph runs; backends bind each symbol from the first input dimension whose meta names it.
"""
from __future__ import annotations

from typing import Any

from ..fx_ir import GraphModule, TensorMeta
from ..fx_ir.lazy_sympy import is_sympy, sympy
from ..fx_ir.node import map_aggregate
from ..fx_ir.small_size import Relation, SizeExpr


def equal_dims(relations: Any, symbols: dict[Any, Any]) -> dict[Any, Any]:
    """Each array-dimension symbol that an Eq guard ties to another, mapped to the first made of its
    class (symbols made earlier come first in `symbols`); dynamic int arguments are left alone."""
    order = {symbol: k for k, symbol in enumerate(symbols)}
    parent: dict[Any, Any] = {}

    def root(s: Any) -> Any:
        while parent.get(s, s) is not s:
            s = parent[s]
        return s

    for relation in relations:
        if not (relation.kind == "Eq" if isinstance(relation, Relation) else isinstance(relation, sympy.Eq)):
            continue
        a, b = relation.lhs, relation.rhs
        if not all(_is_symbol(s) and s in symbols and symbols[s].dim is not None for s in (a, b)):
            continue
        ra, rb = root(a), root(b)
        if ra is not rb:
            first, later = (ra, rb) if order[ra] < order[rb] else (rb, ra)
            parent[later] = first
    return {s: root(s) for s in parent}


def _is_symbol(size: Any) -> bool:
    return size.is_Symbol if isinstance(size, SizeExpr) else isinstance(size, sympy.Symbol)


def unify_dims(graph: Any, submodules: dict[str, Any], replacements: dict[Any, Any]) -> None:
    """Rewrite the sizes in the metas of `graph` and of the loop bodies in `submodules`."""
    def substituted(value: Any) -> Any:
        if isinstance(value, TensorMeta):
            shape = tuple(d.xreplace(replacements) if is_sympy(d) else d for d in value.shape)
            return value if shape == value.shape else TensorMeta(shape, value.dtype, value.scalar)
        if is_sympy(value):
            return value.xreplace(replacements)
        return value

    graphs, seen = [graph], set()
    for target in submodules.values():
        graphs += [v.graph for v in vars(target).values() if isinstance(v, GraphModule)]
    for g in graphs:
        if id(g) in seen:
            continue
        seen.add(id(g))
        for node in g.nodes:
            if "val" in node.meta:
                node.meta["val"] = map_aggregate(node.meta["val"], substituted)
