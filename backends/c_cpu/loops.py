"""Loop nodes (fx_ir ForLoop) under backend "c": the loop runs each iteration's body as that body's
own compiled C program, made on the first iteration with each new layout of the body's arguments.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...fx_ir import ForLoop, GraphModule
from ..kernel_ir import specialize


def signature(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a body compiled for these arguments relies on: array shapes and dtypes, other types."""
    return tuple((a.shape, a.dtype.str) if hasattr(a, "shape") and hasattr(a, "dtype") else type(a) for a in args)


class CompiledBody:
    """`run_body` of a ForLoop: the body compiled by `compile_graph` per argument signature (the body's
    sizes may depend on the induction variable: each layout gets its own program, cached)."""

    def __init__(self, body: GraphModule, compile_graph: Callable[[GraphModule, list[Any]], Any]) -> None:
        self.body = body
        self.compile_graph = compile_graph
        self.programs: dict[tuple[Any, ...], Any] = {}

    def __call__(self, *args: Any) -> Any:
        key = signature(args)
        program = self.programs.get(key)
        if program is None:
            program = self.programs[key] = self.compile_graph(specialize(self.body, list(args)), list(args))
        return program(*args)


def compiled_loop(loop: ForLoop, compile_graph: Callable[[GraphModule, list[Any]], Any]) -> ForLoop:
    return loop.with_body(CompiledBody(loop.body, compile_graph))
