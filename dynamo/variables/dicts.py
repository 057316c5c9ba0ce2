"""ConstDictVariable (a dict with constant keys) and its keys/values/items views while tracing; a dict
that existed before the frame and was mutated is written back in CPython's insertion order."""
from __future__ import annotations

import math
import operator
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

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
        self.popped: list[Any] = []  # keys popitem() took, in order (the write-back takes them so too)

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
        return False  # a dict has identity: it is never folded into a fresh copy

    def has_constant_contents(self) -> bool:
        return all(v.is_python_constant() for v in self.items.values())

    def as_python_constant(self) -> Any:
        return {k: v.as_python_constant() for k, v in self.items.items()}

    def identity_is_tracked(self) -> bool:
        return True

    def is_mapping(self) -> bool:
        return True

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.items)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        return [_wrap_key(k) for k in self.items]

    def iterator(self, tx: "Tx") -> VariableTracker:
        from .iterators import DictIteratorVariable

        return DictIteratorVariable(self, "keys")

    def item_view(self, key: Any, kind: str) -> VariableTracker:
        """What iterating a keys/values/items view yields for `key`."""
        from .sequences import TupleVariable

        if kind == "keys":
            return _wrap_key(key)
        if kind == "values":
            return self.items[key]
        return TupleVariable([_wrap_key(key), self.items[key]])

    def contains(self, tx: "Tx", item: VariableTracker) -> bool:
        return _key(item) in self.items

    def as_keyword_arguments(self, tx: "Tx", allow_any_key: bool = False) -> dict[Any, VariableTracker]:
        if not allow_any_key and not all(isinstance(k, str) for k in self.items):
            unsupported(Category.EXCEPTION, "keywords must be strings (TypeError)")
        return dict(self.items)

    # ---- mutation ------------------------------------------------------------------------------------
    def store(self, tx: "Tx", key: VariableTracker, value: VariableTracker) -> None:
        k = _key(key)
        tx.output.side_effects.mutate(self)
        self.items[k] = value

    def setitem(self, tx: "Tx", key: VariableTracker, value: VariableTracker) -> None:
        self.store(tx, key, value)

    def delitem(self, tx: "Tx", key: VariableTracker) -> None:
        k = _key(key)
        if k not in self.items:
            unsupported(Category.EXCEPTION, f"del of a missing key {k!r} raises KeyError")
        tx.output.side_effects.mutate(self)
        del self.items[k]

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
        if name in _VIEWS and not args and not kwargs:
            return DictViewVariable(self, name)
        method = _DICT_METHODS.get(name)
        if method is None:
            unsupported_method(self, name)
        try:
            result = method(self, tx, *args, **kwargs)
        except TypeError as error:  # wrong arguments: the real call raises it
            unsupported(Category.EXCEPTION, f"dict.{name} raises TypeError: {error}")
        return ConstantVariable(None) if result is None else result

    # ---- methods (called with the arguments of the Python method) ------------------------------------
    def get(self, tx: "Tx", key: VariableTracker, default: VariableTracker | None = None) -> VariableTracker:
        return self.items.get(_key(key), default if default is not None else ConstantVariable(None))

    def copy(self, tx: "Tx") -> VariableTracker:
        return ConstDictVariable(self.items)

    def length(self, tx: "Tx") -> VariableTracker:
        return ConstantVariable(len(self.items))

    def has(self, tx: "Tx", key: VariableTracker) -> VariableTracker:
        return ConstantVariable(self.contains(tx, key))

    def update(self, tx: "Tx", other: VariableTracker | None = None, **kwargs: VariableTracker) -> None:
        new = dict(pairs_of(tx, other)) if other is not None else {}
        tx.output.side_effects.mutate(self)
        self.items.update(new)
        self.items.update(kwargs)

    def pop(self, tx: "Tx", key: VariableTracker, *default: VariableTracker) -> VariableTracker:
        k = _key(key)
        if k not in self.items:
            if not default:
                unsupported(Category.EXCEPTION, f"dict.pop of a missing key {k!r} raises KeyError")
            return default[0]
        tx.output.side_effects.mutate(self)
        return self.items.pop(k)

    def popitem(self, tx: "Tx") -> VariableTracker:
        from .sequences import TupleVariable

        if not self.items:
            unsupported(Category.EXCEPTION, "popitem of an empty dict raises KeyError")
        tx.output.side_effects.mutate(self)
        key, value = self.items.popitem()
        self.popped.append(key)
        return TupleVariable([_wrap_key(key), value])

    def setdefault(self, tx: "Tx", key: VariableTracker, default: VariableTracker | None = None) -> VariableTracker:
        k = _key(key)
        if k not in self.items:
            tx.output.side_effects.mutate(self)
            self.items[k] = default if default is not None else ConstantVariable(None)
        return self.items[k]

    def clear(self, tx: "Tx") -> None:
        tx.output.side_effects.mutate(self)
        self.items.clear()

    def ior(self, tx: "Tx", other: VariableTracker) -> VariableTracker:
        if not other.is_mapping():
            unsupported(Category.EXCEPTION, f"dict |= {other.describe()} raises TypeError")
        self.update(tx, other)
        return self

    # ---- leaving the graph ----------------------------------------------------------------------------
    def write_back(self, codegen: "PyCodegen") -> None:
        codegen.begin_call(_replace_contents)
        codegen.load_source(self.source)
        self.build(codegen)
        if self.popped:
            codegen.load_const(tuple(self.popped))
        codegen.end_call(3 if self.popped else 2)
        codegen.pop_top()

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None:
            codegen.load_source(self.source)
            return
        if codegen.load_built(self):
            return
        self.build(codegen)
        codegen.remember_built(self)

    def build(self, codegen: "PyCodegen") -> None:
        for key, value in self.items.items():
            codegen.load_const(key)
            value.reconstruct(codegen)
        codegen.build_map(len(self.items))


