"""VariableBuilder: real values found in the frame (arguments, globals, closure cells, attributes)
become VariableTrackers, chosen through a type-keyed table, with the guards their use needs."""
from __future__ import annotations

import types
import weakref
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..class_shapes import ClassShape
from ..class_shapes import made_by_a_call as made_by_a_call_class
from ..device_arrays import is_device_array
from ..exc import Category, unsupported
from ..guards import FloatIs, GuardKind, IsReferent, TimeIs, dtype_guard, made_by_a_call, needs_exact_float_guard
from ..sources import AttrSource, ItemSource, Source
from .base import VariableTracker, module_name
from .constant import ConstantVariable, is_constant_value
from .fold_limits import check_container_size
from .named_tuples import NamedTupleVariable, plain_namedtuple

_TYPE_QUALNAME = type.__dict__["__qualname__"]

if TYPE_CHECKING:
    from ..output_graph import OutputGraph


def wrap_constant_result(value: Any) -> VariableTracker:
    """A Python value computed while tracing (no source, no guard)."""
    from .sequences import ListVariable, SliceVariable, TupleVariable

    if isinstance(value, tuple) and type(value) is not tuple and not hasattr(value, "__dict__") \
            and all(is_constant_value(v) for v in value):
        return ConstantVariable(value)  # sys.float_info, a namedtuple: their fields are attributes
    if isinstance(value, tuple):
        return TupleVariable([wrap_constant_result(v) for v in value])
    if isinstance(value, list):
        return ListVariable([wrap_constant_result(v) for v in value])
    if isinstance(value, slice):
        return SliceVariable(*(ConstantVariable(p) for p in (value.start, value.stop, value.step)))
    if isinstance(value, (set, dict)):  # fresh containers computed while tracing (folds, views)
        from .dicts import ConstDictVariable
        from .sets import SetVariable

        if isinstance(value, set):
            return SetVariable(value)
        return ConstDictVariable({k: wrap_constant_result(v) for k, v in value.items()})
    if is_constant_value(value) or isinstance(value, (np.generic,)):
        return ConstantVariable(value)
    if isinstance(value, type):  # tuple(remove_types): a class is itself, however it was reached
        from .objects import class_variable

        return class_variable(None, value, None)
    unsupported(Category.UNSUPPORTED_VALUE, f"a {type(value).__name__} computed while tracing")


# Objects of one type with tracked identity (lists, dicts, user objects) one trace may read
_TRACKED_PER_TYPE = 64
_NESTING_LIMIT = 64  # levels of containers read from the frame (each is a few Python frames deep)


_VALUE_TYPES = frozenset({int, float, complex, bool, str, bytes, type(None)})


def own_getattribute(cls: type) -> bool:
    """The class (not a library's) defines __getattribute__ in Python."""
    from ..skipfiles import is_skipped

    method = getattr(cls, "__getattribute__", None)
    return isinstance(method, types.FunctionType) and not is_skipped(method.__code__)


