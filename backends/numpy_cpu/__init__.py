"""The "numpy" backend (the first tier of every graph under the default "tiered"): a graph becomes
optimized NumPy code in three named stages, plan -> source -> callable, each logged to
`dynamo.output_code` (DYNAMO_LOGS=output_code).

Anything the planner does not understand runs as the straight code of the graph; if a stage fails,
the graph runs as traced (graph_module.forward), with a warning in the log.
"""
from __future__ import annotations

import functools
import linecache
import logging
import time
import weakref
from collections.abc import Callable
from itertools import count
from typing import Any

from ...fx_ir import ForLoop, GraphModule, loop_of
from ...fx_ir.user_lines import exec_at_user_lines
from .. import settings
from ..registry import register_backend
from .blocking import Machine, decide, this_machine
from .loop_source import loop_function, while_function
from .plan import Plan, make_plan
from .runtime import BlockedLoop, DynamicLoop, scratch_key
from .source import ModuleSource, SourceWriter

log = logging.getLogger("dynamo.output_code")
_filenames = count()

__all__ = ["Machine", "NumpyBackend", "Plan", "numpy_backend", "this_machine"]


class NumpyBackend:
    """`backend(graph_module, example_inputs) -> callable`. `strict=True` raises instead of falling back;
    `strict=None` (the registered "numpy" backend) follows the frontend's strict setting (backends/settings.py).

    >>> compiled = NumpyBackend()(gm, [x, y])      # compiled.plan, compiled.source: what was made
    """

    def __init__(self, machine: Machine | None = None, *, strict: bool | None = None) -> None:
        self.machine = machine
        self.strict = strict

    def __call__(self, graph_module: GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        library = device_library(graph_module, example_inputs)
        if library is not None:
            return EagerOnDevice(graph_module, library)
        start = time.perf_counter()
        try:
            self._compile_loop_bodies(graph_module)
            plan = self.plan(graph_module, example_inputs)
            source = self.source(plan)
            function: Any = self.callable(plan, source)
        except Exception:
            if self.strict or (self.strict is None and settings.get("strict")):
                raise
            log.warning("numpy backend: could not optimize this graph; it runs as traced", exc_info=True)
            forward: Callable[..., Any] = graph_module.forward
            return forward
        seconds = time.perf_counter() - start
        function.compile_seconds = seconds
        log.debug("[callable] forward compiled in %.1f ms", seconds * 1e3)
        return function

    def _compile_loop_bodies(self, graph_module: GraphModule) -> None:
        """Each loop node's body becomes NumPy code of its own (this backend, recursively); the
        parent's code calls the loop, a Python `for` around the compiled body."""
        for node in graph_module.graph.nodes:
            loop = loop_of(node)
            if loop is not None:
                body = self(loop.body, [])
                whole = (loop_function if isinstance(loop, ForLoop) else while_function)(body, loop.num_carried)
                graph_module.set_attribute(node.target, loop.with_body(body, whole))

    # -- the three stages ---------------------------------------------------------------------------

    def plan(self, graph_module: GraphModule, example_inputs: list[Any]) -> Plan:
        plan = make_plan(graph_module, example_inputs, self.machine or this_machine())
        if log.isEnabledFor(logging.DEBUG):
            log.debug("[plan]\n%s", plan.describe())
        return plan

    def source(self, plan: Plan) -> ModuleSource:
        source = SourceWriter(plan).write()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("[source]\n%s", source.src)
        return source

    def callable(self, plan: Plan, source: ModuleSource) -> Callable[..., Any]:
        filename = f"<numpy-backend-{next(_filenames)}>"
        linecache.cache[filename] = (len(source.src), None, source.src.splitlines(keepends=True), filename)
        namespace = dict(source.globals)
        namespace["self"] = plan.module  # get_attr nodes read `self.<name>`
        exec_at_user_lines(source.src, filename, namespace)
        # Kernels whose blocks have the same shapes share scratch sets: they run one after another,
        # so one set serves them all and stays in cache (an unrolled loop has hundreds of such
        # kernels; a set each would be a cold buffer per kernel where NumPy reuses one hot one).
        pools: dict[tuple[Any, ...], list[Any]] = {}
        for spec in source.loops:
            if spec.layout_function is not None:
                decide_here = functools.partial(decide, machine=plan.machine)
                namespace[spec.loop_global] = DynamicLoop(namespace[spec.kernel_function], namespace[spec.layout_function],
                                                          decide_here, [(dtype, axis) for _, dtype, axis in spec.slots],
                                                          plan.machine.busy_load)
                continue
            free = pools.setdefault(scratch_key(spec.slots, spec.block), [])
            namespace[spec.loop_global] = BlockedLoop(namespace[spec.kernel_function], spec.extent, spec.block,
                                                      spec.threads, spec.slots, free, plan.machine.busy_load)
        function = namespace[source.function_name]
        weakref.finalize(function, linecache.cache.pop, filename, None)
        function.plan = plan
        function.source = source.src
        # with no blocked kernels, forward is straight NumPy code that calls nothing generated:
        # the frontend may run it inside the caller's frame (dynamo/graph_inline.py)
        # (a loop node runs its body through Python calls that the hook must not see: never inlined)
        function.inlinable = not source.loops and not any(n.op == "call_module" for n in plan.graph.nodes)
        return function


def device_library(graph_module: GraphModule, example_inputs: list[Any]) -> str | None:
    """The library of the graph's GPU array inputs (CuPy), or None when every input is on the host:
    the frontend marks their placeholders; an array exposing __cuda_array_interface__ is one too."""
    for node in graph_module.graph.nodes:
        if node.op == "placeholder" and node.meta.get("device"):
            return str(node.meta.get("array_library") or "the array library")
    for value in example_inputs:
        if hasattr(type(value), "__cuda_array_interface__"):
            return type(value).__module__.partition(".")[0]
    return None


class EagerOnDevice:
    """The graph as traced, for GPU array inputs: its NumPy calls dispatch to their library (CuPy),
    exactly as the program's own calls do. The generated code cannot run there: its out= buffers
    are NumPy arrays, which CuPy refuses."""

    def __init__(self, graph_module: GraphModule, library: str) -> None:
        self.forward = graph_module.forward
        self.notes = [f"runs eagerly through {library}: {library} inputs; backend='triton' fuses kernels on the GPU"]

    def __call__(self, *args: Any) -> Any:
        return self.forward(*args)


numpy_backend = register_backend(NumpyBackend(), name="numpy")
