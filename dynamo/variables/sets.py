"""SetVariable: a set of constants built while tracing, held in a real set that receives the program's
insertions in the program's order, so that iteration order is CPython's own."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from .base import BoundMethodVariable, VariableTracker, unsupported_method
from .dicts import hashes_in_python
from .iterators import IteratorVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx

# set methods that only read: called on a snapshot of the elements, with constant arguments
_READERS = frozenset({
    "union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset",
    "isdisjoint", "copy", "__len__", "__contains__",
})
# in-place methods and the set method each one is
_MUTATORS = {
    "add": "add", "discard": "discard", "remove": "remove", "pop": "pop", "clear": "clear", "update": "update",
    "intersection_update": "intersection_update", "difference_update": "difference_update",
    "symmetric_difference_update": "symmetric_difference_update",
    "__ior__": "__ior__", "__iand__": "__iand__", "__isub__": "__isub__", "__ixor__": "__ixor__",
}


class SetVariable(VariableTracker):
    def __init__(self, values: set, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.value = values

    def python_type(self) -> type:
        return set

    def describe(self) -> str:
        return f"a set of {len(self.value)} items"

    def has_constant_contents(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return set(self.value)

    def identity_is_tracked(self) -> bool:
        return True

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.value)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        from .builder import wrap_constant_result

        return [wrap_constant_result(v) for v in self.value]

    def iterator(self, tx: "Tx") -> VariableTracker:
        return SetIteratorVariable(self, self.unpack(tx))

    def contains(self, tx: "Tx", item: VariableTracker) -> bool:
        return _element(item) in self.value

    def reversed_iterator(self, tx: "Tx") -> VariableTracker:
        unsupported(Category.EXCEPTION, "reversed() of a set raises TypeError")

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if callable(getattr(set, name, None)):
            return BoundMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .builder import wrap_constant_result

        if kwargs or (name not in _READERS and name not in _MUTATORS):
            unsupported_method(self, name)
        if name in _MUTATORS:
            # arguments are elements (add/discard/remove) or iterables of elements (the rest)
            raw = [_element(a) if name in ("add", "discard", "remove") else _elements(tx, a) for a in args]
            tx.output.side_effects.mutate(self)
            target = self.value
        else:
            raw = [_element(a) if name == "__contains__" else _elements(tx, a) for a in args]
            target = set(self.value)
        try:
            result = getattr(target, _MUTATORS.get(name, name))(*raw)
        except (KeyError, TypeError) as error:
            unsupported(Category.EXCEPTION, f"set.{name} raises {type(error).__name__}: {error}")
        if result is NotImplemented:  # `s |= [1]`: the operators take sets only
            unsupported(Category.EXCEPTION, f"set.{name} of {args[0].describe()} raises TypeError")
        if result is target:  # the in-place operators return the set itself
            return self
        return wrap_constant_result(result)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        if codegen.load_built(self):
            return
        # what CPython compiles a set display to: an empty set updated from a frozenset
        codegen.build(set, 0)
        codegen.load_const(frozenset(self.value))
        codegen.set_update()
        codegen.remember_built(self)


class SetIteratorVariable(IteratorVariable):
    """Iteration over a set; a set resized during the loop raises RuntimeError in CPython."""

    def __init__(self, target: SetVariable, items: list[VariableTracker], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.size = len(target.value)
        self.items = items
        self.index = 0

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        if len(self.target.value) != self.size:
            unsupported(Category.EXCEPTION, "a set changed size during iteration (RuntimeError)")
        if self.index >= len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]


def _element(value: VariableTracker) -> Any:
    if not value.is_python_constant():
        unsupported(Category.UNSUPPORTED_VALUE, f"a set element that is {value.describe()}",
                    "sets while tracing hold constants only")
    element = value.as_python_constant()
    if hashes_in_python(element):
        unsupported(Category.UNSUPPORTED_VALUE, f"a set element of class {type(element).__qualname__}, whose own "
                    "__hash__ or __eq__ runs in Python as often as the program calls it")
    try:
        hash(element)
    except TypeError:
        unsupported(Category.EXCEPTION, f"unhashable set element {element!r} (TypeError)")
    return element


def _elements(tx: "Tx", value: VariableTracker) -> Any:
    if value.has_constant_contents():
        return value.as_python_constant()
    return [_element(v) for v in value.unpack(tx)]


def build_set(tx: "Tx", items: list[VariableTracker]) -> SetVariable:
    result: set = set()
    for item in items:  # one insertion at a time, in order, as BUILD_SET does
        result.add(_element(item))
    return SetVariable(result)

