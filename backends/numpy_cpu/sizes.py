"""Sizes in a plan: ints, or sympy expressions of the graph inputs' dynamic sizes (s0, s1, ...).

Choices that only steer speed (which axis to fuse along) use each symbol's hint, its value in the
example inputs; choices that depend on size (block rows, threads, blocking at all) are made at run time.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from ...fx_ir.lazy_sympy import is_sympy, sympy

from ...fx_ir import Graph, Node, TensorMeta
from ...fx_ir.size_source import python_source
from ...fx_ir.small_size import SizeExpr


def is_static(value: Any) -> bool:
    if isinstance(value, SizeExpr):
        return False
    return isinstance(value, (int, np.integer)) or (is_sympy(value) and isinstance(value, sympy.Integer))


def is_symbol(value: Any) -> bool:
    """A size that is one symbol (s0), in the small form or sympy's."""
    if isinstance(value, SizeExpr):
        return value.is_Symbol
    return is_sympy(value) and isinstance(value, sympy.Symbol)


class Sizes:
    """The symbols of one graph: each one's hint, and the input dimension that gives it at run time."""

    def __init__(self, hints: dict[sympy.Symbol, int], origins: dict[sympy.Symbol, tuple[Node, int]]) -> None:
        self.hints = hints
        self.origins = origins

    @classmethod
    def of_graph(cls, graph: Graph, example_inputs: list[Any]) -> Sizes:
        """Every symbol that is a whole dimension of a placeholder, with that dimension's example size."""
        hints: dict[sympy.Symbol, int] = {}
        origins: dict[sympy.Symbol, tuple[Node, int]] = {}
        inputs = iter(example_inputs)
        for node in graph.nodes:
            if node.op != "placeholder":
                continue
            value = next(inputs, None)
            meta = node.meta.get("val")
            if not isinstance(meta, TensorMeta) or not isinstance(value, np.ndarray) or value.ndim != meta.ndim:
                continue
            for dim, size in enumerate(meta.shape):
                if is_symbol(size) and size not in origins:
                    origins[size] = (node, dim)
                    hints[size] = int(value.shape[dim])
        return cls(hints, origins)

    @property
    def dynamic(self) -> bool:
        return bool(self.origins)

    def hint(self, value: Any) -> int:
        """The value of a size for the example inputs (KeyError-free: unknown symbols make it -1)."""
        if not is_sympy(value):
            return int(value)
        if value.free_symbols - self.hints.keys():
            return -1
        return int(value.xreplace(self.hints))

    def known(self, value: Any) -> bool:
        """True if the generated code can compute `value` at run time (ints, and our symbols)."""
        return not is_sympy(value) or value.free_symbols <= self.origins.keys()

    def shape_known(self, meta: TensorMeta) -> bool:
        return all(self.known(d) for d in meta.shape)


def symbols_of(values: Iterable[Any]) -> set[sympy.Symbol]:
    found: set[sympy.Symbol] = set()
    for value in values:
        if is_sympy(value):
            found |= value.free_symbols
    return found


def product(values: Iterable[Any]) -> Any:
    """Product of sizes: an int when all are static, else a sympy expression."""
    result = math.prod(values, start=1)
    return int(result) if is_static(result) else result


def source(value: Any, names: dict[sympy.Symbol, str]) -> str:
    """Python source of a size (exact integer arithmetic on the symbols' run-time values); text stays text."""
    if isinstance(value, str):
        return value
    if not is_sympy(value):
        return repr(int(value))
    text = python_source(value, names)
    return text[1:-1] if text.startswith("(") and _balanced(text[1:-1]) else text


def shape_source(shape: tuple[Any, ...], names: dict[sympy.Symbol, str]) -> str:
    parts = [source(d, names) for d in shape]
    if not parts:
        return "()"
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0
