"""dynamo: a JIT compiler for unmodified NumPy programs, built like TorchDynamo.

Public API: compile, explain, reset, disable, enable, config, list_backends, register_backend.
"""
from . import config
from .api import compile, disable, enable, reset
from .backends import list_backends, register_backend
from .exc import BackendCompilerFailed, DynamoError, InvalidBackend, Unsupported
from .explain import ExplainOutput, explain

__all__ = [
    "BackendCompilerFailed",
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
    "register_backend",
    "reset",
]
