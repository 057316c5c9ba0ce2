"""NamedTupleVariable: an instance of a plain namedtuple class (collections.namedtuple, typing.NamedTuple),
a tuple whose fields are read by name; read from the frame or made while tracing."""
from __future__ import annotations

import collections
import inspect
import types
from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from ..sources import AttrSource, Source
from .base import BoundMethodVariable, VariableTracker
from .sequences import TupleVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx

TUPLE_FIELD = type(collections.namedtuple("_Pair", "first second").__dict__["first"])  # a field (C)
_MISSING = object()
# what namedtuple() puts in a class's namespace, and what a class statement adds to any class
_GENERATED = frozenset({
    "__doc__", "__slots__", "_fields", "_field_defaults", "__new__", "_make", "_replace", "__replace__", "__repr__", "_asdict",
    "__getnewargs__", "__match_args__", "__module__", "__qualname__", "__annotations__", "__orig_bases__",
    "__firstlineno__", "__static_attributes__", "__parameters__", "__type_params__",
    "__slotnames__",  # copyreg's cache, set by the first copy or pickle of an instance
})


def plain_namedtuple(cls: type) -> bool:
    """`cls` is a namedtuple class (or a subclass of one with __slots__ = ()) that changes nothing of
    how a tuple behaves: no instance __dict__, no special method of its own, namedtuple's own __new__.
    Its instances are then their items and its fields; anything else stays a user object."""
    if not issubclass(cls, tuple) or cls is tuple or cls.__dictoffset__ != 0 or type(cls) is not type:
        return False
    mro = cls.__mro__
    made = next((c for c in mro if "_make" in c.__dict__ and "_fields" in c.__dict__), None)
    if made is None or "__new__" not in made.__dict__:
        return False
    for c in mro[:mro.index(tuple)]:
        for name in c.__dict__:
            if name.startswith("__") and name.endswith("__") and name not in _GENERATED:
                return False
            if name == "__new__" and c is not made:
                return False
    return all(type(inspect.getattr_static(cls, name, None)) is TUPLE_FIELD for name in made.__dict__["_fields"])


class NamedTupleVariable(TupleVariable):
    def __init__(self, items: list[VariableTracker], cls: type, **kwargs: Any) -> None:
        super().__init__(items, **kwargs)
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"a {self.cls.__qualname__} (a namedtuple of {len(self.items)} items)"

    def as_python_constant(self) -> Any:
        return self.cls._make(item.as_python_constant() for item in self.items)  # type: ignore[attr-defined]

    def as_graph_argument(self) -> Any:
        return self.cls._make(item.as_graph_argument() for item in self.items)  # type: ignore[attr-defined]

    def as_meta_argument(self) -> Any:
        return self.cls._make(item.as_meta_argument() for item in self.items)  # type: ignore[attr-defined]

    def getitem(self, tx: "Tx", index: VariableTracker) -> VariableTracker:
        key = index.as_python_constant() if index.is_python_constant() else None
        if isinstance(key, slice):  # a slice of a tuple subclass is a plain tuple, even a whole one
            return TupleVariable(self.items[key])
        return super().getitem(tx, index)

    def _class_source(self) -> Source | None:
        return AttrSource(self.source, "__class__") if self.source is not None else None

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        from .objects import _class_attribute, _wrap

        attribute = inspect.getattr_static(self.cls, name, _MISSING)
        if type(attribute) is TUPLE_FIELD:
            return self.items[attribute.__reduce__()[1][0]]
        if name in ("_replace", "__replace__", "_asdict") or (attribute is not _MISSING and attribute is tuple.__dict__.get(name)):
            return BoundMethodVariable(self, name)
        if attribute is _MISSING:
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r} (AttributeError)")
        class_source = AttrSource(source, name) if (source := self._class_source()) is not None else None
        if isinstance(attribute, property):
            if not isinstance(attribute.fget, types.FunctionType):
                unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"property {name!r} of {self.describe()} has no Python getter")
            return _wrap(tx, attribute.fget, None).call_function(tx, [self], {})
        found = _class_attribute(tx, self.cls, name, attribute, self, class_source)
        return found if found is not None else _wrap(tx, getattr(self.cls, name), class_source)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        fields = list(self.cls._fields)  # type: ignore[attr-defined]
        if name in ("_replace", "__replace__") and not args:  # copy.replace() calls __replace__ (3.13)
            unknown = [key for key in kwargs if key not in fields]
            if unknown:
                unsupported(Category.EXCEPTION, f"_replace of {self.describe()} got unexpected field names {unknown!r} "
                            "(ValueError)")
            return NamedTupleVariable([kwargs.get(f, item) for f, item in zip(fields, self.items)], self.cls)
        if name == "_asdict" and not args and not kwargs:
            from .dicts import ConstDictVariable

            return ConstDictVariable(dict(zip(fields, self.items)))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        if codegen.load_built(self):
            return
        codegen.begin_call(self.cls)  # namedtuple's own __new__ (plain_namedtuple): nothing of the program's
        for item in self.items:
            item.reconstruct(codegen)
        codegen.end_call(len(self.items))
        codegen.remember_built(self)


_IMMUTABLE_DEFAULTS = frozenset({int, float, complex, bool, str, bytes, type(None)})


def make_named_tuple(tx: "Tx", cls: type, args: list[VariableTracker],
                     kwargs: dict[str, VariableTracker]) -> NamedTupleVariable:
    """`cls(*args, **kwargs)` while tracing: the arguments bound as namedtuple's __new__ binds them."""
    from .builder import wrap_constant_result

    try:
        bound = inspect.signature(cls.__new__).bind(cls, *args, **kwargs)
    except TypeError as error:
        unsupported(Category.EXCEPTION, f"{cls.__qualname__}() raises TypeError: {error}")
    items = []
    for name in cls._fields:  # type: ignore[attr-defined]
        if name in bound.arguments:
            items.append(bound.arguments[name])
        else:
            default = cls._field_defaults[name]  # type: ignore[attr-defined]
            if type(default) not in _IMMUTABLE_DEFAULTS:  # one object shared by every instance
                unsupported(Category.UNSUPPORTED_VALUE, f"the default of {cls.__qualname__}.{name}, a "
                            f"{type(default).__qualname__}", "pass every field when creating it")
            items.append(wrap_constant_result(default))
    return NamedTupleVariable(items, cls)
