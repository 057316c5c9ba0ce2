"""User classes, their instances (passed in or created while tracing), super() and plain modules: attribute
lookup in Python's order on guarded sources, methods and properties inlined, stores replayed."""
from __future__ import annotations

import _thread
import functools
import importlib
import importlib.util
import inspect
import operator
import sys
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from ..guards import GuardKind
from ..side_effects import DELETED
from ..sources import AttrSource, ItemSource, Source
from .base import VariableTracker, module_name
from .functions import UserMethodVariable, wrap_plain
from .named_tuples import make_named_tuple, plain_namedtuple
from ..class_shapes import made_by_a_call

if TYPE_CHECKING:
    from ..translator.core import InstructionTranslatorBase as Tx

_MISSING = object()
# the attribute lookup of these built-in types is object's generic one under a slot wrapper of their own
_GENERIC_LOOKUP = frozenset(t.__getattribute__ for t in (object, tuple, list, dict, set, frozenset, int, float,
                                                         complex, str, bytes, bytearray, BaseException))


@dataclass(frozen=True)
class InstanceLacks:
    """Guard predicate: the object's own __dict__ has no `name` (the C guard calls it)."""

    name: str

    def __call__(self, value: Any) -> bool:
        return self.name not in value.__dict__

    def describe(self, source_name: str) -> str:
        return f"{self.name!r} not in vars({source_name})"


@dataclass(frozen=True)
class InstanceHas:
    """Guard predicate: the object's own __dict__ has `name` (the C guard calls it)."""

    name: str

    def __call__(self, value: Any) -> bool:
        return self.name in value.__dict__

    def describe(self, source_name: str) -> str:
        return f"{self.name!r} in vars({source_name})"


def module_namespace(module: types.ModuleType) -> dict[str, Any]:
    """A module's dict read without hooks: one made by ModuleType.__new__ has none yet."""
    return object.__getattribute__(module, "__dict__") or {}


def module_getattr_hook(module: types.ModuleType, name: str) -> None:
    """Give up on an attribute that only the module's own __getattr__ (PEP 562) provides: that
    hook is arbitrary code, which may warn (np.lib.math, np.chararray), import, or compute a
    fresh value on every access; reading it while tracing would run it once at compile time and
    never again on later calls."""
    if name in module_namespace(module) or hasattr(type(module), name):
        return
    if _numpy_lazy_submodule(module, name):
        # np.fft, np.random: NumPy's __getattr__ imports its own submodule on first use, which
        # binds it in the package for good; importing it now gives every call the same module
        importlib.import_module(f"{module.__name__}.{name}")
        return
    if callable(module_namespace(module).get("__getattr__")):
        unsupported(Category.UNSUPPORTED_ATTRIBUTE,
                    f"{module.__name__}.{name} comes from the module's __getattr__, which runs code on each access",
                    "read it once outside the compiled function")


def _numpy_lazy_submodule(module: types.ModuleType, name: str) -> bool:
    package = module_namespace(module).get("__name__")
    if not isinstance(package, str) or not (package == "numpy" or package.startswith("numpy.")) or not hasattr(module, "__path__"):
        return False
    try:
        return importlib.util.find_spec(f"{package}.{name}") is not None
    except (ImportError, ValueError):
        return False


class PythonModuleVariable(VariableTracker):
    def __init__(self, module: types.ModuleType, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.module = module

    def python_type(self) -> type:
        return types.ModuleType

    def describe(self) -> str:
        return f"the module {module_namespace(self.module).get('__name__', '?')}"

    def has_attribute(self, tx: "Tx", name: str) -> bool:
        module_getattr_hook(self.module, name)
        return hasattr(self.module, name)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        module_getattr_hook(self.module, name)
        if not hasattr(self.module, name):
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r}")
        return _wrap(tx, getattr(self.module, name), AttrSource(self.source, name) if self.source else None)

    def reconstruct(self, codegen: Any) -> None:
        reconstruct_module(self, self.module, codegen)


def reconstruct_module(variable: VariableTracker, module: types.ModuleType, codegen: Any) -> None:
    """A module from its source, or, made by an import inside the function (no source), as the object
    itself: the import statement gives the module of sys.modules, which the trace already relied on
    (`import numpy as np` in the function, then a graph break: the resume function needs `np`)."""
    if variable.source is not None:
        VariableTracker.reconstruct(variable, codegen)
    else:
        codegen.load_const(module)


