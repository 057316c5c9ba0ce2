"""ConstDictVariable: a dict whose keys are constants known while tracing (kwargs, config dicts,
dicts of arrays). Mutations of a dict that existed before the frame are written back."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from .base import BoundMethodVariable, VariableTracker, unsupported_method
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx


class ConstDictVariable(VariableTracker):
    def __init__(self, items: dict[Any, VariableTracker], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items = dict(items)

    @classmethod
    def from_pairs(cls, tx: "Tx", keys: list[VariableTracker], values: list[VariableTracker]) -> "ConstDictVariable":
        result = cls({})
        for key, value in zip(keys, values):
            result.items[_key(key)] = value
        return result

    def python_type(self) -> type:
        return dict

    def describe(self) -> str:
        return f"a dict with keys {list(self.items)[:6]}"

    def is_python_constant(self) -> bool:
        return all(v.is_python_constant() for v in self.items.values())

    def as_python_constant(self) -> Any:
        return {k: v.as_python_constant() for k, v in self.items.items()}

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.items)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        return [ConstantVariable(k) for k in self.items]

    def as_keyword_arguments(self, tx: "Tx", allow_any_key: bool = False) -> dict[Any, VariableTracker]:
        if not allow_any_key and not all(isinstance(k, str) for k in self.items):
            unsupported(Category.EXCEPTION, "keywords must be strings")
        return dict(self.items)

    def store(self, tx: "Tx", key: VariableTracker, value: VariableTracker) -> None:
        tx.output.side_effects.mutate(self)
        self.items[_key(key)] = value

    def setitem(self, tx: "Tx", key: VariableTracker, value: VariableTracker) -> None:
        self.store(tx, key, value)

    def delitem(self, tx: "Tx", key: VariableTracker) -> None:
        tx.output.side_effects.mutate(self)
        if self.items.pop(_key(key), None) is None:
            unsupported(Category.EXCEPTION, f"del of a missing key {_key(key)!r} raises KeyError")

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if callable(getattr(dict, name, None)):
            return BoundMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def getitem(self, tx: "Tx", key: VariableTracker) -> VariableTracker:
        k = _key(key)
        if k not in self.items:
            unsupported(Category.EXCEPTION, f"the dict has no key {k!r} (KeyError)")
        return self.items[k]

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .sequences import ListVariable, TupleVariable

        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "get" and args:
            return self.items.get(_key(args[0]), args[1] if len(args) > 1 else ConstantVariable(None))
        if name == "keys":
            return ListVariable([ConstantVariable(k) for k in self.items])
        if name == "values":
            return ListVariable(list(self.items.values()))
        if name == "items":
            return ListVariable([TupleVariable([ConstantVariable(k), v]) for k, v in self.items.items()])
        if name == "__contains__":
            return ConstantVariable(_key(args[0]) in self.items)
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "copy":
            return ConstDictVariable(self.items)
        if name == "update" and len(args) <= 1:
            tx.output.side_effects.mutate(self)
            self.items.update(args[0].as_keyword_arguments(tx, allow_any_key=True) if args else {})
            self.items.update(kwargs)
            return ConstantVariable(None)
        if name == "pop" and args:
            tx.output.side_effects.mutate(self)
            if _key(args[0]) not in self.items and len(args) < 2:
                unsupported(Category.EXCEPTION, "dict.pop of a missing key raises KeyError")
            return self.items.pop(_key(args[0]), args[1] if len(args) > 1 else None)
        if name == "setdefault" and args:
            tx.output.side_effects.mutate(self)
            return self.items.setdefault(_key(args[0]), args[1] if len(args) > 1 else ConstantVariable(None))
        unsupported_method(self, name)

    def write_back(self, codegen: "PyCodegen") -> None:
        codegen.begin_call(_replace_contents)
        codegen.load_source(self.source)
        self.build(codegen)
        codegen.end_call(2)
        codegen.pop_top()

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        self.build(codegen)

    def build(self, codegen: "PyCodegen") -> None:
        for key, value in self.items.items():
            codegen.load_const(key)
            value.reconstruct(codegen)
        codegen.build_map(len(self.items))


def _key(key: VariableTracker) -> Any:
    if not key.is_python_constant():
        unsupported(Category.UNSUPPORTED_VALUE, f"a dict key that is {key.describe()}")
    value = key.as_python_constant()
    try:
        hash(value)
    except TypeError:
        unsupported(Category.EXCEPTION, f"unhashable dict key {value!r}")
    return value


def _replace_contents(original: dict, new: dict) -> None:
    original.clear()
    original.update(new)