class VariableBuilder:
    """Wraps one real value reached through `source`, installing the guards its kind needs."""

    def __init__(self, output: "OutputGraph") -> None:
        self.output = output
        # Mutable objects reached twice (two names, two paths) must be one tracker, or a
        # mutation through one path would be invisible through the other.
        self._by_identity: dict[int, tuple[Any, VariableTracker]] = {}
        self._tracked_sources: dict[type, list[Source]] = {}  # sources of identity-tracked values, by type
        self._being_wrapped: set[int] = set()  # ids of containers whose items are being wrapped

    def extent(self) -> tuple[int, int]:
        """How many objects were wrapped as one tracker each, and identity-tracked sources (guards at the end)."""
        return len(self._by_identity), sum(map(len, self._tracked_sources.values()))

    def __call__(self, value: Any, source: Source) -> VariableTracker:
        known = self._by_identity.get(id(value))
        if known is not None and known[0] is value:
            if known[1].source is not None and known[1].source != source:
                # the trace treats both paths as one object: so must every call that reuses it
                self.guard(source, GuardKind.SAME_AS, known[1].source)
            return known[1]
        handler = _BY_TYPE.get(type(value))
        if handler is None and own_getattribute(type(value)):
            # every isinstance() of the trace would call it (through __class__): the program's
            # code would run more often than the program runs it
            unsupported(Category.UNSUPPORTED_VALUE, f"a {type(value).__qualname__} object, whose class defines "
                        "__getattribute__: reading anything of it runs the program's code")
        if handler is None:
            handler = next((h for check, h in _BY_CHECK if check(value)), VariableBuilder.wrap_object)
        if id(value) in self._being_wrapped:  # a dict or list that holds itself, directly or not
            unsupported(Category.UNSUPPORTED_VALUE, f"a {type(value).__qualname__} that contains itself")
        if len(self._being_wrapped) >= _NESTING_LIMIT:  # wrapping recurses once per level
            unsupported(Category.UNSUPPORTED_VALUE, f"containers nested more than {_NESTING_LIMIT} deep")
        self._being_wrapped.add(id(value))
        try:
            variable = handler(self, value, source)
        finally:
            self._being_wrapped.discard(id(value))
        # Values wrapped as constants are compared by value; anything else (an IntEnum member
        # included, though it is an int) is one object, reached by as many paths as it is. A
        # plain int is a value even when it is traced as a symbol: CPython shares small ints,
        # and two 2s read from two places are two symbols, each with its own guards.
        if not isinstance(variable, ConstantVariable) and type(value) not in _VALUE_TYPES \
                and not isinstance(value, (types.ModuleType, types.FunctionType)):
            self._by_identity[id(value)] = (value, variable)
            if variable.identity_is_tracked():
                # and two objects (a mutation through one is not seen through the other) must
                # stay two objects: one guard per pair, so their number is bounded
                if len(self._tracked_sources.get(type(value), ())) >= _TRACKED_PER_TYPE:
                    unsupported(Category.UNSUPPORTED_VALUE,
                                f"more than {_TRACKED_PER_TYPE} {type(value).__qualname__} objects read from the frame "
                                "(each pair would need a guard that they are two objects)",
                                "loop over such a collection outside the compiled function, or accept that it runs in Python")
                for other in self._tracked_sources.setdefault(type(value), []):
                    self.guard(source, GuardKind.DISTINCT_FROM, other)
                self._tracked_sources[type(value)].append(source)
        return variable

    def guard(self, source: Source, kind: GuardKind, value: Any) -> None:
        self.output.guard(source, kind, value)

    # ---- one method per kind of value -------------------------------------------------------------
    def wrap_array(self, value: np.ndarray, source: Source) -> VariableTracker:
        variable = self.output.add_array_input(source, value)
        self.output.numpy.memory.added(source)
        return variable

    def wrap_device_array(self, value: Any, source: Source) -> VariableTracker:
        """A CuPy array (dynamo.device_arrays): a graph input like an ndarray, on its device."""
        return self.wrap_array(value, source)

    def wrap_constant(self, value: Any, source: Source) -> VariableTracker:
        if type(value) is float and (runtime := self.output.dynamic_float(source, value)) is not None:
            return runtime  # guarded on its value (and its type) only where a trace needs them
        self.guard(source, GuardKind.TYPE_IS, type(value))
        if type(value) is int and (symbolic := self.output.dynamic_int(source, value)) is not None:
            return symbolic  # a dynamic int: its size guards replace the value guard
        if value is not None and value is not Ellipsis and value is not NotImplemented:  # singletons: the type says it
            self.guard_value(source, value)
        return ConstantVariable(value, source=source)

    def guard_value(self, source: Source, value: Any) -> None:
        """The value itself, exactly: == for most, sign and NaN-ness too for float zeros and NaNs
        (-0.0 == 0.0, yet 1 / x differs; NaN == NaN is false, which would recompile every call)."""
        if needs_exact_float_guard(value):
            self.guard(source, GuardKind.CALL, FloatIs(value))
        elif isinstance(value, np.dtype):
            self.guard(source, *dtype_guard(value))
        elif isinstance(value, (np.datetime64, np.timedelta64)):
            self.guard(source, GuardKind.CALL, TimeIs(value))  # == converts units; NaT != NaT
        else:
            self.guard(source, GuardKind.EQUALS, value)

    def wrap_identity(self, value: Any, source: Source) -> VariableTracker:
        """Values that are the same object on every call (dtype classes, code)."""
        self.guard(source, GuardKind.ID_IS, value)
        return ConstantVariable(value, source=source)

    def wrap_tuple(self, value: tuple, source: Source) -> VariableTracker:
        from .sequences import TupleVariable

        check_container_size(len(value), "a tuple read from the frame")
        self.guard(source, GuardKind.TYPE_IS, type(value))
        self.guard(source, GuardKind.LEN_IS, len(value))
        return TupleVariable([self(v, ItemSource(source, i)) for i, v in enumerate(value)], source=source)

    def wrap_set(self, value: set | frozenset, source: Source) -> VariableTracker:
        from .dicts import hashes_in_python
        from .sets import FrameSetGuards, SetVariable

        check_container_size(len(value), f"a {type(value).__name__} read from the frame")
        if any(hashes_in_python(element) for element in value):  # its guards and reads would hash them anew
            unsupported(Category.UNSUPPORTED_VALUE, f"a {type(value).__name__} whose elements hash with the "
                        "program's own __hash__ or __eq__")
        self.guard(source, GuardKind.TYPE_IS, type(value))
        return SetVariable(value, FrameSetGuards(self.output, source, value), source=source)

    def wrap_named_tuple(self, value: tuple, source: Source) -> VariableTracker:
        self.guard(source, GuardKind.TYPE_IS, type(value))  # a class: its length too
        return NamedTupleVariable([self(v, ItemSource(source, i)) for i, v in enumerate(value)], type(value),
                                  source=source)

    def wrap_list(self, value: list, source: Source) -> VariableTracker:
        from .sequences import ListVariable

        self.guard(source, GuardKind.TYPE_IS, type(value))

        def read_items() -> list[VariableTracker]:
            check_container_size(len(value), "a list read from the frame")
            self.guard(source, GuardKind.LEN_IS, len(value))
            return [self(v, ItemSource(source, i)) for i, v in enumerate(value)]

        return ListVariable([], read_items=read_items, source=source)

    def wrap_dict(self, value: dict, source: Source) -> VariableTracker:
        from .dicts import ConstDictVariable, DictKeysAre, hashes_in_python

        check_container_size(len(value), "a dict read from the frame")
        if any(hashes_in_python(key) for key in value):  # its guards and reads would hash them anew
            unsupported(Category.UNSUPPORTED_VALUE, "a dict whose keys hash with the program's own __hash__ or __eq__")
        self.guard(source, GuardKind.TYPE_IS, type(value))
        # the keys, in order: iteration order and the write-back of mutations depend on it
        self.guard(source, GuardKind.CALL, DictKeysAre(tuple(value)))
        return ConstDictVariable({k: self(v, ItemSource(source, k)) for k, v in value.items()}, source=source)

    def wrap_class(self, value: type, source: Source) -> VariableTracker:
        from .objects import UserClassVariable

        if made_by_a_call_class(value):
            # a class statement in a function body: a new class per call, the same in what the
            # trace reads of it (its attribute values are guarded where read); its identity is
            # guarded (weakly) only if the trace relies on it
            self.guard(source, GuardKind.CALL, ClassShape(value, of_type=False))
            return UserClassVariable(value, source=source, identity_guard=lambda: self.guard(
                source, GuardKind.CALL, IsReferent.of(value)))
        if "<locals>" in _TYPE_QUALNAME.__get__(value, type):   # type's own: no metaclass property runs
            # a class a call defines: held strongly, the cache entry kept it (and its entry in its
            # bases' __subclasses__()) alive after the program let go of it (CPython test_descr's
            # test_remove_subclass); a new class of that name is another object, so the guard fails
            self.guard(source, GuardKind.CALL, IsReferent.of(value))
        else:
            self.guard(source, GuardKind.ID_IS, value)
        return UserClassVariable(value, source=source)

    def wrap_slice(self, value: slice, source: Source) -> VariableTracker:
        from .sequences import SliceVariable

        self.guard(source, GuardKind.TYPE_IS, slice)
        # part by part: slices are unhashable before 3.12, and each part is guarded as it is
        parts = [self(getattr(value, part), AttrSource(source, part)) for part in ("start", "stop", "step")]
        return SliceVariable(*parts, source=source)

    def wrap_numpy_scalar(self, value: np.generic, source: Source) -> VariableTracker:
        """np.float32(2) and friends: a constant of their exact type and value (so NEP 50 sees a
        strong NumPy scalar, and the graph specializes on it as on a Python number)."""
        if isinstance(value, np.floating) and (runtime := self.output.dynamic_float(source, value)) is not None:
            return runtime  # a float whose value changes between calls: guarded only where needed
        self.guard(source, GuardKind.TYPE_IS, type(value))
        self.guard_value(source, value)
        return ConstantVariable(value, source=source)

    def wrap_weak_proxy(self, value: Any, source: Source) -> VariableTracker:
        # every operation on a proxy is one on its referent, which may die between calls
        unsupported(Category.UNSUPPORTED_VALUE, "a weakref.proxy: each use reaches its referent, if still alive")

    def wrap_module(self, value: types.ModuleType, source: Source) -> VariableTracker:
        from .numpy_api import NumpyModuleVariable
        from .objects import PythonModuleVariable

        self.guard(source, GuardKind.ID_IS, value)
        # read from its dict: a module made by ModuleType.__new__ has none, and a missing name
        # would call the module's own __getattr__
        name = (object.__getattribute__(value, "__dict__") or {}).get("__name__")
        if isinstance(name, str) and (name == "numpy" or name.startswith("numpy.")):
            return NumpyModuleVariable(value, source=source)
        return PythonModuleVariable(value, source=source)

    def wrap_function(self, value: types.FunctionType, source: Source) -> VariableTracker:
        from .functions import UserFunctionVariable
        from .numpy_api import NumpyFunctionVariable

        if _is_numpy_callable(value):
            self.guard(source, GuardKind.ID_IS, value)
            return NumpyFunctionVariable(value, _numpy_qualname(value), source=source)
        if _made_per_call(value):
            # a new object per call of its maker: what a call of it runs is its code, globals,
            # defaults and cell contents (guarded as they are read), not its identity, which is
            # guarded (weakly) only if the trace uses the object itself
            self.guard_made_function(value, source)
            return UserFunctionVariable(value, source=source, identity_guard=lambda: self.guard(
                source, GuardKind.CALL, IsReferent.of(value)))
        if made_by_a_call(value):  # identity without keeping it (and what its cells reach) alive
            self.guard(source, GuardKind.CALL, IsReferent.of(value))
        else:
            self.guard(source, GuardKind.ID_IS, value)
        return UserFunctionVariable(value, source=source)

    def guard_made_function(self, value: types.FunctionType, source: Source) -> None:
        """A function made by a call behaves as another one when it has the same code, globals
        and number of defaults (their values and the cells' contents are guarded where read)."""
        from .dicts import DictKeysAre

        from ..skipfiles import is_generated

        self.guard(source, GuardKind.TYPE_IS, types.FunctionType)
        if is_generated(value.__code__):
            # exec'd text (a dataclass's __init__, made anew for each class a call defines): a new
            # code object each time, equal (same bytecode, constants and names) when the text is
            self.guard(AttrSource(source, "__code__"), GuardKind.EQUALS, value.__code__)
        else:
            self.guard(AttrSource(source, "__code__"), GuardKind.ID_IS, value.__code__)
        self.guard(AttrSource(source, "__globals__"), GuardKind.ID_IS, value.__globals__)
        defaults, kwdefaults = AttrSource(source, "__defaults__"), AttrSource(source, "__kwdefaults__")
        if value.__defaults__ is None:
            self.guard(defaults, GuardKind.ID_IS, None)
        else:
            self.guard(defaults, GuardKind.LEN_IS, len(value.__defaults__))
        if value.__kwdefaults__ is None:
            self.guard(kwdefaults, GuardKind.ID_IS, None)
        else:
            self.guard(kwdefaults, GuardKind.CALL, DictKeysAre(tuple(value.__kwdefaults__)))

    def wrap_method(self, value: types.MethodType, source: Source) -> VariableTracker:
        """A bound method passed in (`obj.method` as a callback): a new object per attribute
        access, guarded as what a call of it runs: its function and the object it is bound to."""
        from .functions import UserMethodVariable

        if not isinstance(value.__func__, types.FunctionType):  # a method of a C class, a callable object
            return self.wrap_object(value, source)
        self.guard(source, GuardKind.TYPE_IS, types.MethodType)
        function = self(value.__func__, AttrSource(source, "__func__"))
        return UserMethodVariable(function, self(value.__self__, AttrSource(source, "__self__")), source=source)

    def wrap_builtin(self, value: Any, source: Source) -> VariableTracker:
        from .builtins import BuiltinVariable
        from .numpy_api import NumpyFunctionVariable

        owner = getattr(value, "__self__", None)
        if isinstance(owner, (np.ufunc, type)):
            # np.add.reduceat, dict.fromkeys: a new bound method object per attribute access;
            # any with the same owner and name does the same
            self.guard(source, GuardKind.TYPE_IS, type(value))
            self.guard(AttrSource(source, "__self__"), GuardKind.ID_IS, owner)
            self.guard(AttrSource(source, "__name__"), GuardKind.EQUALS, value.__name__)
        elif _bound_to_an_instance(owner):
            # d.keys of a user's object: a new method object per attribute access, which an
            # identity guard would hold, and the object with it, for as long as the cache lives
            # (plain Python frees it when the program lets go of it); any method of the same
            # name bound to the same object does the same
            self.guard(source, GuardKind.TYPE_IS, type(value))
            self.guard(AttrSource(source, "__self__"), GuardKind.CALL, IsReferent.of(owner))
            self.guard(AttrSource(source, "__name__"), GuardKind.EQUALS, value.__name__)
        else:
            self.guard(source, GuardKind.ID_IS, value)
        if _is_numpy_callable(value):
            return NumpyFunctionVariable(value, _numpy_qualname(value), source=source)
        return BuiltinVariable(value, source=source)

    def wrap_numpy_callable(self, value: Any, source: Source) -> VariableTracker:
        """np.sum reached through a global or closure name (an _ArrayFunctionDispatcher, a cython
        function, a numpy class): the same as through the np module."""
        from .numpy_api import NumpyFunctionVariable

        self.guard(source, GuardKind.ID_IS, value)
        return NumpyFunctionVariable(value, _numpy_qualname(value), source=source)

    def wrap_array_subclass(self, value: np.ndarray, source: Source) -> VariableTracker:
        """np.matrix, masked arrays, a user's subclass: guarded by exact type, never an array."""
        from .arrays import ArraySubclassVariable

        self.guard(source, GuardKind.TYPE_IS, type(value))
        return ArraySubclassVariable(type(value), source=source)

    def wrap_numpy_object(self, value: Any, source: Source) -> VariableTracker:
        from .numpy_api import NumpyObjectVariable

        self.guard(source, GuardKind.TYPE_IS, type(value))
        return NumpyObjectVariable(type(value), source=source)

    def wrap_object(self, value: Any, source: Source) -> VariableTracker:
        from .objects import UserObjectVariable

        cls = type(value)
        if made_by_a_call_class(cls):  # its class is another object on each call of its maker
            self.guard(source, GuardKind.CALL, ClassShape(cls, of_type=True))
            return UserObjectVariable(value, source=source, type_identity_guard=lambda: self.guard(
                source, GuardKind.TYPE_IS, cls))
        self.guard(source, GuardKind.TYPE_IS, cls)
        return UserObjectVariable(value, source=source)


