"""SetVariable: a set of constants built while tracing, held in a real set that receives the program's
insertions in the program's order, so that iteration order is CPython's own."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from ..guards import GuardKind
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
# readers whose result is a new set (its order depends on the layout of the set read)
_NEW_SETS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
# in-place methods and the set method each one is
_MUTATORS = {
    "add": "add", "discard": "discard", "remove": "remove", "pop": "pop", "clear": "clear", "update": "update",
    "intersection_update": "intersection_update", "difference_update": "difference_update",
    "symmetric_difference_update": "symmetric_difference_update",
    "__ior__": "__ior__", "__iand__": "__iand__", "__isub__": "__isub__", "__ixor__": "__ixor__",
}


@dataclass(frozen=True)
class SetHas:
    """Guard predicate: whether a set holds this element (what a membership test, or an add or a
    removal of it, relied on)."""

    element: Any
    present: bool

    def __call__(self, value: Any) -> bool:
        return (self.element in value) is self.present

    def describe(self, name: str) -> str:
        return f"({self.element!r} in {name}) is {self.present}"


class FrameSetGuards:
    """What the trace read of a set of the frame, guarded as it reads it: its length, whether it
    holds an element, or (iterated, folded, combined) its elements in order. A set whose other
    elements change between calls (a `visited` set) compiles once."""

    def __init__(self, output: Any, source: Any, original: set | frozenset) -> None:
        self.output, self.source, self.original = output, source, original
        self.all_guarded = False

    def everything(self) -> None:
        from .dicts import DictKeysAre

        if not self.all_guarded:
            self.all_guarded = True
            self.output.guard(self.source, GuardKind.CALL, DictKeysAre(tuple(self.original)))

    def length(self) -> None:
        if not self.all_guarded:
            self.output.guard(self.source, GuardKind.LEN_IS, len(self.original))

    def holds(self, element: Any) -> None:
        if not self.all_guarded:
            self.output.guard(self.source, GuardKind.CALL, SetHas(element, element in self.original))


class SetVariable(VariableTracker):
    """A set (or frozenset) the trace made, or one read from the frame (`frame`: its guards and the
    real object). The trace works on `value`, a copy of a frame's set; the trace's changes to it are
    replayed on the real object after the graph, element by element and in order."""

    def __init__(self, values: set | frozenset, frame: FrameSetGuards | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # a set the trace builds is the real set of its insertions: its iteration order is CPython's
        self.value = set(values) if frame is not None else values
        self.frame = frame
        self.kind: type = type(frame.original) if frame is not None else set
        self.changes: list[tuple[str, Any]] = []  # (set method, element) done to the frame's set

    def python_type(self) -> type:
        return self.kind

    def describe(self) -> str:
        return f"a {self.kind.__name__} of {len(self.value)} items"

    def _layout_known(self) -> bool:
        """Whether the trace knows the order the program's set iterates in: a set the trace built
        itself (same insertions), or the frame's own set before the trace changed it."""
        return self.frame is None or not self.changes

    def has_constant_contents(self) -> bool:
        return self._layout_known()

    def as_python_constant(self) -> Any:
        if self.frame is not None:
            self.frame.everything()
            return self.frame.original  # its own iteration order (a copy's may differ); folds only read it
        return set(self.value)

    def identity_is_tracked(self) -> bool:
        return True

    def truth_value(self, tx: "Tx") -> bool:
        if self.frame is not None:
            self.frame.length()
        return bool(self.value)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        from .builder import wrap_constant_result

        if self.frame is None:
            return [wrap_constant_result(v) for v in self.value]
        if self.changes:
            unsupported(Category.UNSUPPORTED_VALUE, f"iterating {self.describe()} of the frame after the trace changed it",
                        "its order is the real set's, which only Python knows")
        self.frame.everything()
        return [wrap_constant_result(v) for v in self.frame.original]

    def iterator(self, tx: "Tx") -> VariableTracker:
        return SetIteratorVariable(self, self.unpack(tx))

    def contains(self, tx: "Tx", item: VariableTracker) -> bool:
        return self._holds(_element(item))

    def _holds(self, element: Any) -> bool:
        """`element in` the set, guarded on the frame's set unless the trace changed that element."""
        if self.frame is not None and not any(element == changed for _, changed in self.changes):
            self.frame.holds(element)
        return element in self.value

    def reversed_iterator(self, tx: "Tx") -> VariableTracker:
        unsupported(Category.EXCEPTION, "reversed() of a set raises TypeError")

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if callable(getattr(self.kind, name, None)):
            return BoundMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .builder import wrap_constant_result

        if kwargs or (name not in _READERS and name not in _MUTATORS) or (self.kind is frozenset and name in _MUTATORS):
            unsupported_method(self, name)
        if name in _MUTATORS:
            # arguments are elements (add/discard/remove) or iterables of elements (the rest)
            raw = [_element(a) if name in ("add", "discard", "remove") else _elements(tx, a) for a in args]
            if self.frame is not None:
                self._change_frame_set(tx, name, raw)
            tx.output.side_effects.mutate(self)
            target = self.value
        else:
            raw = [_element(a) if name == "__contains__" else _elements(tx, a) for a in args]
            target = self._read_target(tx, name, raw)
        try:
            result = getattr(target, _MUTATORS.get(name, name))(*raw)
        except (KeyError, TypeError) as error:
            unsupported(Category.EXCEPTION, f"set.{name} raises {type(error).__name__}: {error}")
        if result is NotImplemented:  # `s |= [1]`: the operators take sets only
            unsupported(Category.EXCEPTION, f"set.{name} of {args[0].describe()} raises TypeError")
        if result is target:  # the in-place operators return the set itself
            return self
        return wrap_constant_result(result)

    def _read_target(self, tx: "Tx", name: str, raw: list[Any]) -> set | frozenset:
        """The set a reader method runs on, with the guards its answer needs."""
        if self.frame is None:
            return self.kind(self.value)
        if name == "__contains__":
            self._holds(raw[0])
            return self.value
        if name == "__len__":
            self.frame.length()
            return self.value
        if self.changes and name in _NEW_SETS:
            unsupported(Category.UNSUPPORTED_VALUE, f"set.{name} of {self.describe()} of the frame after the trace "
                        "changed it", "its order is the real set's, which only Python knows")
        self.frame.everything()
        # unchanged: on the program's own set, so that a new set iterates as the program's result does
        return self.kind(self.value) if self.changes else self.frame.original

    def _change_frame_set(self, tx: "Tx", name: str, raw: list[Any]) -> None:
        """The frame's set changes only by element: replayed on it call by call after the graph."""
        if name not in ("add", "discard", "remove"):
            unsupported(Category.SIDE_EFFECT, f"set.{name} of {self.describe()} of the frame",
                        "only add, discard and remove of the frame's sets are replayed")
        self._holds(raw[0])  # what the change does depends on it (remove raises without it)
        self.changes.append((name, raw[0]))

    def write_back(self, codegen: "PyCodegen") -> None:
        for name, element in self.changes:
            codegen.begin_call(getattr(set, name))
            codegen.load_source(self.source)
            codegen.load_const(element)
            codegen.end_call(2)
            codegen.pop_top()

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

