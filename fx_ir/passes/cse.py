"""Common subexpression elimination: a pure node computing exactly what an earlier one computes is replaced by it.

Never merges impure or random nodes, nor two values that could be mutated or returned to the caller separately.
"""
from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from .. import effects
from ..node import Node, Opcode
from .aliasing import AliasInfo
from .base import PassTarget, finish, split_target

_MERGEABLE_OPS = (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD, Opcode.GET_ATTR)


def _value_key(value: Any) -> Hashable:
    # Constants are keyed by type and repr: 1, 1.0 and True compare equal in Python but give
    # different NumPy dtypes, and 0.0 == -0.0 but they are different numbers.
    if isinstance(value, Node):
        return ("node", value)
    kind = type(value)
    if kind in (tuple, list):
        return (kind.__name__, tuple(_value_key(v) for v in value))
    if kind is dict:
        return ("dict", tuple((_value_key(k), _value_key(v)) for k, v in value.items()))
    if kind is slice:
        return ("slice", _value_key(value.start), _value_key(value.stop), _value_key(value.step))
    if isinstance(value, (np.ndarray, np.random.Generator, np.random.RandomState)) or kind.__hash__ is None:
        return ("object", id(value))  # only the very same object is the same constant
    if isinstance(value, (int, float, complex, str, bytes, np.generic)) or value is None or value is Ellipsis:
        return (kind, repr(value))
    return ("object", id(value))


def _target_key(target: Any) -> Hashable:
    try:
        hash(target)
    except TypeError:
        return ("object", id(target))
    key: Hashable = target
    return key


def node_key(node: Node) -> Hashable:
    """What a node computes, up to renaming: equal keys mean interchangeable pure nodes."""
    kwargs = tuple(sorted((k, _value_key(v)) for k, v in node.kwargs.items()))
    return (node.op, _target_key(node.target), _value_key(node.args), kwargs)


def _mergeable(node: Node) -> bool:
    if node.op not in _MERGEABLE_OPS or node.is_impure():
        return False
    return not effects.is_random(node.target)


def eliminate_common_subexpressions(target: PassTarget) -> bool:
    """Replace each pure node by an earlier identical one where sharing the value is safe; True if changed."""
    graph, _ = split_target(target)
    aliases = AliasInfo(graph)
    first_seen: dict[Hashable, Node] = {}
    changed = False
    for node in list(graph.nodes):
        # Reading an array that the graph mutates: the same expression may differ before and after.
        if not _mergeable(node) or aliases.reads_changing_memory(node):
            continue
        # Inputs were already replaced by their representatives, so duplicates have equal keys.
        key = node_key(node)
        earlier = first_seen.get(key)
        if earlier is None:
            first_seen[key] = node
            continue
        if not aliases.can_share(earlier, node):
            continue
        node.replace_all_uses_with(earlier)
        aliases.merge(earlier, node)
        graph.erase_node(node)
        changed = True
    return finish(target, changed)
