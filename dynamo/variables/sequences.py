"""Python sequences while tracing: tuples, lists (mutable, with identity) and slices; a list that existed
before the frame and was mutated is written back."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

from ..exc import Category, unsupported
from .base import BoundMethodVariable, VariableTracker, unsupported_method
from .fold_limits import repeated_length, warnings_run_in_python

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

    def iterator(self, tx: "Tx") -> VariableTracker:
        from .iterators import ListIteratorVariable

        # the live item list, as CPython's list iterator sees items appended during the loop
        return ListIteratorVariable(self.items, rebuild_as=self.python_class, container=self)

    def as_graph_argument(self) -> Any:
        return self.python_class(item.as_graph_argument() for item in self.items)

    def as_meta_argument(self) -> Any:
        return self.python_class(item.as_meta_argument() for item in self.items)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if callable(getattr(self.python_class, name, None)):
            return BoundMethodVariable(self, name)
        return super().var_getattr(tx, name)

    def getitem(self, tx: "Tx", index: VariableTracker) -> VariableTracker:
        key = _index(index, self)
        if isinstance(key, slice):
            if self.python_class is tuple and key.indices(len(self.items)) == (0, len(self.items), 1):
                return self  # CPython's tuple slice gives the tuple itself when it takes it whole
            return type(self)(self.items[key])
        try:
            return self.items[key]
        except IndexError:
            unsupported(Category.EXCEPTION, f"index {key} is out of range for {self.describe()} (IndexError)")

    def contains(self, tx: "Tx", item: VariableTracker) -> bool:
        return self.position(tx, item, "in") is not None

    def position(self, tx: "Tx", item: VariableTracker, what: str) -> int | None:
        return next((i for i, element in enumerate(self.items) if same_or_equal(element, item, what)), None)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .constant import ConstantVariable

        if kwargs:
            unsupported_method(self, name)
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(self.contains(tx, args[0]))
        if name == "index" and len(args) == 1:
            found = self.position(tx, args[0], f"{self.python_class.__name__}.index")
            if found is None:
                unsupported(Category.EXCEPTION, f"{self.python_class.__name__}.index of a missing value raises ValueError")
            return ConstantVariable(found)
        if name == "count" and len(args) == 1:
            return ConstantVariable(sum(1 for e in self.items if same_or_equal(e, args[0], "count")))
        unsupported_method(self, name)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None:  # the same object (mutations were written back)
            codegen.load_source(self.source)
            return
        if codegen.load_built(self):
            return
        for item in self.items:
            item.reconstruct(codegen)
        codegen.build(self.python_class, len(self.items))
        codegen.remember_built(self)


class TupleVariable(BaseSequenceVariable):
    python_class = tuple


class ListVariable(BaseSequenceVariable):
    """A list; mutations are tracked so a list that existed before the frame is updated afterwards.

    Every mutation changes `items` in place: iterators over the list hold that very list."""

    python_class = list

    def __init__(self, items: list[VariableTracker], *, read_items: Callable[[], list[VariableTracker]] | None = None,
                 **kwargs: Any) -> None:
        # A list read from the frame is read (its length and items guarded) only when the trace
        # looks inside it: a list the function only appends to (`self.history.append(loss)`)
        # guards nothing about its contents, so it does not recompile as it grows.
        self._read_items = read_items
        # whether a mutation of the trace left the list with items: then it had storage, which a
        # list.sort() running around the frame notices even if the list ends empty (write_back)
        self._filled = False
        super().__init__(items, **kwargs)

    @property
    def items(self) -> list[VariableTracker]:
        if self._read_items is not None:
            read, self._read_items = self._read_items, None
            self._items[:0] = read()  # in place: iterators and appends hold this very list
        return self._items

    @items.setter
    def items(self, items: list[VariableTracker]) -> None:
        self._items = items

    def describe(self) -> str:
        return "a list" if self._read_items is not None else super().describe()

    def is_python_constant(self) -> bool:
        return False  # a list has identity: it is never folded into a fresh copy

    def has_constant_contents(self) -> bool:
        return all(item.is_python_constant() for item in self.items)

    def identity_is_tracked(self) -> bool:
        return True

    def reversed_iterator(self, tx: "Tx") -> VariableTracker:
        from .iterators import ReversedIteratorVariable

        return ReversedIteratorVariable(self.items)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .constant import ConstantVariable

        mutator = _LIST_MUTATORS.get(name)
        if mutator is not None:
            tx.output.side_effects.mutate(self)
            try:
                result = mutator(self, tx, *args, **kwargs)
            except TypeError as error:  # wrong arguments: the real call raises it
                unsupported(Category.EXCEPTION, f"list.{name} raises TypeError: {error}")
            self._filled = self._filled or bool(self._items)
            return ConstantVariable(None) if result is None else result
        if name == "copy" and not args and not kwargs:
            return ListVariable(list(self.items))
        return super().call_method(tx, name, args, kwargs)

    # ---- the mutators (each called with the arguments of the method) ---------------------------
    def append(self, tx: "Tx", value: VariableTracker) -> None:
        self._items.append(value)  # the items before it need not be read

    def extend(self, tx: "Tx", values: VariableTracker) -> None:
        added = values.unpack(tx)  # unpack copies first, so l.extend(l) doubles once
        self._items.extend(added)

    def insert(self, tx: "Tx", index: VariableTracker, value: VariableTracker) -> None:
        self.items.insert(operator.index(index.as_python_constant()), value)

    def pop(self, tx: "Tx", index: VariableTracker | None = None) -> VariableTracker:
        position = -1 if index is None else operator.index(index.as_python_constant())
        if not -len(self.items) <= position < len(self.items):
            unsupported(Category.EXCEPTION, f"pop from {self.describe()} at {position} raises IndexError")
        return self.items.pop(position)

    def remove(self, tx: "Tx", value: VariableTracker) -> None:
        found = self.position(tx, value, "list.remove")
        if found is None:
            unsupported(Category.EXCEPTION, "list.remove of a missing value raises ValueError")
        del self.items[found]

    def clear(self, tx: "Tx") -> None:
        self.items.clear()

    def reverse(self, tx: "Tx") -> None:
        self.items.reverse()

    def sort(self, tx: "Tx", key: VariableTracker | None = None, reverse: VariableTracker | None = None) -> None:
        # CPython empties the list while it sorts: a key function sees [], and one that changes the
        # list makes sort() raise ValueError (after sorting the items it had)
        items, self._items = self.items, []
        log = tx.output.side_effects.mutation_log
        logged = len(log)
        try:
            ordered = sorted_items(tx, items, key, reverse)
        finally:
            changed = bool(self._items) or any(container is self for container in log[logged:])
            self._items = items
        if changed:
            unsupported(Category.EXCEPTION, "the key function changed the list while list.sort() ran (ValueError)")
        items[:] = ordered

    def iadd(self, tx: "Tx", other: VariableTracker) -> VariableTracker:
        self.extend(tx, other)
        return self

    def imul(self, tx: "Tx", count: VariableTracker) -> VariableTracker:
        self.items[:] = self.items * repeated_length(self.items, count.as_python_constant())
        return self

    # ---- item assignment -----------------------------------------------------------------------------
    def setitem(self, tx: "Tx", index: VariableTracker, value: VariableTracker) -> None:
        key = _index(index, self)
        tx.output.side_effects.mutate(self)
        try:
            if isinstance(key, slice):
                self.items[key] = value.unpack(tx)
                self._filled = self._filled or bool(self._items)
            else:
                self.items[key] = value
        except (IndexError, ValueError) as error:
            unsupported(Category.EXCEPTION, f"assigning to {self.describe()}[{key!r}] raises {type(error).__name__}")

    def delitem(self, tx: "Tx", index: VariableTracker) -> None:
        key = _index(index, self)
        tx.output.side_effects.mutate(self)
        try:
            del self.items[key]
        except IndexError:
            unsupported(Category.EXCEPTION, f"del {self.describe()}[{key!r}] raises IndexError")

    def write_back(self, codegen: "PyCodegen") -> None:
        """original[:] = the contents the trace ended with; original.extend(added) when the trace
        only appended to it."""
        if self._read_items is not None:
            codegen.begin_call(list.extend)
            codegen.load_source(self.source)
            for item in self._items:
                item.reconstruct(codegen)
            codegen.build(tuple, len(self._items))
            codegen.end_call(2)
            codegen.pop_top()
            return
        if not self.items and self._filled:
            # a list that list.sort() is sorting has no storage, and `original[:] = []` gives it
            # none: fill it first, as the trace's mutations did, so that the sort raises "list
            # modified during sort" as it does in Python (CPython's test_sort, test_undetected_mutation)
            codegen.load_const(None)
            codegen.build(list, 1)
            codegen.load_source(self.source)
            codegen.store_slice_all()
        for item in self.items:
            item.reconstruct(codegen)
        codegen.build(list, len(self.items))
        codegen.load_source(self.source)
        codegen.store_slice_all()


_LIST_MUTATORS: dict[str, Callable[..., VariableTracker | None]] = {
    name: getattr(ListVariable, name)
    for name in ("append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort")
}
_LIST_MUTATORS["__iadd__"] = ListVariable.iadd
_LIST_MUTATORS["__imul__"] = ListVariable.imul


def sorted_items(tx: "Tx", items: list[VariableTracker], key: VariableTracker | None,
                 reverse: VariableTracker | None) -> list[VariableTracker]:
    """The items in sorted() order: the key is called once per item, in order, as CPython does,
    and the keys must be constants (comparing arrays has no single truth value)."""
    keys = items if key is None or _is_none(key) else [key.call_function(tx, [item], {}) for item in items]
    if not all(k.is_python_constant() for k in keys):
        culprit = next(k for k in keys if not k.is_python_constant())
        unsupported(Category.DATA_DEPENDENT_VALUE, f"sorting compares {culprit.describe()}",
                    "sort values known while tracing, or use np.sort for arrays")
    raw = [k.as_python_constant() for k in keys]
    descending = bool(reverse.as_python_constant()) if reverse is not None else False
    try:
        # sorting positions by key is the same permutation (same comparisons, same stability)
        with warnings_run_in_python("sorting"):
            order = sorted(range(len(items)), key=raw.__getitem__, reverse=descending)
    except TypeError as error:
        unsupported(Category.EXCEPTION, f"sorting raises TypeError: {error}")
    return [items[i] for i in order]


def same_or_equal(element: VariableTracker, item: VariableTracker, what: str) -> bool:
    """How list search compares: identity first, then ==."""
    if element is item:
        return True
    if not (element.is_python_constant() and item.is_python_constant()):
        unsupported(Category.DATA_DEPENDENT_VALUE, f"{what} compares {item.describe()} with {element.describe()} by value")
    with warnings_run_in_python(what):
        return bool(element.as_python_constant() == item.as_python_constant())


def _is_none(value: VariableTracker) -> bool:
    return value.is_python_constant() and value.as_python_constant() is None


def _index(index: VariableTracker, container: VariableTracker) -> Any:
    if not index.is_python_constant():
        unsupported(Category.DATA_DEPENDENT_VALUE, f"indexing {container.describe()} with {index.describe()}",
                    "index Python lists with values known while tracing")
    key = index.as_python_constant()
    if not isinstance(key, slice) and not hasattr(type(key), "__index__"):
        unsupported(Category.EXCEPTION, f"indexing {container.describe()} with {key!r} raises TypeError")
    return key


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

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if name in ("start", "stop", "step"):
            return self.parts[("start", "stop", "step").index(name)]
        return super().var_getattr(tx, name)

    def as_graph_argument(self) -> Any:
        return slice(*(p.as_graph_argument() for p in self.parts))

    def as_meta_argument(self) -> Any:
        return slice(*(p.as_meta_argument() for p in self.parts))

    def reconstruct(self, codegen: "PyCodegen") -> None:
        # one object, as for tuples: `copy.copy(s) is s` holds in Python
        if self.source is not None:
            codegen.load_source(self.source)
            return
        if codegen.load_built(self):
            return
        for part in self.parts:
            part.reconstruct(codegen)
        codegen.build(slice, 3)
        codegen.remember_built(self)
