"""Kernel formation: the tile axes of a group of stores, and which reductions must run on their own.

Index variables that are never live together share an axis (a row softmax is one row-block tile).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy

from .exprs import Expr, Op, Reduce, index_var, walk
from .program import Axis, Kernel, Store
from .values import Buffer, TensorValue, is_symbolic

# Output axes up to this long are never split across programs (coordinates, keepdims axes, stacks of
# a few arrays): reductions consumed along them are then computed once per program.
SMALL_AXIS = 16


class NeedsRealize(Exception):
    """Some reductions would be recomputed by every program along a split axis: the graph nodes they
    come from must be stored by kernels of their own first (the lowering restarts with them forced)."""

    def __init__(self, origins: set[str]):
        super().__init__(", ".join(sorted(origins)))
        self.origins = origins


@dataclass
class PendingStore:
    buffer: Buffer
    value: TensorValue
    origin: str
    mask_fn: object = None  # optional: index -> sympy predicate (a region store)


def output_vars(ndim: int) -> tuple[sympy.Symbol, ...]:
    return tuple(index_var(f"x{k}") for k in range(ndim))


def build_kernel(name: str, shape: tuple[int, ...], pending: Sequence[PendingStore],
                 forced: set[str]) -> Kernel:
    xs = output_vars(len(shape))
    stores = []
    for p in pending:
        mask = p.mask_fn(xs) if callable(p.mask_fn) else sympy.true
        stores.append(Store(p.buffer, p.buffer.offset(xs), p.value.at(xs), mask))
    origins = [p.origin for p in pending]
    axes, var_axis = allocate_axes(shape, xs, [s.value for s in stores])
    kernel = Kernel(name, axes, stores, var_axis, origins)
    check_redundancy(kernel, set(origins) | forced)
    return kernel


def allocate_axes(shape: tuple[int, ...], xs: Sequence[sympy.Symbol],
                  values: Sequence[Expr]) -> tuple[list[Axis], dict[sympy.Symbol, int]]:
    reds = [e for e in walk(values) if isinstance(e, Reduce)]
    extent: dict[sympy.Symbol, int] = {x: n for x, n in zip(xs, shape)}
    conflicts: dict[sympy.Symbol, set[sympy.Symbol]] = {x: set(xs) - {x} for x in xs}
    order: list[sympy.Symbol] = []
    for r in reversed(reds):  # walk lists children first: outer reductions come last
        if r.var not in extent:
            extent[r.var] = r.extent
            order.append(r.var)
            conflicts.setdefault(r.var, set())
        for v in r.body.free - {r.var}:
            conflicts[r.var].add(v)
            conflicts.setdefault(v, set()).add(r.var)
    axes = [Axis(n, "grid", [x]) for x, n in zip(xs, shape)]
    var_axis = {x: k for k, x in enumerate(xs)}
    for var in order:
        for k, axis in enumerate(axes):
            if axis.extent == extent[var] and not any(v in conflicts[var] for v in axis.vars):
                axis.vars.append(var)
                var_axis[var] = k
                break
        else:
            var_axis[var] = len(axes)
            axes.append(Axis(extent[var], "full", [var]))
    for axis in axes:
        if len(axis.vars) > 1 or (not is_symbolic(axis.extent) and axis.extent <= SMALL_AXIS):
            axis.role = "full"
    return axes, var_axis


def check_redundancy(kernel: Kernel, exempt: set[str]) -> None:
    grid = {k for k, a in enumerate(kernel.axes) if a.role == "grid"}
    needs: set[str] = set()
    for r in kernel.reductions():
        if r.origin in exempt:
            continue
        covered = kernel.axes_of(r) | {kernel.var_axis[r.var]}
        if grid - covered:
            needs.add(r.origin)
    if needs:
        raise NeedsRealize(needs)


def shared_costly(lowerer: Any, node: Any) -> list[Any]:
    """The nodes whose lazy values are inside `node`'s (which a NumPy step is about to store), cost a
    `lowerer.costly` op (C's call of NumPy's power or exp per element) and are read by nodes after
    the step too: stored with it, later kernels load them rather than compute them again (n-body's
    inv_r3 = (...) ** -1.5, read by three products that three matmuls split into three kernels)."""
    value = lowerer.env[node]
    if lowerer.costly is None or not isinstance(value, TensorValue) or value.buffer is not None:
        return []
    xs = output_vars(value.ndim)
    inside = {id(e) for e in walk([value.at(xs)])}
    here = lowerer.position[lowerer.current] if lowerer.current is not None else len(lowerer.position)
    found, seen, todo = [], set(), list(node.all_input_nodes)
    while todo:
        a = todo.pop()
        v = lowerer.env.get(a)
        if a in seen or a in lowerer.root or not isinstance(v, TensorValue) or v.buffer is not None:
            continue
        seen.add(a)
        todo.extend(a.all_input_nodes)
        if "view_of" not in v.notes and v.shape == value.shape and id(top := v.at(xs)) in inside \
                and any(lowerer.position[u] > here for u in a.users) \
                and any(isinstance(e, Op) and lowerer.costly(e) for e in walk([top])):
            found.append(a)
    return found
