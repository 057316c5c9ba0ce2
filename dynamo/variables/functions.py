"""Python functions while tracing: functions found in the frame, functions made by the frame
(closures, lambdas), and bound methods. Calling one inlines its bytecode into the same graph."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from .base import VariableTracker
from .constant import ConstantVariable, is_constant_value

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx


class CellVariable(VariableTracker):
    """A closure cell created while tracing; `contents` is None while the cell is empty."""

    def __init__(self, contents: VariableTracker | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.contents = contents

    def describe(self) -> str:
        return "a closure cell"


class BaseFunctionVariable(VariableTracker):
    def get_code(self) -> types.CodeType:
        raise NotImplementedError

    def get_globals(self) -> dict:
        raise NotImplementedError

    def describe(self) -> str:
        return f"the function {self.get_code().co_qualname}"

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return tx.inline_call(self, args, kwargs)


class UserFunctionVariable(BaseFunctionVariable):
    """A function that exists outside the frame (an argument, a global, a closure value)."""

    def __init__(self, fn: types.FunctionType, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn

    def get_code(self) -> types.CodeType:
        return self.fn.__code__

    def get_globals(self) -> dict:
        return self.fn.__globals__

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.fn

    def bind_defaults(self, tx: "Tx") -> tuple[tuple, dict]:
        """Defaults as VariableTrackers (sourced from the function, so guarded when used)."""
        from ..sources import AttrSource, ItemSource

        builder = tx.output.builder
        src = self.source
        defaults = tuple(
            builder(v, ItemSource(AttrSource(src, "__defaults__"), i)) if src else wrap_plain(tx, v)
            for i, v in enumerate(self.fn.__defaults__ or ())
        )
        kwdefaults = {
            k: builder(v, ItemSource(AttrSource(src, "__kwdefaults__"), k)) if src else wrap_plain(tx, v)
            for k, v in (self.fn.__kwdefaults__ or {}).items()
        }
        return defaults, kwdefaults

    def closure_cells(self, tx: "Tx") -> list[VariableTracker]:
        """The function's free variables: cell contents read through the function's __closure__."""
        from ..sources import AttrSource, ItemSource

        cells = []
        for i, cell in enumerate(self.fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                cells.append(CellVariable(None))
                continue
            source = AttrSource(ItemSource(AttrSource(self.source, "__closure__"), i), "cell_contents") if self.source else None
            cells.append(CellVariable(tx.output.builder(value, source) if source else wrap_plain(tx, value)))
        return cells

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.fn, name))
        return super().var_getattr(tx, name)


class NestedFunctionVariable(BaseFunctionVariable):
    """A function made while tracing by MAKE_FUNCTION (a closure or lambda of the frame)."""

    def __init__(self, code: types.CodeType, f_globals: dict, qualname: str, defaults: tuple,
                 kwdefaults: dict, closure: list[VariableTracker], globals_source: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.globals_source = globals_source
        self.code = code
        self.f_globals = f_globals
        self.qualname = qualname
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self.closure = closure

    def get_code(self) -> types.CodeType:
        return self.code

    def get_globals(self) -> dict:
        return self.f_globals

    def bind_defaults(self, tx: "Tx") -> tuple[tuple, dict]:
        return self.defaults, self.kwdefaults

    def closure_cells(self, tx: "Tx") -> list[VariableTracker]:
        return self.closure

    def reconstruct(self, codegen: "PyCodegen") -> None:
        unsupported(Category.UNSUPPORTED_VALUE, f"the function {self.qualname} made while tracing cannot leave the graph yet",
                    "return its result instead of the function")


class UserMethodVariable(VariableTracker):
    """`obj.method` before it is called: a function bound to an object."""

    def __init__(self, fn: BaseFunctionVariable, obj: VariableTracker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn
        self.obj = obj

    def describe(self) -> str:
        return f"the method {self.fn.get_code().co_qualname}"

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.fn.call_function(tx, [self.obj, *args], kwargs)


def wrap_plain(tx: "Tx", value: Any) -> VariableTracker:
    """A value with no source (a default or closure value of a function without one)."""
    from .builder import wrap_constant_result

    if is_constant_value(value) or isinstance(value, (tuple, list, slice)):
        return wrap_constant_result(value)
    unsupported(Category.UNSUPPORTED_VALUE, f"a {type(value).__name__} with no known source")


def wrap_constant_attribute(attribute: Any, owner: Any, name: str) -> VariableTracker:
    """An attribute of a constant: a value (folded) or a pure bound method (called while tracing)."""
    from .builder import wrap_constant_result

    if callable(attribute):
        return BoundConstantMethodVariable(owner, name)
    return wrap_constant_result(attribute)


class BoundConstantMethodVariable(VariableTracker):
    def __init__(self, owner: Any, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.owner = owner
        self.name = name

    def describe(self) -> str:
        return f"the method {type(self.owner).__name__}.{self.name}"

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return ConstantVariable(self.owner).call_method(tx, self.name, args, kwargs)
