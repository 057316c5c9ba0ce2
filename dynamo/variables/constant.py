"""ConstantVariable: an immutable Python value known while tracing (None, bool, int, float,
complex, str, bytes, Ellipsis, numpy dtypes and scalar types). Arithmetic on it folds."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exc import Category, unsupported
from .base import VariableTracker, unsupported_method

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx

CONSTANT_TYPES = (
    type(None), bool, int, float, complex, str, bytes, type(Ellipsis), type(NotImplemented),
    np.dtype, types.CodeType, frozenset, range,
)

# Methods of immutable builtins that are pure, so calling them while tracing is exact.
_PURE_METHOD_TYPES = (bool, int, float, complex, str, bytes, frozenset, range, np.dtype)


def is_constant_value(value: Any) -> bool:
    if isinstance(value, CONSTANT_TYPES):
        return True
    # numpy scalar types such as np.float32 used as dtype arguments
    return isinstance(value, type) and issubclass(value, np.generic)


class ConstantVariable(VariableTracker):
    def __init__(self, value: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def describe(self) -> str:
        text = repr(self.value)
        return f"the constant {text if len(text) < 40 else text[:37] + '...'}"

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.value)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        from .functions import wrap_constant_attribute

        try:
            attribute = getattr(self.value, name)
        except AttributeError:
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r}")
        return wrap_constant_attribute(attribute, self.value, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if not isinstance(self.value, _PURE_METHOD_TYPES) or name.startswith("__") and name not in _DUNDER_OK:
            unsupported_method(self, name)
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unsupported(Category.UNSUPPORTED_CALL, f"{type(self.value).__name__}.{name} with arguments that are not constants")
        from .builder import wrap_constant_result

        method = getattr(self.value, name)
        result = method(*[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
        return wrap_constant_result(result)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        if isinstance(self.value, (str, bytes, range, frozenset)):
            from .builder import wrap_constant_result

            return [wrap_constant_result(v) for v in self.value]
        return super().unpack(tx)

    def as_graph_argument(self) -> Any:
        return self.value

    def as_meta_argument(self) -> Any:
        return self.value

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.load_const(self.value)


_DUNDER_OK = frozenset({"__add__", "__sub__", "__mul__", "__getitem__", "__len__", "__contains__"})
