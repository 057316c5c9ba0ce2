"""Sample arrays for the NumPy corpus (tests/dynamo/test_numpy_*.py) and the `check` helper that
compares a compiled function with plain NumPy on several inputs."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import dynamo
from support import assert_matches_python

RNG = np.random.default_rng(1234)


def sample(shape: tuple[int, ...] = (3, 4), dtype: Any = np.float64, low: float = 0.5, high: float = 2.0) -> np.ndarray:
    """Values every ufunc accepts without warnings: positive, small, no zeros."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        return RNG.integers(max(int(low), 1), max(int(high), 2) + 4, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (RNG.uniform(low, high, size=shape) + 1j * RNG.uniform(low, high, size=shape)).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


# The shapes every elementwise case runs on: a matrix, a 0-d array, an empty and a length-1 axis.
SHAPES = [(3, 4), (), (0, 3), (1,)]

F64 = sample((3, 4))
F32 = sample((3, 4), np.float32)
I64 = sample((3, 4), np.int64)
C128 = sample((3, 4), np.complex128)
BOOL = sample((3, 4), bool)


# Every corpus program runs through the graph as traced and through the numpy backend's code.
BACKENDS = ("eager", "numpy")


def check(fn: Callable[..., Any], *calls: tuple, graph: bool = True, backend: Any = None) -> None:
    """fn compiled must match fn plain on every argument tuple in `calls` (on every backend of
    BACKENDS unless one is named); with graph=True none of the frames compiled for these calls
    may fall back to Python or break its graph."""
    for name in BACKENDS if backend is None else (backend,):
        _check_on(fn, calls, graph, name)


def _check_on(fn: Callable[..., Any], calls: tuple, graph: bool, backend: Any) -> None:
    for args in calls:
        frames = dynamo.compile(fn, backend=backend)._dynamo_callback.compiled_frames
        start = len(frames)  # the callback is shared by every function compiled for `backend`
        assert_matches_python(fn, *args, expect_graph=False, backend=backend)
        if graph:
            gave_up = [str(reason) for _, frame in frames[start:]
                       for reason in [frame.fallback_reason, *getattr(frame, "breaks", ())] if reason is not None]
            assert gave_up == [], f"gave up: {gave_up}"
