"""Iterators over values known while tracing (ranges, sequences, zip/enumerate results), which
is how for-loops unroll: FOR_ITER asks next_item() until it returns None."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import VariableTracker
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx


class ListIteratorVariable(VariableTracker):
    def __init__(self, items: list[VariableTracker], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items = items
        self.index = 0

    def describe(self) -> str:
        return f"an iterator over {len(self.items)} items"

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        if self.index >= len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        rest = self.items[self.index:]
        self.index = len(self.items)
        return rest

    def iterator(self, tx: "Tx") -> VariableTracker:
        return self

    def reconstruct(self, codegen: "PyCodegen") -> None:
        # what is left of the iterator, as a fresh iterator over a tuple
        for item in self.items[self.index:]:
            item.reconstruct(codegen)
        codegen.build(tuple, len(self.items) - self.index)
        codegen.get_iter()


class RangeVariable(VariableTracker):
    def __init__(self, value: range, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.value = value

    def python_type(self) -> type:
        return range

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.value

    def describe(self) -> str:
        return repr(self.value)

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.value)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        tx.check_unroll_budget(len(self.value), "a range")
        return [ConstantVariable(i) for i in self.value]

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if name in ("start", "stop", "step"):
            return ConstantVariable(getattr(self.value, name))
        return super().var_getattr(tx, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in ("__len__", "index", "count", "__getitem__", "__contains__") and all(a.is_python_constant() for a in args):
            from .builder import wrap_constant_result

            return wrap_constant_result(getattr(self.value, name)(*[a.as_python_constant() for a in args]))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.load_const(self.value)
