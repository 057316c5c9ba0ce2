"""Python sequences while tracing: tuples, lists (mutable, with identity), slices and ranges.

Items are VariableTrackers; a list created or mutated during tracing is rebuilt afterwards.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from .base import BoundMethodVariable, VariableTracker, unsupported_method

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx


class BaseSequenceVariable(VariableTracker):
    python_class: type = tuple

    def __init__(self, items: list[VariableTracker], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items = list(items)

    def python_type(self) -> type:
        return self.python_class

    def is_python_constant(self) -> bool:
        return all(item.is_python_constant() for item in self.items)

    def as_python_constant(self) -> Any:
        return self.python_class(item.as_python_constant() for item in self.items)

    def describe(self) -> str:
        return f"a {self.python_class.__name__} of {len(self.items)} items"

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.items)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        return list(self.items)

    def as_graph_argument(self) -> Any:
        return self.python_class(item.as_graph_argument() for item in self.items)

    def as_meta_argument(self) -> Any:
        return self.python_class(item.as_meta_argument() for item in self.items)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if callable(getattr(self.python_class, name, None)):
            return BoundMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def getitem(self, tx: "Tx", index: VariableTracker) -> VariableTracker:
        key = index.as_python_constant()
        if isinstance(key, slice):
            return type(self)(self.items[key])
        try:
            return self.items[key]
        except (IndexError, TypeError) as error:
            unsupported(Category.EXCEPTION, f"indexing {self.describe()} with {key!r} raises {type(error).__name__}")

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .constant import ConstantVariable

        if name == "__getitem__" and len(args) == 1 and not kwargs:
            return self.getitem(tx, args[0])
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name in ("index", "count") and all(a.is_python_constant() for a in args) and self.is_python_constant():
            return ConstantVariable(getattr(self.as_python_constant(), name)(*[a.as_python_constant() for a in args]))
        unsupported_method(self, name)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None:  # the same object (mutations were written back)
            codegen.load_source(self.source)
            return
        for item in self.items:
            item.reconstruct(codegen)
        codegen.build(self.python_class, len(self.items))


class TupleVariable(BaseSequenceVariable):
    python_class = tuple


class ListVariable(BaseSequenceVariable):
    """A list; mutations are tracked so a list that existed before the frame is updated afterwards."""

    python_class = list

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .constant import ConstantVariable

        mutators = {
            "append": lambda: self.items.append(args[0]),
            "extend": lambda: self.items.extend(args[0].unpack(tx)),
            "insert": lambda: self.items.insert(args[0].as_python_constant(), args[1]),
            "clear": lambda: self.items.clear(),
            "reverse": lambda: self.items.reverse(),
        }
        if name in mutators and not kwargs:
            tx.output.side_effects.mutate(self)
            mutators[name]()
            return ConstantVariable(None)
        if name == "pop" and not kwargs:
            tx.output.side_effects.mutate(self)
            index = args[0].as_python_constant() if args else -1
            return self.items.pop(index)
        if name == "copy" and not args and not kwargs:
            return ListVariable(list(self.items))
        unsupported_method(self, name)

    def write_back(self, codegen: "PyCodegen") -> None:
        """original[:] = the contents the trace ended with."""
        for item in self.items:
            item.reconstruct(codegen)
        codegen.build(list, len(self.items))
        codegen.load_source(self.source)
        codegen.store_slice_all()

    def setitem(self, tx: "Tx", index: VariableTracker, value: VariableTracker) -> None:
        key = index.as_python_constant()
        tx.output.side_effects.mutate(self)
        if isinstance(key, slice):
            self.items[key] = value.unpack(tx)
        else:
            self.items[key] = value


class SliceVariable(VariableTracker):
    def __init__(self, start: VariableTracker, stop: VariableTracker, step: VariableTracker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.parts = (start, stop, step)

    def python_type(self) -> type:
        return slice

    def is_python_constant(self) -> bool:
        return all(p.is_python_constant() for p in self.parts)

    def as_python_constant(self) -> Any:
        return slice(*(p.as_python_constant() for p in self.parts))

    def describe(self) -> str:
        return "a slice"

    def as_graph_argument(self) -> Any:
        return slice(*(p.as_graph_argument() for p in self.parts))

    def as_meta_argument(self) -> Any:
        return slice(*(p.as_meta_argument() for p in self.parts))

    def reconstruct(self, codegen: "PyCodegen") -> None:
        for part in self.parts:
            part.reconstruct(codegen)
        codegen.build(slice, 3)
