"""The eager backend: runs a captured graph exactly as traced (its generated forward).

It is the reference every other backend is compared against, and the debugging backend.
"""
from __future__ import annotations

from typing import Any, Callable

from .registry import register_backend


@register_backend(name="eager")
def eager(graph_module: Any, example_inputs: list) -> Callable[..., Any]:
    return graph_module.forward
