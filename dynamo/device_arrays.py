"""Device arrays: array types that live on a GPU (CuPy's ndarray, or a registered stand-in), which
enter graphs like ndarrays while every NumPy call on them dispatches to their library, as in Python."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class DeviceArrayType:
    """One registered array type: how to read the device of an instance, and the namespace of
    the library (`cupy`) whose functions and ufuncs NumPy's protocols hand calls to."""

    cls: type
    device_id_of: Callable[[Any], int]
    module: Any
    library: str  # "CuPy": how messages name the library

    @property
    def module_name(self) -> str:
        return getattr(self.module, "__name__", None) or self.library.lower()

    @property
    def type_name(self) -> str:
        """How the array type is named in messages (`cupy.ndarray`)."""
        return f"{self.module_name}.{self.cls.__name__}"

    def device(self, value: Any) -> str:
        return f"cuda:{self.device_id_of(value)}"


_REGISTRY: dict[type, DeviceArrayType] = {}


def register_device_array_type(cls: type, device_id_of: Callable[[Any], int], module: Any,
                               library: str | None = None) -> DeviceArrayType:
    """Make instances of exactly `cls` graph inputs on the device `device_id_of(x)` says; `module`
    holds the functions (and ufuncs, submodules such as `linalg`) that the library implements."""
    entry = DeviceArrayType(cls, device_id_of, module, library or str(getattr(module, "__name__", cls.__name__)))
    _REGISTRY[cls] = entry
    return entry


def entry_of(cls: type) -> DeviceArrayType | None:
    """The registration of an array type, or None for anything else. CuPy is recognised only once
    the program imported it: importing it here would be slow, and it is often not installed."""
    entry = _REGISTRY.get(cls)
    if entry is None and "cupy" in sys.modules:
        cupy = sys.modules["cupy"]
        if cls is getattr(cupy, "ndarray", None):
            entry = register_device_array_type(cls, lambda array: array.device.id, cupy, "CuPy")
    return entry


def is_device_array(value: Any) -> bool:
    return entry_of(type(value)) is not None


def device_of(value: Any) -> str | None:
    """"cuda:0" for an array on the first GPU, None for host values (ndarrays, scalars, anything)."""
    entry = entry_of(type(value))
    return None if entry is None else entry.device(value)


def dispatches_to_device(fn_or_method_name: Any, array_type: type) -> bool:
    """Whether NumPy hands this call on arrays of `array_type` to their library, which then runs it
    on the device: an operator or a method the type has (a method named by a string), a ufunc the
    library has, or a NumPy function dispatching through __array_function__ to one the library has.
    Anything else (np.asarray, np.array, a dtype constructor) converts its argument to a NumPy
    array, which device arrays refuse, or is missing from the library: it must run in Python."""
    entry = entry_of(array_type)
    if entry is None:
        return False
    fn = fn_or_method_name
    if isinstance(fn, str):
        return hasattr(array_type, fn)
    module = getattr(fn, "__module__", None)
    if module in ("operator", "_operator"):
        return True  # the array type's own dunder methods
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return False
    if module == "builtins":  # abs(x), divmod(x, y), len(x): the dunder method of the type
        return hasattr(array_type, f"__{name}__")
    if isinstance(fn, np.ufunc):
        return hasattr(entry.module, name)
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):  # np.add.reduce: the library's ufunc must have the method
        return hasattr(getattr(entry.module, owner.__name__, None), name)
    if hasattr(fn, "_implementation") and isinstance(module, str):  # an __array_function__ dispatcher
        namespace = entry.module
        for part in module.split(".")[1:]:  # numpy.linalg.norm -> cupy.linalg.norm
            if not part.startswith("_"):
                namespace = getattr(namespace, part, None)
        return hasattr(namespace, name)
    return False
