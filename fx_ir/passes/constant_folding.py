"""Constant folding: nodes computed only from constants (and get_attr constants) are evaluated once, at compile time.

Conservative: never folds impure or random calls, calls that raise or warn, or arrays that could be mutated or returned.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import effects
from ..graph import Graph
from ..graph_module import GraphModule
from ..interpreter import Interpreter
from ..node import Node, Opcode
from ..thread_warnings import warnings_raised
from .aliasing import AliasInfo, is_immutable_value
from .base import PassTarget, finish, split_target

FOLDED_ATTRIBUTE_PREFIX = "folded_constant"
_FOLDABLE_OPS = (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD)


class _ConstantEvaluator(Interpreter):
    """Evaluates single nodes with the interpreter's per-opcode methods, reading constant inputs from env."""

    def __init__(self, graph: Graph, module: GraphModule | None) -> None:
        super().__init__(graph, garbage_collect_values=False)
        self.module = module


def _inline_constant(value: Any) -> bool:
    """Values that read well inline in generated code (no attribute needed)."""
    return is_immutable_value(value) and not isinstance(value, slice)


def _try_evaluate(evaluator: _ConstantEvaluator, node: Node) -> tuple[bool, Any]:
    # Anything that raises or warns stays in the graph, so the user sees it at run time as usual.
    try:
        with warnings_raised(), np.errstate(all="raise"):
            return True, evaluator.run_node(node)
    except Exception:
        return False, None


def fold_constants(target: PassTarget, *, fold_get_attr: bool = True, max_bytes: int = 1 << 22) -> bool:
    """Evaluate constant subgraphs once; replace them by inline constants or new get_attr attributes.

    `fold_get_attr=False` treats get_attr values as possibly changing between calls. Arrays larger
    than `max_bytes` are left to be computed at run time (they would stay in memory forever).
    Returns True if the graph changed.
    """
    graph, module = split_target(target)
    evaluator = _ConstantEvaluator(graph, module)
    aliases = AliasInfo(graph)
    # An attribute the graph itself writes to is no constant: its value changes from call to call.
    written = {n.target for n in graph.nodes if n.op == Opcode.GET_ATTR and aliases.reaches_impure[n]}
    values: dict[Node, Any] = {}
    for node in graph.nodes:
        if node.op == Opcode.GET_ATTR:
            if not fold_get_attr or module is None or node.target in written:
                continue
            ok, value = _try_evaluate(evaluator, node)
        elif _foldable(node, values) and not aliases.reads_changing_memory(node):
            ok, value = _try_evaluate(evaluator, node)
        else:
            continue
        if ok:
            values[node] = evaluator.env[node] = value

    folded = {
        n for n, v in values.items()
        if n.op != Opcode.GET_ATTR and _safe_to_share(n, v, aliases, max_bytes)
    }
    changed = False
    for node in list(graph.nodes):
        if node not in folded or all(user in folded for user in node.users):
            continue
        _materialize(graph, module, node, values[node], folded)
        changed = True
    for node in reversed(graph.nodes):
        if node in folded and not node.users:
            graph.erase_node(node)
            changed = True
    return finish(target, changed)


def _foldable(node: Node, values: dict[Node, Any]) -> bool:
    if node.op not in _FOLDABLE_OPS or node.is_impure() or effects.is_random(node.target):
        return False
    return all(inp in values for inp in node.all_input_nodes)


def _safe_to_share(node: Node, value: Any, aliases: AliasInfo, max_bytes: int) -> bool:
    if is_immutable_value(value):
        return True
    if isinstance(value, np.ndarray):
        # One array object now serves every call: nobody may write to it or receive it.
        return value.dtype != object and value.nbytes <= max_bytes and not aliases.may_be_mutated_or_returned(node)
    return False  # lists, dicts, arbitrary objects: mutable in ways we cannot see


def _materialize(graph: Graph, module: GraphModule | None, node: Node, value: Any, folded: set[Node]) -> None:
    """Make the non-folded users of `node` read its value as a constant or a new get_attr node."""
    replacement: Any = value
    if not _inline_constant(value) and module is not None:
        qualname = _free_attribute_name(module)
        module.set_attribute(qualname, value)
        with graph.inserting_before(node):
            replacement = graph.get_attr(qualname)
        replacement.meta = dict(node.meta)
    for user in list(node.users):
        if user not in folded:
            user.replace_input_with(node, replacement)


def _free_attribute_name(module: GraphModule) -> str:
    index = 0
    while hasattr(module, f"{FOLDED_ATTRIBUTE_PREFIX}_{index}"):
        index += 1
    return f"{FOLDED_ATTRIBUTE_PREFIX}_{index}"

