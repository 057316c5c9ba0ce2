"""Block sizes and thread counts for kernels, from the machine's cache size and core count.

A block holds every array a kernel has in flight (inputs, scratch, outputs) within half the per-core cache.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...fx_ir import Node, TensorMeta
from .analysis import NodeInfo, Role
from .buffers import ScratchPlan
from .contiguity import MIN_RUN
from .scheduling import Kernel, row_elements
from .sizes import product

# Ufuncs whose loops cost an order of magnitude more per element than an add: they decide whether
# a kernel has enough work to share between threads.
_EXPENSIVE = frozenset({
    np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.sin, np.cos, np.tan,
    np.arcsin, np.arccos, np.arctan, np.arctan2, np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh,
    np.arctanh, np.power, np.float_power, np.cbrt, np.hypot, np.logaddexp, np.logaddexp2,
})


@dataclass(frozen=True)
class Machine:
    """What blocking decisions depend on; tests pass their own to force blocks and threads."""

    cache_bytes: int          # private cache per core (L2)
    cores: int
    min_kernel_bytes: int     # below this, straight NumPy code is faster than any blocking
    min_block_elements: int   # per-block Python overhead needs this much work to hide
    thread_work: float        # estimated element-operations before a second thread pays
    shared_cache_bytes: int = 0  # last-level cache shared by all cores (L3), 0 if unknown
    # Threads stay off while the 1-minute load average is above this (None: never checked). On a
    # machine whose cores are all taken, a second thread waits for one, and the call for it: the
    # chain at 350k elements ran 0.63x plain NumPy with two threads and 0.96x with one (load 10).
    busy_load: float | None = None
    # Shortest contiguous run (elements) a block may be made of; shorter, the kernel runs as straight
    # code (contiguity.MIN_RUN on a real machine; 0 lets tests force blocks of any shape).
    min_run: int = 0

    @property
    def budget_bytes(self) -> int:
        """Bytes one block may keep in flight: half of L2, or this thread's half-share of L3 if larger.

        Measured here (2 cores, 512 KiB L2, 16 MiB L3): blocks that fit L2 pay ~1 us of Python per
        ufunc call too often; blocks streaming from L3 are as fast per element and amortize it.
        """
        return max(self.cache_bytes // 2, self.shared_cache_bytes // (2 * self.cores))


@functools.cache
def this_machine() -> Machine:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cache = _cache_bytes(level=2) or 512 * 1024
    shared = _cache_bytes(level=3) or 0
    return Machine(cache_bytes=cache, cores=max(1, cores), min_kernel_bytes=max(cache // 2, 128 * 1024),
                   min_block_elements=16384, thread_work=4_000_000, shared_cache_bytes=shared,
                   busy_load=cores + 1.0, min_run=MIN_RUN)


def _cache_bytes(level: int) -> int | None:
    """Size of the data (or unified) cache at `level` of cpu0, from Linux sysfs."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for index in sorted(root.glob("index*")):
            if int((index / "level").read_text()) != level:
                continue
            if (index / "type").read_text().strip() not in ("Data", "Unified"):
                continue
            text = (index / "size").read_text().strip().upper()
            scale = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
            return int(text.rstrip("KMG")) * scale
    except (OSError, ValueError):
        return None
    return None


@dataclass(frozen=True)
class Blocking:
    block: int     # rows of the block axis per block
    blocks: int
    threads: int
    row_bytes: int  # bytes of one row along the block axis, over every array in flight
    work: float     # estimated element-operations of the whole kernel


@dataclass(frozen=True)
class Footprint:
    """What blocking a kernel depends on, as ints, or sympy expressions for a dynamic kernel."""

    extent: Any
    row_bytes: Any               # bytes of one row along the block axis, over every array in flight
    row_elements: tuple[Any, ...]  # elements of one row of each member (the largest one counts)
    work: Any                    # estimated element-operations of the whole kernel
    slots: tuple[tuple[tuple[Any, ...], Any, int], ...]  # scratch slot shapes, dtypes, block axes


def _row_bytes(node: Node, axis: int) -> Any:
    meta = node.meta["val"]
    assert isinstance(meta, TensorMeta)
    return row_elements(meta, axis) * meta.dtype.itemsize


def footprint(kernel: Kernel, infos: dict[Node, NodeInfo], scratch: ScratchPlan) -> Footprint:
    """Everything in flight per row of the block axis, and the work, in the graph's own sizes."""
    row: Any = 0
    for shape, dtype, axis in scratch.slots:
        row += product(d for i, d in enumerate(shape) if i != axis) * np.dtype(dtype).itemsize
    streamed: dict[tuple[Node, int | None], None] = {}
    work: Any = 0
    slotted = {node for node, _ in scratch.slot_of}
    for member in kernel.members:
        info = infos[member]
        meta = info.array
        assert meta is not None
        if member not in slotted:  # outputs and values that allocate their own block
            row += _row_bytes(member, kernel.axis[member])
        for operand in member.all_input_nodes:
            if operand not in kernel.axis and isinstance(operand.meta.get("val"), TensorMeta):
                streamed.setdefault((operand, kernel.operand_axis(info, operand)), None)
        work += meta.size * (10 if info.ufunc in _EXPENSIVE or info.role == Role.POWER else 1)
        if info.role == Role.REDUCTION:
            work += sum(o.meta["val"].size for o in member.all_input_nodes if isinstance(o.meta.get("val"), TensorMeta))
    for operand, operand_axis in streamed:
        if operand_axis is not None:
            row += _row_bytes(operand, operand_axis)
    elements = [row_elements(infos[m].array, kernel.axis[m]) for m in kernel.members]  # type: ignore[arg-type]
    static = [e for e in elements if isinstance(e, int)]
    per_row = tuple(dict.fromkeys([*([max(static)] if static else []), *(e for e in elements if not isinstance(e, int))]))
    return Footprint(kernel.extent, row, per_row, work, tuple(scratch.slots))


def decide(extent: int, row: int, row_elements: int, work: float, machine: Machine) -> Blocking:
    """Block rows so that one block of every array in flight fits this thread's share of the cache."""
    row = max(row, 1)
    min_rows = -(-machine.min_block_elements // max(1, row_elements))
    block = max(machine.budget_bytes // row, min_rows, 1)
    parallel = machine.cores > 1 and work >= machine.thread_work
    if parallel:  # at least two blocks per thread, so that threads finish together
        block = min(block, max(min_rows, -(-extent // (2 * machine.cores))))
    block = max(1, min(block, extent))
    blocks = -(-extent // block)  # 0 for an empty axis
    threads = min(machine.cores, blocks) if parallel else 1
    return Blocking(block=block, blocks=blocks, threads=threads, row_bytes=row, work=work)


def choose_blocking(kernel: Kernel, f: Footprint, machine: Machine) -> Blocking | None:
    """The blocking of a static kernel; None for a dynamic one (decided per call from its footprint)."""
    if kernel.dynamic:
        return None
    return decide(int(f.extent), int(f.row_bytes), int(max(f.row_elements)), float(f.work), machine)
