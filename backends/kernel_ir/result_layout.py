"""NumPy's memory layout of a graph's results, for backends whose kernels write C-ordered temporaries:
a result NumPy lays out otherwise (F order, a transpose's order) is copied into NumPy's layout.

NumPy gives an elementwise result the memory order of its operands (order='K': `x.T + 1`, `np.exp(f)`
of a Fortran-ordered `f`), a copy or `*_like` that of its prototype. Strides, contiguity flags and so
`tobytes()`, `ravel()` views and C extensions see that. The layout of each result is found by running
NumPy's arithmetic once per layout of the inputs (their strides; their orders where sizes vary): views
taken of phantom arrays and allocations made on shrunk stand-ins (layout_rules), or where an op has no
rule there, the graph's pure nodes run as NumPy on this call's inputs. Nodes that write, draw random
numbers or raise there leave their results' layouts unknown, and those results are left as they are,
as are results that are views of one another (a copy would part them).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...fx_ir import GraphModule, Node, TensorMeta
from ...fx_ir.node import Opcode
from .layout_rules import UNKNOWN as _UNKNOWN
from .layout_rules import GiveUp, LayoutRun, PhantomRun, is_view_node, replayed, size_bindings

_KEYS_KEPT = 16  # layouts remembered per graph (each a different shape or strides of its inputs)


class _Witness(LayoutRun):
    """Runs the pure nodes as NumPy: each value is NumPy's result (its layout is what counts)."""

    def value_of(self, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return getattr(self, node.op.value)(node.target, args, kwargs)
        except Exception:  # a value a skipped write would have changed may be invalid here
            return _UNKNOWN


@dataclass(frozen=True)
class Order:
    """The layout of a packed array whatever its sizes: its axes from the slowest to the fastest (an
    axis of length 1 before the longer axis it shares a stride with)."""

    axes: tuple[int, ...]

    def strides(self, shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
        strides, step = [0] * len(shape), itemsize
        for axis in reversed(self.axes):
            strides[axis] = step
            step *= shape[axis]
        return tuple(strides)


def packed_order(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> Order | None:
    """The Order of an array of this shape and strides laid out as one allocation packs it, else None."""
    if 0 in shape or itemsize == 0:
        return None
    # slowest first: larger strides, and of equal ones (axes of 1 beside a longer axis) the longer axis
    axes = tuple(sorted(range(len(shape)), key=lambda k: (-strides[k], shape[k] == 1, k)))
    order = Order(axes)
    return order if order.strides(shape, itemsize) == tuple(strides) else None


def _layouts(witness: Any, by_order: bool) -> Any:
    """The witness results reduced to what is kept: per array its strides, or with `by_order` its
    Order (_UNKNOWN where it is not packed: the key must then be exact); None for anything else."""
    if isinstance(witness, (tuple, list)):
        return tuple(_layouts(v, by_order) for v in witness)
    if not isinstance(witness, np.ndarray):
        return None
    if not by_order:
        return witness.strides
    order = packed_order(witness.shape, witness.strides, witness.itemsize)
    return _UNKNOWN if order is None else order


def layout_class(a: Any) -> Any:
    """The key part of one input of a graph whose sizes vary: its order where it is C- or F-contiguous
    (NumPy's layouts of the results then follow whatever the sizes, size-1 axes being specialized),
    else its shape and strides."""
    flags = a.flags
    return "C" if flags.c_contiguous else "F" if flags.f_contiguous else (a.shape, a.strides)


class ResultLayouts:
    """`layouts(args, result)`: the result of the graph for these inputs, each array in the layout
    NumPy's result has (a copy where the backend's differs and nobody else can see it). What to do is
    learnt once per layout of the inputs (the backend's own layouts follow from it): most calls cost
    a dictionary lookup."""

    def __init__(self, gm: GraphModule) -> None:
        self.gm = gm
        metas = [n.meta.get("val") for n in gm.graph.nodes if n.op == Opcode.PLACEHOLDER]
        self.arrays = [k for k, m in enumerate(metas) if isinstance(m, TensorMeta)]
        # sizes that vary per call: keyed by each input's order, not its strides (one key per size)
        self.sized = not all(m.is_static for m in metas if isinstance(m, TensorMeta))
        self.known: dict[tuple[Any, ...], Any] = {}  # inputs' layouts -> None (nothing to do) or NumPy's
        self.views = _view_chains(gm)  # results that are views of another result: rebuilt from its copy

    def key_of(self, names: list[str]) -> str:
        """The expression of the key of `known` over the graph's inputs named `names` (generated code
        tests `known.get(key, 0) is None` itself, then calls `relay`); needs `layout_class` as `_lc`."""
        parts = [f"_lc({names[k]})" if self.sized else f"{names[k]}.strides" for k in self.arrays]
        return "(" + "".join(f"{p}, " for p in parts) + ")"

    def __call__(self, args: tuple[Any, ...], result: Any) -> Any:
        try:
            key = tuple([layout_class(args[k]) if self.sized else args[k].strides for k in self.arrays])
        except AttributeError:  # not an array where the graph had one: nothing is known of it
            return result
        if self.known.get(key, 0) is None:
            return result
        return self.relay(key, args, result)

    def relay(self, key: tuple[Any, ...], args: tuple[Any, ...], result: Any) -> Any:
        """The result relaid where `known` says NumPy's layouts differ, learning that first if new."""
        expected = self.known.get(key, _UNKNOWN)
        if expected is _UNKNOWN:
            expected = self.learn(key, args, result)
        if expected is None:
            return result
        fresh = _fresh_results(result, args, self.views)
        relaid = _relaid(result, expected, fresh)
        if self.views and type(result) in (tuple, list) and len(result) == len(relaid):
            # a view of a result relaid into NumPy's layout is taken again of the copy, as NumPy
            # took it: NumPy's strides, and the results share memory as NumPy's do
            items = list(relaid)
            for position, (root, chain) in self.views.items():
                if id(result[root]) in fresh and relaid[root] is not result[root]:
                    items[position] = replayed(chain, relaid[root])
            relaid = tuple(items) if type(result) is tuple else items
        return relaid

    def learn(self, key: tuple[Any, ...], args: tuple[Any, ...], result: Any) -> Any:
        expected = None
        # host arrays only (a subclass, or a device array, is left as the backend made it)
        if all(type(args[k]) is np.ndarray for k in self.arrays) \
                and not any(isinstance(a, np.ndarray) and type(a) is not np.ndarray for a in args):
            by_order = self.sized and not any(isinstance(part, tuple) for part in key)
            expected = self.witness(args, by_order)
            if isinstance(expected, tuple) and not _is_layout(expected) and self.views:
                # views of a result follow its layout (taken again of its copy): nothing of their own
                expected = tuple(None if k in self.views else e for k, e in enumerate(expected))
            if by_order and _holds(expected, _UNKNOWN):
                # a result neither C- nor F-ordered from inputs that are: not one answer for every size
                expected = None
            if expected is not None and not _differs(result, expected):
                expected = None
        if len(self.known) >= _KEYS_KEPT:
            self.known.clear()
        self.known[key] = expected
        return expected

    def witness(self, args: tuple[Any, ...], by_order: bool) -> Any:
        # the program's warnings came from the run itself: these are not shown. Not by changing the
        # filters (catch_warnings): that clears every module's registry, and the program's next
        # warning would show again where Python shows it once
        shown = warnings.showwarning
        warnings.showwarning = _quiet
        try:
            with np.errstate(all="ignore"):
                try:  # by NumPy's rules over phantoms and small stand-ins: no element computed
                    return _layouts(PhantomRun(self.gm, size_bindings(self.gm, args)).run(*args), by_order)
                except (GiveUp, Exception):  # no rule there (or a stand-in raised): the pure nodes run as NumPy
                    return _layouts(_Witness(self.gm).run(*args), by_order)
        except Exception:
            return None
        finally:
            warnings.showwarning = shown


def _quiet(*args: Any, **kwargs: Any) -> None:
    return None


def _holds(expected: Any, value: Any) -> bool:
    if isinstance(expected, tuple) and not all(isinstance(v, int) for v in expected):
        return any(_holds(v, value) for v in expected)
    return expected is value


def _view_chains(gm: GraphModule) -> dict[int, tuple[int, tuple[Node, ...]]]:
    """Results the graph makes as views of another result: their position -> (that result's
    position, the view nodes from it to them)."""
    output = next((n for n in gm.graph.nodes if n.op == Opcode.OUTPUT), None)
    results = output.args[0] if output is not None and output.args else None
    if not isinstance(results, (tuple, list)):
        return {}
    positions: dict[Node, int] = {}
    for position, node in enumerate(results):
        if isinstance(node, Node):
            positions.setdefault(node, position)
    chains = {}
    for position, node in enumerate(results):
        chain: list[Node] = []
        while isinstance(node, Node) and is_view_node(node):
            chain.append(node)
            node = node.args[0]
        if chain and isinstance(node, Node) and node in positions:
            chains[position] = (positions[node], tuple(reversed(chain)))
    return chains


def _fresh_results(result: Any, args: tuple[Any, ...], views: dict[int, tuple[int, tuple[Node, ...]]]) -> set[int]:
    """Ids of the result arrays only the caller will see: made by this call (a temporary or a view of
    one), sharing memory with no input and no other result but its views in `views` (taken again
    of its copy; other views among the results of one temporary keep their layout, so that they stay
    views of each other)."""
    if views and isinstance(result, (tuple, list)):
        of_root: dict[int, set[int]] = {}
        for position, (root, _) in views.items():
            if position < len(result) and root < len(result):
                of_root.setdefault(id(result[root]), set()).add(id(result[position]))
        dependent = {id(result[position]) for position in views if position < len(result)}
    else:
        of_root, dependent = {}, set()
    arrays: list[np.ndarray] = []

    def collect(value: Any) -> None:
        if isinstance(value, (tuple, list)):
            for v in value:
                collect(v)
        elif type(value) is np.ndarray:
            arrays.append(value)
    collect(result)
    inputs = [a for a in args if isinstance(a, np.ndarray)]
    return {id(a) for a in arrays
            if id(a) not in dependent
            and not any(b is not a and id(b) not in of_root.get(id(a), ()) and np.may_share_memory(a, b)
                        for b in arrays)
            and not any(np.may_share_memory(a, b) for b in inputs)}


def _is_layout(expected: Any) -> bool:
    """A layout of one array (its strides, or its Order), not a tuple of the layouts of several."""
    return isinstance(expected, Order) or (isinstance(expected, tuple) and all(isinstance(v, int) for v in expected))


def _strides_of(array: np.ndarray, expected: Any) -> tuple[int, ...]:
    return expected.strides(array.shape, array.itemsize) if isinstance(expected, Order) else tuple(expected)


def _matches(array: np.ndarray, expected: Any) -> bool:
    if isinstance(expected, Order) and len(expected.axes) != array.ndim:
        return True  # not this array's layout (nothing to do)
    return bool(array.strides == _strides_of(array, expected))


def _differs(result: Any, expected: Any) -> bool:
    if isinstance(result, (tuple, list)):
        return isinstance(expected, tuple) and not _is_layout(expected) and len(result) == len(expected) \
            and any(_differs(r, e) for r, e in zip(result, expected))
    return type(result) is np.ndarray and _is_layout(expected) and not _matches(result, expected)


def _relaid(result: Any, expected: Any, fresh: set[int]) -> Any:
    if type(result) in (tuple, list) and isinstance(expected, tuple) and not _is_layout(expected) \
            and len(result) == len(expected):
        items = [_relaid(r, e, fresh) for r, e in zip(result, expected)]
        return tuple(items) if type(result) is tuple else items
    if type(result) is not np.ndarray or not _is_layout(expected) or _matches(result, expected) \
            or id(result) not in fresh:
        return result
    strides = _strides_of(result, expected)
    if len(strides) != result.ndim:
        return result
    if packed_order(result.shape, strides, result.itemsize) is not None:
        # one allocation laid out as NumPy's (its own memory: base None, as NumPy's result)
        like = np.ndarray(result.shape, result.dtype, strides=strides)
    else:
        # a prototype with NumPy's strides over the result's own memory (never read): empty_like
        # lays out its copy alike
        like = np.empty_like(np.lib.stride_tricks.as_strided(result, strides=strides))
        if like.strides != strides:
            return result  # a layout no allocation reproduces (a view's, negative strides, ...)
    like[...] = result
    return like
