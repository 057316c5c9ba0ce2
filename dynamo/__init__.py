"""dynamo: a JIT compiler for unmodified NumPy programs, built like TorchDynamo.

Public API: compile, explain, reset, disable, enable, config, list_backends, register_backend.
"""
from . import config
from .api import compile, disable, enable, reset
from .backends import list_backends, register_backend
from .exc import BackendCompilerFailed, DynamoError, InvalidBackend, Unsupported

__all__ = [
    "BackendCompilerFailed",
    "DynamoError",
    "InvalidBackend",
    "Unsupported",
    "compile",
    "config",
    "disable",
    "enable",
    "list_backends",
    "register_backend",
    "reset",
]