def _bound_to_an_instance(owner: Any) -> bool:
    """A builtin method's __self__ that is an object of the program (not a module, a class, a
    ufunc) and that a weak reference can follow."""
    if owner is None or isinstance(owner, (types.ModuleType, type, np.ufunc)):
        return False
    try:
        weakref.ref(owner)
    except TypeError:
        return False
    return True


def _made_per_call(value: types.FunctionType) -> bool:
    """A def or lambda run by a function's body (`f.<locals>.g`), or a method of a class defined
    there (`f.<locals>.C.m`): a new object on each call of f."""
    return "<locals>" in value.__qualname__


def _is_numpy_callable(value: Any) -> bool:
    return isinstance(value, np.ufunc) or module_name(value).startswith("numpy")


def _numpy_qualname(value: Any) -> str:
    module = getattr(value, "__module__", "numpy") or "numpy"
    public = "numpy" if module.startswith("numpy._core") or module == "numpy" else module
    return f"{public.replace('numpy', 'np', 1)}.{getattr(value, '__name__', '?')}"


_BY_TYPE: dict[type, Callable[[VariableBuilder, Any, Source], VariableTracker]] = {
    np.ndarray: VariableBuilder.wrap_array,
    tuple: VariableBuilder.wrap_tuple,
    list: VariableBuilder.wrap_list,
    dict: VariableBuilder.wrap_dict,
    set: VariableBuilder.wrap_set,
    frozenset: VariableBuilder.wrap_set,
    range: VariableBuilder.wrap_constant,
    slice: VariableBuilder.wrap_slice,
    types.ModuleType: VariableBuilder.wrap_module,
    weakref.ProxyType: VariableBuilder.wrap_weak_proxy,
    weakref.CallableProxyType: VariableBuilder.wrap_weak_proxy,
    types.FunctionType: VariableBuilder.wrap_function,
    types.MethodType: VariableBuilder.wrap_method,
    types.BuiltinFunctionType: VariableBuilder.wrap_builtin,
    np.ufunc: VariableBuilder.wrap_builtin,
    type(Ellipsis): VariableBuilder.wrap_constant,
    type(NotImplemented): VariableBuilder.wrap_constant,  # a method's "ask the other operand"
    type(None): VariableBuilder.wrap_constant,
    **{t: VariableBuilder.wrap_constant for t in (bool, int, float, complex, str, bytes)},
    np.dtype: VariableBuilder.wrap_constant,
}

