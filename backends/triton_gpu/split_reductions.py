"""Long reductions to a single value, split across programs: one kernel reduces chunks to partial
results, a second combines them (one GPU program reading a whole long axis leaves the chip idle)."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import sympy

from ..kernel_ir import Axis, Buffer, Const, Expr, IndexValue, Kernel, Load, Op, Program, Reduce, Store, walk
from ..kernel_ir.exprs import index_var, reduction_identity, substitute
from ..kernel_ir.values import is_symbolic

SPLIT_FROM = 1 << 16   # elements: shorter axes are read fast enough by one program
CHUNK = 4096           # elements one program of the first kernel reduces
_SPLITTABLE = frozenset({"sum", "prod", "max", "min", "any", "all"})


def split_long_reductions(program: Program) -> Program:
    """`program` with every kernel that reduces one long axis to one value replaced by two."""
    steps: list[Any] = []
    buffers = dict(program.buffers)
    for step in program.steps:
        split = _split(step, buffers) if isinstance(step, Kernel) else None
        steps.extend(split or [step])
    if len(steps) == len(program.steps):
        return program
    return dataclasses.replace(program, steps=steps, buffers=buffers)


def _splittable(kernel: Kernel) -> list[Reduce] | None:
    """The kernel's reductions, when they all reduce its one axis (long, of a known size) to one value
    with an associative combine and none reads another; else None."""
    if len(kernel.axes) != 1 or kernel.axes[0].role != "full":
        return None
    n = kernel.axes[0].extent
    if is_symbolic(n) or n < SPLIT_FROM:
        return None
    reductions = list(dict.fromkeys(kernel.reductions()))
    if not reductions or any(r.kind not in _SPLITTABLE or r.extent != n for r in reductions):
        return None
    if any(isinstance(e, Reduce) for r in reductions for e in walk([r.body])):
        return None
    if any(s.index.free_symbols & set(kernel.var_axis) for s in kernel.stores):
        return None  # a store along the axis: not a reduction to one value
    return reductions


def _split(kernel: Kernel, buffers: dict[str, Buffer]) -> list[Kernel] | None:
    reductions = _splittable(kernel)
    if reductions is None:
        return None
    n = int(kernel.axes[0].extent)
    programs = -(-n // CHUNK)
    fresh = 1 + max(int(v.name[1:]) for v in kernel.var_axis)
    p, r, q = index_var("x0"), index_var(f"r{fresh}"), index_var(f"r{fresh + 1}")
    position = p * CHUNK + r
    inside = IndexValue(position < n, np.bool_)
    partial_stores: list[Store] = []
    combined: dict[int, Expr] = {}
    for k, red in enumerate(reductions):
        body = substitute(red.body, {red.var: sympy.Min(position, n - 1)})  # clamped: every load in bounds
        body = Op("where", (inside, body, Const(reduction_identity(red.kind, red.body.dtype), red.body.dtype)), red.body.dtype)
        part = Buffer(f"{kernel.name}_part{k}", (programs,), red.dtype, "temp")
        buffers[part.name] = part
        partial_stores.append(Store(part, p, Reduce(red.kind, r, CHUNK, body, red.dtype, red.origin)))
        combined[id(red)] = Reduce(red.kind, q, programs, Load(part.name, q, red.dtype), red.dtype, red.origin)
    first = Kernel(f"{kernel.name}_partial", [Axis(programs, "grid", [p]), Axis(CHUNK, "full", [r])],
                   partial_stores, {p: 0, r: 1}, list(kernel.origins))
    stores = [Store(s.buffer, s.index, _replace(s.value, combined), s.mask) for s in kernel.stores]
    second = Kernel(kernel.name, [Axis(programs, "full", [q])], stores, {q: 0}, list(kernel.origins))
    return [first, second]


def _replace(expr: Expr, done: dict[int, Expr]) -> Expr:
    """`expr` with the reductions in `done` (by identity) replaced."""
    if id(expr) in done:
        return done[id(expr)]
    if isinstance(expr, Op):
        out = Op(expr.name, tuple(_replace(a, done) for a in expr.args), expr.dtype)
        done[id(expr)] = out
        return out
    return expr
