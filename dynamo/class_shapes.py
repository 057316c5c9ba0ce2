"""Classes made by a call (a class statement in a function body, a namedtuple), guarded by their
shape: what a trace relies on (names, MRO, what each class defines and of which kind), not identity."""
from __future__ import annotations

import sys
import types
from typing import Any

_NAME = type.__dict__["__name__"]
_QUALNAME = type.__dict__["__qualname__"]
_MODULE = type.__dict__["__module__"]
_MRO = type.__dict__["__mro__"]
_DICT = type.__dict__["__dict__"]


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: made by a class statement or type(), not written in C


def made_by_a_call(cls: type) -> bool:
    """A plain class (metaclass `type`) made by running code in a function: a class statement in
    its body (`f.<locals>.C`), or a factory (collections.namedtuple, type(name, bases, ns)) whose
    class its module does not hold under its name. Each call makes another class object, the
    same in all that a trace reads of it."""
    if type(cls) is not type or not cls.__flags__ & _HEAPTYPE:
        return False
    qualname = _QUALNAME.__get__(cls, type)
    return "<locals>" in qualname or not _held_by_its_module(cls, qualname)


def _held_by_its_module(cls: type, qualname: str) -> bool:
    module = _MODULE.__get__(cls, type)
    holder: Any = sys.modules.get(module) if isinstance(module, str) else None
    for part in qualname.split("."):
        namespace = getattr(holder, "__dict__", None)
        if not isinstance(namespace, (dict, types.MappingProxyType)):
            return False
        holder = namespace.get(part)
    return holder is cls


def own_shape(cls: type) -> Any:
    """One class of an MRO: a class made by a call by its names, its attribute names in order and
    their kinds (the values are guarded where the trace reads them); any other by identity."""
    shape = _namespace_shape(cls) if made_by_a_call(cls) else None
    return cls if shape is None else shape


def _namespace_shape(cls: type) -> tuple | None:
    namespace = _DICT.__get__(cls, type)
    if not all(type(key) is str for key in namespace):
        return None  # (comparing a key of another type runs its __eq__: CPython's test_descr)
    return (_NAME.__get__(cls, type), _QUALNAME.__get__(cls, type), namespace.get("__module__"), tuple(namespace),
            tuple(map(type, namespace.values())))


def shape_of(cls: type) -> tuple:
    return tuple(map(own_shape, _MRO.__get__(cls, type)))


def matches_shape(cls: Any, shape: tuple) -> bool:
    """What the C guard class_shape checks (csrc/class_shape.c): cls's MRO has these shapes, a
    class expected by its shape being any class of metaclass type written in Python that has it."""
    if type(cls) is not type:
        return False
    mro = _MRO.__get__(cls, type)
    return len(mro) == len(shape) and all(
        type(c) is type and bool(c.__flags__ & _HEAPTYPE) and _namespace_shape(c) == expected
        if type(expected) is tuple else c is expected for c, expected in zip(mro, shape))


class ClassShape:
    """Guard predicate: the value (with `of_type`: the value's type) is a class of this shape. It
    holds no class made by a call, so that a cache entry does not keep a call's class alive."""

    __slots__ = ("shape", "of_type", "name")

    def __init__(self, cls: type, of_type: bool) -> None:
        self.shape = shape_of(cls)
        self.of_type = of_type
        self.name = _QUALNAME.__get__(cls, type)

    def __call__(self, value: Any) -> bool:
        return matches_shape(type(value) if self.of_type else value, self.shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClassShape) and (self.shape, self.of_type) == (other.shape, other.of_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.of_type))

    def describe(self, name: str) -> str:
        what = f"type({name})" if self.of_type else name
        return f"{what} is a class shaped like {self.name} (same bases, attribute names and kinds)"
