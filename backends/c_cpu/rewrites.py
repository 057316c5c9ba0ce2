"""Graph rewrites backend c makes before lowering to kernels: same NumPy results, forms the kernel IR
lowers. Today one: an in-place operator on a slice that is stored back (`ey[1:, :] -= x`)."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ...fx_ir import GraphModule, TensorMeta

# in-place operators and the operator computing the same values into a new array
OUT_OF_PLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
                operator.itruediv: operator.truediv}


def slice_updates_as_stores(gm: GraphModule) -> GraphModule:
    """`x[idx] op= y` is traced as v = x[idx]; r = (v op= y); x[idx] = r. The kernel IR does not lower an
    in-place op on a view (NumPy code ran each: fdtd_2d's three updates per time step), but lowers the
    store. Where nothing else reads v or r, `v op y` stored into x[idx] leaves x with the same values:
    NumPy's in-place op computes v op y (copying overlapping operands first) into v, the memory of
    x[idx], and the store back copies it onto itself. The op's dtypes must be those of v (a cast on
    the in-place op that NumPy would refuse is never turned into a store that casts); its warnings
    name the same ufunc (`subtract` for -=). A copy of the graph is returned when something changed."""
    given = _positions(gm.graph)
    if not any(_slice_update(n) or _view_update(n, given) for n in gm.graph.nodes):
        return gm
    graph = gm.graph.copy()
    positions = _positions(graph)
    for node in list(graph.nodes):
        if _slice_update(node):
            node.target = OUT_OF_PLACE[node.target]
        elif _view_update(node, positions):
            # `u = x[idx]; ...; u += y` (Gray-Scott's interior views): the same as storing u + y
            # into x[idx], when the view is read only before the update and its result never
            base, index = node.args[0].args
            node.target = OUT_OF_PLACE[node.target]
            with graph.inserting_after(node):
                graph.call_function(operator.setitem, (base, index, node))
    return GraphModule(gm, graph)


def _slice_update(node: Any) -> bool:
    if not _update_of_a_view(node) or len(node.args[0].users) != 1:
        return False
    view = node.args[0]
    users = list(node.users)
    if len(users) != 1:
        return False
    store = users[0]
    if store.op != "call_function" or store.target is not operator.setitem or store.kwargs or len(store.args) != 3:
        return False
    base, index = view.args
    return store.args[0] is base and store.args[2] is node and _same_index(store.args[1], index)


def _view_update(node: Any, positions: dict[Any, int]) -> bool:
    """An in-place op on a view that nothing reads after it, whose result nothing reads."""
    if not _update_of_a_view(node) or node.users:
        return False
    return all(positions[user] <= positions[node] for user in node.args[0].users)


def _positions(graph: Any) -> dict[Any, int]:
    return {node: i for i, node in enumerate(graph.nodes)}


def _update_of_a_view(node: Any) -> bool:
    """`v op= y` on v = x[basic index] in v's dtype (a cast NumPy would refuse never becomes a store
    that casts), shapes unchanged, the operand an array of v's dtype or a Python number on floats."""
    if node.op != "call_function" or node.target not in OUT_OF_PLACE or len(node.args) != 2 or node.kwargs:
        return False
    view, other = node.args
    if getattr(view, "op", None) != "call_function" or view.target is not operator.getitem:
        return False
    base, index = view.args
    if not _basic_index(index):
        return False
    view_meta, result_meta = view.meta.get("val"), node.meta.get("val")
    if not isinstance(view_meta, TensorMeta) or not isinstance(result_meta, TensorMeta):
        return False
    if view_meta.dtype != result_meta.dtype or view_meta.scalar or tuple(view_meta.shape) != tuple(result_meta.shape):
        return False
    if hasattr(other, "op"):
        other_meta = other.meta.get("val")
        return isinstance(other_meta, TensorMeta) and other_meta.dtype == view_meta.dtype
    return type(other) in (float, int) and np.dtype(view_meta.dtype).kind == "f"


def _same_index(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(_same_index(x, y) for x, y in zip(a, b))
    if hasattr(a, "op"):
        return a is b
    return bool(a == b)


def _basic_index(index: Any) -> bool:
    """Slices, ints (constant or computed) and None: the getitem is a view, not a copy."""
    parts = index if type(index) is tuple else (index,)
    for part in parts:
        if hasattr(part, "op"):
            if isinstance(part.meta.get("val"), TensorMeta):
                return False  # an array index: a copy (fancy or boolean indexing)
        elif isinstance(part, slice):
            if any(hasattr(p, "op") and isinstance(p.meta.get("val"), TensorMeta) for p in (part.start, part.stop,
                                                                                            part.step)):
                return False
        elif part is not None and type(part) is not int:
            return False
    return True
