"""The backend registry: names -> compiler functions `backend(graph_module, example_inputs) -> callable`.

`register_backend` adds one (decorator or call), `lookup_backend` resolves a name or passes a
callable through, `list_backends` names them for error messages and users.
What a backend returns may have a `notes` attribute (strings: nodes it did not optimize, and why);
dynamo.explain() lists them under the graph, and DYNAMO_LOGS=graph logs them.
A backend that compiles loop nodes into native loops says so with a true `compiles_loops`
attribute (`loops_native` reads it, without importing a lazily registered backend): the frontend
then keeps short loops nested in a captured loop as loop nodes instead of unrolling them.
A backend whose graphs past some size lose their best code names the setting that holds that size
in `op_limit_setting` (`graph_op_limit` reads it): the frontend then keeps short loops that unrolled
past it as loop nodes.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from . import settings

CompilerFn = Callable[[Any, list], Callable[..., Any]]

_BACKENDS: dict[str, CompilerFn] = {}
_LAZY: dict[str, str] = {}  # name -> module that registers it when imported
_LAZY_NATIVE_LOOPS: set[str] = set()  # lazily registered names whose backend compiles loop nodes natively
_LAZY_OP_LIMITS: dict[str, str] = {}  # lazily registered name -> its backend's op_limit_setting


class UnknownBackend(ValueError):
    """No backend of that name; the message lists the registered ones."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name
        self.known = list_backends()


def register_backend(compiler_fn: CompilerFn | None = None, *, name: str | None = None):
    """Register `compiler_fn` under `name` (default: its __name__); usable as a decorator."""

    def register(fn: CompilerFn) -> CompilerFn:
        if not callable(fn):
            raise TypeError(f"a backend must be callable, got {type(fn).__name__}")
        key = name or fn.__name__
        if key in _BACKENDS and _BACKENDS[key] is not fn:
            raise ValueError(f"a backend named {key!r} is already registered")
        _BACKENDS[key] = fn
        return fn

    return register if compiler_fn is None else register(compiler_fn)


def register_lazy(name: str, module: str, *, compiles_loops: bool = False, op_limit_setting: str | None = None) -> None:
    """`name` is registered by importing `module`, which happens when the name is first looked up;
    `compiles_loops` and `op_limit_setting`: the backend's attributes, known before the import."""
    _LAZY[name] = module
    if compiles_loops:
        _LAZY_NATIVE_LOOPS.add(name)
    if op_limit_setting is not None:
        _LAZY_OP_LIMITS[name] = op_limit_setting


def loops_native(backend: Any) -> bool:
    """Whether `backend` (a name or a compiler callable) compiles loop nodes into native loops, so
    that a loop node costs it no more per iteration than the same code unrolled."""
    if isinstance(backend, str):
        if backend in _LAZY_NATIVE_LOOPS:
            return True
        backend = _BACKENDS.get(backend)
    if isinstance(backend, DeferredBackend):
        return backend.__name__ in _LAZY_NATIVE_LOOPS
    return bool(getattr(backend, "compiles_loops", False))


def graph_op_limit(backend: Any) -> int | None:
    """The most ops (loop bodies' included) a graph of `backend` may have and still get the backend's
    best code (backend tiered: past config.tier_up_max_ops a graph stays on numpy); None: no limit."""
    if isinstance(backend, DeferredBackend):
        backend = backend.__name__
    if isinstance(backend, str):
        setting = _LAZY_OP_LIMITS.get(backend, getattr(_BACKENDS.get(backend), "op_limit_setting", None))
    else:
        setting = getattr(backend, "op_limit_setting", None)
    return None if setting is None else int(settings.get(setting))


def lookup_backend(backend: str | CompilerFn) -> CompilerFn:
    if callable(backend):
        return backend
    if isinstance(backend, str) and backend not in _BACKENDS and backend in _LAZY:
        importlib.import_module(_LAZY[backend])
    if isinstance(backend, str) and backend in _BACKENDS:
        return _BACKENDS[backend]
    raise UnknownBackend(str(backend))


class DeferredBackend:
    """A backend registered with register_lazy, imported when it first compiles a graph."""

    def __init__(self, name: str):
        self.__name__ = name

    def __call__(self, graph_module: Any, example_inputs: list) -> Callable[..., Any]:
        return lookup_backend(self.__name__)(graph_module, example_inputs)

    def __repr__(self) -> str:
        return f"<backend {self.__name__!r}, imported on first use>"


_DEFERRED: dict[str, DeferredBackend] = {}


def lookup_backend_deferred(backend: str | CompilerFn) -> CompilerFn:
    """lookup_backend, except that a name registered with register_lazy gives the same
    DeferredBackend every time, so that naming a backend imports nothing yet."""
    if isinstance(backend, str) and backend in _LAZY:
        return _DEFERRED.setdefault(backend, DeferredBackend(backend))
    return lookup_backend(backend)


def list_backends() -> list[str]:
    return sorted({*_BACKENDS, *_LAZY})

