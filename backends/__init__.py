"""Backends: turn fx_ir graphs into callables (eager, numpy, triton, c, tiered).

Installed as dynamo.backends; sees only fx_ir graphs and the op registry.
"""
from . import eager  # noqa: F401  (registers "eager")
from .registry import (CompilerFn, UnknownBackend, graph_op_limit, list_backends, lookup_backend, loops_native,
                       register_backend, register_lazy)

# imported when a graph first needs them (`import dynamo` and compile() load neither): the numpy
# backend's planner and code generators, Triton's kernel IR
register_lazy("numpy", f"{__name__}.numpy_cpu")
register_lazy("triton", f"{__name__}.triton_gpu")
register_lazy("c", f"{__name__}.c_cpu", compiles_loops=True)
register_lazy("tiered", f"{__name__}.tiered", op_limit_setting="tier_up_max_ops")  # numpy first, "c" for hot graphs

__all__ = ["CompilerFn", "UnknownBackend", "graph_op_limit", "list_backends", "lookup_backend", "loops_native", "register_backend",
           "register_lazy"]
