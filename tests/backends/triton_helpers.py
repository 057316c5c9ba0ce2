"""Helpers for the triton backend tests: a recording backend, and comparing results with NumPy's
(exact for integers, bools, dtypes, shapes and layouts' values; float sums within a tolerance)."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

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

    @property
    def kernels(self) -> int:
        return sum(c.kernel_count for c in self.compiled)

    @property
    def fallbacks(self) -> list:
        return [f for c in self.compiled for f in c.fallback_nodes]


# Float reductions in kernels add in a tree order, NumPy pairwise: equal within a few ulps per term.
TOLERANCE = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


def close(got: Any, expected: Any, path: str = "result") -> str | None:
    """None when `got` matches `expected`; otherwise what differs, and where."""
    if type(got) is not type(expected):
        return f"{path}: {type(got).__name__} != {type(expected).__name__}"
    if isinstance(expected, (tuple, list)):
        if len(got) != len(expected):
            return f"{path}: length {len(got)} != {len(expected)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            problem = close(g, e, f"{path}[{k}]")
            if problem:
                return problem
        return None
    if isinstance(expected, (np.ndarray, np.generic)):
        g, e = np.asarray(got), np.asarray(expected)
        if g.dtype != e.dtype or g.shape != e.shape:
            return f"{path}: {g.dtype}{list(g.shape)} != {e.dtype}{list(e.shape)}"
        if e.dtype.kind in "fc":
            rtol = TOLERANCE.get(np.dtype(e.dtype.char.lower()) if e.dtype.kind == "c" else e.dtype, 1e-12)
            ok = np.allclose(g, e, rtol=rtol, atol=rtol, equal_nan=True)
        else:
            ok = np.array_equal(g, e)
        return None if ok else f"{path}: values differ\n{g}\n!=\n{e}"
    return None if got == expected else f"{path}: {got!r} != {expected!r}"
