"""Python functions while tracing: functions found in the frame, functions made by the frame
(closures, lambdas), and bound methods. Calling one inlines its bytecode into the same graph."""
from __future__ import annotations

import functools
import types
from typing import TYPE_CHECKING, Any, Callable

from ..exc import Category, unsupported
from .base import VariableTracker
from .constant import ConstantVariable, is_constant_value

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx


class CellVariable(VariableTracker):
    """A closure cell; `contents` is None while the cell is empty.

    A cell made while tracing is just a box. A cell that exists outside the trace (`external`)
    is written back when the trace assigns it: through `source` (the cell object, whose
    cell_contents is set) or, for the compiled frame's own free variables, by `free_name`."""

    def __init__(self, contents: VariableTracker | None = None, *, external: bool = False,
                 free_name: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.contents = contents
        self.external = external
        self.free_name = free_name

    def describe(self) -> str:
        return "a closure cell"

    def identity_is_tracked(self) -> bool:
        return True

    def store(self, tx: "Tx", value: VariableTracker | None) -> None:
        """STORE_DEREF (value) or DELETE_DEREF (None)."""
        if self.external:
            if value is None or (self.source is None and self.free_name is None):
                unsupported(Category.SIDE_EFFECT, "changing a closure variable of a function defined outside "
                            "the compiled function", "return the new value instead")
            tx.output.side_effects.store_cell(self, value)
        self.contents = value

    def write_back(self, codegen: "PyCodegen", value: VariableTracker) -> None:
        value.reconstruct(codegen)
        if self.free_name is not None:
            codegen.store_free(self.free_name)
        else:
            codegen.load_source(self.source)
            codegen.store_attr("cell_contents")


class BaseFunctionVariable(VariableTracker):
    def get_code(self) -> types.CodeType:
        raise NotImplementedError

    def get_globals(self) -> dict:
        raise NotImplementedError

    def bind_defaults(self, tx: "Tx") -> tuple[tuple, dict]:
        """The positional defaults and keyword-only defaults, as trackers."""
        raise NotImplementedError

    def closure_cells(self, tx: "Tx") -> list[VariableTracker]:
        raise NotImplementedError

    def describe(self) -> str:
        return f"the function {self.get_code().co_qualname}"

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return tx.inline_call(self, args, kwargs)


class UserFunctionVariable(BaseFunctionVariable):
    """A function that exists outside the frame (an argument, a global, a closure value)."""

    def __init__(self, fn: types.FunctionType, identity_guard: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn
        # for a function made by a call, guarded by its code rather than its identity: installs
        # the identity guard once the trace uses the object itself (compares it, folds it)
        self.identity_guard = identity_guard

    def get_code(self) -> types.CodeType:
        return self.fn.__code__

    def get_globals(self) -> dict:
        return self.fn.__globals__

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        if self.identity_guard is not None:
            self.identity_guard()
            self.identity_guard = None
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
        """The function's closure cells, one tracker per real cell for the whole trace (a second
        call of the same closure sees what the first one assigned)."""
        from ..sources import AttrSource, ItemSource

        cells = []
        for i, cell in enumerate(self.fn.__closure__ or ()):
            source = ItemSource(AttrSource(self.source, "__closure__"), i) if self.source else None
            cells.append(tx.output.side_effects.track_cell(cell, functools.partial(_external_cell, tx, cell, source)))
        return cells

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.fn, name))
        return super().var_getattr(tx, name)

    def has_attribute(self, tx: "Tx", name: str) -> bool:
        return hasattr(self.fn, name)


