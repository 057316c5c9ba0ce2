"""numpy.random for the compiler, reached without `np.random` (which recurses while it is half-imported)
and never while its import is under way: None then, and the callers answer conservatively.

A frame can be compiled in the middle of `import numpy.random` (a signal handler or an import hook
of the user's runs then). NumPy imports the module on first access of `np.random` through its
module `__getattr__`, whose `import numpy.random as random` reads `np.random` again before the
import has set it: a RecursionError. The compiler must never fail because a module is half-imported.
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

_NAME = "numpy.random"


def _importing(module: ModuleType) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def numpy_random() -> ModuleType | None:
    """The numpy.random module, imported now if nobody imported it yet; None while some import of
    it (by this thread, an outer frame, or another thread) has not finished."""
    module = sys.modules.get(_NAME)
    if module is None:
        # nobody is importing it (an import under way is in sys.modules): importing it is safe
        return importlib.import_module(_NAME)
    return None if _importing(module) else module


def generator_types() -> tuple[type, ...]:
    """np.random.Generator and RandomState, whose methods draw: () while numpy.random is half-imported."""
    module = numpy_random()
    return () if module is None else (module.Generator, module.RandomState)


def is_numpy_random_module(name: str) -> bool:
    """Whether a __module__ name is numpy.random or one of its submodules."""
    return name == _NAME or name.startswith(_NAME + ".")
