"""The symbolic interpreter of a frame: InstructionTranslator for the frame itself and
InliningTranslator for the user functions it calls, both built from the opcode families."""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any

from . import config, skipfiles
from .break_reuse import KEPT, BeforeStep
from .exc import Category, unsupported
from .resume import entry_index
from .sources import AttrSource, ClosureSource, GlobalSource, ItemSource, LocalSource, Source
from .translator.calls import CallsMixin
from .translator.containers import ContainersMixin
from .translator.control_flow import ControlFlowMixin
from .translator.core import InstructionTranslatorBase, LazyVariable, ReturnSignal
from .translator.load_store import LoadStoreMixin
from .translator.operators import OperatorsMixin
from .translator.patterns import PatternMatchingMixin
from .translator.with_blocks import WithBlocksMixin
from .variables.base import VariableTracker
from .variables.dicts import ConstDictVariable
from .variables.iterators import GeneratorVariable
from .variables.functions import BaseFunctionVariable, CellVariable, UserFunctionVariable
from .variables.sequences import TupleVariable

_UNTRACEABLE_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


class TranslatorBase(LoadStoreMixin, OperatorsMixin, CallsMixin, ContainersMixin, ControlFlowMixin,
                     PatternMatchingMixin, WithBlocksMixin, InstructionTranslatorBase):
    """Everything both translators share: the opcode families and inlining of calls."""

    closure: list[VariableTracker]  # the free variables' CellVariables, copied into the locals by COPY_FREE_VARS
    globals_source: Source | None  # None: the frame's own globals (GlobalSource)

    def global_source(self, name: str) -> Source:
        if self.globals_source is None or name not in self.f_globals:
            return GlobalSource(name)
        return ItemSource(self.globals_source, name)

    def zero_argument_super(self) -> tuple[VariableTracker, VariableTracker]:
        """What super() with no arguments means here: the __class__ cell and the first argument."""
        cell = self.symbolic_locals.get("__class__")
        if not isinstance(cell, CellVariable) or cell.contents is None or not self.code.co_argcount:
            unsupported(Category.EXCEPTION, "super() without arguments outside a method raises RuntimeError")
        first = self.symbolic_locals.get(self.code.co_varnames[0])
        if isinstance(first, CellVariable):  # the first argument is captured by an inner function
            first = first.contents
        if first is None:
            unsupported(Category.EXCEPTION, "super(): the first argument was deleted (RuntimeError)")
        return self.realize(cell.contents), self.realize(first)

    def inline_call(self, fn: BaseFunctionVariable, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        code = fn.get_code()
        if code.co_flags & _UNTRACEABLE_FLAGS:
            unsupported(Category.UNSUPPORTED_CALL, f"{code.co_qualname} is a coroutine or async generator function",
                        "async code called from compiled code runs in Python")
        if skipfiles.is_skipped(code):
            unsupported(Category.UNSUPPORTED_CALL, f"{code.co_qualname} ({code.co_filename}) is library code",
                        "calls into the standard library or site-packages are not inlined")
        if self.depth + 1 > config.inline_depth_limit:
            unsupported(Category.INLINE_DEPTH, f"inlining {code.co_qualname} goes deeper than "
                        f"config.inline_depth_limit ({config.inline_depth_limit}) calls")
        if code in self.output.over_budget:
            unsupported(Category.LOOP_BUDGET, f"{code.co_qualname} ran past the trace instruction budget when it was "
                        "compiled as a frame of its own, so its calls are not traced again",
                        "it runs as a frame of its own: a long Python loop runs in Python")
        symbolic_locals = bind_arguments(fn, code, args, kwargs, self)
        child = InliningTranslator(code, fn.get_globals(), self.output, symbolic_locals, self,
                                   closure=fn.closure_cells(self), globals_source=_globals_source(fn, self))
        if code.co_flags & inspect.CO_GENERATOR:  # nothing runs until the first next()
            # the generator takes the function's names as they are now (they may have been set)
            real = getattr(fn, "fn", None)
            name = real.__name__ if isinstance(real, types.FunctionType) else code.co_name
            qualname = real.__qualname__ if isinstance(real, types.FunctionType) else getattr(fn, "qualname", code.co_qualname)
            return GeneratorVariable(child, code.co_qualname, names=(name, qualname))
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
        self.closure = [output.side_effects.track_cell(cell, functools.partial(_frame_cell, cell, index, name))
                        for index, (name, cell) in enumerate(zip(code.co_freevars, frame.f_closure or ()))]
        self.globals_source = None
        self.entry_index = entry_index(code)
        self.before: BeforeStep | None = None  # before the last instruction that may break (break_reuse)

    def run(self) -> VariableTracker:
        """As the base's, keeping the state before each instruction that may break for that break
        (break_reuse), unless this trace is one that stops before a known break."""
        if self.break_at is not None:
            return super().run()
        instructions = self.instructions
        try:
            while True:
                if self.ip < len(instructions) and instructions[self.ip].name in KEPT:
                    self.before = BeforeStep(self)
                self.step()
        except ReturnSignal as signal:
            return signal.value


def _frame_cell(cell: types.CellType, index: int, name: str) -> CellVariable:
    try:
        contents: VariableTracker | None = LazyVariable(cell.cell_contents, ClosureSource(index, name))
    except ValueError:  # an empty cell
        contents = None
    return CellVariable(contents, external=True, free_name=name)


class InliningTranslator(TranslatorBase):
    """Interprets a user function called by the frame, recording into the same graph."""

    def __init__(self, code: types.CodeType, f_globals: dict, output: Any, symbolic_locals: dict[str, VariableTracker],
                 parent: TranslatorBase, closure: list[VariableTracker], globals_source: Source | None) -> None:
        super().__init__(code, f_globals, output, symbolic_locals, parent)
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
    """Python's argument binding applied to VariableTrackers, defaults included. Written out
    rather than borrowed from inspect, which rejects the `.0` parameter of 3.11 comprehensions."""
    defaults, kwdefaults = fn.bind_defaults(tx)
    name = code.co_qualname
    positional = code.co_varnames[: code.co_argcount]
    keyword_only = code.co_varnames[code.co_argcount: code.co_argcount + code.co_kwonlyargcount]
    rest = code.co_argcount + code.co_kwonlyargcount
    star_args = code.co_varnames[rest] if code.co_flags & inspect.CO_VARARGS else None
    star_kwargs = code.co_varnames[rest + (star_args is not None)] if code.co_flags & inspect.CO_VARKEYWORDS else None

    bound: dict[str, VariableTracker] = dict(zip(positional, args))
    if len(args) > len(positional) and star_args is None:
        _binding_error(f"{name}() takes {len(positional)} positional arguments but {len(args)} were given")
    if star_args is not None:
        bound[star_args] = TupleVariable(list(args[len(positional):]))
    by_keyword = set(positional[code.co_posonlyargcount:]) | set(keyword_only)
    extra: dict[str, VariableTracker] = {}
    for key, value in kwargs.items():
        if key in by_keyword:
            if key in bound:
                _binding_error(f"{name}() got multiple values for argument {key!r}")
            bound[key] = value
        elif star_kwargs is not None:
            extra[key] = value  # positional-only names passed by keyword land here too
        else:
            _binding_error(f"{name}() got an unexpected keyword argument {key!r}")
    first_default = len(positional) - len(defaults)
    for index, parameter in enumerate(positional):
        if parameter not in bound:
            if index < first_default:
                _binding_error(f"{name}() missing required positional argument {parameter!r}")
            bound[parameter] = defaults[index - first_default]
    for parameter in keyword_only:
        if parameter not in bound:
            if parameter not in kwdefaults:
                _binding_error(f"{name}() missing required keyword-only argument {parameter!r}")
            bound[parameter] = kwdefaults[parameter]
    if star_kwargs is not None:
        bound[star_kwargs] = ConstDictVariable(extra)
    return bound


def _binding_error(message: str) -> None:
    unsupported(Category.EXCEPTION, f"the call raises TypeError: {message}", "the original code runs and raises it")
