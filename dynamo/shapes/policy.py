"""Which dimensions of an input array are dynamic.

Static by default. `compile(dynamic=True)` makes every size dynamic from the first call,
`dynamic=False` never any. With `config.automatic_dynamic_shapes`, a ConvertFrame remembers per
code object, argument and dimension the sizes it compiled for; a dimension seen with a second
size becomes dynamic from then on (so lengths 5..100 compile twice). `mark_dynamic(x, dim)` and
`mark_static(x, dim)` decide per array object. Sizes 0 and 1 always stay static; a dimension that
varies gets a version for the first of them it meets, and the other runs the original code
(small_varying_dims: at most two versions for sizes 0, 1, then more).
"""
from __future__ import annotations

import contextlib
import contextvars
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from .. import config
from ..fx_ir.ops.symbolic import SizeOracle, StructuralOracle, using_oracle
from .env import MIN_DYNAMIC_SIZE, ShapeEnv, log

_NEP50 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"

# id(array) -> (weak reference, {dim: True for dynamic, False for static})
_marks: dict[int, tuple[Any, dict[int, bool]]] = {}


def _mark(x: Any, dim: int, dynamic: bool, what: str) -> None:
    if type(x) is not np.ndarray:
        raise TypeError(f"dynamo.{what} takes an ndarray, not {type(x).__name__}")
    if not isinstance(dim, int) or isinstance(dim, bool) or not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dynamo.{what}: dim {dim!r} is out of range for an array of {x.ndim} dimensions")
    dim %= x.ndim
    key = id(x)
    entry = _marks.get(key)
    if entry is None or entry[0]() is not x:
        entry = (weakref.ref(x, lambda _: _marks.pop(key, None)), {})
        _marks[key] = entry
    entry[1][dim] = dynamic


def mark_dynamic(x: np.ndarray, dim: int) -> None:
    """Compile dimension `dim` of `x` as a symbol from the first call; tracing code that needs
    its value as a Python number then raises DynamicShapeError naming the line."""
    _mark(x, dim, True, "mark_dynamic")


def mark_static(x: np.ndarray, dim: int) -> None:
    """Never make dimension `dim` of `x` dynamic (not even with dynamic=True or automatically)."""
    _mark(x, dim, False, "mark_static")


def marks_of(x: Any) -> dict[int, bool]:
    entry = _marks.get(id(x))
    return entry[1] if entry is not None and entry[0]() is x else {}


class FrameState:
    """Sizes compiled for so far, per (code object, argument source, dim); None once it varied."""

    def __init__(self) -> None:
        self._seen: "weakref.WeakKeyDictionary[types.CodeType, dict[str, list[int | float | None]]]" = \
            weakref.WeakKeyDictionary()
        # arguments whose value a trace needed as a number: compiled per value from then on
        self._pinned: "weakref.WeakKeyDictionary[types.CodeType, set[str]]" = weakref.WeakKeyDictionary()
        self._floats_vary: "weakref.WeakSet[types.CodeType]" = weakref.WeakSet()
        # (argument source, dim) -> the first size 0 or 1 it had (ShapePolicy.small_varying_dims)
        self._small: "weakref.WeakKeyDictionary[types.CodeType, dict[tuple[str, int], int]]" = \
            weakref.WeakKeyDictionary()
        # pins and floats_vary marks made so far: a trace that made one decided differently from how
        # a trace started after it decides (break_reuse keeps no such first trace)
        self.changes = 0

    def mark_floats_vary(self, code: types.CodeType) -> None:
        """A float of the frame changed value: every float it reads is a run-time input from now on."""
        if code not in self._floats_vary:
            self.changes += 1
        self._floats_vary.add(code)

    def floats_vary(self, code: types.CodeType) -> bool:
        return code in self._floats_vary

    def pin(self, code: types.CodeType, name: str) -> None:
        pinned = self._pinned.setdefault(code, set())
        if name not in pinned:
            self.changes += 1
        pinned.add(name)

    def is_pinned(self, code: types.CodeType, name: str) -> bool:
        return name in self._pinned.get(code, ())

    def observe(self, code: types.CodeType, name: str, shape: tuple[int | float, ...]) -> set[int]:
        """Record `shape` (or a float argument's value); the dimensions that have had more than one size."""
        per_code = self._seen.setdefault(code, {})
        seen = per_code.get(name)
        if seen is None or len(seen) != len(shape):
            per_code[name] = list(shape)
            return set()
        for d, size in enumerate(shape):
            # (a NaN float seen again is the same value: NaN != NaN made the frame's second trace
            # take it as changed, a run-time float, where its first trace had a constant)
            if seen[d] is not None and seen[d] != size and not (seen[d] != seen[d] and size != size):
                log.debug("%s.shape[%d] of %s is dynamic from now on: compiled for %d, now %d",
                          name, d, code.co_qualname, seen[d], size)
                seen[d] = None
        return {d for d, size in enumerate(seen) if size is None}

    def first_small_size(self, code: types.CodeType, name: str, dim: int, size: int) -> int:
        """The first size 0 or 1 that dimension `dim` of the array at `name` had in a trace of
        `code` (`size`, recorded now, if it had none)."""
        return self._small.setdefault(code, {}).setdefault((name, dim), size)

    def clear(self) -> None:
        self._small = weakref.WeakKeyDictionary()
        self._seen = weakref.WeakKeyDictionary()
        self._pinned = weakref.WeakKeyDictionary()
        self._floats_vary = weakref.WeakSet()