def module_variable(module: types.ModuleType) -> VariableTracker:
    """A module an import statement inside the function yields. It has no source to guard its
    attributes by, so only modules whose attributes do not change are taken: numpy's and the
    standard library's."""
    from .numpy_api import NumpyModuleVariable

    name = module.__name__
    if name == "numpy" or name.startswith("numpy."):
        return NumpyModuleVariable(module)
    if name.partition(".")[0] in sys.stdlib_module_names:
        return PythonModuleVariable(module)
    unsupported(Category.UNSUPPORTED_VALUE, f"the module {name!r} reached without a source to guard its "
                "attributes by (imported inside the compiled function?)", "import it at module level")


def _wrap(tx: "Tx", value: Any, source: Source | None) -> VariableTracker:
    """A real value reached while tracing: through the builder (guarded) when it has a source."""
    return tx.output.builder(value, source) if source is not None else wrap_plain(tx, value)


def check_class_namespaces(classes: tuple[type, ...], what: str) -> None:
    """Give up on a lookup through these classes' __dict__s when one has a key that is not an exact
    str: one with the name's hash runs its own __eq__ in every lookup of the name (user code, run
    once per lookup by Python, and again by each lookup of the trace and of its guards)."""
    for cls in classes:
        if not all(type(key) is str for key in cls.__dict__):
            unsupported(Category.UNSUPPORTED_VALUE, f"the __dict__ of the class {cls.__qualname__} (looked up for "
                        f"{what}) has keys that are not strings")


def _plain_lookup(attribute: Any) -> bool:
    """Reading the class attribute runs no code that could raise: a plain value, a function,
    a staticmethod or a classmethod."""
    return isinstance(attribute, (types.FunctionType, staticmethod, classmethod)) or not hasattr(type(attribute), "__get__")


def _class_attribute(tx: "Tx", cls: type, name: str, attribute: Any, owner: VariableTracker | None,
                     source: Source | None) -> VariableTracker | None:
    """A class attribute found on `cls` (or its bases), seen through `owner` (an instance or the
    class). `source` re-fetches the raw attribute. None when it is a plain value."""
    if isinstance(attribute, types.FunctionType):
        function = _wrap(tx, attribute, source)
        return function if owner is None else UserMethodVariable(function, owner)
    if isinstance(attribute, staticmethod):  # cls.name is the function itself: the source reaches it
        return _wrap(tx, attribute.__func__, source)
    if isinstance(attribute, classmethod):
        function = _wrap(tx, attribute.__func__, AttrSource(source, "__func__") if source else None)
        owner_class = owner._class_source() if isinstance(owner, UserObjectVariable) else None
        return UserMethodVariable(function, class_variable(tx, cls, owner_class))
    if hasattr(type(attribute), "__get__"):
        unsupported(Category.UNSUPPORTED_ATTRIBUTE,
                    f"{name!r} of {cls.__qualname__} is a {type(attribute).__name__}, not captured yet")
    return None


