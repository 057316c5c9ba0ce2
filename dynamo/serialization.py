"""Pickling of compiled functions: by reference where importable, else by value of the code.

An unpickled compiled function carries its backend and options and compiles on its first call in
the new process; nothing compiled travels (generated code is shared through the disk caches).
"""
from __future__ import annotations

import sys
import threading
from typing import Any

from . import _C

# Modules whose functions cannot be re-imported by name in another process: a worker's
# __main__ is not the user's script (Dask, forkserver), so their functions travel by value.
_MAIN_MODULES = ("__main__", "__mp_main__")

_dumping = threading.local()  # compiled functions being pickled by value on this thread


def _resolve(module_name: str, qualname: str) -> Any:
    """The object named `qualname` in module `module_name`, or None."""
    module = sys.modules.get(module_name)
    if module is None:
        return None
    obj: Any = module
    for part in qualname.split("."):
        if part == "<locals>":
            return None
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _importable(obj: Any) -> bool:
    """Whether pickle can save `obj` as a reference to its module and qualified name."""
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str) or module_name in _MAIN_MODULES:
        return False
    return _resolve(module_name, qualname) is obj


def compile_options(compiled: Any) -> tuple[Any, bool, bool | None] | None:
    """(backend, fullgraph, dynamic) of a compiled function; None for a `disable`d one."""
    callback = compiled._dynamo_callback
    if callback is None:
        return None
    from .backends.registry import UnknownBackend, lookup_backend_deferred

    backend = callback.backend
    try:
        if lookup_backend_deferred(callback.backend_name) is backend:
            backend = callback.backend_name  # a registered name travels as the name
    except UnknownBackend:
        pass
    return backend, callback.fullgraph, callback.dynamic


def rebuild(fn: Any, options: tuple[Any, bool, bool | None] | None) -> Any:
    """The compiled function of `fn` with these options (what unpickling calls)."""
    from .api import compile, disable

    if options is None:
        return disable(fn)
    backend, fullgraph, dynamic = options
    return compile(fn, backend=backend, fullgraph=fullgraph, dynamic=dynamic)


def rebuild_from_bytes(payload: bytes, options: tuple[Any, bool, bool | None] | None) -> Any:
    """`rebuild` of a function that travelled by value (cloudpickle's bytes of it)."""
    import cloudpickle

    return rebuild(cloudpickle.loads(payload), options)


def reduce_compiled(compiled: Any) -> Any:
    """CompiledFunction.__reduce__: a reference where `module.qualname` is this very object,
    else the original function (by reference if importable, by value of its code otherwise)."""
    if _importable(compiled):
        return compiled.__qualname__
    fn = compiled._dynamo_fn
    options = compile_options(compiled)
    active = _dumping.__dict__.setdefault("ids", set())
    if _importable(fn) or id(compiled) in active:
        # a recursive function reaches itself through its globals: the pickler already saving
        # it by value memoizes the function, so the inner reference resolves there
        return rebuild, (fn, options)
    import cloudpickle

    active.add(id(compiled))
    try:
        payload = cloudpickle.dumps(fn)
    except Exception:
        # a global that cannot travel by value (a lock, an open file): a reference to the
        # module's name still works where that module exists (spawn re-imports __main__)
        module_name = getattr(compiled, "__module__", None)
        if isinstance(module_name, str) and _resolve(module_name, compiled.__qualname__) is compiled:
            return compiled.__qualname__
        raise
    finally:
        active.discard(id(compiled))
    return rebuild_from_bytes, (payload, options)


def install() -> None:
    """Make compiled functions picklable (called once when dynamo is imported)."""
    _C.set_compiled_function_reducer(reduce_compiled)
