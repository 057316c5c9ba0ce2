"""sympy, imported when first used: a program with static shapes never needs it, and importing it
takes longer than the rest of dynamo. `is_sympy(x)` answers without importing it.

A trace with dynamic sizes runs first with sympy forbidden (`sympy_forbidden()`): its sizes are
small exact integer expressions (fx_ir/int_expr.py), and the first use of sympy (an attribute of
this module, or a size expression leaving the small fragment) raises `SympyNeeded`, after which
the caller traces again with sympy. The trace is deterministic, so the second one decides the same.
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib
import sys
from collections.abc import Iterator
from typing import Any

# set while a trace runs without sympy (see the module docstring)
_FORBIDDEN: contextvars.ContextVar[bool] = contextvars.ContextVar("dynamo_sympy_forbidden", default=False)


class SympyNeeded(BaseException):
    """Raised where sympy is used while it is forbidden: the trace is redone with sympy. A
    BaseException, so that no `except Exception` of the tracer turns it into a graph break."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def forbidden() -> bool:
    return _FORBIDDEN.get()


@contextlib.contextmanager
def sympy_forbidden(forbid: bool = True) -> Iterator[None]:
    """Inside the block, reading any attribute of `sympy` raises SympyNeeded (when `forbid`)."""
    token = _FORBIDDEN.set(forbid)
    try:
        yield
    finally:
        _FORBIDDEN.reset(token)


class _Sympy:
    """Stands for the sympy module; the first attribute read imports it."""

    _module: Any = None

    def __getattr__(self, name: str) -> Any:
        if _FORBIDDEN.get():
            raise SympyNeeded(f"sympy.{name}")
        module = self._module
        if module is None:
            module = type(self)._module = importlib.import_module("sympy")
        return getattr(module, name)

    def __repr__(self) -> str:
        return "<sympy, imported on first use>"


sympy: Any = _Sympy()


# fx_ir.small_size.SizeExpr, set there (it imports this module): sizes that stand for sympy expressions
SIZE_TYPES: tuple[type, ...] = ()


def is_sympy(value: Any) -> bool:
    """`isinstance(value, sympy.Basic)`, or a size in its small form (which stands for one); False at
    no cost while sympy was never imported (nothing else can be a sympy object then)."""
    if isinstance(value, SIZE_TYPES):
        return True
    # another thread may be importing sympy (a backend compiling in the background): a module still
    # initializing has no Basic yet, and nothing this thread holds can be a sympy object then
    basic = getattr(sys.modules.get("sympy"), "Basic", None)
    return basic is not None and isinstance(value, basic)
