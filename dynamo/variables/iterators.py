"""Iterators while tracing (sequences, ranges, dicts, zip/map/filter, itertools, generators): FOR_ITER
asks next_item() until None, each lazy exactly where CPython's is, so loops unroll faithfully."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from .. import config
from ..exc import Category, unsupported
from .base import VariableTracker
from .constant import ConstantVariable, countable_length

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx


def rebuild_inner(codegen: "PyCodegen", iterator: VariableTracker) -> None:
    """Push an iterator that zip(), enumerate(), filter() or chain() wraps: the frame's own
    object when the frame holds it too (zip(x, y) then next(x) advances one iterator)."""
    if codegen.rebuild is not None and codegen.rebuild(iterator):
        return
    iterator.reconstruct(codegen)


class IteratorVariable(VariableTracker):
    """Base of the iterators: iter(it) is it, and draining one is repeated next_item()."""

    def describe(self) -> str:
        return f"a {type(self).__name__.removesuffix('Variable')}"

    def identity_is_tracked(self) -> bool:
        return True

    def truth_value(self, tx: "Tx") -> bool:
        return True

    def iterator(self, tx: "Tx") -> VariableTracker:
        return self

    def reversed_iterator(self, tx: "Tx") -> VariableTracker:
        unsupported(Category.EXCEPTION, f"reversed() of {self.describe()} raises TypeError")

    def contains(self, tx: "Tx", item: VariableTracker) -> bool:
        from .sequences import same_or_equal

        # `in` consumes the iterator up to the first match, as CPython does
        while (element := self.next_item(tx)) is not None:
            if same_or_equal(element, item, "in"):
                return True
        return False

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        raise NotImplementedError

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        items: list[VariableTracker] = []
        while (item := self.next_item(tx)) is not None:
            items.append(item)
            if len(items) > config.unroll_limit:
                tx.check_unroll_budget(len(items), self.describe())
        return items

    def reconstruct(self, codegen: "PyCodegen") -> None:
        unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} cannot leave the compiled function yet",
                    "consume the iterator inside the function")


class ListIteratorVariable(IteratorVariable):
    """An iterator over a list of items, held by reference: iterating a ListVariable sees items
    appended or removed during the loop, as CPython's list iterator does."""

    def __init__(self, items: list[VariableTracker], rebuild_as: type | None = None,
                 container: VariableTracker | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items = items
        self.index = 0
        self.exhausted = False  # once exhausted, for good, even if the list grows afterwards
        self.rebuild_as = rebuild_as  # list or tuple: the kind of iterator reconstruct() makes
        # the iterable itself when it exists at run time (an argument, a range): reconstruct()
        # then makes the real iterator, advanced to where the trace got, which sees later
        # mutations of the list exactly as CPython's iterator would
        self.container = container

    def describe(self) -> str:
        return f"an iterator over {len(self.items)} items"

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        if self.exhausted or self.index >= len(self.items):
            self.exhausted = True
            return None
        self.index += 1
        return self.items[self.index - 1]

    def reconstruct(self, codegen: "PyCodegen") -> None:
        from .arrays import ArrayVariable

        from .sequences import BaseSequenceVariable

        container = self.container
        # a list the trace made is rebuilt once (the iterator and the frame's name hold one list);
        # an exhausted iterator over it stays empty when the list grows: the fallback below
        made_here = isinstance(container, BaseSequenceVariable) and not self.exhausted
        if container is not None and (container.source is not None or container.is_python_constant() or made_here
                                      or type(container) is ArrayVariable):  # an array the graph computes
            codegen.begin_call(_iterator_at)
            container.reconstruct(codegen)
            codegen.load_const(len(self.items) if self.exhausted else self.index)
            codegen.end_call(2)
            return
        if self.rebuild_as is None:
            return super().reconstruct(codegen)
        rest = [] if self.exhausted else self.items[self.index:]
        for item in rest:
            item.reconstruct(codegen)
        codegen.build(self.rebuild_as, len(rest))
        codegen.get_iter()


class ArrayIteratorVariable(ListIteratorVariable):
    """iter() of an ndarray: row i is indexed when next() asks for it, not when the loop starts
    (a 1-d array's items are scalar copies: one read before a write keeps the old value, one read
    after sees the new). A graph break rebuilds NumPy's iterator at the same position."""

    def __init__(self, array: VariableTracker, length: int, **kwargs: Any) -> None:
        super().__init__([], container=array, **kwargs)
        self.length = length

    def describe(self) -> str:
        return f"an iterator over {self.length} rows of an array"

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        import operator

        if not self.exhausted and len(self.items) < self.length:
            assert self.container is not None
            self.items.append(tx.output.numpy.call_function(tx, operator.getitem,
                                                            [self.container, ConstantVariable(len(self.items))], {}))
        return super().next_item(tx)


def _zip_of(strict: bool, done: bool, *iterators: Any) -> Any:
    """zip() over iterators rebuilt at a graph break, where the traced zip left off."""
    return iter(()) if done else zip(*iterators, strict=strict)


def _iterator_at(iterable: Any, index: int) -> Any:
    """iter(iterable) advanced by `index` items (list, tuple and range iterators keep a position)."""
    iterator = iter(iterable)
    iterator.__setstate__(index)
    return iterator


class ReversedIteratorVariable(IteratorVariable):
    """reversed() of a sequence: walks indices down and stops if the sequence shrank below them."""

    def __init__(self, items: list[VariableTracker], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items = items
        self.index = len(items) - 1

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        if 0 <= self.index < len(self.items):
            self.index -= 1
            return self.items[self.index + 1]
        self.index = -1
        return None


class DictIteratorVariable(IteratorVariable):
    """Iteration over a dict's keys, values or items; a dict resized or rekeyed during the loop
    raises RuntimeError in CPython, which the real code must raise itself."""

    def __init__(self, mapping: Any, kind: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mapping = mapping  # a ConstDictVariable
        self.kind = kind
        self.keys = list(mapping.items)
        self.index = 0

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        if list(self.mapping.items) != self.keys:
            unsupported(Category.EXCEPTION, "a dict changed during iteration (RuntimeError)")
        if self.index >= len(self.keys):
            return None
        key = self.keys[self.index]
        self.index += 1
        return self.mapping.item_view(key, self.kind)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        """The real dict iterator, advanced past the items the trace took (it still raises if
        the dict changes size during the rest of the loop)."""
        if list(self.mapping.items) != self.keys:  # the real one would raise on its next item
            unsupported(Category.EXCEPTION, "a dict changed during iteration (RuntimeError)")
        codegen.begin_call(_dict_iterator_at)
        self.mapping.reconstruct(codegen)
        codegen.load_const(self.kind)
        codegen.load_const(self.index)
        codegen.end_call(3)


def _dict_iterator_at(mapping: dict, kind: str, index: int) -> Any:
    iterator = iter(getattr(mapping, kind)())
    for _ in range(index):
        next(iterator)
    return iterator


class ZipVariable(IteratorVariable):
    """zip(): asks each iterator in turn and stops at the first exhausted one, as CPython does
    (the items already taken from the earlier iterators are consumed).

    Made over ranges and arrays (`iterables`), its iterators are made when the first item is asked
    for: a loop over it that becomes a loop node (loop_capture) never unrolls them."""

    def __init__(self, iterators: list[VariableTracker] | None, strict: bool,
                 iterables: list[VariableTracker] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._iterators = iterators
        self.iterables = iterables if iterators is None else None
        self.strict = strict
        self.done = False

    def started(self) -> bool:
        return self._iterators is not None

    def iterators(self, tx: "Tx") -> list[VariableTracker]:
        if self._iterators is None:
            assert self.iterables is not None
            self._iterators = [i.iterator(tx) for i in self.iterables]
        return self._iterators

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        from .sequences import TupleVariable

        iterators = self.iterators(tx)
        if self.done or not iterators:
            return None
        row = []
        for position, iterator in enumerate(iterators):
            item = iterator.next_item(tx)
            if item is None:
                self.done = True
                if self.strict:
                    self._check_strict(tx, position)
                return None
            row.append(item)
        return TupleVariable(row)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        parts = self._iterators if self._iterators is not None else self.iterables
        assert parts is not None
        codegen.begin_call(_zip_of)
        codegen.load_const(self.strict)
        codegen.load_const(self.done)
        for iterator in parts:
            rebuild_inner(codegen, iterator)
        codegen.end_call(2 + len(parts))

    def _check_strict(self, tx: "Tx", position: int) -> None:
        # the first iterator ran out: the others must be exhausted too; a later one: too short
        if position > 0 or any(it.next_item(tx) is not None for it in self.iterators(tx)[1:]):
            unsupported(Category.EXCEPTION, "zip(strict=True) on iterables of different lengths raises ValueError")


class EnumerateVariable(IteratorVariable):
    """enumerate(): over a range or an array (`iterable`), its inner iterator is made when the
    first item is asked for (see ZipVariable)."""

    def __init__(self, iterator: VariableTracker | None, start: Any, iterable: VariableTracker | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._inner = iterator
        self.iterable = iterable if iterator is None else None
        self.count = start

    def started(self) -> bool:
        return self._inner is not None

    def inner(self, tx: "Tx") -> VariableTracker:
        if self._inner is None:
            assert self.iterable is not None
            self._inner = self.iterable.iterator(tx)
        return self._inner

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        from .sequences import TupleVariable

        item = self.inner(tx).next_item(tx)
        if item is None:
            return None
        self.count += 1
        return TupleVariable([ConstantVariable(self.count - 1), item])

    def reconstruct(self, codegen: "PyCodegen") -> None:
        inner = self._inner if self._inner is not None else self.iterable
        assert inner is not None
        codegen.begin_call(enumerate)
        rebuild_inner(codegen, inner)
        codegen.load_const(self.count)
        codegen.end_call(2)


class MapVariable(IteratorVariable):
    """map(fn, *iterables): fn is called lazily, one item at a time."""

    def __init__(self, fn: VariableTracker, iterators: list[VariableTracker], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn
        self.zipped = ZipVariable(iterators, strict=False)

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        row = self.zipped.next_item(tx)
        return None if row is None else self.fn.call_function(tx, row.unpack(tx), {})


class FilterVariable(IteratorVariable):
    """filter(fn, iterable); filter(None, iterable) keeps the truthy items."""

    def __init__(self, fn: VariableTracker | None, iterator: VariableTracker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn
        self.inner = iterator

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        while (item := self.inner.next_item(tx)) is not None:
            verdict = item if self.fn is None else self.fn.call_function(tx, [item], {})
            if verdict.truth_value(tx):
                return item
        return None

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.begin_call(filter)
        if self.fn is None:
            codegen.load_const(None)
        else:
            self.fn.reconstruct(codegen)
        rebuild_inner(codegen, self.inner)
        codegen.end_call(2)


class ChainVariable(IteratorVariable):
    """itertools.chain(*iterables): each iterator asked only once the previous one ran out."""

    def __init__(self, iterators: list[VariableTracker], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.iterators = list(iterators)

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        while self.iterators:
            item = self.iterators[0].next_item(tx)
            if item is not None:
                return item
            self.iterators.pop(0)
        return None

    def reconstruct(self, codegen: "PyCodegen") -> None:
        import itertools

        codegen.begin_call(itertools.chain)
        for iterator in self.iterators:
            rebuild_inner(codegen, iterator)
        codegen.end_call(len(self.iterators))


class CountVariable(IteratorVariable):
    """itertools.count(start, step) and itertools.repeat(value[, times]): endless (or counted)
    sequences of values; a loop over one alone runs into the unroll budget."""

    def __init__(self, next_value: Any, times: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.next_value = next_value  # () -> VariableTracker
        self.times = times

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        if self.times is not None:
            if self.times <= 0:
                return None
            self.times -= 1
        return self.next_value()


class SliceIteratorVariable(IteratorVariable):
    """itertools.islice(iterable, start, stop, step): skips lazily, as CPython does (islice_next):
    it first skips to the next wanted position, even past an empty window (islice(it, 3, 3) takes
    3 items of it), the next wanted position is never past stop, and once exhausted it stays so."""

    def __init__(self, iterator: VariableTracker, start: int, stop: int | None, step: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.inner = iterator
        self.position = 0  # how many items of the inner iterator were taken
        self.wanted = start  # the position of the next item to give
        self.stop = stop
        self.step = step
        self.exhausted = False

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        item = None if self.exhausted else self._next(tx)
        self.exhausted = item is None
        return item

    def _next(self, tx: "Tx") -> VariableTracker | None:
        while self.position < self.wanted:
            if self.inner.next_item(tx) is None:
                return None
            self.position += 1
        if self.stop is not None and self.position >= self.stop:
            return None
        item = self.inner.next_item(tx)
        if item is None:
            return None
        self.position += 1
        self.wanted += self.step
        if self.stop is not None and self.wanted > self.stop:
            self.wanted = self.stop
        return item


class GeneratorVariable(IteratorVariable):
    """A generator made by calling a generator function (a generator expression, say) while
    tracing: each next() runs its inlined code up to the next yield, so its body interleaves
    with the caller's exactly as in CPython."""

    def __init__(self, translator: Any, name: str, names: tuple[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.translator = translator
        self.name = name
        self.names = names  # the generator's __name__ and __qualname__: its function's at the call
        self.finished = False
        self.running = False

    def describe(self) -> str:
        return f"the generator {self.name}"

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if codegen.rebuild is not None and codegen.rebuild(self):  # made again where it stands
            return
        super().reconstruct(codegen)

    def python_type(self) -> type:
        return types.GeneratorType

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        if self.finished:
            return None
        if self.running:
            unsupported(Category.EXCEPTION, f"{self.describe()} is already executing (ValueError)")
        self.running = True
        try:
            value = self.translator.resume()
        finally:
            self.running = False
        self.finished = value is None
        return value


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
        tx.check_unroll_budget(countable_length(self.value), "a range")
        return [ConstantVariable(i) for i in self.value]

    def iterator(self, tx: "Tx") -> VariableTracker:
        return ListIteratorVariable(self.unpack(tx), container=self)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if name in ("start", "stop", "step"):
            return ConstantVariable(getattr(self.value, name))
        return super().var_getattr(tx, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in ("__len__", "index", "count", "__getitem__", "__contains__") and all(a.is_python_constant() for a in args):
            from .builder import wrap_constant_result

            try:
                return wrap_constant_result(getattr(self.value, name)(*[a.as_python_constant() for a in args]))
            except (IndexError, ValueError, TypeError, OverflowError) as error:  # len() past sys.maxsize items
                unsupported(Category.EXCEPTION, f"range.{name} raises {type(error).__name__}: {error}")
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.load_const(self.value)
