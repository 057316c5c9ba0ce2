"""What a block's memory layout costs: the contiguous run of a block along an axis, and its efficiency.

The axis choice (scheduling.py) weighs each candidate axis by it, and rejects kernels whose blocks are scattered.
"""
from __future__ import annotations

from typing import Any

from ...fx_ir import TensorMeta
from .sizes import Sizes, product

# A ufunc over a block made of runs of r contiguous elements costs about (1 + RUN_OVERHEAD / r) times
# the same elements in one run: NumPy's outer loop pays per run. Measured here (np.add on float64,
# runs of 2..64 elements of a 2-D view, 2 cores under load): 5x at r=2, 3x at r=4, 2x at r=8,
# 1.5x at r=16, within 1.2x of a contiguous run from r=64.
RUN_OVERHEAD = 8
# Blocking gains at most ~2-3x over straight NumPy (temporaries kept in cache); a block whose runs are
# shorter than this gives most of that back in per-run cost, so such a kernel runs as straight code
# (the finite-difference grid of benchmarks/workloads/fd3d.py blocked along its last axis of 26
# ran 0.4-0.6x plain NumPy: runs of 1 element).
MIN_RUN = 64


def inner_elements(meta: TensorMeta, axis: int, sizes: Sizes) -> int:
    """Elements after `axis` in a C-ordered value: one row of a block along `axis` is this long."""
    return int(sizes.hint(product(meta.shape[axis + 1:])))


def block_rows(extent: Any, row_bytes: int, budget_bytes: int, sizes: Sizes) -> int:
    """Rows a block along an axis holds (the rule of blocking.decide, before threads), for the hints."""
    return max(1, min(int(sizes.hint(extent)), budget_bytes // max(1, row_bytes)))


def efficiency(run: int) -> float:
    """Share of a contiguous run's speed that a block made of runs of `run` elements reaches."""
    return run / (run + RUN_OVERHEAD)