class UserClassVariable(VariableTracker):
    """A class defined in user code, guarded by identity, or (a class made by a call) by its shape
    until the trace relies on which object it is: `identity_guard` installs that guard."""

    def __init__(self, value: type, identity_guard: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.value = value
        self.identity_guard = identity_guard

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        self.pin()
        return self.value

    def pin(self) -> None:
        """The trace relies on this very class object (compares it, folds it, keeps it)."""
        if self.identity_guard is not None:
            self.identity_guard()
            self.identity_guard = None

    def describe(self) -> str:
        return f"the class {self.value.__qualname__}"

    def _check_complete(self) -> None:
        if type.__dict__["__mro__"].__get__(self.value) is None:  # type.__new__ is running its mro()
            unsupported(Category.UNSUPPORTED_VALUE, f"{self.describe()} is being created (no __mro__ yet)")
        # a class attribute is looked up on the metaclass (descriptors) and on the class
        check_class_namespaces(inspect.getmro(type(self.value)) + self.value.__mro__, self.describe())

    def has_attribute(self, tx: "Tx", name: str) -> bool:
        self._check_complete()
        attribute = inspect.getattr_static(self.value, name, _MISSING)
        if attribute is not _MISSING and not _plain_lookup(attribute):
            self.var_getattr(tx, name)  # a descriptor's __get__ may raise AttributeError
        return attribute is not _MISSING

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        self._check_complete()
        attribute = inspect.getattr_static(self.value, name, _MISSING)
        if attribute is _MISSING:
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r} (AttributeError)")
        if not any(name in c.__dict__ for c in self.value.__mro__) and type(self.value) is type:
            # __name__, __mro__, __doc__...: attributes every class gets from `type`, fixed for
            # a class (the names are part of a shape guard; the rest needs the class itself)
            if name not in ("__name__", "__qualname__", "__module__"):
                self.pin()
            return wrap_plain(tx, getattr(self.value, name))
        if isinstance(attribute, (types.FunctionType, staticmethod)):  # Class.method is the plain function
            return _wrap(tx, getattr(self.value, name), AttrSource(self.source, name) if self.source else None)
        if isinstance(attribute, classmethod):
            function = _wrap(tx, attribute.__func__, AttrSource(AttrSource(self.source, name), "__func__") if self.source else None)
            return UserMethodVariable(function, self)
        found = _class_attribute(tx, self.value, name, attribute, None, None)
        if found is not None:
            return found
        return _wrap(tx, getattr(self.value, name), AttrSource(self.source, name) if self.source else None)

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        from .builtins import BuiltinVariable, has_handler
        from .functions import PartialVariable

        if self.value is functools.partial and args:
            return PartialVariable(args[0], args[1:], kwargs)
        if has_handler(self.value):  # itertools.chain and friends: classes written in C
            return BuiltinVariable(self.value).call_function(tx, args, kwargs)
        if plain_namedtuple(self.value) and not made_by_a_call(self.value):
            self.pin()  # the instance's class is this very object (a module holds it: one per process)
            return make_named_tuple(tx, self.value, args, kwargs)
        return NewObjectVariable.create(tx, self, args, kwargs)

    def reconstruct(self, codegen: Any) -> None:
        if self.source is not None:
            return super().reconstruct(codegen)
        self.pin()
        codegen.load_const(self.value)


def class_variable(tx: "Tx | None", cls: type, source: Source | None) -> VariableTracker:
    """The tracker of a class the trace reached (type(x), a classmethod's cls); `tx` is needed
    only for a class with a source (guarded), None for one computed while tracing."""
    from .builtins import BuiltinVariable
    from .numpy_api import wrap_numpy_value

    if source is not None:
        assert tx is not None
        return tx.output.builder(cls, source)
    if module_name(cls) == "builtins":
        return BuiltinVariable(cls)
    if module_name(cls).startswith("numpy"):
        return wrap_numpy_value(cls, f"numpy.{cls.__name__}")
    return UserClassVariable(cls)