@dataclass
class ShapePolicy:
    """Dynamic-shape settings of one frame being compiled, and the ShapeEnv of its current trace."""

    dynamic: bool | None = None
    state: FrameState | None = None
    code: types.CodeType | None = None
    env: ShapeEnv | None = field(default=None, repr=False)
    # small_varying_dims: whether such inputs may run the original code (not under fullgraph=True)
    small_sizes_run_original: bool = True

    def changes(self) -> int:
        """FrameState.changes: how many pins and floats_vary marks all frames' traces made so far."""
        return 0 if self.state is None else self.state.changes

    @property
    def reason(self) -> str:
        """Why a dimension not marked with mark_dynamic is dynamic under this policy."""
        return "dynamic=True" if self.dynamic is True else "automatic: its size changed between compiles"

    def int_is_dynamic(self, name: str, value: int) -> bool:
        """Whether the int argument at `name` is a symbol: dynamic=True, or (automatic) once it
        has had a second value; never with dynamic=False."""
        if self.dynamic is not None:
            return self.dynamic
        if not config.automatic_dynamic_shapes or self.state is None or self.code is None:
            return False
        return bool(self.state.observe(self.code, f"{name} (int)", (value,)))

    def float_is_dynamic(self, name: str, value: float) -> bool:
        """Whether the float argument at `name` is a run-time input of the graph: dynamic=True, or
        (automatic) once it has had a second value; never after a trace needed it as a number.
        Only under NumPy 2's promotion rules (NEP 50), where a Python float's value never
        changes a result's dtype (NumPy 1 promoted by value: 1e300 made float32 work float64)."""
        if self.dynamic is False or not _NEP50 or self.state is None or self.code is None:
            return False
        key = f"{name} (float)"
        if self.state.is_pinned(self.code, key):
            return False
        if self.dynamic is True:
            return True
        if not config.automatic_dynamic_shapes:
            return False
        varied = bool(self.state.observe(self.code, key, (value,)))
        return varied or self.state.floats_vary(self.code)

    def hand_on_floats_vary(self, resume: types.CodeType) -> None:
        """A resume function made by this frame's trace: when the frame's floats are run-time
        inputs, so are the floats it hands on (a resume function made by the frame's next version
        is another code object, which would otherwise compile once per value before it learns)."""
        if self.state is not None and self.code is not None and self.state.floats_vary(self.code):
            self.state.mark_floats_vary(resume)

    def pin_float(self, name: str) -> None:
        """A trace needed the float at `name` as a number: from now on it is compiled per value."""
        if self.state is not None and self.code is not None:
            self.state.pin(self.code, f"{name} (float)")

    def small_varying_dims(self, name: str, shape: tuple[int, ...], dynamic: set[int], marked: set[int]) -> set[int]:
        """The dimensions of the input array at `name` that are dynamic because their size changed
        between compiles (not by mark_dynamic or dynamic=True) and are 0 or 1 long in `shape`,
        where the frame has met the other of those two sizes before. No dynamic version takes
        either size (broadcasting depends on them): the first one met gets a static version, and
        a static version for the other too would make three versions of a frame whose sizes go 0,
        1, then more; such a call runs the original code instead (ConvertFrame.compile_frame), and
        the next size of 2 or more compiles the dynamic version."""
        if self.dynamic is not None or not config.automatic_dynamic_shapes or self.state is None or self.code is None:
            return set()
        small = set()
        for d, size in enumerate(shape):
            if size < MIN_DYNAMIC_SIZE and d not in marked:
                first = self.state.first_small_size(self.code, name, d, size)
                if d in dynamic and first != size and self.small_sizes_run_original:
                    small.add(d)
        return small

    def dynamic_dims(self, name: str, value: np.ndarray) -> tuple[set[int], set[int]]:
        """(dynamic dims, those of them marked with mark_dynamic) for the input array `value`."""
        if self.dynamic is False or value.ndim == 0:
            return set(), set()
        marks = marks_of(value)
        dims: set[int] = set()
        if self.dynamic is True:
            dims = set(range(value.ndim))
        elif config.automatic_dynamic_shapes and self.state is not None and self.code is not None:
            dims = self.state.observe(self.code, name, value.shape)
        marked = {d for d, dynamic in marks.items() if dynamic}
        dims = (dims | marked) - {d for d, dynamic in marks.items() if not dynamic}
        return dims, marked & dims


_POLICY: contextvars.ContextVar[ShapePolicy | None] = contextvars.ContextVar("dynamo_shape_policy", default=None)


def current_policy() -> ShapePolicy:
    """The policy of the frame being compiled (a static one outside ConvertFrame)."""
    return _POLICY.get() or ShapePolicy(dynamic=False)


class _CurrentEnvOracle(SizeOracle):
    """Answers the registry's size questions with the ShapeEnv of the trace in progress."""

    def __init__(self, policy: ShapePolicy) -> None:
        self.policy = policy
        self.fallback = StructuralOracle()

    def _target(self) -> SizeOracle:
        return self.policy.env or self.fallback

    def decide_equal(self, a: Any, b: Any) -> bool:
        return self._target().decide_equal(a, b)

    def decide_nonnegative(self, a: Any) -> bool:
        return self._target().decide_nonnegative(a)


@contextlib.contextmanager
def policy_scope(policy: ShapePolicy) -> Iterator[ShapePolicy]:
    """Compile a frame under `policy`: OutputGraphs made inside take their ShapeEnv from it."""
    token = _POLICY.set(policy)
    try:
        with using_oracle(_CurrentEnvOracle(policy)):
            yield policy
    finally:
        _POLICY.reset(token)
