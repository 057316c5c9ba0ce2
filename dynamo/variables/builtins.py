"""BuiltinVariable: Python builtins, operator functions and a few C library callables while tracing;
arrays go to the graph, constants fold, containers and iterators keep CPython's identity and laziness."""
from __future__ import annotations

import builtins
import functools
import inspect
import itertools
import math
import operator
import types
from typing import TYPE_CHECKING, Any, Callable

from ..exc import Category, unsupported
from ..fx_ir.thread_warnings import warnings_raised
from .base import VariableTracker
from .constant import ConstantVariable
from .fold_limits import check_fold_size, repeated_length, warnings_run_in_python
from .identity_tests import identity_test
from .input_work import note_builtin_call
from .symbolic import concrete, holds_symbolic, symbolic_extremum

if TYPE_CHECKING:
    from ..translator.core import InstructionTranslatorBase as Tx

Args = list[VariableTracker]
Kwargs = dict[str, VariableTracker]

# Builtins that are pure functions of constant arguments: calling them while tracing is exact.
_FOLDABLE = {
    abs, all, any, ascii, bin, bool, chr, complex, divmod, float, format, frozenset, hash, hex, int,
    isinstance, issubclass, len, max, min, oct, ord, pow, repr, round, sorted, str, sum, tuple, type,
    bytes, slice,
    *[getattr(math, name) for name in dir(math) if callable(getattr(math, name)) and not name.startswith("_")],
    *[getattr(operator, name) for name in dir(operator) if not name.startswith("_") and callable(getattr(operator, name))],
}

# In-place operators: on a container with identity they mutate it (the dunder method), so they
# never fold into a fresh copy.
_IN_PLACE = {
    getattr(operator, f"i{n.rstrip('_')}"): (f"__i{n.rstrip('_')}__", getattr(operator, n)) for n in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and_", "or_", "xor")
}


