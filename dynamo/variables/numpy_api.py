"""NumPy as the tracer sees it: the np module and its submodules, NumPy functions and ufuncs,
bound ndarray methods, and NumpyOps, which turns registry calls into graph nodes."""
from __future__ import annotations

import math
import operator
import types
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from .. import _C
from ..device_arrays import DeviceArrayType, device_of, dispatches_to_device, entry_of, is_device_array
from ..effect_order import EffectOrder
from ..exc import Category, unsupported
from ..fx_ir import ops as registry
from ..fx_ir.ops.errors import DataDependentShape
from ..fx_ir.tensor_meta import TensorMeta
from ..fx_ir.thread_warnings import warnings_raised
from ..guards import GuardKind, NoOverlap
from ..sources import Source
from .base import VariableTracker
from .builder import wrap_constant_result
from .constant import ConstantVariable, is_constant_value
from .input_work import note_numpy_call
from .symbolic import concrete_deep, concrete_floats, holds_symbolic, loose_double, promotes_alike

if TYPE_CHECKING:
    from ..output_graph import OutputGraph
    from ..translator.core import InstructionTranslatorBase as Tx


# Plain values of a ufunc, and the methods the op registry has rows for.
_UFUNC_CONSTANTS = frozenset({"nin", "nout", "nargs", "ntypes", "identity", "signature", "__name__"})
_UFUNC_METHODS = frozenset({"reduce", "accumulate", "outer", "at", "reduceat"})


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
        from .objects import module_getattr_hook

        module_getattr_hook(self.module, name)
        try:
            value = getattr(self.module, name)
        except AttributeError:
            unsupported(Category.EXCEPTION, f"module {self.module.__name__!r} has no attribute {name!r}")
        return wrap_numpy_value(value, f"{self.module.__name__}.{name}")

    def reconstruct(self, codegen: Any) -> None:
        from .objects import reconstruct_module

        reconstruct_module(self, self.module, codegen)


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
        if isinstance(self.fn, np.ufunc) and name in _UFUNC_CONSTANTS:
            return ConstantVariable(getattr(self.fn, name))
        if isinstance(self.fn, np.ufunc) and name in _UFUNC_METHODS:
            # np.add.reduce is a new bound method at every access: the registry keys it by
            # (ufunc, name), and the graph calls the bound method itself
            method = getattr(self.fn, name)
            if registry.lookup_function(method) is not None:
                return NumpyFunctionVariable(method, f"{self.qualname}.{name}")
        if callable(getattr(self.fn, name, None)):  # decided (and given up) at the call
            return LazyAttributeVariable(self, name)
        unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"{self.qualname}.{name} is not supported while tracing")

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        unsupported(Category.UNSUPPORTED_CALL, f"{self.qualname}.{name}() is not a NumPy operation dynamo can capture",
                    "use a supported NumPy function, or accept a graph break here")

    def reconstruct(self, codegen: Any) -> None:
        codegen.load_const(self.fn)


class LazyAttributeVariable(VariableTracker):
    """`obj.name` before it is used: a method of an array of the graph (`a.sum`), or an attribute
    of a value whose attributes are not modelled (an ndarray subclass, a random generator).
    Reading it decides nothing: the call (or other use) does, so a give-up happens at the call,
    with `obj.name` rebuilt on the stack from `obj`."""

    def __init__(self, obj: VariableTracker, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.obj = obj
        self.name = name

    def describe(self) -> str:
        return f"the attribute {self.name} of {self.obj.describe()}"

    def kind_is_known(self) -> bool:
        return False

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, codegen: Any) -> None:
        self.obj.reconstruct(codegen)
        codegen.load_attr(self.name)