_BY_CHECK: list[tuple[Callable[[Any], bool], Callable[[VariableBuilder, Any, Source], VariableTracker]]] = [
    (lambda v: isinstance(v, tuple) and plain_namedtuple(type(v)) and not made_by_a_call_class(type(v)),
     VariableBuilder.wrap_named_tuple),
    (is_device_array, VariableBuilder.wrap_device_array),
    (lambda v: isinstance(v, np.dtype), VariableBuilder.wrap_constant),
    # a structured record (np.void) is mutable, a view into its array: an object, not a value
    (lambda v: isinstance(v, np.generic) and not isinstance(v, np.void), VariableBuilder.wrap_numpy_scalar),
    (lambda v: isinstance(v, type) and issubclass(v, np.generic), VariableBuilder.wrap_identity),
    (lambda v: isinstance(v, type) and module_name(v) == "builtins", VariableBuilder.wrap_builtin),
    (lambda v: isinstance(v, np.ndarray), VariableBuilder.wrap_array_subclass),
    (lambda v: isinstance(v, type) and not module_name(v).startswith("numpy"), VariableBuilder.wrap_class),
    # (an instance of a NumPy class is no function of NumPy's even when callable: np.errstate(),
    # a new object per call, is guarded by its type)
    (lambda v: callable(v) and _is_numpy_callable(v) and hasattr(v, "__name__"), VariableBuilder.wrap_numpy_callable),
    (lambda v: isinstance(v, (np.finfo, np.iinfo)), VariableBuilder.wrap_identity),  # cached per dtype
    (lambda v: module_name(type(v)).startswith("numpy"), VariableBuilder.wrap_numpy_object),
]

