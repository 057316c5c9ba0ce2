"""Graph passes, each a function (Graph or GraphModule) -> bool changed, and the default pipeline.

run_passes() applies DEFAULT_PASSES in order and lints the graph after each one.
"""
from __future__ import annotations

from collections.abc import Sequence

from .base import Pass, PassTarget, finish, split_target
from .constant_folding import fold_constants
from .cse import eliminate_common_subexpressions
from .dead_code import eliminate_dead_code

# Folding first exposes duplicates and dead inputs; CSE then leaves dead nodes for DCE to erase.
DEFAULT_PASSES: tuple[Pass, ...] = (fold_constants, eliminate_common_subexpressions, eliminate_dead_code)


def run_passes(target: PassTarget, passes: Sequence[Pass] = DEFAULT_PASSES, *, lint: bool = True) -> bool:
    """Run `passes` in order (linting after each when `lint`); True if any of them changed the graph."""
    graph, _ = split_target(target)
    changed = False
    for apply in passes:
        changed |= apply(target)
        if lint:
            graph.lint()
    return changed


__all__ = [
    "DEFAULT_PASSES",
    "Pass",
    "PassTarget",
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "finish",
    "fold_constants",
    "run_passes",
    "split_target",
]
