"""Input arrays that are basic-slicing views of other input arrays (`u = U[1:-1, 1:-1]` kept in a
global): the graph takes the base once and makes the view itself, so that writes keep NumPy's aliasing."""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .sources import Source


def address(array: np.ndarray) -> int:
    """The address of the array's first element."""
    return int(array.__array_interface__["data"][0])


def basic_index_of(base: np.ndarray, view: np.ndarray) -> tuple[slice, ...] | None:
    """A tuple of slices `index` with `base[index]` exactly `view` (same first element, shape and
    strides), or None when the view is no such slice of base (another dtype, a reshape, a transpose)."""
    if type(base) is not np.ndarray or type(view) is not np.ndarray or view is base:
        return None
    if base.dtype != view.dtype or base.ndim != view.ndim or base.ndim == 0 or base.size == 0 or view.size == 0:
        return None
    if any(stride <= 0 for stride in base.strides):
        return None
    if base.flags.writeable != view.flags.writeable:
        # base[index] takes the base's flag: a writeable array made from np.broadcast_to's read-only
        # view of it would refuse writes (and a read-only view made from its base would take them)
        return None
    offset = address(view) - address(base)
    if offset < 0:
        return None
    starts = [0] * base.ndim
    for axis in sorted(range(base.ndim), key=lambda a: -base.strides[a]):  # outer axes take the offset first
        starts[axis], offset = divmod(offset, base.strides[axis])  # the remainder goes to the inner axes
    if offset:
        return None
    index = []
    for axis in range(base.ndim):
        count, stride = view.shape[axis], view.strides[axis]
        step = 1 if count == 1 else stride // base.strides[axis]
        if step == 0 or (count > 1 and step * base.strides[axis] != stride):
            return None
        start = starts[axis]
        if start >= base.shape[axis]:
            return None
        last = start + step * (count - 1)
        if not 0 <= last < base.shape[axis]:
            return None
        stop = last + (1 if step > 0 else -1)
        index.append(slice(start, None if stop < 0 else stop, step))
    made = base[tuple(index)]
    if address(made) != address(view) or made.shape != view.shape:
        return None
    if any(a != b for a, b, n in zip(made.strides, view.strides, view.shape) if n > 1):
        return None
    return tuple(index)


def describe_index(index: tuple[tuple[int, int | None, int], ...]) -> str:
    """`1:-1`-style text of (start, stop, step) triples, as the user would write the slice."""
    def one(start: int, stop: int | None, step: int) -> str:
        text = f"{'' if start == 0 else start}:{'' if stop is None else stop}"
        return text if step == 1 else f"{text}:{step}"

    return ", ".join(one(*s) for s in index)


@dataclass(frozen=True)
class ViewOf:
    """The guarded array is `other[index]`: its first element at `offset` bytes from other's, its
    shape and strides those of that slice, and other's strides those seen while tracing (the graph
    makes the view from other: another layout of other would make another view)."""

    other: Source
    index: tuple[tuple[int, int | None, int], ...]  # (start, stop, step) per axis: slices are unhashable on 3.11
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    base_strides: tuple[int, ...]

    @classmethod
    def of(cls, other: Source, base: np.ndarray, view: np.ndarray, index: tuple[slice, ...]) -> "ViewOf":
        triples = tuple((s.start, s.stop, s.step) for s in index)
        return cls(other, triples, address(view) - address(base), view.shape, view.strides, base.strides)

    # the last pair of arrays that passed (weak references): an array's data pointer is fixed for
    # its life, so their offset is read again only for other arrays (~1 us per address read)
    passed: list = field(default_factory=lambda: [None, None], compare=False, hash=False, repr=False)

    def __call__(self, view: Any, base: Any) -> bool:
        if view.shape != self.shape or view.strides != self.strides or base.strides != self.base_strides:
            return False
        passed = self.passed
        if passed[0] is not None and passed[0]() is view and passed[1]() is base:
            return True
        if address(view) - address(base) != self.offset:
            return False
        passed[:] = [weakref.ref(view), weakref.ref(base)]
        return True

    def describe(self, name: str) -> str:
        return f"{name} is a view {self.other.name()}[{describe_index(self.index)}]"
