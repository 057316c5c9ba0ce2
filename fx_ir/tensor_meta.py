"""TensorMeta: what the IR knows about an array value without its data (shape, dtype, kind).

Stored in node.meta["val"]; sizes are ints or sympy expressions (dynamic dimensions).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TensorMeta:
    """Shape and dtype of an ndarray (or a NumPy scalar when `scalar` is True).

    `shape` holds ints or sympy expressions. A NumPy scalar (what `np.sum(a)` returns) has
    shape () and `scalar=True`; a 0-d array has shape () and `scalar=False`.
    """

    shape: tuple[Any, ...]
    dtype: np.dtype
    scalar: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if self.scalar and self.shape != ():
            raise ValueError(f"a NumPy scalar has shape (), not {self.shape}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> Any:
        """Number of elements: an int, or a sympy expression when a size is symbolic."""
        return math.prod(self.shape, start=1)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, (int, np.integer)) for d in self.shape)

    @classmethod
    def from_value(cls, value: Any) -> "TensorMeta":
        """Meta of a real ndarray or NumPy scalar."""
        if isinstance(value, np.ndarray):
            return cls(value.shape, value.dtype)
        if isinstance(value, np.generic):
            return cls((), value.dtype, scalar=True)
        raise TypeError(f"TensorMeta.from_value takes an ndarray or NumPy scalar, not {type(value).__name__}")

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        kind = "scalar" if self.scalar else "array"
        return f"{kind}[{self.dtype}]({dims})"
