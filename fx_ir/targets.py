"""Where a callable lives: its public NumPy path (`np.linalg.norm`) or importable module path (`math.sqrt`).

Printing, code generation and fingerprints all name call targets through these functions.
"""
from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np
import numpy.fft  # np.fft is not imported by `import numpy` itself
import numpy.linalg

from .numpy_random import numpy_random

# Searched in order, so the shortest public spelling wins (np.matmul, not np.linalg.matmul).
_NUMPY_NAMESPACES: tuple[tuple[str, Any], ...] = (("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft))


def _numpy_index() -> dict[Any, str]:
    random = numpy_random()
    if random is None:  # half-imported: its functions are not named yet (nor cached without them)
        return _index_of(_NUMPY_NAMESPACES)
    return _index_of((*_NUMPY_NAMESPACES, ("np.random", random)))


@functools.cache
def _index_of(namespaces: tuple[tuple[str, Any], ...]) -> dict[Any, str]:
    index: dict[Any, str] = {}
    for prefix, module in namespaces:
        for attr, value in vars(module).items():
            if attr.startswith("_") or not callable(value) or isinstance(value, type(np)):
                continue
            try:
                path = f"{prefix}.{attr}"
                known = index.get(value)
                # Prefer the spelling that matches the object's own __name__ (np.absolute over np.abs).
                if known is None or (attr == getattr(value, "__name__", None) and known.count(".") == path.count(".")):
                    index[value] = path
            except TypeError:  # unhashable attribute values are not callables we could meet
                continue
    return index


def numpy_path(obj: Any) -> str | None:
    """`np.add`, `np.linalg.norm`, `np.float32`... for public NumPy callables and types, else None."""
    try:
        path = _numpy_index().get(obj)
    except TypeError:
        return None
    if path is not None:
        return path
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, np.ufunc) and getattr(obj, "__name__", None):
        base = numpy_path(owner)  # np.add.reduce is a fresh bound method on every access
        if base is not None:
            return f"{base}.{obj.__name__}"
    return None


def _public_module(module_name: str) -> str:
    """`_operator` -> `operator` when the public module re-exports it (checked by the caller)."""
    return module_name.lstrip("_") if module_name.startswith("_") else module_name


def module_path(obj: Any) -> tuple[str, str] | None:
    """(module, dotted attribute path) under which `obj` can be re-imported, if any.

    Only for module-level definitions: a lambda or a function defined inside another function
    has `<locals>` in its qualified name and cannot be fetched back by name.
    """
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    for candidate in dict.fromkeys((_public_module(module_name), module_name)):
        # Only already-imported modules: naming a target must never run import side effects.
        module = sys.modules.get(candidate)
        if module is None:
            continue
        value: Any = module
        for part in qualname.split("."):
            value = getattr(value, part, None)
        if value is obj or (value is not None and _same_bound(value, obj)):
            return candidate, qualname
    return None


def _same_bound(a: Any, b: Any) -> bool:
    # Bound builtin methods are recreated on every attribute access, so compare what they bind.
    return getattr(a, "__self__", None) is getattr(b, "__self__", object()) and getattr(a, "__name__", 1) == getattr(
        b, "__name__", 2
    )


def qualified_name(target: Any) -> str:
    """A stable, readable name for any call target: `np.add`, `operator.getitem`, `mypkg.kernels.fused`."""
    if isinstance(target, str):
        return target
    path = numpy_path(target)
    if path is not None:
        return path
    found = module_path(target)
    if found is not None:
        module, attr = found
        return f"{module}.{attr}"
    module_name = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__qualname__
    return f"{module_name}.{name}"
