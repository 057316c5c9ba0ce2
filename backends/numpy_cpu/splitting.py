"""Short trailing axes (2 to 4 long, like x/y/z coordinates) computed one component at a time.

NumPy runs such an axis as its innermost loop, a few elements per loop call, which is its slowest
case; one array per component gives long loops. A reduction over the axis becomes a chain of
ufunc calls, used only where a probe shows NumPy combines the elements in exactly that order.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...fx_ir import Node, TensorMeta
from ...fx_ir.thread_warnings import warnings_ignored
from .analysis import NodeInfo, Role
from .scheduling import Kernel
from .sizes import Sizes

MAX_COMPONENTS = 4
_CHAINS = {"sum": np.add, "norm": np.add, "max": np.maximum, "amax": np.maximum,
           "min": np.minimum, "amin": np.minimum}


@dataclass
class Split:
    """`components[m]`: member m is held as that many arrays; `reductions[r]`: r reduces a split member.

    `assumed`: symbolic sizes split as their example value; the kernel runs blocked only when they
    have that value at run time (its straight code serves every other size).
    """

    components: dict[Node, int] = field(default_factory=dict)
    reductions: dict[Node, str] = field(default_factory=dict)
    assumed: dict[Any, int] = field(default_factory=dict)


def _meta(node: Node) -> TensorMeta:
    meta = node.meta["val"]
    assert isinstance(meta, TensorMeta)
    return meta


@functools.cache
def chain_matches_numpy(kind: str, n: int, dtype: np.dtype) -> bool:
    """Whether reducing a contiguous last axis of length n equals the left-to-right ufunc chain.

    The sum chain starts from 0 (NumPy adds to its identity: `0 + -0.0` is `+0.0`). The probe
    mixes magnitudes, signed zeros and NaNs, so any other grouping shows up.
    """
    rng = np.random.default_rng(n)
    x = rng.standard_normal((4096, n)) * 10.0 ** rng.integers(-12, 12, (4096, n))
    x[rng.random(x.shape) < 0.15] = -0.0
    x[rng.random(x.shape) < 0.15] = 0.0
    x[rng.random(x.shape) < 0.01] = np.nan
    x = x.astype(dtype)
    ufunc = _CHAINS[kind]
    with warnings_ignored(), np.errstate(all="ignore"):
        if kind in ("sum", "norm"):
            expected = np.add.reduce(x * x if kind == "norm" else x, axis=-1)
            chained = np.add(0.0, (x * x if kind == "norm" else x)[:, 0])
            source = x * x if kind == "norm" else x
        else:
            expected = ufunc.reduce(x, axis=-1)
            chained = x[:, 0].copy()
            source = x
        for c in range(1, n):
            chained = ufunc(chained, source[:, c])
    return bool(np.array_equal(expected, chained, equal_nan=True)) and bool(
        np.array_equal(np.signbit(expected), np.signbit(chained)))


def _short(size: Any, sizes: Sizes) -> int | None:
    """The length of a last axis of 2 to 4 (a symbolic one: its example value), else None."""
    value = size if isinstance(size, int) else sizes.hint(size)
    return value if 2 <= value <= MAX_COMPONENTS else None


def _reduction_kind(info: NodeInfo, sizes: Sizes) -> str | None:
    if info.role != Role.REDUCTION or info.reduction not in _CHAINS:
        return None
    node = info.node
    source = node.args[0]
    if not isinstance(source, Node) or len(info.reduced_axes) != 1:
        return None
    meta = _meta(source)
    length = _short(meta.shape[-1], sizes)
    if info.reduced_axes[0] != meta.ndim - 1 or meta.dtype not in (np.float32, np.float64) or length is None:
        return None
    if info.reduction in ("sum", "norm") and (node.kwargs.get("dtype") is not None or info.array is None
                                              or info.array.dtype != meta.dtype):
        return None
    if not chain_matches_numpy(info.reduction, length, meta.dtype):
        return None
    return info.reduction


def plan_split(kernel: Kernel, infos: dict[Node, NodeInfo], sizes: Sizes) -> Split:
    """Members with a short last axis whose every reader can take components: split them."""
    outputs = set(kernel.outputs)
    candidates: dict[Node, int] = {}
    for member in kernel.members:
        meta = _meta(member)
        length = _short(meta.shape[-1], sizes) if meta.ndim >= 2 else None
        if (infos[member].role in (Role.UFUNC, Role.POWER) and member not in outputs and length is not None
                and kernel.axis[member] != meta.ndim - 1):
            candidates[member] = length
    kinds = {m: _reduction_kind(infos[m], sizes) for m in kernel.members}
    changed = True
    while changed:
        changed = False
        for member in list(candidates):
            for user in member.users:
                if user in candidates or (kinds.get(user) is not None and user.args[0] is member):
                    continue
                del candidates[member]
                changed = True
                break
    # every remaining candidate ends in a reduction: its users are candidates or split reductions
    reductions = {m: k for m, k in kinds.items() if k is not None and m.args[0] in candidates}
    assumed: dict[Any, int] = {}
    for member in candidates:  # the split axis of each member, and of the operands lined up with it
        for node in (member, *member.all_input_nodes):
            val = node.meta.get("val")
            if isinstance(val, TensorMeta) and val.ndim > 0 and not isinstance(val.shape[-1], int):
                assumed[val.shape[-1]] = sizes.hint(val.shape[-1])
    return Split(candidates, reductions, assumed)