class NestedFunctionVariable(BaseFunctionVariable):
    """A function made while tracing by MAKE_FUNCTION (a closure or lambda of the frame)."""

    def __init__(self, code: types.CodeType, f_globals: dict, qualname: str, defaults: tuple,
                 kwdefaults: dict, closure: list[VariableTracker], globals_source: Any = None,
                 annotations: VariableTracker | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.annotations = annotations  # what MAKE_FUNCTION was given (a tuple of names and values), if any
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

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if name in ("__name__", "__qualname__"):
            return ConstantVariable(self.code.co_name if name == "__name__" else self.qualname)
        return super().var_getattr(tx, name)

    def identity_is_tracked(self) -> bool:
        return True

    def load_parts(self, codegen: "PyCodegen", load: Callable[[VariableTracker], None]) -> None:
        """Push what MAKE_FUNCTION takes before the closure: the defaults tuple, the keyword defaults
        dict and the annotations, those the function has (`load` pushes one value)."""
        if self.defaults:
            for value in self.defaults:
                load(value)
            codegen.build(tuple, len(self.defaults))
        if self.kwdefaults:
            for key, value in self.kwdefaults.items():
                codegen.load_const(key)
                load(value)
            codegen.build_map(len(self.kwdefaults))
        if self.annotations is not None:
            load(self.annotations)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if codegen.rebuild is not None and codegen.rebuild(self):  # made again with the frame's cells
            return
        unsupported(Category.UNSUPPORTED_VALUE, f"the function {self.qualname} made while tracing cannot leave the graph yet",
                    "return its result instead of the function")


class PartialVariable(VariableTracker):
    """functools.partial(fn, *args, **kwargs) made while tracing: calls prepend the arguments."""

    def __init__(self, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker], **kw: Any) -> None:
        super().__init__(**kw)
        self.fn = fn
        self.args = list(args)
        self.kwargs = dict(kwargs)

    def describe(self) -> str:
        return f"functools.partial of {self.fn.describe()}"

    def python_type(self) -> type:
        return functools.partial

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        from .dicts import ConstDictVariable
        from .sequences import TupleVariable

        if name in ("func", "args", "keywords"):
            return {"func": self.fn, "args": TupleVariable(self.args), "keywords": ConstDictVariable(self.kwargs)}[name]
        return super().var_getattr(tx, name)

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.fn.call_function(tx, [*self.args, *args], {**self.kwargs, **kwargs})


class UserMethodVariable(VariableTracker):
    """`obj.method` before it is called: a function bound to an object."""

    def __init__(self, fn: VariableTracker, obj: VariableTracker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn  # a user function, or a NumPy function written in Python stored on a class
        self.obj = obj

    def describe(self) -> str:
        if isinstance(self.fn, BaseFunctionVariable):
            return f"the method {self.fn.get_code().co_qualname}"
        return f"{self.fn.describe()} bound as a method"

    def python_type(self) -> type:
        return types.MethodType

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if name == "__self__":
            return self.obj
        if name == "__func__":
            return self.fn
        return self.fn.var_getattr(tx, name)

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.fn.call_function(tx, [self.obj, *args], kwargs)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is None and codegen.rebuild is not None and codegen.rebuild(self):  # MethodType(fn, obj)
            return
        super().reconstruct(codegen)


def _external_cell(tx: "Tx", cell: types.CellType, source: Any) -> CellVariable:
    from ..sources import AttrSource

    try:
        value = cell.cell_contents
    except ValueError:  # an empty cell
        return CellVariable(None, external=True, source=source)
    contents = tx.output.builder(value, AttrSource(source, "cell_contents")) if source else wrap_plain(tx, value)
    return CellVariable(contents, external=True, source=source)


def wrap_plain(tx: "Tx", value: Any) -> VariableTracker:
    """A value with no source (a default or closure value of a function without one)."""
    from .builder import wrap_constant_result

    if _immutable(value):
        return wrap_constant_result(value)
    if isinstance(value, types.FunctionType):  # reached through something already guarded
        return UserFunctionVariable(value)
    if isinstance(value, types.BuiltinFunctionType):
        from .builtins import BuiltinVariable

        return BuiltinVariable(value)
    if isinstance(value, type):
        from .objects import class_variable

        return class_variable(tx, value, None)
    if isinstance(value, types.ModuleType):
        from .objects import module_variable

        return module_variable(value)
    unsupported(Category.UNSUPPORTED_VALUE, f"a {type(value).__name__} with no known source")


def _immutable(value: Any) -> bool:
    """Constants, and tuples and slices of them: values whose identity never matters."""
    if isinstance(value, (tuple, slice)):
        parts = value if isinstance(value, tuple) else (value.start, value.stop, value.step)
        return all(_immutable(v) for v in parts)
    return is_constant_value(value)


def wrap_constant_attribute(attribute: Any, owner: Any, name: str) -> VariableTracker:
    """An attribute of a constant: a value (folded) or a pure bound method (called while tracing)."""
    from .builder import wrap_constant_result
    from .constant import is_constant_value

    if callable(attribute) and not is_constant_value(attribute):  # dtype.type is a class, not a method
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
