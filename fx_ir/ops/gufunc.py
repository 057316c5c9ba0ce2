"""Shape rule of generalized ufuncs from their signature, e.g. matmul's (n?,k),(k,m?)->(n?,m?).

Follows NumPy's rules: flexible (?) core dims may be missing, same-named core dims must match.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .shapes import Shape, broadcast_shapes, fits_into, shape_str
from .symbolic import Size, normalize_shape, sizes_equal


@dataclass(frozen=True)
class CoreDim:
    name: str          # a label, or the fixed size spelled as digits
    flexible: bool     # "n?": may be absent from an operand with too few dims

    @property
    def fixed(self) -> int | None:
        return int(self.name) if self.name.isdigit() else None


@dataclass(frozen=True)
class Signature:
    text: str
    inputs: tuple[tuple[CoreDim, ...], ...]
    outputs: tuple[tuple[CoreDim, ...], ...]


@lru_cache(maxsize=64)
def parse_signature(text: str) -> Signature:
    def operands(part: str) -> tuple[tuple[CoreDim, ...], ...]:
        groups = re.findall(r"\(([^)]*)\)", part)
        return tuple(tuple(CoreDim(tok.strip().rstrip("?"), tok.strip().endswith("?"))
                           for tok in g.split(",") if tok.strip()) for g in groups)
    ins, outs = text.replace(" ", "").split("->")
    return Signature(text, operands(ins), operands(outs))


def gufunc_shapes(name: str, signature: str, in_shapes: Sequence[Shape],
                  out_shapes: Sequence[Shape | None] = ()) -> list[Shape]:
    """Result shapes of a gufunc call; ValueError worded like NumPy's on mismatches."""
    sig = parse_signature(signature)
    operands = list(sig.inputs) + list(sig.outputs)
    shapes: list[Shape | None] = list(in_shapes) + list(out_shapes) + [None] * (
        len(sig.outputs) - len(out_shapes))
    nin = len(sig.inputs)
    missing: set[str] = set()

    def core_count(core: tuple[CoreDim, ...]) -> int:
        return sum(1 for d in core if d.name not in missing)

    def label(i: int) -> tuple[str, int]:
        return ("Input", i) if i < nin else ("Output", i - nin)

    for i, (shape, core) in enumerate(zip(shapes, operands)):
        if shape is None:
            continue
        for d in core:
            if len(shape) >= core_count(core):
                break
            if d.flexible and d.name not in missing:
                missing.add(d.name)
        if len(shape) < core_count(core):
            kind, k = label(i)
            raise ValueError(f"{name}: {kind} operand {k} does not have enough dimensions (has "
                             f"{len(shape)}, gufunc core with signature {signature} requires "
                             f"{core_count(core)})")

    sizes: dict[str, Size] = {}
    loops: list[Shape] = []
    for i, (shape, core) in enumerate(zip(shapes, operands)):
        if shape is None:
            continue
        present = [d for d in core if d.name not in missing]
        start = len(shape) - len(present)
        loops.append(tuple(shape[:start]))
        for j, d in enumerate(present):
            size = shape[start + j]
            bound = d.fixed if d.fixed is not None else sizes.get(d.name)
            if bound is None:
                sizes[d.name] = size
            elif not sizes_equal(size, bound):
                kind, k = label(i)
                raise ValueError(f"{name}: {kind} operand {k} has a mismatch in its core dimension "
                                 f"{j}, with gufunc signature {signature} (size {size} is "
                                 f"different from {bound})")
    loop = broadcast_shapes(*loops[:nin])
    results: list[Shape] = []
    for k, core in enumerate(sig.outputs):
        given = shapes[nin + k]
        if given is not None:
            given_loop = normalize_shape(given[: len(given) - core_count(core)])
            if not fits_into(loop, given_loop):
                raise ValueError(f"non-broadcastable output operand with shape {shape_str(given)} "
                                 f"doesn't match the broadcast shape {shape_str(loop)}")
            results.append(normalize_shape(given))
            continue
        dims: list[Size] = []
        for j, d in enumerate(core):
            if d.name in missing:
                continue
            if d.fixed is None and d.name not in sizes:
                raise ValueError(f"{name}: Output operand {k} has core dimension {j} unspecified, "
                                 f"with gufunc signature {signature}")
            dims.append(d.fixed if d.fixed is not None else sizes[d.name])
        results.append(normalize_shape((*loop, *dims)))
    return results