_VIEWS = ("keys", "values", "items")

_DICT_METHODS: dict[str, Callable[..., VariableTracker | None]] = {
    "get": ConstDictVariable.get, "copy": ConstDictVariable.copy, "update": ConstDictVariable.update,
    "pop": ConstDictVariable.pop, "popitem": ConstDictVariable.popitem, "setdefault": ConstDictVariable.setdefault,
    "clear": ConstDictVariable.clear, "__getitem__": ConstDictVariable.getitem, "__len__": ConstDictVariable.length,
    "__contains__": ConstDictVariable.has, "__ior__": ConstDictVariable.ior,
}


class DictViewVariable(VariableTracker):
    """d.keys(), d.values() or d.items(): a live view of the dict."""

    def __init__(self, mapping: ConstDictVariable, kind: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mapping = mapping
        self.kind = kind

    def python_type(self) -> type:
        return type(getattr({}, self.kind)())

    def describe(self) -> str:
        return f"the dict view {self.kind}() of {self.mapping.describe()}"

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.mapping.items)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        return [self.mapping.item_view(k, self.kind) for k in self.mapping.items]

    def iterator(self, tx: "Tx") -> VariableTracker:
        from .iterators import DictIteratorVariable

        return DictIteratorVariable(self.mapping, self.kind)

    def contains(self, tx: "Tx", item: VariableTracker) -> bool:
        if self.kind == "keys":
            return self.mapping.contains(tx, item)
        from .sequences import TupleVariable

        return TupleVariable(self.unpack(tx)).contains(tx, item)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "__len__" and not args and not kwargs:
            return ConstantVariable(len(self.mapping.items))
        if name == "__contains__" and len(args) == 1 and not kwargs:
            return ConstantVariable(self.contains(tx, args[0]))
        unsupported_method(self, name)


def pairs_of(tx: "Tx", value: VariableTracker) -> list[tuple[Any, VariableTracker]]:
    """What dict(value) or d.update(value) takes: a mapping, or an iterable of key/value pairs."""
    if value.is_mapping():
        return list(value.as_keyword_arguments(tx, allow_any_key=True).items())
    pairs = []
    for pair in value.unpack(tx):
        parts = pair.unpack(tx)
        if len(parts) != 2:
            unsupported(Category.EXCEPTION, "a dict update sequence element does not have length 2 (ValueError)")
        pairs.append((_key(parts[0]), parts[1]))
    return pairs


