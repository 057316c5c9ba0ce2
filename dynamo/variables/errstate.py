"""`with np.errstate(...)` while tracing: the context manager made from constant settings, and its
__exit__; the ops recorded between them run under those settings (fx_ir.errstate_call)."""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exc import Category, unsupported
from ..fx_ir.errstate_call import Settings
from .base import VariableTracker
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx

_KINDS = ("all", "divide", "over", "under", "invalid")
_MODES = frozenset({"ignore", "warn", "raise", "call", "print", "log"})


def make_errstate(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> "ErrstateVariable":
    """np.errstate(**kwargs) with modes known while tracing, or unsupported (it then runs in Python)."""
    if args:
        unsupported(Category.UNSUPPORTED_CALL, "np.errstate takes keyword arguments only (TypeError)")
    settings = []
    for kind, value in kwargs.items():
        if kind not in _KINDS:
            unsupported(Category.UNSUPPORTED_CALL, f"np.errstate({kind}=...) is not captured",
                        "np.errstate with all=, divide=, over=, under= and invalid= enters the graph")
        if not value.is_python_constant():
            unsupported(Category.UNSUPPORTED_CALL, f"np.errstate({kind}=...) with a mode known only at run time")
        mode = value.as_python_constant()
        if mode is None:
            continue  # None leaves that kind as it is
        if mode not in _MODES:
            unsupported(Category.UNSUPPORTED_CALL, f"np.errstate({kind}={mode!r}): NumPy refuses this mode")
        settings.append((kind, mode))
    return ErrstateVariable(tuple(settings))


def _rebuild(settings: Settings, entered: bool) -> np.errstate:
    """The program's np.errstate object after the trace: one entered already stays unusable again
    (NumPy refuses a second `with` of it), so it is entered and left once here."""
    modes: dict[str, Any] = dict(settings)
    manager = np.errstate(**modes)
    if entered:
        with manager:
            pass
    return manager


def applied(stack: list[Settings]) -> Any:
    """A context applying every captured block's settings now (what the trace decides under them)."""
    context = contextlib.ExitStack()
    for settings in stack:
        modes: dict[str, Any] = dict(settings)
        context.enter_context(np.errstate(**modes))
    return context


class ErrstateVariable(VariableTracker):
    """An np.errstate(...) object with constant settings, not entered yet."""

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        self.entered = False  # NumPy refuses to enter one np.errstate object twice

    def python_type(self) -> type:
        return np.errstate

    def describe(self) -> str:
        return "np.errstate(" + ", ".join(f"{k}={v!r}" for k, v in self.settings) + ")"

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.begin_call(_rebuild)
        codegen.load_const(self.settings)
        codegen.load_const(self.entered)
        codegen.end_call(2)


class ErrstateExitVariable(VariableTracker):
    """The __exit__ that BEFORE_WITH pushed for a captured errstate block (`handler`: the block's
    exception handler, which marks the instructions inside it)."""

    def __init__(self, manager: ErrstateVariable, handler: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.manager = manager
        self.handler = handler

    def describe(self) -> str:
        return f"the __exit__ of {self.manager.describe()}"

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        normal_exit = (len(args) == 3 and not kwargs and
                       all(isinstance(a, ConstantVariable) and a.value is None for a in args))
        if not normal_exit or not tx.open_withs or tx.open_withs[-1][1] != self.handler:
            unsupported(Category.UNSUPPORTED_CALL, f"{self.describe()} called other than by its with statement")
        tx.open_withs.pop()
        tx.output.errstate.pop()
        return ConstantVariable(None)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} cannot leave the compiled function")
