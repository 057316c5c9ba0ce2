"""The op registry: one row per NumPy operation that may enter a graph, found by callable or name.

A row says what kind of op it is, how to infer its result meta, and what it aliases or writes.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from .errors import UnsupportedArguments


class OpKind(enum.Enum):
    ELEMENTWISE = "elementwise"  # ufuncs and operators: broadcasting, one output element per input element
    REDUCTION = "reduction"      # sum, max, argmin, ...: removes (or keeps as 1) the reduced axes
    SCAN = "scan"                # cumsum, cumprod: same shape, running along an axis
    VIEW = "view"                # result shares memory with an input (transpose, slicing, reshape)
    COPY_SHAPE = "copy_shape"    # new array rearranging inputs: concatenate, stack, flatten, tile
    CREATION = "creation"        # zeros, arange, full_like, asarray of constants, ...
    INDEXING = "indexing"        # getitem/setitem, take: may be a view or a gather
    LINALG = "linalg"            # matmul, dot, einsum, norm, ...
    METADATA = "metadata"        # a Python value computed from the meta alone (a.shape, a.ndim, len)
    OTHER = "other"


@dataclass(frozen=True)
class Method:
    """An ndarray method target: `a.<name>(...)`; infer receives the array as argument 0."""

    name: str


@dataclass(frozen=True)
class Attribute:
    """An ndarray attribute target: `a.<name>`; infer receives only the array."""

    name: str


Target = Union[Callable[..., Any], Method, Attribute]
# An argument of the call: a positional index, a keyword name, or (argument, i) for the i-th
# array inside a tuple argument such as out=(o1, o2).
ArgRef = Union[int, str, tuple[Union[int, str], int]]


@dataclass(frozen=True)
class Effects:
    """Aliasing and side effects of one call.

    `view_of`: the argument whose memory the result shares (for a tuple result: one entry per
    element). `mutates`: the arguments the call writes. `nondeterministic`: the result holds
    uninitialised memory (np.empty, a ufunc with where= and no out=), so it must never be CSE'd.
    """

    view_of: ArgRef | tuple[ArgRef | None, ...] | None = None
    mutates: tuple[ArgRef, ...] = ()
    nondeterministic: bool = False


@dataclass(frozen=True)
class OpInfo:
    """One registry row.

    `infer(*args, **kwargs)` takes the call's arguments with TensorMeta in place of arrays and
    returns the result's meta (TensorMeta, a tuple/list of them, a Python value, or None). It
    raises NumPy's own exception when NumPy would raise, UnsupportedArguments when the registry
    cannot model the arguments, DataDependentShape, or SymbolicDecisionNeeded.
    `view_of`, `mutates` and `nondeterministic` are constants or functions of the call's
    arguments (same signature as `infer`); `effects()` evaluates them.
    `layout_view`: the result is a view only when the input's strides allow it (reshape,
    ravel), else a copy; TensorMeta has no strides, so `view_of` names the possible alias.
    """

    name: str
    kind: OpKind
    targets: tuple[Target, ...]
    infer: Callable[..., Any]
    view_of: ArgRef | Callable[..., Any] | None = None
    mutates: tuple[ArgRef, ...] | Callable[..., tuple[ArgRef, ...]] = ()
    nondeterministic: bool | Callable[..., bool] = False
    layout_view: bool = False
    ufunc: np.ufunc | None = field(default=None, compare=False)

    def effects(self, *args: Any, **kwargs: Any) -> Effects:
        view_of = self.view_of(*args, **kwargs) if callable(self.view_of) else self.view_of
        mutates = self.mutates(*args, **kwargs) if callable(self.mutates) else self.mutates
        nondet = (self.nondeterministic(*args, **kwargs) if callable(self.nondeterministic)
                  else self.nondeterministic)
        return Effects(view_of, tuple(mutates), bool(nondet))

    def __repr__(self) -> str:
        return f"OpInfo({self.name!r}, {self.kind.name})"


class Registry:
    """Rows indexed by callable identity, ndarray method name, and ndarray attribute name."""

    def __init__(self) -> None:
        self._rows: list[OpInfo] = []
        self._functions: dict[int, tuple[Any, OpInfo]] = {}
        self._methods: dict[str, OpInfo] = {}
        self._attributes: dict[str, OpInfo] = {}
        self._ufunc_methods: dict[tuple[np.ufunc, str], OpInfo] = {}
        self._ufunc_method_factory: Callable[[np.ufunc, str], OpInfo | None] | None = None

    def register(self, info: OpInfo) -> OpInfo:
        for target in info.targets:
            if isinstance(target, Method):
                table: dict[Any, Any] = self._methods
                key: Any = target.name
                entry: Any = info
            elif isinstance(target, Attribute):
                table, key, entry = self._attributes, target.name, info
            else:
                # by identity: the dict keeps the callable alive so its id stays unique
                table, key, entry = self._functions, id(target), (target, info)
            if key in table:
                raise ValueError(f"{target!r} is registered twice ({info.name})")
            table[key] = entry
        self._rows.append(info)
        return info

    def set_ufunc_method_factory(self, factory: Callable[[np.ufunc, str], OpInfo | None]) -> None:
        self._ufunc_method_factory = factory

    def lookup_function(self, fn: Any) -> OpInfo | None:
        entry = self._functions.get(id(fn))
        if entry is not None and entry[0] is fn:
            return entry[1]
        owner = getattr(fn, "__self__", None)
        name = getattr(fn, "__name__", None)
        if isinstance(owner, np.ufunc) and isinstance(name, str):
            # np.add.reduce makes a new bound method at every access: key by (ufunc, name)
            return self._lookup_ufunc_method(owner, name)
        if getattr(fn, "__objclass__", None) is np.ndarray and isinstance(name, str):
            return self._methods.get(name)  # np.ndarray.sum(a, ...) is a.sum(...)
        return None

    def _lookup_ufunc_method(self, ufunc: np.ufunc, name: str) -> OpInfo | None:
        key = (ufunc, name)
        if key not in self._ufunc_methods:
            factory = self._ufunc_method_factory
            info = factory(ufunc, name) if factory is not None else None
            if info is None:
                return None
            self._ufunc_methods[key] = info
        return self._ufunc_methods[key]

    def lookup_method(self, name: str) -> OpInfo | None:
        return self._methods.get(name)

    def lookup_attribute(self, name: str) -> OpInfo | None:
        return self._attributes.get(name)

    def rows(self) -> Iterator[OpInfo]:
        return iter(self._rows)


REGISTRY = Registry()


def register(info: OpInfo) -> OpInfo:
    return REGISTRY.register(info)


def lookup_function(fn: Any) -> OpInfo | None:
    """The row for a callable (np.add, np.sum, operator.add, np.add.reduce, ...), or None."""
    return REGISTRY.lookup_function(fn)


def lookup_method(name: str) -> OpInfo | None:
    """The row for the ndarray method `name` (infer takes the array as argument 0), or None."""
    return REGISTRY.lookup_method(name)


def lookup_attribute(name: str) -> OpInfo | None:
    """The row for the ndarray attribute `name` (T, shape, dtype, ...), or None."""
    return REGISTRY.lookup_attribute(name)


def all_ops() -> list[OpInfo]:
    return list(REGISTRY.rows())


def infer_meta(fn_or_name: Any, *args: Any, **kwargs: Any) -> Any:
    """Result meta of one call: a callable, or a method/attribute name (array first in args).

    >>> infer_meta(np.add, TensorMeta((3,), np.float32), 1.0)
    TensorMeta(shape=(3,), dtype=dtype('float32'), scalar=False)
    """
    if isinstance(fn_or_name, str):
        info = lookup_method(fn_or_name) or lookup_attribute(fn_or_name)
    else:
        info = lookup_function(fn_or_name)
    if info is None:
        raise UnsupportedArguments(f"{fn_or_name!r} is not in the op registry")
    return info.infer(*args, **kwargs)
