"""Backends: turn fx_ir graphs into callables (eager, numpy, triton).

Installed as dynamo.backends; sees only fx_ir graphs and the op registry.
"""
from . import eager, numpy_cpu  # noqa: F401  (register "eager" and "numpy")
from .registry import CompilerFn, UnknownBackend, list_backends, lookup_backend, register_backend, register_lazy

# imported when first named: its kernel IR and code generators are not needed by most programs
register_lazy("triton", f"{__name__}.triton_gpu")

__all__ = ["CompilerFn", "UnknownBackend", "list_backends", "lookup_backend", "register_backend", "register_lazy"]
