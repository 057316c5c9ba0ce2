"""Side effects of graph nodes: which calls mutate state, which are nondeterministic.

Dead code elimination, CSE and constant folding all ask this module; other layers widen it with mark_impure().
"""
from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .numpy_random import generator_types, is_numpy_random_module, numpy_random

if TYPE_CHECKING:
    from .node import Node

# operator.i* may rebind instead of mutate for immutable values, but for ndarrays they write in place.
INPLACE_OPERATORS: frozenset[Callable[..., Any]] = frozenset({
    operator.setitem, operator.delitem,
    operator.iadd, operator.isub, operator.imul, operator.imatmul, operator.itruediv,
    operator.ifloordiv, operator.imod, operator.ipow, operator.ilshift, operator.irshift,
    operator.iand, operator.ior, operator.ixor, operator.iconcat,
})

MUTATING_METHODS: frozenset[str] = frozenset({
    "fill", "sort", "put", "itemset", "resize", "setfield", "partition", "setflags", "byteswap",
    "__setitem__", "__delitem__", "__iadd__", "__isub__", "__imul__", "__imatmul__",
    "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__", "__ilshift__", "__irshift__",
    "__iand__", "__ior__", "__ixor__",
    # list/dict/set methods, for graphs that carry Python containers
    "append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard",
    "setdefault", "popitem",
})


@functools.cache
def _random_method_names() -> frozenset[str]:
    """Methods of np.random.Generator / RandomState: each call advances the generator's state. None
    of these names is an ndarray method, so a call_method with one of them is treated as a random draw."""
    return frozenset(
        name
        for cls in generator_types()
        for name in dir(cls)
        if not name.startswith("_") and callable(getattr(cls, name)) and not hasattr(np.ndarray, name)
    )


def _is_random_method(name: str) -> bool:
    if numpy_random() is None:
        # numpy.random is half-imported: its methods are not known yet, so every name that is not
        # an ndarray method may be a draw (the set is read, and cached, once the import is done)
        return not hasattr(np.ndarray, name)
    return name in _random_method_names()


# NumPy functions that write into one of their arguments.
_MUTATING_NUMPY_FUNCTIONS: frozenset[Callable[..., Any]] = frozenset({
    np.copyto, np.put, np.putmask, np.place, np.fill_diagonal, np.put_along_axis,
})

# Builtins whose call is itself the effect: output, attribute writes, advancing an iterator.
_EFFECTFUL_BUILTINS: frozenset[Callable[..., Any]] = frozenset({
    builtins.print, builtins.input, builtins.setattr, builtins.delattr, builtins.exec, builtins.eval,
    builtins.open, builtins.next, builtins.breakpoint,
})

_impure_functions: set[Callable[..., Any]] = set()
_impure_methods: set[str] = set()


def mark_impure(fn_or_method: Callable[..., Any] | str) -> Callable[..., Any] | str:
    """Declare a callable (or, given a string, a method name) as side-effecting.

    Nodes calling it survive dead code elimination and are never merged or folded. Returns its
    argument, so it also works as a decorator: ``@mark_impure def log_value(x): ...``.
    """
    if isinstance(fn_or_method, str):
        _impure_methods.add(fn_or_method)
    else:
        _impure_functions.add(fn_or_method)
    return fn_or_method


def _registered(fn: Any) -> bool:
    try:
        return fn in _impure_functions
    except TypeError:  # an unhashable callable cannot have been registered
        return False


def is_random(target: Any) -> bool:
    """True for anything drawing from a NumPy random generator (its state advances on each call)."""
    module = getattr(target, "__module__", None)
    if isinstance(module, str) and is_numpy_random_module(module):
        return True
    # a bound method of a generator (or of a subclass of one): found by its classes' modules, which
    # needs no numpy.random attribute (none can be read while it is half-imported)
    owner = getattr(target, "__self__", None)
    return owner is not None and any(
        is_numpy_random_module(getattr(cls, "__module__", "") or "") for cls in type(owner).__mro__)


def _ufunc_writes_out(target: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    if not isinstance(target, np.ufunc):
        return False
    return len(args) > target.nin  # outputs passed positionally: np.add(a, b, c)


def is_impure_call(target: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether calling `target(*args, **kwargs)` (a call_function node) may have side effects."""
    if kwargs.get("out") is not None:
        return True
    if _registered(target) or is_random(target):
        return True
    try:
        if target in INPLACE_OPERATORS or target in _MUTATING_NUMPY_FUNCTIONS or target in _EFFECTFUL_BUILTINS:
            return True
    except TypeError:
        pass
    if getattr(target, "__objclass__", None) is not None and getattr(target, "__name__", None) in MUTATING_METHODS:
        return True  # an unbound method such as np.ndarray.sort called as a function
    owner = getattr(target, "__self__", None)
    if isinstance(owner, np.ufunc) and getattr(target, "__name__", "") == "at":
        return True  # np.add.at(a, idx, v) scatters into `a`
    return _ufunc_writes_out(target, args, kwargs)


def is_impure_method(name: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether a call_method node calling `name` may mutate its receiver or the world."""
    return (
        name in MUTATING_METHODS or _is_random_method(name) or name in _impure_methods
        or kwargs.get("out") is not None
    )


def is_impure_node(node: Node) -> bool:
    """The default impurity rule used by Node.is_impure() and eliminate_dead_code()."""
    if node.meta.get("impure"):
        return True
    op = node.op
    if op in ("placeholder", "output"):
        return True
    if op == "call_function":
        return is_impure_call(node.target, node.args, node.kwargs)
    if op == "call_method":
        return is_impure_method(node.target, node.kwargs)
    if op == "call_module":
        return _is_impure_module_call(node)
    return False


def _is_impure_module_call(node: Node) -> bool:
    owner = node.graph.owning_module
    if owner is None:
        return True  # the callee is unknown, so assume the worst
    try:
        callee = owner.get_attribute(node.target)
    except AttributeError:
        return True
    arms = getattr(callee, "arms", None)  # a Cond: impure when either arm is
    if arms is not None:
        return any(n.is_impure() for arm in arms for n in arm.graph.nodes if n.op not in ("placeholder", "output"))
    subgraph = getattr(callee, "graph", None)
    if subgraph is not None and hasattr(subgraph, "nodes"):
        return any(n.is_impure() for n in subgraph.nodes if n.op not in ("placeholder", "output"))
    return _registered(callee) or is_random(callee)
