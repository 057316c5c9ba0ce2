"""Dead code elimination as a pass: erase nodes nobody uses, keeping anything with side effects.

A thin wrapper over Graph.eliminate_dead_code, which holds the rule (see effects.py for impurity).
"""
from __future__ import annotations

from collections.abc import Callable

from ..node import Node
from .base import PassTarget, finish, split_target


def eliminate_dead_code(target: PassTarget, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
    """Erase unused pure nodes; `is_impure_node` can protect more. True if the graph changed."""
    graph, _ = split_target(target)
    return finish(target, graph.eliminate_dead_code(is_impure_node))
