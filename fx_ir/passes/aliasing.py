"""Which node values may be mutated or handed to the caller: the memory question that CSE and folding must ask.

Merging two nodes or caching a folded array is only safe if no alias of the value is written or returned.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import effects
from ..codegen import BINARY_OPERATORS, UNARY_OPERATORS
from ..graph import Graph
from ..node import Node, Opcode
from ..tensor_meta import TensorMeta

# Calls whose result is a new object that shares no memory with their arguments.
FRESH_RESULT_FUNCTIONS: frozenset[Any] = frozenset({
    np.copy, np.dot, np.where, np.sum, np.mean, np.prod, np.std, np.var, np.max, np.min,
    np.argmin, np.argmax, np.cumsum, np.cumprod, np.linalg.norm, np.linalg.inv, np.linalg.solve,
    np.zeros_like, np.ones_like, np.full_like, np.empty_like, np.concatenate, np.stack, np.outer,
    np.sort, np.clip,
})
FRESH_RESULT_METHODS: frozenset[str] = frozenset({
    "copy", "sum", "mean", "prod", "std", "var", "max", "min", "argmin", "argmax", "cumsum",
    "cumprod", "dot", "round", "clip", "tolist", "item", "all", "any", "trace", "flatten",
})
_FRESH_OPERATORS = frozenset(BINARY_OPERATORS) - {operator.is_, operator.is_not} | frozenset(UNARY_OPERATORS)


def result_is_fresh(node: Node) -> bool:
    """True if the node's value surely shares no memory with its inputs (so aliasing stops there)."""
    if node.op == Opcode.CALL_FUNCTION and not node.is_impure():
        target = node.target
        if isinstance(target, np.ufunc):
            return True
        try:
            return target in _FRESH_OPERATORS or target in FRESH_RESULT_FUNCTIONS
        except TypeError:
            return False
    if node.op == Opcode.CALL_METHOD and not node.is_impure():
        if node.target == "astype":
            return node.kwargs.get("copy", True) is not False
        return node.target in FRESH_RESULT_METHODS
    return False


def is_immutable_value(value: Any) -> bool:
    """Values nobody can mutate in place: Python and NumPy scalars, strings, dtypes, tuples of those."""
    if isinstance(value, tuple):
        return all(is_immutable_value(v) for v in value)
    return isinstance(value, (int, float, complex, str, bytes, bool, type(None), np.generic, np.dtype, slice))


def known_immutable(node: Node) -> bool:
    """From recorded meta: the node holds a scalar, so sharing it is harmless."""
    val = node.meta.get("val")
    if isinstance(val, TensorMeta):
        return val.scalar
    return "val" in node.meta and is_immutable_value(val)


class AliasInfo:
    """For each node: can its value, or a view of it, reach the output or an impure (mutating) node?

    Computed once per graph in reverse order; a fresh-result user stops the walk. `may_change`
    then marks nodes whose memory some node of the graph may write to: the node itself or,
    through views and unknown calls, what it was computed from.
    """

    def __init__(self, graph: Graph) -> None:
        self.reaches_output: dict[Node, bool] = {}
        self.reaches_impure: dict[Node, bool] = {}
        for node in reversed(graph.nodes):
            out = imp = False
            for user in node.users:
                if user.op == Opcode.OUTPUT:
                    out = True
                elif user.is_impure() or effects.is_random(user.target):
                    imp = True
                elif not result_is_fresh(user):
                    out = out or self.reaches_output.get(user, True)
                    imp = imp or self.reaches_impure.get(user, True)
            self.reaches_output[node], self.reaches_impure[node] = out, imp
        self.may_change: dict[Node, bool] = {}
        for node in graph.nodes:
            changes = self.reaches_impure[node]
            if not changes and not result_is_fresh(node):
                changes = any(self.may_change.get(inp, True) for inp in node.all_input_nodes)
            self.may_change[node] = changes

    def reads_changing_memory(self, node: Node) -> bool:
        """Whether an input of `node` may be written to by the graph: then its value depends on *when* it runs."""
        return any(self.may_change.get(inp, True) for inp in node.all_input_nodes)

    def can_share(self, a: Node, b: Node) -> bool:
        """Whether a and b may hold one and the same object without anyone noticing."""
        if known_immutable(a) and known_immutable(b):
            return True
        if self.reaches_impure.get(a, True) or self.reaches_impure.get(b, True):
            return False
        return not (self.reaches_output.get(a, True) and self.reaches_output.get(b, True))

    def merge(self, keep: Node, gone: Node) -> None:
        """Record that `keep` now also plays the part of `gone`."""
        self.reaches_output[keep] = self.reaches_output.get(keep, True) or self.reaches_output.get(gone, True)
        self.reaches_impure[keep] = self.reaches_impure.get(keep, True) or self.reaches_impure.get(gone, True)

    def may_be_mutated_or_returned(self, node: Node) -> bool:
        return self.reaches_output.get(node, True) or self.reaches_impure.get(node, True)
