"""Objects of user classes and plain Python modules while tracing: attribute reads go to the
real object (guarded through AttrSource), methods and properties are inlined."""
from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from ..sources import AttrSource
from .base import VariableTracker
from .functions import UserFunctionVariable, UserMethodVariable

if TYPE_CHECKING:
    from ..translator.core import InstructionTranslatorBase as Tx


class PythonModuleVariable(VariableTracker):
    def __init__(self, module: types.ModuleType, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.module = module

    def python_type(self) -> type:
        return types.ModuleType

    def describe(self) -> str:
        return f"the module {self.module.__name__}"

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if not hasattr(self.module, name):
            unsupported(Category.EXCEPTION, f"module {self.module.__name__!r} has no attribute {name!r}")
        return tx.output.builder(getattr(self.module, name), AttrSource(self.source, name))


class UserObjectVariable(VariableTracker):
    """An instance of a user class that existed before the frame (guarded on its type)."""

    def __init__(self, value: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def describe(self) -> str:
        return f"a {type(self.value).__qualname__} object"

    def store_attr(self, tx: "Tx", name: str, value: VariableTracker) -> None:
        if isinstance(inspect.getattr_static(type(self.value), name, None), (property,)) or hasattr(type(self.value), "__setattr__") and type(self.value).__setattr__ is not object.__setattr__:
            unsupported(Category.SIDE_EFFECT, f"setting {name!r} on {self.describe()} runs custom code")
        tx.output.side_effects.store_attr(self, name, value)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        pending = tx.output.side_effects.pending_attr(self.source, name)
        if pending is not None:
            return pending
        if name in getattr(self.value, "__dict__", {}):
            return tx.output.builder(getattr(self.value, name), AttrSource(self.source, name))
        class_attribute = inspect.getattr_static(type(self.value), name, _MISSING)
        if class_attribute is _MISSING:
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r}")
        class_source = AttrSource(AttrSource(self.source, "__class__"), name)
        if isinstance(class_attribute, types.FunctionType):
            return UserMethodVariable(tx.output.builder(class_attribute, class_source), self)
        if isinstance(class_attribute, staticmethod) and isinstance(class_attribute.__func__, types.FunctionType):
            return UserFunctionVariable(class_attribute.__func__)
        if isinstance(class_attribute, property) and isinstance(class_attribute.fget, types.FunctionType):
            return UserFunctionVariable(class_attribute.fget).call_function(tx, [self], {})
        if hasattr(type(class_attribute), "__get__") and type(class_attribute).__name__ != "member_descriptor":
            unsupported(Category.UNSUPPORTED_ATTRIBUTE,
                        f"{name!r} of {self.describe()} is a {type(class_attribute).__name__}, not captured yet")
        return tx.output.builder(getattr(self.value, name), AttrSource(self.source, name))

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        call = inspect.getattr_static(type(self.value), "__call__", None)
        if isinstance(call, types.FunctionType):
            method = UserFunctionVariable(call)
            return method.call_function(tx, [self, *args], kwargs)
        return super().call_function(tx, args, kwargs)


_MISSING = object()
