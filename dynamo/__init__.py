"""dynamo: a JIT compiler for unmodified NumPy programs, built like TorchDynamo.

Public API: compile, explain, reset, disable, enable, config, list_backends, register_backend,
mark_dynamic, mark_static.
"""
from . import config
from .api import compile, disable, enable, reset
from .backends import list_backends, register_backend
from .exc import BackendCompilerFailed, DynamoError, InvalidBackend, Unsupported
from .explain import ExplainOutput, explain
from .shapes import DynamicShapeError, mark_dynamic, mark_static

__all__ = [
    "BackendCompilerFailed",
    "DynamicShapeError",
    "DynamoError",
    "ExplainOutput",
    "InvalidBackend",
    "Unsupported",
    "compile",
    "config",
    "disable",
    "enable",
    "explain",
    "list_backends",
    "mark_dynamic",
    "mark_static",
    "register_backend",
    "reset",
]
