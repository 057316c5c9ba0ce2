"""UnderErrstate: a call_function target that runs one NumPy call under np.errstate settings (an op
the program made inside `with np.errstate(...)`): every backend calls it as an opaque callable."""
from __future__ import annotations

import builtins
import types
from typing import Any

import numpy as np

# what np.errstate's __enter__ and __exit__ do, without its Python-level argument handling (~5 us);
# another NumPy has no such module: np.errstate itself then runs
_umath = getattr(getattr(np, "_core", None), "umath", None)
_extobj_contextvar: Any = getattr(_umath, "_extobj_contextvar", None)
_make_extobj: Any = getattr(_umath, "_make_extobj", None)

# ((kind, mode), ...) of one np.errstate(...), kinds as NumPy names them ("all", "divide", ...)
Settings = tuple[tuple[str, str], ...]

# The frame the NumPy call runs in: its code says the user's file and line, and its globals are
# the user's module's, so that a RuntimeWarning is shown (or filtered, or counted once) as the
# plain program's own at that line. The call stands on line 5 of each template (shifted there).
_FAST = """def make(set_state, reset_state, make_state, modes, target):
    def under_errstate(*args, **kwargs):
        token = set_state(make_state(**modes))
        try:
            return CALL
        finally:
            reset_state(token)
    return under_errstate
"""
_PORTABLE = """def make(errstate, modes, target):
    def under_errstate(*args, **kwargs):
        with errstate(**modes):
            pass
            return CALL
    return under_errstate
"""
_CALLS = {False: "target(*args, **kwargs)", True: "getattr(args[0], target)(*args[1:], **kwargs)"}
_TEMPLATES = {(method, fast): compile((_FAST if fast else _PORTABLE).replace("CALL", call), "<errstate>", "exec")
              for method, call in _CALLS.items() for fast in (False, True)}
_CALL_LINE = 5


def _inner_code(method: bool, fast: bool) -> types.CodeType:
    outer = next(c for c in _TEMPLATES[method, fast].co_consts if isinstance(c, types.CodeType))
    return next(c for c in outer.co_consts if isinstance(c, types.CodeType))


def merged(settings: tuple[Settings, ...]) -> dict[str, str]:
    """One np.errstate's keywords equal to nested blocks' (outermost first): `all` of an inner block
    overrides every kind an outer one set."""
    modes: dict[str, str] = {}
    for block in settings:
        if any(kind == "all" for kind, _ in block):
            modes = {}
        modes.update(block)
    return modes


class UnderErrstate:
    """`target(*args, **kwargs)` (the method named `target` of args[0] when `method`) as inside
    `with np.errstate(**modes)`, over the caller's error state, which is restored afterwards, also
    when the call raises (FloatingPointError under 'raise'). `location` ((filename, line) or None)
    and `user_globals` are where the program made the call."""

    __name__ = "under_errstate"

    def __init__(self, target: Any, method: bool, settings: tuple[Settings, ...],
                 location: tuple[str, int] | None = None, user_globals: dict | None = None) -> None:
        self.target, self.method, self.settings = target, method, settings
        self.modes = merged(settings)
        code = _inner_code(method, _make_extobj is not None)
        if location is not None and location[1] - _CALL_LINE + code.co_firstlineno >= 1:
            filename, line = location
            code = code.replace(co_filename=filename, co_firstlineno=code.co_firstlineno + line - _CALL_LINE)
        values = {"set_state": getattr(_extobj_contextvar, "set", None),
                  "reset_state": getattr(_extobj_contextvar, "reset", None), "make_state": _make_extobj,
                  "modes": self.modes, "target": target, "errstate": np.errstate}
        closure = tuple(types.CellType(values[name]) for name in code.co_freevars)
        namespace = user_globals if user_globals is not None else {"__name__": "numpy", "__builtins__": builtins}
        self.run = types.FunctionType(code, namespace, "under_errstate", None, closure)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.run(*args, **kwargs)

    def __reduce__(self) -> Any:  # the user's globals stay behind
        return (UnderErrstate, (self.target, self.method, self.settings))

    def __repr__(self) -> str:
        name = self.target if self.method else getattr(self.target, "__name__", repr(self.target))
        return f"{name} under np.errstate({', '.join(f'{k}={v!r}' for k, v in self.modes.items())})"
