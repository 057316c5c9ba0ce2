"""What every pass shares: it takes a Graph or a GraphModule and returns whether it changed anything.

Given a GraphModule, a pass edits its graph and recompiles it when something changed.
"""
from __future__ import annotations

from collections.abc import Callable
from ..graph import Graph
from ..graph_module import GraphModule

PassTarget = Graph | GraphModule
Pass = Callable[[PassTarget], bool]


def split_target(target: PassTarget) -> tuple[Graph, GraphModule | None]:
    if isinstance(target, GraphModule):
        return target.graph, target
    if isinstance(target, Graph):
        owner = target.owning_module
        return target, owner if isinstance(owner, GraphModule) else None
    raise TypeError(f"a pass takes a Graph or a GraphModule, not {type(target).__name__}")


def finish(target: PassTarget, changed: bool) -> bool:
    """Recompile a GraphModule the pass was given, if the pass changed its graph."""
    if changed and isinstance(target, GraphModule):
        target.recompile()
    return changed
