"""Which graph nodes the triton backend leaves to the array library instead of a generated kernel.

Large float32/float64 matrix products: cuBLAS (CuPy's matmul) beats any tile we generate for them.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...fx_ir import Node, TensorMeta
from ..kernel_ir.lowering import lowering_rule
from ..kernel_ir.rules_reductions import lower_matmul
from ..kernel_ir.values import is_symbolic

# Multiply-adds above which a float32/float64 product runs as the library's matmul. tl.dot has no
# fast float64 path, and an exact (ieee) float32 dot runs without the TF32 units; below this a product
# is cheap either way and stays fused with what surrounds it (an epilogue in the same kernel).
LIBRARY_MATMUL_WORK = 1 << 21
MIN_LIBRARY_SIDE = 32

def _shape(value: Any) -> tuple[Any, ...] | None:
    meta = value.meta.get("val") if isinstance(value, Node) else None
    return tuple(meta.shape) if isinstance(meta, TensorMeta) else None


def library_matmul(node: Node) -> str | None:
    """Why this node runs as NumPy code (on CuPy arrays: CuPy's cuBLAS matmul), or None to lower it;
    kernel_ir.lower_graph's `runs_as_numpy`."""
    if lowering_rule(node)[0] is not lower_matmul or len(node.args) != 2:
        return None
    meta = node.meta.get("val")
    left = _shape(node.args[0])
    if not isinstance(meta, TensorMeta) or meta.dtype not in (np.float32, np.float64) or not left:
        return None
    if len(meta.shape) < 2 or any(not is_symbolic(n) and int(n) < MIN_LIBRARY_SIDE for n in meta.shape[-2:]):
        return None  # a matrix-vector product is memory-bound: fused, its operand is never stored
    sizes = (*meta.shape, left[-1])
    if not any(is_symbolic(n) for n in sizes) and math.prod(int(n) for n in sizes) < LIBRARY_MATMUL_WORK:
        return None
    return f"a large {meta.dtype.name} matrix product runs as the array library's matmul (cuBLAS on the GPU)"
