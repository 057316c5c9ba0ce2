"""Common subexpression elimination: a pure node computing exactly what an earlier one computes is replaced by it.

Never merges impure or random nodes, nodes that may warn, nor two values that could be mutated or returned to
the caller separately.
"""
from __future__ import annotations

import builtins
import operator
from collections.abc import Hashable
from typing import Any

import numpy as np

from .. import effects
from ..node import Node, Opcode
from ..numpy_random import generator_types
from ..ops import OpKind, lookup_attribute, lookup_function, lookup_method
from ..tensor_meta import TensorMeta
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
    if isinstance(value, (np.ndarray, *generator_types())) or kind.__hash__ is None:
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


# kinds of op that move or make values without arithmetic: they never set a floating-point flag
_QUIET_KINDS = (OpKind.VIEW, OpKind.METADATA, OpKind.CREATION, OpKind.INDEXING, OpKind.COPY_SHAPE)
# integer arithmetic that warns: division by zero (and NumPy's MIN // -1 overflow), an integer reciprocal of 0
# (fuzz seeds 1062758, 1065153), negative powers raise
_INTEGER_WARNING_NAMES = frozenset({"floor_divide", "remainder", "mod", "fmod", "divmod", "true_divide", "divide",
                                    "reciprocal",
                                    "power", "floordiv", "truediv", "pow", "ifloordiv", "imod", "itruediv",
                                    "ipow", "__floordiv__", "__mod__", "__truediv__", "__pow__", "__divmod__"})


def _row_kind(node: Node) -> OpKind | None:
    if node.op == Opcode.CALL_METHOD:
        row = lookup_method(node.target)
    elif node.target is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str):
        row = lookup_attribute(node.args[1])
    elif node.op == Opcode.CALL_FUNCTION:
        row = lookup_function(node.target)
    else:
        return None
    return None if row is None else row.kind


def _is_inexact(value: Any) -> bool:
    if isinstance(value, TensorMeta):
        return value.dtype.kind in "fc"
    return isinstance(value, (float, complex, np.inexact))


def _casts_inexact_to_integers(node: Node) -> bool:
    """Whether a node that only moves or makes values converts floats into integers or booleans: NaN and
    infinities warn 'invalid value encountered in cast' (fuzz seed 1063206: np.full_like(ints, inf) warned
    before an earlier remainder's 'divide by zero')."""
    flat: list[Any] = []
    stack: list[Any] = [*node.args, *node.kwargs.values()]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        else:
            flat.append(item.meta.get("val") if isinstance(item, Node) else item)
    written = node.args[0].meta.get("val") if node.target is operator.setitem and node.args \
        and isinstance(node.args[0], Node) else node.meta.get("val")
    results = written if isinstance(written, (tuple, list)) else (written,)
    return any(_is_inexact(v) for v in flat) and any(
        isinstance(r, TensorMeta) and r.dtype.kind in "biu" for r in results)


def may_warn(node: Node) -> bool:
    """Whether NumPy may warn running this node (a floating-point flag, an integer division by zero).
    NumPy warns once per call: two identical calls that raise warn twice (fuzz seeds 1000835 and 1003127,
    `np.where(a < 300, a, 1)` unrolled twice warned 'invalid value encountered in less' once merged)."""
    if node.op == Opcode.GET_ATTR:
        return False
    if node.op == Opcode.CALL_MODULE:   # a loop node: its body's ops may warn, whatever its inputs (fuzz seed
        return True                      # 1070618: np.power(1e300, ints) in a loop over uint16 arguments)
    if _row_kind(node) in _QUIET_KINDS:
        return _casts_inexact_to_integers(node)
    values = [n.meta.get("val") for n in node.all_input_nodes] + [node.meta.get("val")]
    constants = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, (float, complex))]
    if constants or any(isinstance(v, TensorMeta) and v.dtype.kind in "fc" for v in values):
        return True
    if any(isinstance(v, (float, complex, np.inexact)) for v in values):
        return True
    if not any(isinstance(v, TensorMeta) or isinstance(v, (int, np.integer)) for v in values):
        return False  # nothing known about the values (a graph built by hand)
    name = getattr(node.target, "__name__", node.target if isinstance(node.target, str) else "")
    return name in _INTEGER_WARNING_NAMES or node.target in (operator.floordiv, operator.mod, operator.truediv,
                                                            operator.pow, divmod)


def _mergeable(node: Node) -> bool:
    if node.op not in _MERGEABLE_OPS or node.is_impure():
        return False
    return not effects.is_random(node.target) and not may_warn(node)


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