class NumpyObjectVariable(VariableTracker):
    """An instance of a NumPy class that is not an array, scalar or dtype: np.random.Generator,
    RandomState, np.poly1d, ... Its methods run in Python (random draws advance hidden state and
    never enter a graph); it is guarded by exact type and rebuilt from its source."""

    def __init__(self, cls: type, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"a {self.cls.__module__}.{self.cls.__qualname__} object"

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        return LazyAttributeVariable(self, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        unsupported(Category.UNSUPPORTED_CALL, f"{self.cls.__qualname__}.{name}() of {self.describe()} runs in Python",
                    "random draws and other stateful NumPy objects never enter a graph")


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


# NumPy callables without a registry row that are pure functions of constants (dtype queries):
# called while tracing when every argument is known.
_PURE_ON_CONSTANTS = frozenset({
    np.dtype, np.finfo, np.iinfo, np.issubdtype, np.promote_types, np.can_cast, np.min_scalar_type,
    np.isscalar, np.isdtype, np.format_float_positional, np.format_float_scientific,
})
# Objects those calls return that are values, not containers: kept as constants.
_VALUE_OBJECTS = (np.finfo, np.iinfo)
# Builtins that turn an array or NumPy scalar into a Python value: they need its data.
_CONVERSIONS = frozenset({float, int, complex, bool, operator.index, round, hash})


class NumpyOps:
    """Records NumPy calls into the graph through the op registry (shapes and dtypes from its rules),
    and keeps track of which input arrays the graph writes, to guard that they alias nothing else."""

    def __init__(self, output: "OutputGraph") -> None:
        self.output = output
        self.memory = InputMemory(output)
        self.order = EffectOrder(output)

    # ---- questions the array variable asks ----------------------------------------------------------
    def has_array_attribute(self, name: str) -> bool:
        return registry.lookup_attribute(name) is not None

    def has_array_method(self, name: str) -> bool:
        return registry.lookup_method(name) is not None

    def array_attribute(self, tx: "Tx", array: VariableTracker, name: str) -> VariableTracker:
        op = registry.lookup_attribute(name)
        assert op is not None  # callers ask has_array_attribute first
        meta = self._infer(op, [array.as_meta_argument()], {}, f"ndarray.{name}")
        if op.kind is registry.OpKind.METADATA:  # a.shape, a.dtype: Python values, no node
            if _is_structured_dtype(meta):
                unsupported(Category.UNSUPPORTED_ATTRIBUTE,
                            f"the structured dtype of {array.describe()} is read in Python",
                            _STRUCTURED_WHY)
            return self.output.size_value(meta)
        # recorded as getattr(a, "T"): the registry's infer takes only the array
        node = self.output.create_node("call_function", getattr, (array.as_graph_argument(), name), {}, meta)
        node.meta.update(_device_meta(_array_nodes([array])))
        view_of = op.effects(array.as_meta_argument()).view_of
        return self.wrap_result(node, meta, array_bases([array]) if view_of is not None else frozenset())

    # ---- calls ----------------------------------------------------------------------------------
    def call_function(self, tx: "Tx", fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                      name: str | None = None) -> VariableTracker:
        note_numpy_call(self.output, [*args, *kwargs.values()])
        op = registry.lookup_function(fn)
        label = name or str(getattr(fn, "__name__", repr(fn)))
        if op is not None:
            return self._record(op, "call_function", fn, args, kwargs, label)
        if fn is np.errstate:  # a with statement's context manager (translator/with_blocks.py)
            from .errstate import make_errstate

            return make_errstate(args, kwargs)
        if _is_conversion(fn) and _holds_array([*args, *kwargs.values()]):
            culprit = next(a for a in [*args, *kwargs.values()] if _holds_array([a]))
            unsupported(Category.DATA_DEPENDENT_VALUE, f"{label}() of {culprit.describe()} needs its value",
                        "keep the value as an array (np.where instead of if), or accept a graph break here")
        if _is_pure_on_constants(fn) and _all_constant(args, kwargs):
            folded = _fold(fn, args, kwargs)
            if folded is not None:
                return folded
        unsupported(Category.UNSUPPORTED_CALL, f"{label} is not a NumPy operation dynamo can capture",
                    "use a supported NumPy function, or accept a graph break here")

    def call_array_method(self, tx: "Tx", array: VariableTracker, name: str, args: list[VariableTracker],
                          kwargs: dict[str, VariableTracker]) -> VariableTracker:
        op = registry.lookup_method(name)
        device_type = _device_type(_array_nodes([array]))
        owner = "ndarray" if device_type is None else device_type.type_name
        if op is None and device_type is not None:  # x.get(), x.toDlpack(): the library's own methods
            unsupported(Category.UNSUPPORTED_CALL, f"{owner}.{name}() of {array.describe()} runs in Python",
                        "only the methods NumPy's ndarray has too enter a graph")
        if op is None:
            unsupported(Category.UNSUPPORTED_CALL, f"{owner}.{name}() is not supported while tracing")
        return self._record(op, "call_method", name, [array, *args], kwargs, f"{owner}.{name}")

    def _record(self, op: Any, kind: str, target: Any, args: list[VariableTracker],
                kwargs: dict[str, VariableTracker], label: str) -> VariableTracker:
        if op.kind is not registry.OpKind.ELEMENTWISE:
            # a float's value may decide a shape here (np.arange(0, t, 0.1)): it is needed now
            why = f"{label} is not elementwise"
            args = [concrete_floats(a, why) for a in args]
            kwargs = {k: concrete_floats(v, why) for k, v in kwargs.items()}
        elif not kwargs and promotes_alike(args):
            args = [loose_double(a) for a in args]  # a float or an np.float64: the same result
        meta_args = [meta_argument(a) for a in args]
        meta_kwargs = {k: meta_argument(v) for k, v in kwargs.items()}
        if not _accepts_symbolic(op, args, kwargs, meta_args, meta_kwargs):
            # a rule that needs a size argument as a number (np.split's indices, np.diag's k):
            # the size is specialized, so that the call still enters the graph
            why = f"{label} needs it as a number"
            args = [concrete_deep(a, why) for a in args]
            kwargs = {k: concrete_deep(v, why) for k, v in kwargs.items()}
            meta_args = [meta_argument(a) for a in args]
            meta_kwargs = {k: meta_argument(v) for k, v in kwargs.items()}
        device = check_devices(target, _array_nodes([*args, *kwargs.values()]), label)
        result_meta = self._infer(op, meta_args, meta_kwargs, label)
        _check_representable(result_meta, label)
        if not _holds_array_meta(result_meta):
            if kind == "call_function" and _all_constant(args, kwargs):
                # np.prod((3, 4)), np.sqrt(2.0): a NumPy scalar known now, so that a size computed
                # from it stays a Python value (np.zeros(np.prod(shape)) needs it)
                folded = _fold(target, args, kwargs)
                if folded is not None:
                    return folded
            if op.kind is registry.OpKind.METADATA:  # np.shape(a), np.ndim(a): no node needed
                return self.output.size_value(result_meta)
        for value in [*args, *kwargs.values()]:
            if isinstance(value, ConstantVariable) and _is_structured_dtype(value.value):
                unsupported(Category.UNSUPPORTED_VALUE, f"{label} is given the structured dtype {value.value}",
                            _STRUCTURED_WHY)
        effects = op.effects(*meta_args, **meta_kwargs)
        self.order.before_op(op, meta_args, meta_kwargs, bool(effects.mutates), label)
        for ref in effects.mutates:  # before the node exists: this may give up
            self.memory.written(array_bases([_argument(args, kwargs, ref)]))
        graph_args = tuple(graph_argument(a) for a in args)
        graph_kwargs = {k: graph_argument(v) for k, v in kwargs.items()}
        if self.output.errstate and not device and op.kind not in _NO_FLOATING_POINT_ERRORS:
            kind, target = "call_function", self._under_errstate(kind, target, bool(effects.mutates), label)
        node = self.output.create_node(kind, target, graph_args, graph_kwargs, result_meta)
        node.meta.update(device)
        if effects.mutates:
            node.meta["impure"] = True
        bases = _result_bases(args, kwargs, effects.view_of)
        from .arrays import ArrayVariable

        written = args[0] if args else None
        if (effects.view_of == 0 and effects.mutates == (0,) and isinstance(written, ArrayVariable)
                and written.source is not None and isinstance(result_meta, TensorMeta)):
            # `u += x` on an array of the program's: NumPy's result is that very object, which a
            # view the graph makes of another input is not (input_views: a global stored back keeps
            # its identity, also when the input becomes such a view after this op)
            return ArrayVariable(node, result_meta, bases=bases, source=written.source)
        return self.wrap_result(node, result_meta, bases)

    def _under_errstate(self, kind: str, target: Any, writes: bool, label: str) -> Any:
        """The target of an op recorded inside captured np.errstate blocks: it runs under their
        settings. Such an op is opaque to the backends, which then keep no write of it in order."""
        from ..fx_ir.errstate_call import UnderErrstate

        if writes:
            unsupported(Category.SIDE_EFFECT, f"{label} writes an array inside an np.errstate block",
                        "the block runs in Python; compute into a new array inside the block instead")
        location = self.output.current_location
        where = None if location is None else (location.filename, location.lineno)
        wrapper = UnderErrstate(target, kind == "call_method", tuple(self.output.errstate), where,
                                self.output.current_globals)
        _C.mark_skip(wrapper.run.__code__)  # its frame says the user's file and line: never one to compile
        return wrapper

    def _infer(self, op: Any, meta_args: list[Any], meta_kwargs: dict[str, Any], label: str) -> Any:
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

    def wrap_result(self, node: Any, meta: Any, bases: frozenset = frozenset()) -> VariableTracker:
        """The tracker of a node's value: an array, a tuple or list of arrays (one getitem node
        each), or a Python value computed from the meta. `bases`: the input arrays it may view."""
        from .arrays import ArrayVariable
        from .sequences import ListVariable, TupleVariable

        if isinstance(meta, TensorMeta):
            return ArrayVariable(node, meta, bases=bases)
        if isinstance(meta, (tuple, list)) and _holds_array_meta(meta):
            items: list[VariableTracker] = []
            for i, item_meta in enumerate(meta):
                if isinstance(item_meta, TensorMeta):
                    item = self.output.create_node("call_function", operator.getitem, (node, i), {}, item_meta)
                    item.meta.update(_device_meta([node]))
                    items.append(ArrayVariable(item, item_meta, bases=bases))
                else:
                    items.append(self.output.size_value(item_meta))
            return ListVariable(items) if isinstance(meta, list) else TupleVariable(items)
        return self.output.size_value(meta)


# ops that never raise a floating-point error: inside an np.errstate block they stay as they are
_NO_FLOATING_POINT_ERRORS = frozenset({registry.OpKind.VIEW, registry.OpKind.INDEXING, registry.OpKind.METADATA})


class InputMemory:
    """Which input arrays the graph writes (in place, through views, with out=), and the guard
    that each of them shares no memory with any other input: backends may then fuse, reorder and
    merge reads of the other inputs around the write. When two such inputs do overlap while
    tracing, the write gives up instead (NumPy's own overlap handling then runs it)."""

    def __init__(self, output: "OutputGraph") -> None:
        self.output = output
        self.writes: list[Source] = []

    def written(self, sources: frozenset) -> None:
        views = self.output.input_views  # a view the graph makes of an input writes that input
        roots = frozenset(base for source in sources for base in (views[source].bases if source in views else [source]))
        for source in sorted(roots, key=lambda s: s.name()):
            if source not in self.writes:
                for other in self._inputs():
                    self._guard_apart(source, other)
                self.writes.append(source)

    def replaced(self, view: Source, base: Source) -> None:
        """The input at `view` became a view the graph makes of the input at `base`: a write into
        it so far is a write into base, which must then share no memory with the other inputs."""
        if view in self.writes:
            self.writes.remove(view)
            self.written(frozenset([base]))

    def added(self, source: Source) -> None:
        """A new input array: it must not overlap any input written so far (a view the graph makes
        of an input is no input of its own: its writes are its base's)."""
        if source in self.output.input_views:
            return
        for written in self.writes:
            self._guard_apart(written, source)

    def _inputs(self) -> list[Source]:
        return [s for s, graph_input in self.output.inputs.items()
                if isinstance(graph_input.value, np.ndarray) or is_device_array(graph_input.value)]

    def _guard_apart(self, written: Source, other: Source) -> None:
        if other == written:
            return
        a, b = self.output.inputs[written].value, self.output.inputs[other].value
        if device_of(a) != device_of(b) or type(a) is not type(b):
            return  # memories of two devices (or two libraries) never overlap; np.may_share_memory refuses them
        if a is b or np.may_share_memory(a, b):
            unsupported(Category.SIDE_EFFECT, f"{written.name()} is written in place while {other.name()} shares "
                        "memory with it", "the write runs in Python, where NumPy resolves the overlap")
        self.output.guard(written, GuardKind.NO_OVERLAP, NoOverlap(other, owns_data(a) and owns_data(b)))


def owns_data(array: np.ndarray) -> bool:
    """An array that owns its buffer: two distinct such arrays never overlap (cheap to guard)."""
    return array.base is None


# ---- devices: where the arrays of a call live ----------------------------------------------------------

def _array_nodes(values: list[Any]) -> list[Any]:
    """The graph nodes of the arrays among these values (inside lists and tuples too)."""
    from .arrays import ArrayVariable

    nodes: list[Any] = []
    for value in values:
        if isinstance(value, ArrayVariable):
            nodes.append(value.node)
        elif isinstance(getattr(value, "items", None), list):
            nodes += _array_nodes(value.items)
    return nodes


def _device_type(nodes: list[Any]) -> DeviceArrayType | None:
    return next((entry_of(n.meta["array_type"]) for n in nodes if n.meta.get("device")), None)


def _device_meta(nodes: list[Any]) -> dict[str, Any]:
    """What a result of these arrays records of its device: none for host results."""
    for node in nodes:
        if node.meta.get("device"):
            return {"device": node.meta["device"], "array_type": node.meta["array_type"]}
    return {}


def check_devices(target: Any, nodes: list[Any], label: str) -> dict[str, Any]:
    """The device meta of a call's result (empty: on the host). Gives up, so that the call runs in
    Python as it would unjitted, when arrays of two devices meet (CuPy refuses a NumPy array) or a
    device array reaches a call its library does not take over (np.asarray, a function it lacks)."""
    devices: dict[Any, Any] = {}
    for node in nodes:
        meta = node.meta.get("val")
        if node.meta.get("device"):
            devices.setdefault((node.meta["device"], node.meta["array_type"]), node)
        elif isinstance(meta, TensorMeta) and not meta.scalar:  # a NumPy scalar mixes as a number does
            devices.setdefault(None, node)
    on_device = [key for key in devices if key is not None]
    if not on_device:
        return {}
    entry = entry_of(on_device[0][1])
    assert entry is not None
    if len(devices) > 1:
        _mixed_devices(entry, [key and key[0] for key in devices], target, label)
    device = on_device[0][0]
    if not dispatches_to_device(target, entry.cls):
        _not_dispatched(entry, device, target, label)
    return {"device": device, "array_type": entry.cls}


def _mixed_devices(entry: DeviceArrayType, devices: list[str | None], target: Any, label: str) -> "NoReturn":
    first, second = devices[0], devices[1]
    if first is None:
        first, second = second, first
    other = "a NumPy array" if second is None else f"one on {second}"
    outcome = ("it runs in Python, where the library decides how to copy between devices"
               if target in (operator.getitem, operator.setitem) else
               f"{entry.library} raises TypeError for this" if second is None else
               f"{entry.library} refuses arrays of another device")
    unsupported(Category.NUMPY_ERROR, f"{_call_name(target, label)} mixes {_library_array(entry)} on {first} and "
                f"{other}: {outcome}",
                f"move one with {entry.module_name}.asarray(...) or .get()")


def _not_dispatched(entry: DeviceArrayType, device: str, target: Any, label: str) -> "NoReturn":
    array = f"{_library_array(entry)} (on {device})"
    if isinstance(target, str):
        unsupported(Category.UNSUPPORTED_CALL, f"{entry.type_name} has no method {target!r}: {label}() of {array} "
                    "runs in Python")
    owner = getattr(target, "__self__", None)
    if isinstance(owner, np.ufunc):
        unsupported(Category.UNSUPPORTED_CALL, f"{label} of {array}: {entry.library}'s {owner.__name__} has no "
                    f"{target.__name__}", "it runs in Python")
    if isinstance(target, np.ufunc) or hasattr(target, "_implementation"):
        unsupported(Category.UNSUPPORTED_CALL, f"{label} of {array}: {entry.library} has no "
                    f"{getattr(target, '__name__', label)}, so NumPy finds no implementation for it",
                    f"it runs in Python; call a {entry.module_name} function that does this, or move the "
                    "array to the host with .get()")
    unsupported(Category.UNSUPPORTED_CALL, f"{label} of {array} does not dispatch to {entry.library}: NumPy "
                f"would make a NumPy array of it, which {entry.library} refuses (implicit conversion)",
                f"it runs in Python; use {entry.module_name}.asarray(...) or .get() to move arrays explicitly")


_OPERATOR_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
                     "matmul": "@", "and_": "&", "or_": "|", "xor": "^", "lshift": "<<", "rshift": ">>", "lt": "<",
                     "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">="}


def _call_name(target: Any, label: str) -> str:
    """`the + operator` for operator.add, `np.add` for np.add: as the user wrote it."""
    if getattr(target, "__module__", None) in ("operator", "_operator"):
        name = target.__name__
        symbol = _OPERATOR_SYMBOLS.get(name.removeprefix("i") if name.startswith("i") and name != "invert" else name)
        if symbol is not None:
            return f"the {symbol}{'=' if name.startswith('i') and name != 'invert' else ''} operator"
        return {"getitem": "indexing", "setitem": "item assignment"}.get(name, f"operator.{name}")
    return label


def _library_array(entry: DeviceArrayType) -> str:
    return f"a {entry.library} array"


# ---- arguments as the registry and the graph see them ------------------------------------------------

def meta_argument(value: VariableTracker) -> Any:
    """Arrays as TensorMeta, Python constants (int, np.float32, dtype classes) as themselves,
    symbolic sizes as sympy expressions."""
    if value.is_python_constant() and not holds_symbolic(value):
        return value.as_python_constant()
    return value.as_meta_argument()


def graph_argument(value: VariableTracker) -> Any:
    """Arrays as graph nodes, Python constants as themselves, symbolic sizes as nodes computing them."""
    if value.is_python_constant() and not holds_symbolic(value):
        return value.as_python_constant()
    return value.as_graph_argument()


def _accepts_symbolic(op: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                      meta_args: list[Any], meta_kwargs: dict[str, Any]) -> bool:
    """False when a symbolic size among the arguments makes the op's rule fail (not when the
    shape depends on the data: that stays a graph break)."""
    if not any(holds_symbolic(a) for a in [*args, *kwargs.values()]):
        return True
    try:
        op.infer(*meta_args, **meta_kwargs)
    except DataDependentShape:
        return True
    except Exception:
        return False
    return True


def _all_constant(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> bool:
    """Every argument known now (a symbolic size is not: folding would specialize it)."""
    return all(a.has_constant_contents() and not holds_symbolic(a) for a in [*args, *kwargs.values()])


def _holds_array(values: list[VariableTracker]) -> bool:
    from .arrays import ArrayVariable

    return any(isinstance(v, ArrayVariable) for v in values)


def _holds_array_meta(meta: Any) -> bool:
    """An array in the result (a NumPy scalar is a value, not an array)."""
    if isinstance(meta, TensorMeta):
        return not meta.scalar
    if isinstance(meta, (tuple, list)):
        return any(isinstance(m, TensorMeta) for m in meta)
    return False


def _is_conversion(fn: Any) -> bool:
    try:
        return fn in _CONVERSIONS
    except TypeError:  # unhashable callables are not builtins
        return False


def _is_pure_on_constants(fn: Any) -> bool:
    try:
        return fn in _PURE_ON_CONSTANTS
    except TypeError:
        return False


_MAX_ARRAY_BYTES = np.iinfo(np.intp).max


def _check_representable(meta: Any, label: str) -> None:
    """A result NumPy could not even describe (more elements or bytes than an intp counts) makes
    NumPy raise ValueError, even when nothing uses it: the graph would drop the unused node."""
    metas = meta if isinstance(meta, (tuple, list)) else (meta,)
    for item in metas:
        if isinstance(item, TensorMeta) and all(type(d) is int for d in item.shape):
            size = math.prod(item.shape)
            if size > _MAX_ARRAY_BYTES or size * item.dtype.itemsize > _MAX_ARRAY_BYTES:
                unsupported(Category.NUMPY_ERROR, f"{label} raises ValueError: its result of shape {item.shape} "
                            "is larger than the largest possible array",
                            "the original code runs, so NumPy raises this error itself")


# A structured dtype is the one mutable dtype (`dt.names = [...]` renames its fields in place), so
# its identity matters: the program's own object, or a new one per call, never one kept from the
# trace and shared by every later call (a graph constant, a.dtype read from the meta).
_STRUCTURED_WHY = "a structured dtype can be renamed in place (dtype.names = ...), so the trace keeps no copy of it"


def _is_structured_dtype(value: Any) -> bool:
    return isinstance(value, np.dtype) and value.names is not None


def _fold(fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """Call a pure NumPy function of constants now; None (record it instead) if it warns or raises,
    so that the warning or error happens when the program runs, as in NumPy."""
    values = [a.as_python_constant() for a in args]
    keywords = {k: v.as_python_constant() for k, v in kwargs.items()}
    try:
        with warnings_raised(), np.errstate(all="raise"):
            result = fn(*values, **keywords)
    except Exception:
        return None
    for tracker, value in [*zip(args, values), *((kwargs[k], v) for k, v in keywords.items())]:
        if result is value:  # np.diff(x, n=0) returns x itself: the same object, not a copy of it
            return tracker
    if isinstance(result, _VALUE_OBJECTS):
        return ConstantVariable(result)
    if _is_structured_dtype(result):  # a new object on every call in NumPy, and a mutable one
        return None
    if isinstance(result, np.ndarray):
        return None
    try:
        return wrap_constant_result(result)
    except Exception:
        return None


def _argument(args: list[VariableTracker], kwargs: dict[str, VariableTracker], ref: Any) -> VariableTracker | None:
    """The argument an ArgRef names: a position, a keyword, or (argument, i) inside a tuple."""
    if isinstance(ref, tuple):
        container = _argument(args, kwargs, ref[0])
        items = getattr(container, "items", None)
        return items[ref[1]] if isinstance(items, list) and ref[1] < len(items) else None
    if isinstance(ref, int):
        return args[ref] if ref < len(args) else None
    return kwargs.get(ref)


def array_bases(values: list[VariableTracker | None]) -> frozenset:
    """The input arrays whose memory these values (arrays, or sequences of them) may share."""
    from .arrays import ArrayVariable

    bases: frozenset = frozenset()
    for value in values:
        if isinstance(value, ArrayVariable):
            bases |= value.bases
        elif isinstance(items := getattr(value, "items", None), list):
            bases |= array_bases(items)
    return bases


def _result_bases(args: list[VariableTracker], kwargs: dict[str, VariableTracker], view_of: Any) -> frozenset:
    """What a result may view: the argument view_of names, or (a per-element tuple, whose entries
    could be read either way) every array argument."""
    if view_of is None:
        return frozenset()
    if isinstance(view_of, (int, str)):
        return array_bases([_argument(args, kwargs, view_of)])
    return array_bases([*args, *kwargs.values()])
