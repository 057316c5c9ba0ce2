"""libdevice for Triton's interpreter: the math functions kernels call, computed by NumPy.

Triton's own libdevice has no interpreter implementation; kernels import this module under that name.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import triton.language as tl
from triton.runtime.interpreter import TensorHandle


def _scalar_type(arg: Any) -> Any:
    """What compiled Triton makes of an argument: a Python float is a float32 constant, an int an int32."""
    if isinstance(arg, tl.core.tensor):
        return arg.type.scalar
    return tl.float32 if isinstance(arg, float) else tl.int32


def _lift(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def apply(*args: Any) -> Any:
        # compiled libdevice has one overload per argument-type tuple, all alike: mixed types do not compile
        kinds = {str(_scalar_type(a)) for a in args}
        if len(kinds) > 1:
            raise TypeError(f"libdevice.{name} takes arguments of one type, got {sorted(kinds)} "
                            "(a Python number in a kernel is float32 or int32)")
        tensors = [a for a in args if isinstance(a, tl.core.tensor)]
        ref = tensors[0]
        data = [a.handle.data if isinstance(a, tl.core.tensor) else a for a in args]
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*data)).astype(ref.handle.data.dtype, copy=False)
        scalar = ref.type.scalar
        blocks = [t.type for t in tensors if t.type.is_block()]
        ty = tl.block_type(scalar, list(out.shape)) if blocks else scalar
        return tl.core.tensor(TensorHandle(out, scalar), ty)
    apply.__name__ = name
    return apply


_NUMPY = {
    "tanh": np.tanh, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "log1p": np.log1p,
    "expm1": np.expm1, "log10": np.log10, "cbrt": np.cbrt, "rint": np.rint, "trunc": np.trunc,
    "pow": np.power, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign, "fmod": np.fmod,
    "exp2": np.exp2, "log2": np.log2, "sin": np.sin, "cos": np.cos, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "isnan": np.isnan, "isinf": np.isinf,
}

globals().update({name: _lift(fn, name) for name, fn in _NUMPY.items()})


def __getattr__(name: str) -> Any:
    raise AttributeError(f"libdevice.{name} has no interpreter implementation in dynamo's triton backend")
