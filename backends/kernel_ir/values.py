"""Array values as functions of their index: buffers, broadcasts, and views by strides and offsets.

A TensorValue maps an index (one sympy expression per dimension) to a kernel IR expression.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from .exprs import Const, Expr, Load, stride_param

# the dtype kinds the target's kernels hold while lower_graph runs (backend c: complex "c" too); values of
# other dtypes stay NumPy values
_DTYPE_KINDS: ContextVar[str] = ContextVar("kernel_dtype_kinds", default="biuf")


@contextmanager
def kernel_dtype_kinds(kinds: str) -> Iterator[None]:
    token = _DTYPE_KINDS.set(kinds)
    try:
        yield
    finally:
        _DTYPE_KINDS.reset(token)


def kernel_dtype(dtype: Any) -> bool:
    """Whether the kernels being lowered hold values of `dtype`'s kind."""
    return np.dtype(dtype).kind in _DTYPE_KINDS.get()

Index = tuple[sympy.Expr, ...]


@dataclass(eq=False)
class Buffer:
    """Memory a program reads or writes. `kind`: "input" (a graph argument), "temp" (allocated by the
    program, C order), or "host" (made by NumPy code between kernels). Strides are in elements:
    parameters bound at run time for inputs and host arrays, constants for temporaries."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    kind: str
    strides: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        self.dtype = np.dtype(self.dtype)
        if not self.strides:
            if self.kind == "temp":
                self.strides = c_strides(self.shape)
            else:
                self.strides = tuple(stride_param(self.name, d) for d in range(len(self.shape)))

    @property
    def runtime_strides(self) -> bool:
        return self.kind != "temp"

    @property
    def size(self) -> Any:
        return math.prod(self.shape)

    def offset(self, index: Sequence[Any]) -> sympy.Expr:
        """The flat element offset of `index`; size-1 dimensions always read element 0."""
        return sympy.Add(*(s * i for s, i, n in zip(self.strides, index, self.shape) if n != 1))

    def __repr__(self) -> str:
        return f"{self.name}: {self.kind} {self.dtype}{list(self.shape)}"


def c_strides(shape: Sequence[Any]) -> tuple[Any, ...]:
    strides: list[Any] = []
    step: Any = 1
    for n in reversed(shape):
        strides.append(step)
        step = step * n if is_symbolic(n) else step * max(int(n), 1)  # a symbolic size is >= 2
    return tuple(reversed(strides))


def is_symbolic(n: Any) -> bool:
    """A size known only at run time (a sympy expression of the graph's size symbols)."""
    return isinstance(n, sympy.Basic) and not n.is_number


def sizes(shape: Sequence[Any]) -> tuple[Any, ...]:
    """A shape with concrete sizes as ints and symbolic ones as sympy expressions."""
    return tuple(n if is_symbolic(n) else int(n) for n in shape)


@dataclass(eq=False)
class TensorValue:
    """An array of `shape` and `dtype` whose element at `index` is `fn(index)`.

    `buffer` is set when the value is exactly a buffer's contents (what a kernel can load from and a
    host step can hand to NumPy).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fn: Callable[[Index], Expr]
    buffer: Buffer | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    # fn's results by index: a value read several times by the next one (x = x * x - x, a chain of
    # setitems reading the array they write) would otherwise be evaluated exponentially often
    _at: dict[Index, Expr] = field(default_factory=dict, repr=False)

    def at(self, index: Sequence[Any]) -> Expr:
        index = tuple(sympy.sympify(i) for i in index)
        if len(index) != len(self.shape):
            raise ValueError(f"index of rank {len(index)} for a value of shape {self.shape}")
        # a size-1 dimension reads element 0, whatever the index says (broadcasting)
        index = tuple(sympy.Integer(0) if n == 1 else i for i, n in zip(index, self.shape))
        found = self._at.get(index)
        if found is None:
            found = self._at[index] = self.fn(index)
        return found

    @property
    def ndim(self) -> int:
        return len(self.shape)


def buffer_value(buffer: Buffer) -> TensorValue:
    def fn(index: Index) -> Expr:
        return Load(buffer.name, buffer.offset(index), buffer.dtype)
    return TensorValue(buffer.shape, buffer.dtype, fn, buffer=buffer)


def constant_value(value: Any, dtype: Any) -> TensorValue:
    const = Const(value, dtype)
    return TensorValue((), np.dtype(dtype), lambda index: const)


def broadcast_to(value: TensorValue, shape: tuple[int, ...]) -> TensorValue:
    """NumPy broadcasting: leading dimensions added, size-1 dimensions stretched."""
    if value.shape == shape:
        return value
    offset = len(shape) - value.ndim
    if offset < 0 or any(n not in (1, m) for n, m in zip(value.shape, shape[offset:])):
        raise ValueError(f"cannot broadcast {value.shape} to {shape}")

    def fn(index: Index) -> Expr:
        return value.at(index[offset:])
    return TensorValue(shape, value.dtype, fn)


def remap(value: TensorValue, shape: tuple[int, ...], to_source: Callable[[Index], Sequence[Any]]) -> TensorValue:
    """A view: element `index` of the result is element `to_source(index)` of `value`."""
    def fn(index: Index) -> Expr:
        return value.at(tuple(to_source(index)))
    return TensorValue(tuple(shape), value.dtype, fn)


def permute(value: TensorValue, axes: Sequence[int]) -> TensorValue:
    axes = [a % value.ndim for a in axes]
    if sorted(axes) != list(range(value.ndim)):
        raise ValueError(f"axes {axes} are not a permutation of {value.ndim} dimensions")
    shape = tuple(value.shape[a] for a in axes)

    def to_source(index: Index) -> list[Any]:
        source: list[Any] = [0] * value.ndim
        for out_dim, a in enumerate(axes):
            source[a] = index[out_dim]
        return source
    return remap(value, shape, to_source)


def reshape(value: TensorValue, shape: tuple[int, ...]) -> TensorValue:
    """Reading elements in C order: index -> flat position -> source index (// and %)."""
    if math.prod(shape) != math.prod(value.shape):
        raise ValueError(f"cannot reshape {value.shape} to {shape}")
    out_strides = c_strides(shape)
    in_strides = c_strides(value.shape)

    def to_source(index: Index) -> list[Any]:
        flat = sympy.Add(*(i * s for i, s, n in zip(index, out_strides, shape) if n != 1))
        return [sympy.Mod(sympy.floor(flat / s), n) if n != 1 else 0 for s, n in zip(in_strides, value.shape)]
    if _is_unit_reshape(value.shape, shape):
        return _unit_reshape(value, shape)
    if math.prod(shape) == 0:  # nothing is read: no index arithmetic (it would divide by zero)
        return remap(value, shape, lambda index: [0] * value.ndim)
    return remap(value, shape, to_source)


def _is_unit_reshape(old: tuple[int, ...], new: tuple[int, ...]) -> bool:
    return [n for n in old if n != 1] == [n for n in new if n != 1]


def _unit_reshape(value: TensorValue, shape: tuple[int, ...]) -> TensorValue:
    """A reshape that only adds or drops size-1 dimensions: no index arithmetic."""
    big_in = [d for d, n in enumerate(value.shape) if n != 1]
    big_out = [d for d, n in enumerate(shape) if n != 1]

    def to_source(index: Index) -> list[Any]:
        source: list[Any] = [0] * value.ndim
        for din, dout in zip(big_in, big_out):
            source[din] = index[dout]
        return source
    return remap(value, shape, to_source)


def clamp(expr: sympy.Expr, extent: int) -> sympy.Expr:
    """Keep an index inside [0, extent): used inside selects, where the other branch is taken anyway."""
    if extent == 1:
        return sympy.Integer(0)
    return sympy.Min(sympy.Max(expr, 0), extent - 1)


# ---------------------------------------------------------------- basic indexing

@dataclass
class BasicIndex:
    """`a[index]` with ints, slices, None and Ellipsis: per source dimension either a fixed position
    (int) or (start, step, length); `out_dims[k]` is the source dimension of output dimension k, or
    None for an inserted axis."""

    shape: tuple[int, ...]
    fixed: dict[int, Any]                    # sizes and positions may be symbolic
    slices: dict[int, tuple[Any, int, Any]]
    out_dims: list[int | None]

    def to_source(self, index: Index) -> list[Any]:
        source: list[Any] = [0] * (len(self.fixed) + len(self.slices))
        for dim, pos in self.fixed.items():
            source[dim] = pos
        for k, d in enumerate(self.out_dims):
            if d is not None:
                start, step, _ = self.slices[d]
                source[d] = start + step * index[k]
        return source

    def region(self, target_index: Index) -> tuple[sympy.Basic, list[Any]]:
        """For `a[index] = v`: the predicate "this element of `a` is assigned", and the position in
        the assigned view that it receives (meaningful where the predicate holds; clamped elsewhere)."""
        conds: list[sympy.Basic] = []
        for dim, pos in self.fixed.items():
            conds.append(sympy.Eq(target_index[dim], pos))
        view_index: list[Any] = []
        for d in self.out_dims:
            if d is None:
                view_index.append(0)
                continue
            start, step, length = self.slices[d]
            t = target_index[d]
            if length == 0:
                conds.append(sympy.false)
                view_index.append(0)
                continue
            last = start + step * (length - 1)
            lo, hi = min(start, last), max(start, last)
            conds.append(sympy.And(t >= lo, t <= hi))
            if abs(step) != 1:
                conds.append(sympy.Eq(sympy.Mod(t - start, abs(step)), 0))
            view_index.append(clamp(sympy.floor((t - start) / step) if abs(step) != 1 else (t - start) * step,
                                    length))
        return sympy.And(*conds), view_index


def parse_basic_index(shape: tuple[int, ...], index: Any) -> BasicIndex | None:
    """None when `index` is not basic (arrays, lists, booleans) or is out of range."""
    items = index if isinstance(index, tuple) else (index,)
    if any(item is Ellipsis for item in items):
        at = items.index(Ellipsis)
        if Ellipsis in items[at + 1:]:
            return None
        used = sum(1 for item in items if item is not None and item is not Ellipsis)
        items = items[:at] + (slice(None),) * (len(shape) - used) + items[at + 1:]
    used = sum(1 for item in items if item is not None)
    if used > len(shape):
        return None
    items = items + (slice(None),) * (len(shape) - used)
    fixed: dict[int, int] = {}
    slices: dict[int, tuple[int, int, int]] = {}
    out_dims: list[int | None] = []
    out_shape: list[int] = []
    dim = 0
    for item in items:
        if item is None:
            out_dims.append(None)
            out_shape.append(1)
            continue
        n = shape[dim]
        if isinstance(item, (bool, np.bool_)):
            return None
        if is_symbolic(n):
            # a size known only at run time (>= 2): whole slices, and positions valid for every size
            if isinstance(item, slice) and item == slice(None):
                slices[dim] = (0, 1, n)
                out_dims.append(dim)
                out_shape.append(n)
            elif isinstance(item, (int, np.integer)) and -2 <= int(item) < 2:
                fixed[dim] = int(item) if item >= 0 else n + int(item)
            else:
                return None
            dim += 1
            continue
        if isinstance(item, (int, np.integer)):
            pos = int(item)
            if not -n <= pos < n:
                return None
            fixed[dim] = pos % n
        elif isinstance(item, slice):
            if not all(v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))
                       for v in (item.start, item.stop, item.step)):
                return None
            start, stop, step = item.indices(n)
            length = len(range(start, stop, step))
            slices[dim] = (start, step, length)
            out_dims.append(dim)
            out_shape.append(length)
        else:
            return None
        dim += 1
    return BasicIndex(tuple(out_shape), fixed, slices, out_dims)
