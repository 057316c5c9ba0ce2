"""The symbolic interpreter of a frame: InstructionTranslator for the frame itself and
InliningTranslator for the user functions it calls, both built from the opcode families."""
from __future__ import annotations

import inspect
import types
from typing import Any

from . import config, skipfiles
from .exc import Category, unsupported
from .sources import AttrSource, ClosureSource, GlobalSource, ItemSource, LocalSource, Source
from .translator.calls import CallsMixin
from .translator.containers import ContainersMixin
from .translator.control_flow import ControlFlowMixin
from .translator.core import InstructionTranslatorBase, LazyVariable
from .translator.load_store import LoadStoreMixin
from .translator.operators import OperatorsMixin
from .variables.base import VariableTracker
from .variables.dicts import ConstDictVariable
from .variables.functions import BaseFunctionVariable, CellVariable, UserFunctionVariable
from .variables.sequences import TupleVariable

_UNTRACEABLE_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


class TranslatorBase(LoadStoreMixin, OperatorsMixin, CallsMixin, ContainersMixin, ControlFlowMixin,
                     InstructionTranslatorBase):
    """Everything both translators share: the opcode families and inlining of calls."""

    cells: dict[str, CellVariable]
    closure: list[CellVariable]
    globals_source: Source | None  # None: the frame's own globals (GlobalSource)

    def global_source(self, name: str) -> Source:
        if self.globals_source is None or name not in self.f_globals:
            return GlobalSource(name)
        return ItemSource(self.globals_source, name)

    def inline_call(self, fn: BaseFunctionVariable, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        code = fn.get_code()
        if code.co_flags & _UNTRACEABLE_FLAGS:
            unsupported(Category.UNSUPPORTED_CALL, f"{code.co_qualname} is a generator or coroutine function",
                        "generators called from compiled code run in Python")
        if skipfiles.is_skipped(code):
            unsupported(Category.UNSUPPORTED_CALL, f"{code.co_qualname} ({code.co_filename}) is library code",
                        "calls into the standard library or site-packages are not inlined")
        if self.depth + 1 > config.inline_depth_limit:
            unsupported(Category.INLINE_DEPTH, f"inlining {code.co_qualname} goes deeper than "
                        f"config.inline_depth_limit ({config.inline_depth_limit}) calls")
        symbolic_locals = bind_arguments(fn, code, args, kwargs, self)
        child = InliningTranslator(code, fn.get_globals(), self.output, symbolic_locals, self,
                                   closure=fn.closure_cells(self), globals_source=_globals_source(fn, self))
        return child.run()


class InstructionTranslator(TranslatorBase):
    """Interprets the frame being compiled; its arguments and closure come from the FrameView."""

    def __init__(self, frame: Any, output: Any) -> None:
        code = frame.f_code
        names = code.co_varnames[: len(frame.f_args)]
        symbolic_locals: dict[str, VariableTracker] = {
            name: LazyVariable(value, LocalSource(index, name)) for index, (name, value) in enumerate(zip(names, frame.f_args))
        }
        super().__init__(code, frame.f_globals, output, symbolic_locals)
        self.cells = {}
        self.closure = []
        for index, (name, cell) in enumerate(zip(code.co_freevars, frame.f_closure or ())):
            source = ClosureSource(index, name)
            try:
                contents: VariableTracker | None = LazyVariable(cell.cell_contents, source)
            except ValueError:  # an empty cell
                contents = None
            self.closure.append(CellVariable(contents, source=source))
        self.globals_source = None


class InliningTranslator(TranslatorBase):
    """Interprets a user function called by the frame, recording into the same graph."""

    def __init__(self, code: types.CodeType, f_globals: dict, output: Any, symbolic_locals: dict[str, VariableTracker],
                 parent: TranslatorBase, closure: list[CellVariable], globals_source: Source | None) -> None:
        super().__init__(code, f_globals, output, symbolic_locals, parent)
        self.cells = {}
        self.closure = closure
        self.globals_source = globals_source


def _globals_source(fn: BaseFunctionVariable, caller: TranslatorBase) -> Source | None:
    if fn.get_globals() is caller.output.root_globals:
        return None
    if isinstance(fn, UserFunctionVariable) and fn.source is not None:
        return AttrSource(fn.source, "__globals__")
    return getattr(fn, "globals_source", None)


def bind_arguments(fn: BaseFunctionVariable, code: types.CodeType, args: list[VariableTracker],
                   kwargs: dict[str, VariableTracker], tx: TranslatorBase) -> dict[str, VariableTracker]:
    """Python's argument binding, applied to VariableTrackers (defaults included)."""
    defaults, kwdefaults = fn.bind_defaults(tx)
    closure = tuple(types.CellType() for _ in code.co_freevars) or None
    signature_holder = types.FunctionType(code, {}, code.co_name, tuple(defaults) or None, closure)
    signature_holder.__kwdefaults__ = dict(kwdefaults) or None
    try:
        bound = inspect.signature(signature_holder).bind(*args, **kwargs)
    except TypeError as error:
        unsupported(Category.EXCEPTION, f"calling {code.co_qualname} raises TypeError: {error}")
    bound.apply_defaults()
    result: dict[str, VariableTracker] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            value = TupleVariable(list(value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            value = ConstDictVariable(dict(value))
        result[name] = value
    return result
