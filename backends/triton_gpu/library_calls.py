"""Which graph nodes the triton backend leaves to the array library instead of a generated kernel.

Large float32/float64 matrix products: cuBLAS (CuPy's matmul) beats any tile we generate for them.
Float products (np.prod): the library multiplies in NumPy's order, a tree of partial products does not.
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


def runs_as_numpy(node: Node) -> str | None:
    """Why this node runs as NumPy code, or None to lower it; kernel_ir.lower_graph's `runs_as_numpy`."""
    return float_product(node) or library_matmul(node)


def float_product(node: Node) -> str | None:
    """A float np.prod: NumPy multiplies one value after another in memory order; tl.reduce takes a tree
    of partial products (per row, then across rows), and where a zero and an overflow meet the two
    differ by more than rounding: nan for NumPy's -0.0 (fuzz seed 2052686: 0 * -inf of two rows')."""
    rule = lowering_rule(node)[0]
    meta = node.meta.get("val")
    if rule is None or rule.__name__ != "lower_prod" or not isinstance(meta, TensorMeta) or meta.dtype.kind not in "fc":
        return None
    return "a float prod keeps NumPy's order of multiplication as NumPy code"


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
