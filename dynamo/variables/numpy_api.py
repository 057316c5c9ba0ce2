"""NumPy as the tracer sees it: the np module and its submodules, NumPy functions and ufuncs,
bound ndarray methods, and NumpyOps, which turns registry calls into graph nodes."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exc import Category, unsupported
from ..fx_ir import ops as registry
from ..fx_ir.ops.errors import DataDependentShape
from ..fx_ir.tensor_meta import TensorMeta
from .base import VariableTracker
from .constant import ConstantVariable, is_constant_value

if TYPE_CHECKING:
    from ..output_graph import OutputGraph
    from ..translator.core import InstructionTranslatorBase as Tx


class NumpyModuleVariable(VariableTracker):
    """numpy itself or one of its submodules (np.linalg, np.fft)."""

    def __init__(self, module: types.ModuleType, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.module = module

    def python_type(self) -> type:
        return types.ModuleType

    def describe(self) -> str:
        return f"the module {self.module.__name__}"

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        try:
            value = getattr(self.module, name)
        except AttributeError:
            unsupported(Category.EXCEPTION, f"module {self.module.__name__!r} has no attribute {name!r}")
        return wrap_numpy_value(value, f"{self.module.__name__}.{name}")


class NumpyFunctionVariable(VariableTracker):
    """A NumPy callable (function or ufunc); calls enter the graph when the registry knows it."""

    def __init__(self, fn: Any, qualname: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn
        self.qualname = qualname

    def python_type(self) -> type:
        return type(self.fn)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.fn

    def describe(self) -> str:
        return self.qualname

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return tx.output.numpy.call_function(tx, self.fn, args, kwargs, name=self.qualname)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if isinstance(self.fn, np.ufunc) and name in ("nin", "nout", "nargs", "ntypes", "identity", "__name__"):
            return ConstantVariable(getattr(self.fn, name))
        unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"{self.qualname}.{name} is not supported while tracing",
                    "ufunc methods such as np.add.reduce/outer/at are not captured yet")

    def reconstruct(self, codegen: Any) -> None:
        codegen.load_const(self.fn)


class ArrayMethodVariable(VariableTracker):
    """`a.sum` before it is called: an ndarray method bound to an array of the graph."""

    def __init__(self, array: VariableTracker, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.array = array
        self.name = name

    def describe(self) -> str:
        return f"the method ndarray.{self.name}"

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.array.call_method(tx, self.name, args, kwargs)


def wrap_numpy_value(value: Any, qualname: str) -> VariableTracker:
    """What an attribute of numpy (or a submodule) is while tracing."""
    if isinstance(value, types.ModuleType):
        return NumpyModuleVariable(value)
    if is_constant_value(value):
        return ConstantVariable(value)
    if isinstance(value, (float, int)):  # np.pi, np.inf, np.nan are plain floats
        return ConstantVariable(value)
    if callable(value):
        return NumpyFunctionVariable(value, qualname)
    unsupported(Category.UNSUPPORTED_VALUE, f"{qualname} ({type(value).__name__}) is not supported while tracing")


class NumpyOps:
    """Records NumPy calls into the graph through the op registry (shapes and dtypes from its rules)."""

    def __init__(self, output: "OutputGraph") -> None:
        self.output = output

    # ---- questions the array variable asks ----------------------------------------------------------
    def has_array_attribute(self, name: str) -> bool:
        return registry.lookup_attribute(name) is not None

    def has_array_method(self, name: str) -> bool:
        return registry.lookup_method(name) is not None

    def array_attribute(self, tx: "Tx", array: VariableTracker, name: str) -> VariableTracker:
        op = registry.lookup_attribute(name)
        from .constant import ConstantVariable

        # recorded as getattr(a, "T"): the registry's infer takes only the array
        meta = self._infer(op, [array], {}, f"ndarray.{name}")
        node = self.output.create_node("call_function", getattr, (array.as_graph_argument(), name), {}, meta)
        return self.wrap_result(node, meta)

    # ---- calls ----------------------------------------------------------------------------------
    def call_function(self, tx: "Tx", fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                      name: str | None = None) -> VariableTracker:
        op = registry.lookup_function(fn)
        label = name or getattr(fn, "__name__", repr(fn))
        if op is None:
            unsupported(Category.UNSUPPORTED_CALL, f"{label} is not a NumPy operation dynamo can capture",
                        "use a supported NumPy function, or accept a graph break here")
        return self._record(op, "call_function", fn, args, kwargs, label)

    def call_array_method(self, tx: "Tx", array: VariableTracker, name: str, args: list[VariableTracker],
                          kwargs: dict[str, VariableTracker]) -> VariableTracker:
        op = registry.lookup_method(name)
        if op is None:
            unsupported(Category.UNSUPPORTED_CALL, f"ndarray.{name}() is not supported while tracing")
        return self._record(op, "call_method", name, [array, *args], kwargs, f"ndarray.{name}")

    def _record(self, op: Any, kind: str, target: Any, args: list[VariableTracker],
                kwargs: dict[str, VariableTracker], label: str) -> VariableTracker:
        result_meta = self._infer(op, args, kwargs, label)
        graph_args = tuple(a.as_graph_argument() for a in args)
        graph_kwargs = {k: v.as_graph_argument() for k, v in kwargs.items()}
        node = self.output.create_node(kind, target, graph_args, graph_kwargs, result_meta)
        effects = op.effects(*[a.as_meta_argument() for a in args], **{k: v.as_meta_argument() for k, v in kwargs.items()})
        if effects.mutates:
            node.meta["impure"] = True
        return self.wrap_result(node, result_meta)

    def _infer(self, op: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker], label: str) -> Any:
        meta_args = [a.as_meta_argument() for a in args]
        meta_kwargs = {k: v.as_meta_argument() for k, v in kwargs.items()}
        try:
            return op.infer(*meta_args, **meta_kwargs)
        except DataDependentShape as error:
            unsupported(Category.DATA_DEPENDENT_SHAPE, f"{label}: {error}",
                        "the result's shape depends on the data; accept a graph break here")
        except registry.UnsupportedArguments as error:
            unsupported(Category.UNSUPPORTED_CALL, f"{label}: {error}")
        except Exception as error:  # NumPy itself would raise: let the real code raise it
            unsupported(Category.NUMPY_ERROR, f"{label} raises {type(error).__name__}: {error}",
                        "the original code runs, so NumPy raises this error itself")

    def wrap_result(self, node: Any, meta: Any) -> VariableTracker:
        from .arrays import ArrayVariable
        from .builder import wrap_constant_result
        from .sequences import TupleVariable

        if isinstance(meta, TensorMeta):
            return ArrayVariable(node, meta)
        if isinstance(meta, tuple) and meta and all(isinstance(m, TensorMeta) for m in meta):
            import operator

            items = []
            for i, item_meta in enumerate(meta):
                item = self.output.create_node("call_function", operator.getitem, (node, i), {}, item_meta)
                items.append(ArrayVariable(item, item_meta))
            return TupleVariable(items)
        return wrap_constant_result(meta)

