"""VariableTracker: what the symbolic interpreter holds on its stack and in its locals.

One subclass per kind of value; every operation defaults to `unsupported(...)`, so a kind only
implements what it can capture exactly.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from ..exc import Category, unsupported
from ..sources import Source

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx


class VariableTracker:
    """A value during tracing. `source` says where it can be re-fetched from at run time."""

    def __init__(self, *, source: Source | None = None) -> None:
        self.source = source

    # ---- what it is ------------------------------------------------------------------------
    def python_type(self) -> type:
        unsupported(Category.UNSUPPORTED_VALUE, f"the type of {self.describe()} is not known while tracing")

    def is_python_constant(self) -> bool:
        """An immutable value known while tracing: it folds, and its identity never matters."""
        return False

    def has_constant_contents(self) -> bool:
        """Its current value is known while tracing, so as_python_constant() gives a snapshot.
        True for constants and for mutable containers of constants (whose identity still matters:
        a snapshot may be read by a pure function, never returned or mutated in its place)."""
        return self.is_python_constant()

    def identity_is_tracked(self) -> bool:
        """Two trackers of this kind are two distinct objects (lists, dicts, user objects: the
        builder gives one tracker per object), so `is` between them is known while tracing."""
        return False

    def kind_is_known(self) -> bool:
        """Its kind (constant, container, array, object, ...) is known while tracing. False for a
        value read lazily at run time (an attribute of an ndarray subclass), which may be None
        or anything else: identity tests against it cannot be folded."""
        return True

    def as_python_constant(self) -> Any:
        unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} is not a Python constant while tracing")

    def is_mapping(self) -> bool:
        """A mapping: dict(value), d.update(value) and **value take its keys and values."""
        return False

    def describe(self) -> str:
        """How a message names this value: 'an array of shape (3, 4) and dtype float64'."""
        return f"a {type(self).__name__}"

    # ---- what can be done with it --------------------------------------------------------------
    def var_getattr(self, tx: "Tx", name: str) -> "VariableTracker":
        unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"reading attribute {name!r} of {self.describe()}")

    def call_function(self, tx: "Tx", args: list["VariableTracker"], kwargs: dict[str, "VariableTracker"]) -> "VariableTracker":
        unsupported(Category.UNSUPPORTED_CALL, f"calling {self.describe()}")

    def apply_operator(self, tx: "Tx", fn: Any, args: list["VariableTracker"], position: int) -> "VariableTracker | None":
        """`fn(*args)` (an operator) through this value's own special method, this value being
        args[position]; None when its kind has none (user classes define them)."""
        return None

    def call_method(self, tx: "Tx", name: str, args: list["VariableTracker"], kwargs: dict[str, "VariableTracker"]) -> "VariableTracker":
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def getitem(self, tx: "Tx", key: "VariableTracker") -> "VariableTracker":
        """self[key] for kinds outside the graph (arrays index through the NumPy registry)."""
        unsupported(Category.UNSUPPORTED_VALUE, f"indexing {self.describe()} with {key.describe()}")

    def setitem(self, tx: "Tx", key: "VariableTracker", value: "VariableTracker") -> None:
        unsupported(Category.SIDE_EFFECT, f"item assignment on {self.describe()}")

    def delitem(self, tx: "Tx", key: "VariableTracker") -> None:
        unsupported(Category.SIDE_EFFECT, f"item deletion on {self.describe()}")

    def store_attr(self, tx: "Tx", name: str, value: "VariableTracker") -> None:
        unsupported(Category.SIDE_EFFECT, f"setting attribute {name!r} on {self.describe()}")

    def object_setattr(self, tx: "Tx", name: str, value: "VariableTracker") -> None:
        """object.__setattr__(self, name, value): a store that skips the class's __setattr__."""
        unsupported(Category.SIDE_EFFECT, f"object.__setattr__ on {self.describe()}")

    def delete_attr(self, tx: "Tx", name: str) -> None:
        unsupported(Category.SIDE_EFFECT, f"deleting attribute {name!r} of {self.describe()}")

    def has_attribute(self, tx: "Tx", name: str) -> bool:
        """hasattr(); by default from the type, exact for kinds whose instances have no __dict__."""
        cls = self.python_type()
        if getattr(cls, "__dictoffset__", 1) != 0:
            unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"whether {self.describe()} has attribute {name!r}")
        return hasattr(cls, name)

    def contains(self, tx: "Tx", item: "VariableTracker") -> bool:
        """`item in self`."""
        unsupported(Category.DATA_DEPENDENT_VALUE, f"membership test of {item.describe()} in {self.describe()}")

    def as_keyword_arguments(self, tx: "Tx", allow_any_key: bool = False) -> dict[Any, "VariableTracker"]:
        unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} used as keyword arguments")

    def truth_value(self, tx: "Tx") -> bool:
        unsupported(Category.DATA_DEPENDENT_BRANCH, f"the truth value of {self.describe()} is not known while tracing")

    def unpack(self, tx: "Tx") -> list["VariableTracker"]:
        """The items of a finite iterable known while tracing (unpacking, *args, unrolled loops)."""
        unsupported(Category.UNSUPPORTED_VALUE, f"iterating over {self.describe()}")

    def iterator(self, tx: "Tx") -> "VariableTracker":
        """What iter() returns: by default an iterator over unpack()'s items."""
        from .arrays import ArrayVariable
        from .iterators import ListIteratorVariable

        # an ndarray's iterator is a sequence iterator: a graph break rebuilds it from the array
        container = self if type(self) is ArrayVariable and not self.meta.scalar else None
        return ListIteratorVariable(self.unpack(tx), container=container)

    def reversed_iterator(self, tx: "Tx") -> "VariableTracker":
        """What reversed() returns: by default unpack()'s items backwards (a snapshot)."""
        from .iterators import ListIteratorVariable

        return ListIteratorVariable(list(reversed(self.unpack(tx))))

    def next_item(self, tx: "Tx") -> "VariableTracker | None":
        """next() of an iterator: the next item, or None when it is exhausted."""
        unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} is not an iterator known while tracing")

    # ---- leaving the graph ------------------------------------------------------------------------
    def as_graph_argument(self) -> Any:
        """This value as an argument of a graph node: a Node, a constant, or a structure of them."""
        unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} cannot be passed to a NumPy operation in a graph")

    def as_meta_argument(self) -> Any:
        """This value as the op registry sees it: TensorMeta for arrays, constants as they are."""
        unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} cannot be passed to a NumPy operation in a graph")

    def reconstruct(self, codegen: "PyCodegen") -> None:
        """Emit bytecode that leaves this value on the stack of the transformed code."""
        if self.source is not None:
            codegen.load_source(self.source)
            return
        unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} cannot be rebuilt after the graph runs")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


class BoundMethodVariable(VariableTracker):
    """`obj.name` before the call, for kinds that implement the method in call_method."""

    def __init__(self, obj: VariableTracker, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.obj = obj
        self.name = name

    def describe(self) -> str:
        return f"the method {self.name} of {self.obj.describe()}"

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.obj.call_method(tx, self.name, args, kwargs)


def unsupported_method(value: VariableTracker, name: str) -> "NoReturn":
    unsupported(Category.UNSUPPORTED_CALL, f"the method {name}() of {value.describe()} is not supported while tracing")


class NullVariable(VariableTracker):
    """The NULL that CPython's call protocol pushes beside a callable."""

    def describe(self) -> str:
        return "NULL"

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.push_null()


NULL = NullVariable()


def module_name(value: Any) -> str:
    """value.__module__ where it is a name: a class may set it to anything (namedtuple(...,
    module=collections) sets the module object itself)."""
    module = getattr(value, "__module__", None)
    return module if isinstance(module, str) else ""
