"""dynamo: a JIT compiler for unmodified NumPy programs, built like TorchDynamo.

Public API: compile, explain, reset, disable, enable, config, list_backends, register_backend,
mark_dynamic, mark_static.
"""
from typing import TYPE_CHECKING, Any

from . import config
from .api import compile, disable, enable, reset
from .backends import list_backends, register_backend, settings as _backend_settings
from .exc import BackendCompilerFailed, DynamoError, InternalCompilerError, InvalidBackend, Unsupported
from .explain import ExplainOutput, explain

_backend_settings.install(config)  # the backends read dynamo.config without importing dynamo

if TYPE_CHECKING:
    from .shapes import DynamicShapeError, mark_dynamic, mark_static

# Imported on first use: dynamic shapes bring the op registry and the IR, which a program only
# needs once something compiles (`import dynamo` stays cheap).
_DEFERRED = {"DynamicShapeError": "shapes", "mark_dynamic": "shapes", "mark_static": "shapes"}


def __getattr__(name: str) -> Any:
    if name in _DEFERRED:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_DEFERRED[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BackendCompilerFailed",
    "DynamicShapeError",
    "DynamoError",
    "ExplainOutput",
    "InternalCompilerError",
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
