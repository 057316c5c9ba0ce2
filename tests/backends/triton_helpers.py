"""Helpers for the triton backend tests: a recording backend, and comparing results with NumPy's
(exact for integers, bools, dtypes, shapes and layouts' values; float sums within a tolerance)."""
from __future__ import annotations

import os
from typing import Any

import numpy as np
from result_diff import first_difference

# DYNAMO_TEST_GPU=1 runs the triton tests on a real CUDA GPU (CuPy arrays) instead of Triton's interpreter
ON_GPU = os.environ.get("DYNAMO_TEST_GPU") == "1"
INTERPRET = "0" if ON_GPU else "1"

class Recorder:
    """The triton backend (a TileConfig or its default), keeping every compiled graph it returns."""

    def __init__(self, config: Any = None) -> None:
        from dynamo.backends.triton_gpu import TritonBackend

        self.backend = TritonBackend(config) if config is not None else TritonBackend()
        self.compiled: list[Any] = []

    def __call__(self, gm: Any, example_inputs: list) -> Any:
        self.compiled.append(self.backend(gm, example_inputs))
        return self.compiled[-1]

    def backend_device(self) -> Any:
        from dynamo.backends.triton_gpu.device import select_device
        return select_device()

    @property
    def kernels(self) -> int:
        return sum(c.kernel_count for c in self.compiled)

    @property
    def fallbacks(self) -> list:
        return [f for c in self.compiled for f in c.fallback_nodes]


# Float reductions in kernels add in a tree order, NumPy pairwise: equal within a few ulps per term.
TOLERANCE = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


def _values_close(g: np.ndarray, e: np.ndarray) -> bool:
    if e.dtype.kind in "fc":
        rtol = TOLERANCE.get(np.dtype(e.dtype.char.lower()) if e.dtype.kind == "c" else e.dtype, 1e-12)
        return bool(np.allclose(g, e, rtol=rtol, atol=rtol, equal_nan=True))
    return bool(np.array_equal(g, e))


def close(got: Any, expected: Any) -> str | None:
    """None when `got` matches `expected`; otherwise what differs, and where."""
    return first_difference(got, expected, _values_close)