class UserObjectVariable(VariableTracker):
    """An instance of a user class that existed before the frame (guarded on its type, or for a
    class made by a call on its type's shape until `pin_type` is needed)."""

    def __init__(self, value: Any, type_identity_guard: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.value = value
        self.type_identity_guard = type_identity_guard

    def pin_type(self) -> None:
        """The trace relies on which class object the type is (an identity, a subclass test)."""
        if self.type_identity_guard is not None:
            self.type_identity_guard()
            self.type_identity_guard = None

    def python_type(self) -> type:
        return type(self.value)

    def describe(self) -> str:
        return f"a {type(self.value).__qualname__} object"

    def identity_is_tracked(self) -> bool:
        return True

    def _class_source(self) -> Source | None:
        return AttrSource(self.source, "__class__") if self.source is not None else None

    def _instance_value(self, tx: "Tx", name: str) -> Any:
        """The instance's own value for `name` as the trace sees it: a pending store, DELETED,
        the value in the real __dict__, or _MISSING."""
        pending = tx.output.side_effects.pending_attr(self.source, name)
        if pending is not None:
            return pending
        namespace = getattr(self.value, "__dict__", {})
        if not all(type(key) is str for key in namespace):
            # a key of another type with the name's hash runs its __eq__ in the lookup: user code
            unsupported(Category.UNSUPPORTED_VALUE, f"the __dict__ of {self.describe()} has keys that are not strings")
        own = namespace.get(name, _MISSING)
        if own is _MISSING and self.source is not None and hasattr(self.value, "__dict__"):
            # the trace relies on the absence (a class attribute, hasattr() False): guard it
            tx.output.guard(self.source, GuardKind.CALL, InstanceLacks(name))
        return own

    def _custom_hook(self, name: str) -> None:
        cls = type(self.value)
        check_class_namespaces(cls.__mro__, self.describe())
        if cls is _thread._local:
            return  # its C hooks only pick the calling thread's __dict__, which guards read too
        for hook in ("__getattribute__", "__getattr__"):
            if getattr(cls, hook, None) not in (None, getattr(object, hook, None)) \
                    and (hook != "__getattribute__" or cls.__getattribute__ not in _GENERIC_LOOKUP):
                unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"{self.describe()} has a custom {hook} (reading {name!r})")

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        self._custom_hook(name)
        cls = type(self.value)
        if name == "__class__":
            return class_variable(tx, cls, self._class_source())
        attribute = inspect.getattr_static(cls, name, _MISSING)
        class_source = AttrSource(cls_source, name) if (cls_source := self._class_source()) is not None else None
        if isinstance(attribute, property):  # a data descriptor wins over the instance dict
            if not isinstance(attribute.fget, types.FunctionType):
                unsupported(Category.UNSUPPORTED_ATTRIBUTE, f"property {name!r} of {self.describe()} has no Python getter")
            getter = _wrap(tx, attribute.fget, _property_source(self, name))
            return getter.call_function(tx, [self], {})
        if type(attribute).__name__ == "member_descriptor":  # __slots__
            if not hasattr(self.value, name):
                unsupported(Category.EXCEPTION, f"the slot {name!r} of {self.describe()} is unset (AttributeError)")
            return _wrap(tx, getattr(self.value, name), AttrSource(self.source, name) if self.source else None)
        own = self._instance_value(tx, name)
        if own is not _MISSING and own is not DELETED:
            if isinstance(own, VariableTracker):
                return own
            return _wrap(tx, own, AttrSource(self.source, name) if self.source else None)
        if attribute is _MISSING:
            unsupported(Category.EXCEPTION, f"{self.describe()} has no attribute {name!r} (AttributeError)")
        found = _class_attribute(tx, cls, name, attribute, self, class_source)
        if found is not None:
            return found
        return _wrap(tx, getattr(cls, name), class_source)

    def has_attribute(self, tx: "Tx", name: str) -> bool:
        self._custom_hook(name)
        attribute = inspect.getattr_static(type(self.value), name, _MISSING)
        if attribute is not _MISSING and not _plain_lookup(attribute):
            # a property, a slot or another descriptor (scikit-learn's available_if) may raise
            # AttributeError, which makes hasattr False: read it as Python would (or break)
            self.var_getattr(tx, name)
            return True
        own = self._instance_value(tx, name)
        if (own is not _MISSING and own is not DELETED and self.source is not None
                and tx.output.side_effects.pending_attr(self.source, name) is None):
            # True because the instance has it now (hasattr(self, "t_") before a lazy
            # `self.t_ = ...`): a later call on an object without it must not reuse the answer
            tx.output.guard(self.source, GuardKind.CALL, InstanceHas(name))
        return own is not DELETED and (own is not _MISSING or attribute is not _MISSING)

    def _check_plain_store(self, name: str, what: str) -> None:
        cls = type(self.value)
        check_class_namespaces(cls.__mro__, self.describe())
        descriptor = inspect.getattr_static(cls, name, None)
        custom = cls is not _thread._local and any(
            getattr(cls, hook) is not getattr(object, hook) for hook in ("__setattr__", "__delattr__"))
        if custom or hasattr(type(descriptor), "__set__") or hasattr(type(descriptor), "__delete__"):
            unsupported(Category.SIDE_EFFECT, f"{what} {name!r} on {self.describe()} runs custom code")
        if not hasattr(self.value, "__dict__"):
            unsupported(Category.SIDE_EFFECT, f"{what} {name!r} on {self.describe()}, which has no __dict__")

    def store_attr(self, tx: "Tx", name: str, value: VariableTracker) -> None:
        self._check_plain_store(name, "setting")
        tx.output.side_effects.store_attr(self, name, value)

    def delete_attr(self, tx: "Tx", name: str) -> None:
        self._check_plain_store(name, "deleting")
        own = self._instance_value(tx, name)
        if own is _MISSING or own is DELETED:
            unsupported(Category.EXCEPTION, f"del of the missing attribute {name!r} raises AttributeError")
        existed = name in getattr(self.value, "__dict__", {})
        if existed and self.source is not None:
            # the replay deletes it again on later calls: the attribute must exist then too
            tx.output.builder(self.value.__dict__[name], AttrSource(self.source, name))
        tx.output.side_effects.delete_attr(self, name, existed)

    def _dunder(self, tx: "Tx", name: str) -> VariableTracker | None:
        """The bound special method `name` the user's class defines (not object's), or None."""
        owner = next((c for c in type(self.value).__mro__ if name in c.__dict__), object)
        if owner is object:
            return None
        attribute = owner.__dict__[name]
        if not isinstance(attribute, types.FunctionType):
            unsupported(Category.UNSUPPORTED_CALL, f"{name} of {self.describe()} is not a Python function")
        source = AttrSource(cls_source, name) if (cls_source := self._class_source()) is not None else None
        return UserMethodVariable(_wrap(tx, attribute, source), self)

    def apply_operator(self, tx: "Tx", fn: Any, args: list[VariableTracker], position: int,
                       last_chance: bool | None = None) -> VariableTracker | None:
        """`last_chance`: no operand is asked after this one (by default: the right operand is last;
        a subclass on the right is asked first, see builtins._reflected_first)."""
        from .builtins import OPERATOR_DUNDERS
        from .constant import ConstantVariable

        forward, reflected = OPERATOR_DUNDERS[fn]
        name = forward if position == 0 else reflected
        others = [a for i, a in enumerate(args) if i != position]
        if last_chance is None:
            last_chance = position == len(args) - 1
        method = self._dunder(tx, name) if name else None
        negate = False
        if method is None and name == "__ne__":  # object.__ne__ inverts __eq__
            method, negate = self._dunder(tx, "__eq__"), True
        if method is not None:
            result = method.call_function(tx, others, {})
            if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
                return ConstantVariable(not result.truth_value(tx)) if negate else result
        if not last_chance and not (name in ("__eq__", "__ne__") and module_name(others[0].python_type()) == "builtins"):
            return None  # the right operand's reflected method decides (builtins never do: NotImplemented)
        if name in ("__eq__", "__ne__"):  # neither side decides: identity, as object.__eq__
            from .builtins import BuiltinVariable

            # as `is` decides it: two trackers may be one object (a frame value and a constant)
            identity = operator.is_ if name == "__eq__" else operator.is_not
            return BuiltinVariable(identity).call_function(tx, [args[0], args[1]], {})
        unsupported(Category.EXCEPTION, f"unsupported operand type(s) for {getattr(fn, '__name__', fn)}: "
                    f"{', '.join(a.describe() for a in args)} (TypeError)")

    def iterator(self, tx: "Tx") -> VariableTracker:
        method = self._dunder(tx, "__iter__")
        if method is None:
            unsupported(Category.UNSUPPORTED_VALUE, f"iterating over {self.describe()} without __iter__")
        result = method.call_function(tx, [], {})
        if result is self:  # an iterator class with __next__: StopIteration is an exception, not captured
            unsupported(Category.UNSUPPORTED_VALUE, f"iterating over {self.describe()} with a user-defined __next__")
        return result.iterator(tx)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        return self.iterator(tx).unpack(tx)

    def call_function(self, tx: "Tx", args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        method = self._dunder(tx, "__call__")
        if method is None:
            unsupported(Category.EXCEPTION, f"{self.describe()} is not callable (TypeError)")
        return method.call_function(tx, args, kwargs)

    def truth_value(self, tx: "Tx") -> bool:
        for name in ("__bool__", "__len__"):
            method = self._dunder(tx, name)
            if method is not None:
                return method.call_function(tx, [], {}).truth_value(tx)
        return True

    def contains(self, tx: "Tx", item: VariableTracker) -> bool:
        method = self._dunder(tx, "__contains__")
        if method is None:
            unsupported(Category.UNSUPPORTED_VALUE, f"`in` on {self.describe()} without __contains__")
        return method.call_function(tx, [item], {}).truth_value(tx)

    def getitem(self, tx: "Tx", key: VariableTracker) -> VariableTracker:
        method = self._dunder(tx, "__getitem__")
        if method is None:
            unsupported(Category.EXCEPTION, f"{self.describe()} is not subscriptable (TypeError)")
        return method.call_function(tx, [key], {})

    def setitem(self, tx: "Tx", key: VariableTracker, value: VariableTracker) -> None:
        method = self._dunder(tx, "__setitem__")
        if method is None:
            unsupported(Category.EXCEPTION, f"{self.describe()} does not support item assignment (TypeError)")
        method.call_function(tx, [key, value], {})


class NewObjectVariable(UserObjectVariable):
    """An instance of a user class created while tracing. Its attributes live here: the real
    object is made by the transformed code, attributes and all, only if it leaves the frame.
    `value` is a bare instance (no __init__ run) that stands in for type and class lookups."""

    def __init__(self, cls: type, **kwargs: Any) -> None:
        try:
            bare: Any = object.__new__(cls)
        except TypeError as error:  # an abstract class, say
            unsupported(Category.EXCEPTION, f"creating {cls.__qualname__} raises TypeError: {error}")
        super().__init__(bare, **kwargs)
        self.attrs: dict[str, VariableTracker] = {}
        self.class_source: Source | None = None  # where the class came from: methods are guarded there

    @classmethod
    def create(cls, tx: "Tx", class_variable: UserClassVariable, args: list[VariableTracker],
               kwargs: dict[str, VariableTracker]) -> "NewObjectVariable":
        """cls(*args, **kwargs) for a plain class: object.__new__, then the inlined __init__."""
        target = class_variable.value
        if type(target) is not type or target.__new__ is not object.__new__:
            unsupported(Category.UNSUPPORTED_CALL, f"creating a {target.__qualname__}, whose metaclass or __new__ "
                        "runs custom code", "create the object outside the compiled function and pass it in")
        from .builder import own_getattribute

        if own_getattribute(target):
            unsupported(Category.UNSUPPORTED_CALL, f"creating a {target.__qualname__}, whose __getattribute__ would "
                        "run for every look-up of the trace", "create the object outside the compiled function")
        if getattr(target, "__del__", None) is not None:
            # the bare stand-in would be finalized by the collector (a __del__ that plain Python
            # never runs, on an object whose __init__ never ran), and one the frame drops must be
            # finalized when plain Python would: such objects are made by Python
            unsupported(Category.UNSUPPORTED_CALL, f"creating a {target.__qualname__}, which has a __del__ method",
                        "create the object outside the compiled function and pass it in")
        obj = cls(target)
        obj.class_source = class_variable.source
        obj.type_identity_guard = class_variable.pin
        if not hasattr(obj.value, "__dict__"):
            unsupported(Category.UNSUPPORTED_CALL, f"creating a {target.__qualname__} (it has __slots__)")
        init = obj._dunder(tx, "__init__")
        if init is None:
            if args or kwargs:
                unsupported(Category.EXCEPTION, f"{target.__qualname__}() takes no arguments (TypeError)")
            return obj
        result = init.call_function(tx, args, kwargs)
        if not (result.is_python_constant() and result.as_python_constant() is None):
            unsupported(Category.EXCEPTION, "__init__() should return None (TypeError)")
        return obj

    def describe(self) -> str:
        return f"a {type(self.value).__qualname__} object created in the function"

    def _instance_value(self, tx: "Tx", name: str) -> Any:
        return self.attrs.get(name, _MISSING)

    def _class_source(self) -> Source | None:
        return self.class_source

    def store_attr(self, tx: "Tx", name: str, value: VariableTracker) -> None:
        self._check_plain_store(name, "setting")
        self.attrs[name] = value

    def object_setattr(self, tx: "Tx", name: str, value: VariableTracker) -> None:
        self.attrs[name] = value  # object.__setattr__: what frozen dataclasses' __init__ calls

    def delete_attr(self, tx: "Tx", name: str) -> None:
        self._check_plain_store(name, "deleting")
        if self.attrs.pop(name, None) is None:
            unsupported(Category.EXCEPTION, f"del of the missing attribute {name!r} raises AttributeError")

    def reconstruct(self, codegen: Any) -> None:
        if codegen.load_built(self):
            return
        codegen.begin_call(_make_object)
        if self.class_source is not None:  # this call's class (one made by a call is another object each time)
            codegen.load_source(self.class_source)
        else:
            codegen.load_const(type(self.value))
        for name, value in self.attrs.items():
            codegen.load_const(name)
            value.reconstruct(codegen)
        codegen.build_map(len(self.attrs))
        codegen.end_call(2)
        codegen.remember_built(self)


def _make_object(cls: type, attributes: dict) -> Any:
    """What the transformed code calls to build an object the trace created."""
    obj: Any = object.__new__(cls)
    for name, value in attributes.items():
        # one store at a time, as the program made them (no custom __setattr__, no data descriptor:
        # _check_plain_store): __dict__.update() builds another table (the first instance of a class
        # got a combined dict where Python's stores share the class's keys; CPython's test_dict)
        object.__setattr__(obj, name, value)
    return obj


def _property_source(obj: UserObjectVariable, name: str) -> Source | None:
    class_source = obj._class_source()
    if class_source is None:
        return None
    # the property object itself, from the __dict__ of the class that defines it
    return AttrSource(ItemSource(AttrSource(_owner_source(obj, class_source, name), "__dict__"), name), "fget")


def _owner_source(obj: UserObjectVariable, class_source: Source, name: str) -> Source:
    """Source of the class in the MRO of obj's type that defines `name`."""
    mro = type(obj.value).__mro__
    index = next(i for i, c in enumerate(mro) if name in c.__dict__)
    return ItemSource(AttrSource(class_source, "__mro__"), index)


class SuperVariable(VariableTracker):
    """super(cls, obj): attribute lookup that starts after `cls` in the MRO of obj's type."""

    def __init__(self, cls: VariableTracker, obj: VariableTracker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cls = cls
        self.obj = obj

    def describe(self) -> str:
        return f"super() of {self.obj.describe()}"

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        start = self.cls.as_python_constant()
        is_class = isinstance(self.obj, UserClassVariable)
        if isinstance(self.obj, UserObjectVariable):
            self.obj.pin_type()  # the lookup starts after `cls` in the MRO of this very class
        owner_type = self.obj.as_python_constant() if is_class else self.obj.python_type()
        mro = owner_type.__mro__
        if mro is None:  # a metaclass's mro() run by type.__new__: the class is not complete yet
            unsupported(Category.UNSUPPORTED_VALUE, f"super() of {self.obj.describe()}, which is being created")
        if start not in mro:
            unsupported(Category.EXCEPTION, "super(type, obj): obj must be an instance or subtype of type (TypeError)")
        for index in range(mro.index(start) + 1, len(mro)):
            if name in mro[index].__dict__:
                break
        else:
            unsupported(Category.EXCEPTION, f"super() has no attribute {name!r} (AttributeError)")
        attribute = mro[index].__dict__[name]
        if attribute is object.__init__ and not is_class:
            from .builtins import BuiltinVariable
            from .functions import UserMethodVariable

            # super().__init__() at the top: does nothing, or raises on arguments (object_init)
            return UserMethodVariable(BuiltinVariable(object.__init__), self.obj)
        source = None
        if self.obj.source is not None:
            type_source = self.obj.source if is_class else AttrSource(self.obj.source, "__class__")
            source = ItemSource(AttrSource(ItemSource(AttrSource(type_source, "__mro__"), index), "__dict__"), name)
        if isinstance(attribute, property) and not is_class:
            getter = _wrap(tx, attribute.fget, AttrSource(source, "fget") if source else None)
            return getter.call_function(tx, [self.obj], {})
        if isinstance(attribute, types.FunctionType) and is_class:
            return _wrap(tx, attribute, source)
        found = _class_attribute(tx, owner_type, name, attribute, self.obj, source)
        if found is not None:
            return found
        return _wrap(tx, attribute, source)

