"""Code-object surgery that depends on the Python version or on CPython's calling conventions.

The C hook calls transformed code with the frame's argument slots as plain positional
arguments, so transformed code takes them that way (flatten_signature).
"""
from __future__ import annotations

import inspect
import types

_VAR_FLAGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def argument_slots(code: types.CodeType) -> int:
    """Positional, keyword-only, *args and **kwargs slots, in that order in co_varnames."""
    return (
        code.co_argcount
        + code.co_kwonlyargcount
        + bool(code.co_flags & inspect.CO_VARARGS)
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    )


def flatten_signature(code: types.CodeType) -> types.CodeType:
    """The same code taking every argument slot positionally: `def f(a, *args, k, **kw)` becomes
    a four-argument function whose `args` is a tuple and `kw` a dict, exactly as in the original."""
    return code.replace(
        co_argcount=argument_slots(code),
        co_posonlyargcount=0,
        co_kwonlyargcount=0,
        co_flags=code.co_flags & ~_VAR_FLAGS,
    )
