"""Backends: turn fx_ir graphs into callables (eager, numpy, triton).

Installed as dynamo.backends; sees only fx_ir graphs and the op registry.
"""
from . import eager, numpy_cpu  # noqa: F401  (register "eager" and "numpy")
from . import triton_gpu  # noqa: F401  (register "triton"; imports triton only when compiling)
from .registry import CompilerFn, UnknownBackend, list_backends, lookup_backend, register_backend

__all__ = ["CompilerFn", "UnknownBackend", "list_backends", "lookup_backend", "register_backend"]
