"""ArrayVariable: an ndarray (or NumPy scalar) produced or used by the graph: an fx_ir Node plus
its TensorMeta. Operators, methods and attributes go through the op registry into the graph."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ..exc import Category, unsupported
from ..fx_ir.tensor_meta import TensorMeta
from .base import VariableTracker
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..fx_ir.node import Node
    from ..translator.core import InstructionTranslatorBase as Tx

# Methods that turn an array or NumPy scalar into Python values: they need its data.
_DATA_METHODS = frozenset({"item", "tolist", "tobytes", "__bool__", "__float__", "__int__", "__index__",
                           "__complex__", "__repr__", "__str__", "__format__"})


# a.__add__(b), a.__setitem__(i, v): explicit dunder calls are the operators they implement
_OPERATOR_DUNDERS = {
    f"__{name.rstrip('_')}__": getattr(operator, name)
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
                 "lshift", "rshift", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul",
                 "iand", "ior", "ixor", "ilshift", "irshift", "lt", "le", "eq", "ne", "gt", "ge", "neg", "pos",
                 "abs", "invert", "getitem", "setitem")
}


class ArrayVariable(VariableTracker):
    """`bases`: the input arrays (by source) whose memory this value may share; an input array
    is its own base. A write into the value is a write into each of them."""

    def __init__(self, node: "Node", meta: TensorMeta, bases: frozenset | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.node = node
        self.meta = meta
        self.bases = bases if bases is not None else frozenset([self.source] if self.source is not None else [])

    def python_type(self) -> type:
        # a device array's results, reductions too, are arrays of its type (CuPy returns 0-d arrays)
        array_type = self.node.meta.get("array_type")
        if array_type is not None:
            return array_type
        return self.meta.dtype.type if self.meta.scalar else np.ndarray

    def describe(self) -> str:
        device = self.node.meta.get("device")
        if device is not None:
            library = _device_type(self).library
            if self.meta.scalar:
                return f"a 0-d {library} array of dtype {self.meta.dtype} on {device} (computed in the graph)"
            return (f"a {library} array of shape {tuple(self.meta.shape)} and dtype {self.meta.dtype} on {device} "
                    "(computed in the graph)")
        if self.meta.scalar:
            return f"a NumPy {self.meta.dtype} scalar (computed in the graph)"
        return f"an array of shape {tuple(self.meta.shape)} and dtype {self.meta.dtype} (computed in the graph)"

    def as_graph_argument(self) -> Any:
        return self.node

    def as_meta_argument(self) -> Any:
        return self.meta

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        device_type = _device_type(self)
        if device_type is not None and not hasattr(device_type.cls, name):
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r} (AttributeError)")
        if tx.output.numpy.has_array_attribute(name) and name not in _DATA_METHODS:  # shape, dtype, T, ...
            return tx.output.numpy.array_attribute(tx, self, name)
        attribute = getattr(self.python_type(), name, None)
        if device_type is not None and not callable(attribute):
            # x.device, x.data, x.strides: the library's own objects, read when the program runs
            unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"{device_type.type_name} attribute {name!r} of "
                        f"{self.describe()} is read in Python",
                        "devices, memory pointers and layouts of device arrays are not modelled while tracing")
        if attribute is None:
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r} (AttributeError)")
        if callable(attribute):
            # a method: what it does is decided at the call, where a give-up keeps `a.name` on the stack
            from .numpy_api import LazyAttributeVariable

            return LazyAttributeVariable(self, name)
        unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"ndarray attribute {name!r} is not supported while tracing",
                    "strides, flags and data pointers depend on the layout, which guards do not pin down")

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in _DATA_METHODS:
            self._needs_data(name)
        operator_fn = _OPERATOR_DUNDERS.get(name)
        if operator_fn is not None and not kwargs:  # a.__add__(b), a.__setitem__(i, v): the operator
            return tx.output.numpy.call_function(tx, operator_fn, [self, *args], {}, name=f"ndarray.{name}")
        return tx.output.numpy.call_array_method(tx, self, name, args, kwargs)

    def _needs_data(self, name: str) -> "NoReturn":
        unsupported(Category.DATA_DEPENDENT_VALUE, f"{name}() of {self.describe()} needs its data",
                    "keep the value as an array (np.where instead of if), or accept a graph break here")

    def setitem(self, tx: "Tx", key: VariableTracker, value: VariableTracker) -> None:
        tx.output.numpy.call_function(tx, operator.setitem, [self, key, value], {}, name="item assignment")

    def truth_value(self, tx: "Tx") -> bool:
        unsupported(Category.DATA_DEPENDENT_BRANCH,
                    f"branching on {self.describe()} depends on its data",
                    "branch with np.where(...) instead, or accept a graph break here")

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        if self.meta.scalar or self.meta.ndim == 0:
            unsupported(Category.UNSUPPORTED_VALUE, f"iterating over {self.describe()}: a 0-d array is not iterable")
        length = tx.output.static_size(self.meta.shape[0], "iterating over an array's first axis")
        tx.check_unroll_budget(length, "an array's first axis")
        return [tx.output.numpy.call_function(tx, operator.getitem, [self, ConstantVariable(i)], {}) for i in range(length)]

    def iterator(self, tx: "Tx") -> VariableTracker:
        """iter(a): each row (a view, or a scalar copy for a 1-d array) is read when the loop asks for
        it, as NumPy's iterator does, so a loop body that writes `a` is seen by the later rows."""
        from .iterators import ArrayIteratorVariable

        if self.meta.scalar or self.meta.ndim == 0:
            unsupported(Category.UNSUPPORTED_VALUE, f"iterating over {self.describe()}: a 0-d array is not iterable")
        length = tx.output.static_size(self.meta.shape[0], "iterating over an array's first axis")
        tx.check_unroll_budget(length, "an array's first axis")
        return ArrayIteratorVariable(self, length)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None:  # an input array: the very same object
            codegen.load_source(self.source)
        else:
            codegen.load_graph_output(self)


def _device_type(array: ArrayVariable) -> Any:
    """The registration of the device array type of `array` (dynamo.device_arrays), or None."""
    from ..device_arrays import entry_of

    array_type = array.node.meta.get("array_type")
    return None if array_type is None else entry_of(array_type)


class ArraySubclassVariable(VariableTracker):
    """An instance of an ndarray subclass (np.matrix, np.ma.MaskedArray, a user's subclass): any
    operator or method may be overridden, so nothing about it is assumed and it never enters a
    graph as an array. Attributes are read lazily, so a use gives up at the call or operation
    itself (with the object rebuilt from its source), not when the attribute is loaded."""

    def __init__(self, cls: type, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"an instance of the ndarray subclass {self.cls.__module__}.{self.cls.__qualname__}"

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        from .numpy_api import LazyAttributeVariable

        return LazyAttributeVariable(self, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        unsupported(Category.UNSUPPORTED_VALUE, f"{name} of {self.describe()} runs as the subclass defines it",
                    "ndarray subclasses run in Python; pass np.asarray(x) to compile the computation")