# Operators a user class can define, with the special method tried on the left operand and
# the reflected one tried on the right.
OPERATOR_DUNDERS: dict[Any, tuple[str | None, str | None]] = {
    **{getattr(operator, n): (f"__{n.rstrip('_')}__", f"__r{n.rstrip('_')}__") for n in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and_", "or_", "xor")},
    **{getattr(operator, n): (f"__{n.rstrip('_')}__", None) for n in ("neg", "pos", "invert", "abs")},
    abs: ("__abs__", None),
    operator.lt: ("__lt__", "__gt__"), operator.le: ("__le__", "__ge__"), operator.gt: ("__gt__", "__lt__"),
    operator.ge: ("__ge__", "__le__"), operator.eq: ("__eq__", "__eq__"), operator.ne: ("__ne__", "__ne__"),
}


_COMPARISONS = frozenset({operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne})


def _reflected_first(fn: Any, args: Args) -> bool:
    """Python tries the right operand's reflected method first when its class is a proper subclass
    of the left's: always for comparisons, for arithmetic when the subclass overrides it."""
    from .class_identity import right_is_subclass
    from .objects import UserObjectVariable

    if len(args) != 2 or not all(isinstance(a, UserObjectVariable) for a in args):
        return False
    left, right = args[0].python_type(), args[1].python_type()
    reflected = OPERATOR_DUNDERS[fn][1]
    if reflected is None or left is right or not right_is_subclass(*args):  # type: ignore[arg-type]
        return False
    return fn in _COMPARISONS or getattr(right, reflected, None) is not getattr(left, reflected, None)


# Builtins that turn an array into a Python value: its data must exist, so the graph ends here.
_NEEDS_DATA = frozenset({float, int, bool, complex, str, repr, format, hash, print})


class BuiltinVariable(VariableTracker):
    """A builtin function or class (and the few C-level library callables with a handler)."""

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.fn

    def describe(self) -> str:
        name = getattr(self.fn, "__name__", repr(self.fn))
        if getattr(builtins, name, None) is self.fn:
            return f"the builtin {name}"
        owner = getattr(self.fn, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):  # a bound method of a builtin type
            return f"the method {type(owner).__name__}.{name}"
        if hasattr(self.fn, "__objclass__"):  # an unbound method descriptor (list.append)
            return f"the method {self.fn.__objclass__.__name__}.{name}"
        module = getattr(self.fn, "__module__", None) or "operator"
        return f"{module}.{name}"

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        if name in ("__name__", "__qualname__", "__module__"):
            return ConstantVariable(getattr(self.fn, name))
        if self.fn is dict and name == "fromkeys":
            return BuiltinVariable(dict.fromkeys)
        if self.fn is object and name in ("__setattr__", "__init__"):
            return BuiltinVariable(getattr(object, name))
        return super().var_getattr(tx, name)

    def call_function(self, tx: "Tx", args: Args, kwargs: Kwargs) -> VariableTracker:
        if self.fn is print:
            unsupported(Category.SIDE_EFFECT, "print() writes to the program's output, which happens in Python "
                        "(between two graphs, with the values the first one computed)",
                        "print less often, or outside the compiled function, to keep one graph")
        if self.fn is builtins.__build_class__:
            name = args[1].as_python_constant() if len(args) > 1 and args[1].is_python_constant() else "?"
            unsupported(Category.UNSUPPORTED_CALL, f"a class statement (class {name}) runs in Python: its body is not traced",
                        "the class is made between two graphs, on every call; a class defined at module level is made once")
        note_builtin_call(tx.output, self.fn, [*args, *kwargs.values()])
        handler = _HANDLERS.get(self.fn)
        if handler is not None:
            result = handler(tx, *args, **kwargs) if _accepts(handler, args, kwargs) else None
            if result is not None:
                return result
        if self.fn in OPERATOR_DUNDERS and not kwargs:
            if _reflected_first(self.fn, args):
                for position, last_chance in ((1, False), (0, True)):
                    # both operands are UserObjectVariables (_reflected_first), whose apply_operator takes last_chance
                    result = args[position].apply_operator(tx, self.fn, args, position, last_chance=last_chance)  # type: ignore[call-arg]
                    if result is not None:
                        return result
            for position, operand in enumerate(args[:2]):
                result = operand.apply_operator(tx, self.fn, args, position)
                if result is not None:
                    return result
        if _involves_array(args, kwargs):
            if self.fn is int and len(args) == 1 and not kwargs and tx.output.loops.depth > 0:
                from .graph_int import graph_int_of

                counted = graph_int_of(tx, args[0])  # count += int(a[i] > 0) in a loop body
                if counted is not None:
                    return counted
            if self.fn in _NEEDS_DATA:
                from .arrays import ArrayVariable

                array = next(a for a in [*args, *kwargs.values()] if isinstance(a, ArrayVariable))
                unsupported(Category.DATA_DEPENDENT_VALUE,
                            f"{self.fn.__name__}() of {array.describe()} needs the value computed at run time",
                            "keep it an array (or a NumPy scalar) to stay in the graph, or accept a graph break here")
            return tx.output.numpy.call_function(tx, self.fn, args, kwargs, name=self.describe())
        if self.fn in _IN_PLACE and args:
            method, binary = _IN_PLACE[self.fn]
            if args[0].identity_is_tracked() and args[0].has_attribute(tx, method):
                result = args[0].call_method(tx, method, args[1:], kwargs)  # lists, sets, objects: in place
                if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
                    return result
            # without an in-place method (immutable values) `t += u` is `t = t + u`
            return BuiltinVariable(binary).call_function(tx, args, kwargs)
        if self.fn is type and len(args) == 3:
            # a new class at each call, whose __module__ is the caller's __name__: made by Python
            unsupported(Category.UNSUPPORTED_CALL, "type(name, bases, namespace) makes a new class at each call")
        if self.fn in _FOLDABLE and all(a.has_constant_contents() for a in [*args, *kwargs.values()]):
            return _fold(self.fn, args, kwargs)
        unsupported(Category.UNSUPPORTED_CALL, f"calling {self.describe()} with {_describe_args(args)}")

    def reconstruct(self, codegen: Any) -> None:
        if self.source is not None:
            return super().reconstruct(codegen)
        codegen.load_const(self.fn)


def has_handler(fn: Any) -> bool:
    """Whether calls of `fn` are handled structurally here (some are classes, not builtins)."""
    return fn in _HANDLERS


def _accepts(handler: Callable[..., Any], args: Args, kwargs: Kwargs) -> bool:
    """Whether the structural handler takes these arguments (its signature is the builtin's,
    positional-only parts included); if not, the generic rules decide, and a call Python would
    reject is rejected there."""
    code = handler.__code__
    positional = code.co_argcount - 1  # without tx
    required = positional - len(handler.__defaults__ or ())
    if len(args) < required or (len(args) > positional and not code.co_flags & inspect.CO_VARARGS):
        return False
    by_keyword = code.co_varnames[code.co_posonlyargcount: code.co_argcount + code.co_kwonlyargcount]
    return bool(code.co_flags & inspect.CO_VARKEYWORDS) or all(k in by_keyword for k in kwargs)


def _involves_array(args: Args, kwargs: Kwargs) -> bool:
    from .arrays import ArrayVariable

    return any(isinstance(a, ArrayVariable) for a in [*args, *kwargs.values()])


def _describe_args(args: Args) -> str:
    return ", ".join(a.describe() for a in args) or "no arguments"


def _fold(fn: Callable[..., Any], args: Args, kwargs: Kwargs) -> VariableTracker:
    from .builder import wrap_constant_result

    raw_args = [a.as_python_constant() for a in args]
    check_fold_size(fn, raw_args, kwargs)
    try:
        # A warning (NumPy scalar overflow, say) must come from the user's line on every call,
        # so a call that warns is left to run in Python like one that raises.
        with warnings_raised():
            value = fn(*raw_args, **{k: v.as_python_constant() for k, v in kwargs.items()})
    except Exception as error:  # the real code raises the same error when it runs
        unsupported(Category.EXCEPTION, f"{getattr(fn, '__name__', fn)} raises {type(error).__name__}: {error}")
    for variable, raw in zip(args, raw_args):
        if value is raw and not variable.is_python_constant():
            return variable  # max(list_a, list_b) returns one of the lists itself, not a copy
    return wrap_constant_result(value)


def _call(tx: "Tx", fn: Callable[..., Any], *args: VariableTracker) -> VariableTracker:
    return BuiltinVariable(fn).call_function(tx, list(args), {})


def _attribute_name(name: VariableTracker, what: str) -> str:
    """The name argument of getattr() and friends: Python raises TypeError for one that is not a str."""
    attribute = _constant(name, what)
    if not isinstance(attribute, str):
        unsupported(Category.EXCEPTION, f"{what} with a name of type {type(attribute).__name__} raises TypeError")
    return attribute


def _constant(value: VariableTracker, what: str) -> Any:
    if not value.is_python_constant():
        unsupported(Category.DATA_DEPENDENT_VALUE, f"{what} needs {value.describe()} while tracing")
    return value.as_python_constant()


# ---- structural handlers: each takes (tx, *args, **kwargs) as the builtin does, and returns
# ---- None to leave the call to the generic rules (arrays to the graph, constants folded) -----

def _len(tx: "Tx", value: VariableTracker, /) -> VariableTracker | None:
    from .arrays import ArrayVariable

    if isinstance(value, ArrayVariable):
        if value.meta.ndim == 0:
            unsupported(Category.EXCEPTION, "len() of a 0-d array raises TypeError")
        return tx.output.size_value(value.meta.shape[0])
    if value.is_python_constant():
        return None
    return value.call_method(tx, "__len__", [], {})


def _bool(tx: "Tx", value: VariableTracker | None = None, /) -> VariableTracker | None:
    if value is None or value.is_python_constant() or _involves_array([value], {}):
        return None
    return ConstantVariable(value.truth_value(tx))


def _list(tx: "Tx", iterable: VariableTracker | None = None, /) -> VariableTracker:
    from .sequences import ListVariable

    return ListVariable(iterable.unpack(tx) if iterable is not None else [])


def _tuple(tx: "Tx", iterable: VariableTracker | None = None, /) -> VariableTracker | None:
    from .sequences import TupleVariable

    if iterable is not None and iterable.python_type() is tuple:
        return iterable  # tuple() of an exact tuple is that very tuple
    if iterable is not None and iterable.is_python_constant():
        return None
    return TupleVariable(iterable.unpack(tx) if iterable is not None else [])


def _dict(tx: "Tx", mapping: VariableTracker | None = None, /, **kwargs: VariableTracker) -> VariableTracker:
    from .dicts import ConstDictVariable, pairs_of

    result = ConstDictVariable(dict(pairs_of(tx, mapping)) if mapping is not None else {})
    result.items.update(kwargs)
    return result


def _dict_fromkeys(tx: "Tx", keys: VariableTracker, value: VariableTracker | None = None, /) -> VariableTracker:
    from .dicts import ConstDictVariable

    filler = value if value is not None else ConstantVariable(None)
    items = keys.unpack(tx)
    return ConstDictVariable.from_pairs(tx, items, [filler] * len(items))


def _set(tx: "Tx", iterable: VariableTracker | None = None, /) -> VariableTracker:
    from .sets import build_set

    return build_set(tx, iterable.unpack(tx) if iterable is not None else [])


def _frozenset(tx: "Tx", iterable: VariableTracker | None = None, /) -> VariableTracker | None:
    if iterable is None or iterable.has_constant_contents():
        return None
    return ConstantVariable(frozenset(_call(tx, set, iterable).as_python_constant()))


def _slice(tx: "Tx", /, *parts: VariableTracker) -> VariableTracker | None:
    from .sequences import SliceVariable

    if not 1 <= len(parts) <= 3:
        return None
    none = ConstantVariable(None)
    start, stop, step = (none, parts[0], none) if len(parts) == 1 else (*parts, none)[:3]
    return SliceVariable(start, stop, step)


def _range(tx: "Tx", /, *args: VariableTracker) -> VariableTracker | None:
    from .iterators import RangeVariable

    if not args or not all(a.is_python_constant() for a in args):
        return None
    from .symbolic import SymbolicIntVariable

    if len(args) <= 3 and any(isinstance(a, SymbolicIntVariable) for a in args) and all(
            isinstance(a, SymbolicIntVariable) or type(a.as_python_constant()) is int for a in args):
        from .loop_range import SymbolicRangeVariable  # a for loop over it may become a loop node

        return SymbolicRangeVariable(list(args))
    args = tuple(concrete(a, "range() of a size (a loop over it is unrolled)") for a in args)
    try:
        return RangeVariable(range(*[a.as_python_constant() for a in args]))
    except (TypeError, ValueError) as error:
        unsupported(Category.EXCEPTION, f"range() raises {type(error).__name__}: {error}")


def _iter(tx: "Tx", value: VariableTracker, /, *sentinel: VariableTracker) -> VariableTracker | None:
    return None if sentinel else value.iterator(tx)


def _next(tx: "Tx", iterator: VariableTracker, /, *default: VariableTracker) -> VariableTracker | None:
    item = iterator.next_item(tx)
    if item is None:
        if not default:
            unsupported(Category.EXCEPTION, f"next() of the exhausted {iterator.describe()} raises StopIteration")
        return default[0]
    return item


def _zip(tx: "Tx", /, *iterables: VariableTracker, strict: VariableTracker | None = None) -> VariableTracker:
    from .iterators import ZipVariable

    strict_flag = bool(strict and _constant(strict, "zip(strict=)"))
    if iterables and all(_loopable(i) for i in iterables):
        return ZipVariable(None, strict=strict_flag, iterables=list(iterables))  # iterated when first asked
    return ZipVariable([i.iterator(tx) for i in iterables], strict=strict_flag)


def _enumerate(tx: "Tx", iterable: VariableTracker, start: VariableTracker | None = None) -> VariableTracker:
    from .iterators import EnumerateVariable

    count = _constant(start, "enumerate(start=)") if start else 0
    if _loopable(iterable):
        return EnumerateVariable(None, count, iterable=iterable)  # iterated when first asked
    return EnumerateVariable(iterable.iterator(tx), count)


def _loopable(iterable: VariableTracker) -> bool:
    """A range or an array (iterating neither has side effects): a loop over zip() or enumerate()
    of such iterables may become a loop node, so their iterators wait for the first item."""
    from .arrays import ArrayVariable
    from .iterators import EnumerateVariable, RangeVariable, ZipVariable
    from .loop_range import SymbolicRangeVariable

    if type(iterable) is ArrayVariable:
        return not iterable.meta.scalar and iterable.meta.ndim > 0
    if isinstance(iterable, (ZipVariable, EnumerateVariable)):
        return not iterable.started()
    return type(iterable) in (RangeVariable, SymbolicRangeVariable)


def _reversed(tx: "Tx", sequence: VariableTracker, /) -> VariableTracker:
    return sequence.reversed_iterator(tx)


def _map(tx: "Tx", fn: VariableTracker, /, *iterables: VariableTracker) -> VariableTracker | None:
    from .iterators import MapVariable

    return MapVariable(fn, [i.iterator(tx) for i in iterables]) if iterables else None


def _filter(tx: "Tx", fn: VariableTracker, iterable: VariableTracker, /) -> VariableTracker:
    from .iterators import FilterVariable

    none = fn.is_python_constant() and fn.as_python_constant() is None
    return FilterVariable(None if none else fn, iterable.iterator(tx))


def _sorted(tx: "Tx", iterable: VariableTracker, /, *, key: VariableTracker | None = None,
            reverse: VariableTracker | None = None) -> VariableTracker:
    from .sequences import ListVariable, sorted_items

    return ListVariable(sorted_items(tx, iterable.unpack(tx), key, reverse))


def no_key(key: VariableTracker | None) -> bool:
    return key is None or (key.is_python_constant() and key.as_python_constant() is None)


def _extremum(fn: Callable[..., Any]) -> Callable[..., VariableTracker | None]:
    """min/max: the first smallest (largest) item, comparing keys known while tracing."""

    def pick(tx: "Tx", /, *args: VariableTracker, key: VariableTracker | None = None,
             default: VariableTracker | None = None) -> VariableTracker | None:
        if len(args) > 1 and no_key(key) and default is None and (same := _scalar_extremum(tx, fn, args)) is not None:
            return same
        if not args or _involves_array(list(args), {}) and len(args) > 1:
            return None  # np.maximum-like pairs of arrays: the generic rules (graph) decide
        items = list(args) if len(args) > 1 else args[0].unpack(tx)
        if no_key(key) and (symbolic := symbolic_extremum(tx, fn, items)) is not None:
            return symbolic  # min(n, 4) of sizes: Min(s0, 4), decided when it is needed
        items = [concrete(i, f"{fn.__name__}() of many ints known only at run time") for i in items]
        if not items:
            if default is None:
                unsupported(Category.EXCEPTION, f"{fn.__name__}() of an empty sequence raises ValueError")
            return default
        keys = items if key is None or no_key(key) else [key.call_function(tx, [i], {}) for i in items]
        if not all(k.is_python_constant() for k in keys):
            unsupported(Category.DATA_DEPENDENT_BRANCH, f"{fn.__name__}() compares values known only at run time",
                        f"use np.{'maximum' if fn is max else 'minimum'} for arrays")
        raw = [k.as_python_constant() for k in keys]
        try:
            with warnings_run_in_python(f"{fn.__name__}()"):  # max(2**31, np.float16(0)) casts and warns
                chosen = fn(range(len(items)), key=raw.__getitem__)
            return items[chosen]
        except TypeError as error:
            unsupported(Category.EXCEPTION, f"{fn.__name__}() raises TypeError: {error}")

    return pick


def _scalar_extremum(tx: "Tx", fn: Callable[..., Any], args: tuple[VariableTracker, ...]) -> VariableTracker | None:
    """max(a, b) of NumPy scalars of one dtype computed in the graph: a node calling the builtin itself
    (Python's order: the first item unless a later one compares greater, so NaN's place decides), whose
    result has that dtype whichever item it is. None for anything else."""
    from .arrays import ArrayVariable

    scalars = [a for a in args if type(a) is ArrayVariable and a.meta.scalar and not a.node.meta.get("device")
               and not a.node.meta.get("array_type")]
    if len(scalars) != len(args) or any(a.meta.dtype != scalars[0].meta.dtype for a in scalars):
        return None
    meta = scalars[0].meta
    node = tx.output.create_node("call_function", fn, tuple(a.node for a in scalars), {}, meta)
    return ArrayVariable(node, meta, frozenset())


def _sum(tx: "Tx", iterable: VariableTracker, /, start: VariableTracker | None = None) -> VariableTracker | None:
    if iterable.has_constant_contents() and (start is None or start.is_python_constant()) \
            and not holds_symbolic(iterable) and not (start is not None and holds_symbolic(start)):
        return None  # folds, with CPython's own (compensated) float summation
    items = iterable.unpack(tx)
    total = start if start is not None else ConstantVariable(0)
    # CPython adds a leading run of plain numbers on a fast path and the rest with `+`:
    # folding that run with sum() itself then adding the rest gives the same value
    run = 0
    while run < len(items) and items[run].is_python_constant() and total.is_python_constant() \
            and not holds_symbolic(items[run]) and not holds_symbolic(total):
        run += 1
    if run:
        total = _fold(builtins.sum, [ConstantVariable(tuple(i.as_python_constant() for i in items[:run])), total], {})
    for item in items[run:]:
        total = _call(tx, operator.add, total, item)
    return total


def _any_all(want: bool) -> Callable[..., VariableTracker]:
    """any()/all(): stop at the first item whose truth decides, as CPython does."""

    def decide(tx: "Tx", iterable: VariableTracker, /) -> VariableTracker:
        iterator = iterable.iterator(tx)
        while (item := iterator.next_item(tx)) is not None:
            if item.truth_value(tx) is want:
                return ConstantVariable(want)
        return ConstantVariable(not want)

    return decide


def _isinstance(tx: "Tx", value: VariableTracker, classes: VariableTracker, /) -> VariableTracker | None:
    from .class_identity import pin_for_isinstance, subclass_test

    decided = subclass_test(tx, value, classes)
    if decided is not None:
        return ConstantVariable(decided)
    if value.is_python_constant() and not holds_symbolic(value):
        return None
    wanted = _constant(classes, "isinstance()")
    pin_for_isinstance(value, wanted)
    try:
        return ConstantVariable(issubclass(value.python_type(), wanted))
    except TypeError as error:
        unsupported(Category.EXCEPTION, f"isinstance() raises TypeError: {error}")


def _type(tx: "Tx", value: VariableTracker, /) -> VariableTracker:
    from .objects import UserObjectVariable, class_variable
    from ..sources import AttrSource, Source

    source: Source | None = AttrSource(value.source, "__class__") if value.source is not None else None
    if source is None and isinstance(value, UserObjectVariable):
        source = value._class_source()  # an object the trace created: the class it was made from
    return class_variable(tx, value.python_type(), source)


def _getattr(tx: "Tx", obj: VariableTracker, name: VariableTracker, /, *default: VariableTracker) -> VariableTracker:
    attribute = _attribute_name(name, "getattr()")
    if default and not obj.has_attribute(tx, attribute):
        return default[0]
    return obj.var_getattr(tx, attribute)


def _hasattr(tx: "Tx", obj: VariableTracker, name: VariableTracker, /) -> VariableTracker:
    return ConstantVariable(obj.has_attribute(tx, _attribute_name(name, "hasattr()")))


def _setattr(tx: "Tx", obj: VariableTracker, name: VariableTracker, value: VariableTracker, /) -> VariableTracker:
    obj.store_attr(tx, _attribute_name(name, "setattr()"), value)
    return ConstantVariable(None)


def _delattr(tx: "Tx", obj: VariableTracker, name: VariableTracker, /) -> VariableTracker:
    obj.delete_attr(tx, _attribute_name(name, "delattr()"))
    return ConstantVariable(None)


def _callable(tx: "Tx", value: VariableTracker, /) -> VariableTracker:
    # CPython asks the type for a __call__ slot; hasattr(cls, "__call__") would find type.__call__
    # (the metaclass's, which makes the class callable) on every class
    return ConstantVariable(any("__call__" in vars(klass) for klass in value.python_type().__mro__))


def _super(tx: "Tx", /, *args: VariableTracker) -> VariableTracker | None:
    from .objects import SuperVariable

    if len(args) == 2:
        return SuperVariable(*args)
    if args:
        return None  # super(C) alone: an unbound super object, not captured
    return SuperVariable(*tx.zero_argument_super())


def _contains(tx: "Tx", container: VariableTracker, item: VariableTracker, /) -> VariableTracker | None:
    if container.is_python_constant() and item.is_python_constant():
        return None
    return ConstantVariable(container.contains(tx, item))


def _getitem(tx: "Tx", container: VariableTracker, key: VariableTracker, /) -> VariableTracker | None:
    """Indexing gives the very item (never a copy); arrays index in the graph. A tuple made by the
    trace is indexed by its items, not folded: a folded item is a new object (`(t,)[0] is t`)."""
    from .sequences import BaseSequenceVariable

    if _involves_array([container], {}) or (container.is_python_constant() and key.is_python_constant()
                                            and not holds_symbolic(container) and not holds_symbolic(key)
                                            and not isinstance(container, BaseSequenceVariable)):
        return None
    return container.getitem(tx, key)


def _sequence_equal(negate: bool) -> Callable[..., VariableTracker | None]:
    """== and != of two tuples or two lists holding non-constants: item by item, identity first,
    as CPython compares them (so [x] == [x] is True for an array x, with no array comparison)."""

    def compare(tx: "Tx", a: VariableTracker, b: VariableTracker, /) -> VariableTracker | None:
        from .sequences import BaseSequenceVariable

        if not (isinstance(a, BaseSequenceVariable) and isinstance(b, BaseSequenceVariable)):
            return None
        if a.has_constant_contents() and b.has_constant_contents() and not (holds_symbolic(a) or holds_symbolic(b)):
            return None
        if type(a) is not type(b) or len(a.items) != len(b.items):
            return ConstantVariable(negate)
        index = 0  # CPython's loop: an item's __eq__ may shorten either list while it runs
        while index < len(a.items) and index < len(b.items):
            x, y = a.items[index], b.items[index]
            if not (x is y or _call(tx, operator.eq, x, y).truth_value(tx)):
                break
            index += 1
        # past the end of either: the lengths (as they are now) decide
        ran_out = index >= len(a.items) or index >= len(b.items)
        equal = ran_out and len(a.items) == len(b.items)
        return ConstantVariable(equal != negate)

    return compare


def _sequence_binary(fn: Callable[..., Any]) -> Callable[..., VariableTracker | None]:
    """Concatenation and repetition of sequences: fresh sequences whose items are shared."""

    def apply(tx: "Tx", a: VariableTracker, b: VariableTracker, /) -> VariableTracker | None:
        from .sequences import BaseSequenceVariable

        if a.is_python_constant() and b.is_python_constant():
            return None
        if fn is operator.add and isinstance(a, BaseSequenceVariable) and type(a) is type(b):
            return type(a)(a.items + b.items)
        if fn is operator.mul and isinstance(a, BaseSequenceVariable) and b.is_python_constant():
            return type(a)(a.items * repeated_length(a.items, b.as_python_constant()))
        if fn is operator.mul and isinstance(b, BaseSequenceVariable) and a.is_python_constant():
            return type(b)(b.items * repeated_length(b.items, a.as_python_constant()))
        return None

    return apply


def _object_init(tx: "Tx", obj: VariableTracker | None = None, /, *args: VariableTracker,
                 **kwargs: VariableTracker) -> VariableTracker:
    """object.__init__(self) and super().__init__() do nothing; with more arguments object_init
    raises unless the type overrides __new__ and not __init__ (CPython's excess-arguments rule)."""
    if obj is None:
        unsupported(Category.EXCEPTION, "object.__init__() needs an argument (TypeError)")
    if args or kwargs:
        mro = obj.python_type().__mro__  # read from the classes' dicts: no metaclass hook runs
        init, new = (next(k.__dict__[name] for k in mro if name in k.__dict__) for name in ("__init__", "__new__"))
        if init is not object.__init__ or new is object.__new__:
            unsupported(Category.EXCEPTION, "object.__init__() takes exactly one argument (TypeError)")
    return ConstantVariable(None)


def _object_setattr(tx: "Tx", obj: VariableTracker, name: VariableTracker, value: VariableTracker, /) -> VariableTracker:
    obj.object_setattr(tx, _attribute_name(name, "object.__setattr__()"), value)
    return ConstantVariable(None)


# ---- functools and itertools --------------------------------------------------------------------

def _reduce(tx: "Tx", fn: VariableTracker, iterable: VariableTracker, /, *initial: VariableTracker) -> VariableTracker:
    iterator = iterable.iterator(tx)
    total = initial[0] if initial else iterator.next_item(tx)
    if total is None:
        unsupported(Category.EXCEPTION, "reduce() of an empty iterable with no initial value raises TypeError")
    while (item := iterator.next_item(tx)) is not None:
        total = fn.call_function(tx, [total, item], {})
    return total


def _chain(tx: "Tx", /, *iterables: VariableTracker) -> VariableTracker:
    from .iterators import ChainVariable

    return ChainVariable([i.iterator(tx) for i in iterables])


def _combinatoric(fn: Callable[..., Any]) -> Callable[..., VariableTracker | None]:
    """product/combinations/permutations: CPython takes its pools whole when it is called, then
    yields tuples of their items (the very items, in CPython's order)."""

    def build(tx: "Tx", /, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
        from .iterators import ListIteratorVariable
        from .sequences import TupleVariable

        pools = [a.unpack(tx) for a in args] if fn is itertools.product else [args[0].unpack(tx)]
        extra = [_constant(a, f"itertools.{fn.__name__}()") for a in args[1:]] if fn is not itertools.product else []
        options = {k: _constant(v, f"itertools.{fn.__name__}()") for k, v in kwargs.items()}
        try:
            picks = list(fn(*[range(len(p)) for p in pools], *extra, **options))
        except (TypeError, ValueError) as error:
            unsupported(Category.EXCEPTION, f"itertools.{fn.__name__} raises {type(error).__name__}: {error}")
        tx.check_unroll_budget(len(picks), f"itertools.{fn.__name__}")
        if fn is itertools.product:
            repeated = pools * options.get("repeat", 1)
            rows: list[VariableTracker] = [TupleVariable([repeated[i][j] for i, j in enumerate(pick)]) for pick in picks]
        else:
            rows = [TupleVariable([pools[0][j] for j in pick]) for pick in picks]
        return ListIteratorVariable(rows)

    return build


def _count(tx: "Tx", /, start: VariableTracker | None = None, step: VariableTracker | None = None) -> VariableTracker:
    from .iterators import CountVariable

    counter = itertools.count(_constant(start, "count()") if start else 0, _constant(step, "count()") if step else 1)
    return CountVariable(lambda: ConstantVariable(next(counter)))


def _repeat(tx: "Tx", value: VariableTracker, /, times: VariableTracker | None = None) -> VariableTracker:
    from .iterators import CountVariable

    return CountVariable(lambda: value, None if times is None else max(0, _constant(times, "repeat()")))


def _islice(tx: "Tx", iterable: VariableTracker, /, *bounds: VariableTracker) -> VariableTracker | None:
    from .iterators import SliceIteratorVariable

    try:
        window = slice(*[_constant(b, "islice()") for b in bounds])
        itertools.islice((), window.start, window.stop, window.step)  # CPython's checks of the bounds
    except (TypeError, ValueError) as error:
        unsupported(Category.EXCEPTION, f"islice() raises {type(error).__name__}: {error}")
    return SliceIteratorVariable(iterable.iterator(tx), window.start or 0, window.stop, window.step or 1)


_HANDLERS: dict[Any, Callable[..., VariableTracker | None]] = {
    dict.fromkeys: _dict_fromkeys, len: _len, bool: _bool, list: _list, tuple: _tuple, dict: _dict, set: _set, frozenset: _frozenset,
    slice: _slice, range: _range, iter: _iter, next: _next, zip: _zip, enumerate: _enumerate,
    reversed: _reversed, map: _map, filter: _filter, sorted: _sorted, min: _extremum(min), max: _extremum(max),
    sum: _sum, any: _any_all(True), all: _any_all(False), isinstance: _isinstance, type: _type,
    super: _super, getattr: _getattr, hasattr: _hasattr, setattr: _setattr, delattr: _delattr, callable: _callable,
    operator.is_: identity_test(False), operator.is_not: identity_test(True), operator.contains: _contains,
    operator.eq: _sequence_equal(False), operator.ne: _sequence_equal(True),
    operator.add: _sequence_binary(operator.add), operator.mul: _sequence_binary(operator.mul),
    operator.getitem: _getitem,
    object.__init__: _object_init, object.__setattr__: _object_setattr,
    functools.reduce: _reduce, itertools.chain: _chain, itertools.product: _combinatoric(itertools.product),
    itertools.combinations: _combinatoric(itertools.combinations),
    itertools.combinations_with_replacement: _combinatoric(itertools.combinations_with_replacement),
    itertools.permutations: _combinatoric(itertools.permutations), itertools.count: _count,
    itertools.repeat: _repeat, itertools.islice: _islice,
}
