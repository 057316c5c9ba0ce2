"""Where a backend's result differs from NumPy's: one walk over tuples, lists, arrays and scalars,
with the comparison of array values supplied by the caller (bit for bit, or within a tolerance)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def first_difference(got: Any, expected: Any, arrays_equal: Callable[[np.ndarray, np.ndarray], bool],
                     path: str = "result") -> str | None:
    """None when `got` matches `expected` (same types, lengths, dtypes, shapes, and values as
    `arrays_equal` judges them); otherwise what differs, and where."""
    if type(got) is not type(expected):
        return f"{path}: {type(got).__name__} != {type(expected).__name__}"
    if isinstance(expected, (tuple, list)):
        if len(got) != len(expected):
            return f"{path}: length {len(got)} != {len(expected)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            problem = first_difference(g, e, arrays_equal, f"{path}[{k}]")
            if problem:
                return problem
        return None
    if isinstance(expected, (np.ndarray, np.generic)):
        g, e = np.asarray(got), np.asarray(expected)
        if g.dtype != e.dtype or g.shape != e.shape:
            return f"{path}: {g.dtype}{list(g.shape)} != {e.dtype}{list(e.shape)}"
        return None if arrays_equal(g, e) else f"{path}: values differ\n{g!r}\n!=\n{e!r}"
    if isinstance(expected, float) and expected != expected:
        return None if got != got else f"{path}: {got} != nan"
    return None if got == expected else f"{path}: {got!r} != {expected!r}"
