"""Float sums in C with NumPy's bits: the values of one reduction are gathered in a contiguous buffer
and added by NumPy's own add loop in its reduce form (its pairwise summation), as np.sum does.

NumPy 2.x sums the contiguous last axis of an array one row per loop call, from the identity 0.0
(checked for lengths 1..100000, float32 and float64, in tests/backends/test_c_pairwise.py). Which
sums get here (`refuse_sum`) and which arrays must have that layout at run time (`layout_ok`):
a float sum whose every load that moves with the reduction walks the last axis of a graph input.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import sympy

from ..kernel_ir import Load, Reduce, walk
from ..kernel_ir.exprs import is_index_var
from ..kernel_ir.values import is_symbolic
from .emitters import c_type, literal
from .tiles import NumpyLoop, TiledLevel
from .ufunc_loops import loop_symbol, numpy_loop

if TYPE_CHECKING:
    from .codegen import KernelWriter

STACK_VALUES = 2048  # a sum whose length varies per row gathers up to this many values on the stack
PAIRWISE_BLOCK = 8  # NumPy adds fewer values than this one after the other (pairwise_sum's first case)


# the ufunc whose loop, in its reduce form, makes each float reduction NumPy's
REDUCE_UFUNCS = {"sum": "add", "max": "maximum", "min": "minimum"}


def pairwise_kind(r: Reduce) -> bool:
    """Whether this reduction runs NumPy's loop: a float sum (pairwise, never C's `+`), a float max or
    min (NumPy's SIMD tree: its NaN and signed-zero choices, and no float compare that would keep
    the kernel's loops from vectorizing)."""
    return r.kind in REDUCE_UFUNCS and np.dtype(r.dtype).kind == "f" and np.dtype(r.dtype).itemsize in (4, 8) \
        and np.dtype(r.body.dtype) == np.dtype(r.dtype)


def last_axis_inputs(r: Reduce, last_strides: dict[str, str]) -> list[str] | str:
    """The graph inputs whose last axis the reduction walks (what `layout_ok` checks per call), or why
    NumPy's order would differ. `last_strides`: each input's last stride symbol -> the input's name."""
    if np.dtype(r.dtype).itemsize not in (4, 8) or np.dtype(r.body.dtype) != np.dtype(r.dtype):
        return f"a {np.dtype(r.body.dtype)} sum in {np.dtype(r.dtype)} (NumPy adds it in cast blocks)"
    found: list[str] = []
    for e in walk([r.body]):
        if not isinstance(e, Load) or r.var not in e.free:
            continue
        if np.dtype(e.dtype) != np.dtype(r.dtype):
            return "a float sum of values loaded in another dtype keeps NumPy's order as NumPy code"
        step = sympy.diff(e.index, r.var)
        name = last_strides.get(str(step)) if isinstance(step, sympy.Symbol) else None
        if name is None or r.var in sympy.sympify(step).free_symbols:
            return "a float sum over an axis that is not an input's last keeps NumPy's order as NumPy code"
        found.append(name)
    if not found and not (not is_symbolic(r.extent) and int(r.extent) <= 1):  # one value: 0.0 + it
        return "a float sum of computed values keeps NumPy's order as NumPy code"
    return found


def refuse_sum(r: Reduce, last_strides: dict[str, str]) -> str | None:
    why = last_axis_inputs(r, last_strides)
    if isinstance(why, str):
        return why
    if numpy_loop("add", (np.dtype(r.dtype),) * 2, np.dtype(r.dtype)) is None:
        return "NumPy's add has no inner loop for this dtype"
    return None


def layout_ok(a: Any) -> bool:
    """Whether NumPy sums each row of `a` along its last axis in one loop call: a positive last stride,
    the smallest of the axes longer than one (NumPy's iterator keeps that axis innermost, unflipped),
    rows that do not interleave. (Each other axis was compared with the last stride times its own
    length, not the row's: a tall array, kmeans' (2M, 2) points, ran the numpy backend's code.)"""
    shape, strides = a.shape, a.strides
    if not shape or shape[-1] <= 1:
        return True
    last, row = strides[-1], strides[-1] * shape[-1]
    return last > 0 and all(abs(s) >= row or n <= 1 for s, n in zip(strides[:-1], shape[:-1]))


def write_sum(w: KernelWriter, r: Reduce, indent: str, acc: str, empty: str) -> None:
    """`acc` = the reduction of its values, gathered in a buffer (tiles when the values call NumPy's
    loops) and reduced by NumPy's loop in its reduce form: a sum from 0.0 (np.add's pairwise sum), a
    max or min from the first value over the rest, as NumPy does for ufuncs without an identity.
    `empty`: the value of an empty max or min."""
    t, var = c_type(r.dtype), r.var.name
    if short_sum(w, r):
        write_short_sum(w, r, indent, acc)
        return
    extent = w.index(r.extent) if is_symbolic(r.extent) else f"INT64_C({int(r.extent)})"
    buf = f"{acc}_values"
    lines = w.lines
    if r.kind == "sum":
        lines.append(f"{indent}{t} {acc} = {literal(0, r.dtype)};  /* NumPy's sum starts at its identity */")
    else:
        lines.append(f"{indent}{t} {acc} = {empty};")
    lines.append(f"{indent}{{")
    inner = indent + "    "
    per_call = not any(is_index_var(v) for v in sympy.sympify(r.extent).free_symbols)
    if per_call:  # one buffer for every row of the call; the row's values stay readable after the sum
        w.function_buffers.append((buf, t, extent))
        w.last_gathered = (buf, str(r.extent))
    else:
        lines.append(f"{inner}{t} {buf}_stack[{STACK_VALUES}];")
        lines.append(f"{inner}{t} *const {buf} = {extent} <= {STACK_VALUES} ? {buf}_stack : "
                     f"({t} *)malloc((size_t){extent} * sizeof({t}));")
        lines.append(f"{inner}if ({buf} == NULL) abort();")
    saved = dict(w.names)
    bound = set(r.free) | {r.var}

    def gather(ind: str) -> None:
        lines.append(f"{ind}{buf}[{var}] = {w.operand(r.body)};")

    if not w.checked and TiledLevel.wanted(w, bound, [r.body]):
        TiledLevel(w, r.var, bound, [r.body], gather).write("INT64_C(0)", extent, inner)
        lines.append(f"{inner}}}")
    else:
        lines.append(f"{inner}for (int64_t {var} = 0; {var} < {extent}; {var}++) {{")
        w.values_at(bound, inner + "    ", [r.body])
        gather(inner + "    ")
        lines.append(f"{inner}}}")
    w.names = saved
    loop = reduce_loop(w, r)
    if r.kind == "sum":
        lines.append(f"{inner}if ({extent} > 0) {{  /* np.add.reduce: NumPy's pairwise sum */")
        lines.append(f"{inner}    char *args_[3] = {{(char *)&{acc}, (char *){buf}, (char *)&{acc}}};")
        lines.append(f"{inner}    const intptr_t n_ = (intptr_t){extent}, steps_[3] = {{0, sizeof({t}), 0}};")
    else:
        lines.append(f"{inner}if ({extent} > 0) {acc} = {buf}[0];")
        lines.append(f"{inner}if ({extent} > 1) {{  /* np.{loop.name}.reduce: the first value, then the rest */")
        lines.append(f"{inner}    char *args_[3] = {{(char *)&{acc}, (char *)({buf} + 1), (char *)&{acc}}};")
        lines.append(f"{inner}    const intptr_t n_ = (intptr_t){extent} - 1, steps_[3] = {{0, sizeof({t}), 0}};")
    lines.append(f"{inner}    fpflags |= fetestexcept(DYN_FLAGS);")
    lines.append(f"{inner}    {loop.symbol}(args_, &n_, steps_, {loop.symbol}_data);")
    lines.append(f"{inner}}}")
    if not per_call:
        lines.append(f"{inner}if ({buf} != {buf}_stack) free({buf});")
    lines.append(f"{indent}}}")
    if w.checked:  # NumPy names a reduction's flags after "reduce"
        w.check_after("reduce", r, indent, acc)


def short_sum(w: KernelWriter, r: Reduce) -> bool:
    """Whether a float sum has a constant length below NumPy's pairwise block (8) and a body of plain C:
    NumPy adds such a row one value after the other (below)."""
    return r.kind == "sum" and not is_symbolic(r.extent) and int(r.extent) < PAIRWISE_BLOCK \
        and not TiledLevel.wanted(w, set(r.free) | {r.var}, [r.body])


def write_short_sum(w: KernelWriter, r: Reduce, indent: str, acc: str) -> None:
    """`acc` = 0.0 + ((-0.0 + v0) + v1 ...): NumPy's pairwise sum of fewer than 8 values is this
    sequential loop (from -0.0, so that a row of -0.0 keeps its sign), added to the reduction's 0.0.
    It is also what NumPy computes where its iterator puts the reduced axis outside (out[i] += v[i, k]
    from 0.0): -0.0 + v is v, and 0.0 + v differs from v only for v = -0.0, which a sum of values
    not all -0.0 never is. A row of (N, 2) or (N, 3) coordinates then costs no call per row."""
    t, var = c_type(r.dtype), r.var.name
    lines = w.lines
    lines.append(f"{indent}{t} {acc} = {literal(0, r.dtype)};  /* NumPy's sum starts at its identity */")
    lines.append(f"{indent}{{")
    inner = indent + "    "
    lines.append(f"{inner}{t} {acc}_row = -{literal(0, r.dtype)};  /* NumPy's short pairwise block */")
    saved = dict(w.names)
    lines.append(f"{inner}for (int64_t {var} = 0; {var} < INT64_C({int(r.extent)}); {var}++) {{")
    w.values_at(set(r.free) | {r.var}, inner + "    ", [r.body])
    lines.append(f"{inner}    {acc}_row = {acc}_row + {w.operand(r.body)};")
    if w.checked:  # NumPy names a reduction's flags after "reduce"; the next value's ops are not it
        w.check_after("reduce", r, inner + "    ", f"{acc}_row")
    lines.append(f"{inner}}}")
    w.names = saved
    lines.append(f"{inner}{acc} = {acc} + {acc}_row;  /* 0.0 + a sum: no flag */")
    lines.append(f"{indent}}}")


def reduce_loop(w: KernelWriter, r: Reduce) -> NumpyLoop:
    dt, name = np.dtype(r.dtype), REDUCE_UFUNCS[r.kind]
    loop = NumpyLoop(loop_symbol(name, (dt, dt), dt), name, (dt, dt), dt)
    w.loops.append(loop)
    return loop