def _wrap_key(key: Any) -> VariableTracker:
    from .builder import wrap_constant_result

    return wrap_constant_result(key)


def hashes_in_python(value: Any) -> bool:
    """Hashing `value` runs the program's code (a class's own __hash__ or __eq__, also inside a
    tuple or frozenset): a trace would run it more often than the program, so it is not traced."""
    if isinstance(value, (tuple, frozenset)):
        return any(hashes_in_python(item) for item in value)
    from ..skipfiles import is_skipped

    cls = type(value)
    methods = [getattr(cls, name, None) for name in ("__hash__", "__eq__")]
    # a library's (enum's, a dataclass made in site-packages) is no code of the program's
    return any(isinstance(m, types.FunctionType) and not is_skipped(m.__code__) for m in methods)


def _key(key: VariableTracker) -> Any:
    if not key.is_python_constant():
        unsupported(Category.UNSUPPORTED_VALUE, f"a dict key that is {key.describe()}")
    value = key.as_python_constant()
    if hashes_in_python(value):
        unsupported(Category.UNSUPPORTED_VALUE, f"a dict key of class {type(value).__qualname__}, whose own "
                    "__hash__ or __eq__ runs in Python as often as the program calls it")
    try:
        hash(value)
    except TypeError:
        unsupported(Category.EXCEPTION, f"unhashable dict key {value!r} (TypeError)")
    return value


@dataclass(frozen=True)
class DictKeysAre:
    """Guard predicate: a dict with exactly these keys in this order (the C guard calls it).
    It never runs the program's code: keys of other kinds than ints, strs and bytes must be the
    same objects (`==` would call a class's __eq__, which may raise or mutate)."""

    keys: tuple
    _kinds: tuple[type, ...] = field(init=False, repr=False, compare=False)  # set by __post_init__
    _plain: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_kinds", tuple(map(type, self.keys)))
        object.__setattr__(self, "_plain", all(kind in _PLAIN_KEYS for kind in self._kinds))

    def __call__(self, value: Any) -> bool:
        keys = tuple(value)
        if len(keys) != len(self.keys):
            return False
        if all(map(operator.is_, keys, self.keys)):  # the usual case: the very same key objects
            return True
        if not all(map(operator.is_, map(type, keys), self._kinds)):
            return False
        if self._plain:  # same built-in kinds in every position: == is theirs
            return keys == self.keys
        return all(map(_same_key, keys, self.keys))

    def describe(self, name: str) -> str:
        return f"list({name}) == {list(self.keys)!r}"


_PLAIN_KEYS = frozenset({int, str, bytes, bool, type(None)})


def _same_key(a: Any, b: Any) -> bool:
    """Keys of the same type: equal without user code (tuples item by item, floats with their
    sign: -0.0 prints differently from 0.0), else the same object."""
    if a is b:
        return True
    kind = type(a)
    if kind in _PLAIN_KEYS:
        return a == b
    if kind is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if kind is tuple:
        return len(a) == len(b) and all(type(x) is type(y) and _same_key(x, y) for x, y in zip(a, b))
    return False


def _replace_contents(original: dict, new: dict, popped: tuple = ()) -> None:
    """Give `original` the items and order of `new` (the dict as the trace left it) by the operations
    plain Python's program made: a key popitem() took by popitem(), other keys gone by `del`, changed
    values and new keys by stores. The table clear() and update() would build instead is another
    (sys.getsizeof differs; a split instance __dict__ stays split after `del` but is combined by
    popitem(), as CPython's test_dict checks): only when the order of the kept keys changed."""
    kept = [key for key in original if key in new]
    if list(new)[: len(kept)] != kept:
        original.clear()
        original.update(new)
        return
    for key in popped:
        if key in original and key not in new:
            if _same_key(next(reversed(original)), key):
                original.popitem()
            else:
                del original[key]
    for key in [key for key in original if key not in new]:
        del original[key]
    for key, value in new.items():
        if key not in original or original[key] is not value:
            original[key] = value
