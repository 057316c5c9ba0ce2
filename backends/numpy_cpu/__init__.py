"""The "numpy" backend (the default): a graph becomes straight NumPy code, its generated forward.

The optimizing stages (memory planning, blocked fusion, threads) are built on top of this one.
"""
from __future__ import annotations

from typing import Any, Callable

from ..registry import register_backend


@register_backend(name="numpy")
def numpy_backend(graph_module: Any, example_inputs: list) -> Callable[..., Any]:
    return graph_module.forward
