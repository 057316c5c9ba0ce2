"""sympy, imported when first used: a program with static shapes never needs it, and importing it
takes longer than the rest of dynamo. `is_sympy(x)` answers without importing it."""
from __future__ import annotations

import importlib
import sys
from typing import Any


class _Sympy:
    """Stands for the sympy module; the first attribute read imports it."""

    def __getattr__(self, name: str) -> Any:
        module = importlib.import_module("sympy")
        # from now on attributes are found in this object's own dict, as fast as the module's
        vars(self).update(vars(module))
        return getattr(module, name)

    def __repr__(self) -> str:
        return "<sympy, imported on first use>"


sympy: Any = _Sympy()


def is_sympy(value: Any) -> bool:
    """`isinstance(value, sympy.Basic)`, False at no cost while sympy was never imported (nothing
    can be a sympy object then)."""
    # another thread may be importing sympy (a backend compiling in the background): a module still
    # initializing has no Basic yet, and nothing this thread holds can be a sympy object then
    basic = getattr(sys.modules.get("sympy"), "Basic", None)
    return basic is not None and isinstance(value, basic)
