"""What the numpy backend knows about each node: its meta (filled from the op registry when the
frontend left none) and the part it can play inside a blocked kernel.

A node is `opaque` unless the op registry and its arguments say exactly how it maps array axes.
"""
from __future__ import annotations

import builtins
import enum
import functools
import inspect
import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ...fx_ir.lazy_sympy import is_sympy, sympy

from ...fx_ir import Graph, Node, TensorMeta, map_arg
from ...fx_ir.ops import OpInfo, OpKind, lookup_attribute, lookup_function, lookup_method
from ...fx_ir.small_size import SizeExpr
from .sizes import Sizes


class Role(enum.Enum):
    UFUNC = "ufunc"          # one ufunc loop per element: can write into a buffer given as out=
    POWER = "power"          # `a ** b`: stays an operator, since NumPy gives `**` scalar fast paths
    CALL = "call"            # another elementwise function (where, clip, round, astype): allocates
    REDUCTION = "reduction"  # reduces axes other than the block axis; allocates its (small) result
    OPAQUE = "opaque"        # runs as straight code, outside any kernel


FUSABLE_ROLES = frozenset({Role.UFUNC, Role.POWER, Role.CALL, Role.REDUCTION})

# Elementwise functions that return a fresh array and take no out= we would need.
_ELEMENTWISE_CALLS: frozenset[Any] = frozenset({np.where, np.clip, np.round, np.around})
_ELEMENTWISE_METHODS = frozenset({"clip", "round", "astype"})
# Reductions whose result does not depend on the order elements are combined in.
_ORDER_FREE = frozenset({"max", "min", "amax", "amin", "argmax", "argmin", "any", "all"})
# Integer sums and products wrap around identically in any order; float ones do not.
_EXACT_IF_INTEGER = frozenset({"sum", "prod"})
_REDUCTIONS: dict[Any, str] = {
    np.sum: "sum", np.prod: "prod", np.mean: "mean", np.std: "std", np.var: "var",
    np.max: "max", np.min: "min", np.amax: "amax", np.amin: "amin", np.argmax: "argmax",
    np.argmin: "argmin", np.any: "any", np.all: "all",
}
_REDUCTION_METHODS = frozenset({"sum", "prod", "mean", "std", "var", "max", "min", "argmax", "argmin",
                                "any", "all"})
_SIGNATURES: dict[str, inspect.Signature] = {
    name: inspect.signature(fn) for fn, name in _REDUCTIONS.items()
}
_NORM_SIGNATURE = inspect.signature(np.linalg.norm)
_UFUNC_KWARGS = frozenset({"dtype", "casting"})


@dataclass
class NodeInfo:
    """One node as the planner sees it.

    `links` pairs each output axis with the operand axes it reads element for element:
    (output axis, operand node, operand axis). Broadcast (size-1) operand axes are not links.
    """

    node: Node
    meta: TensorMeta | None
    role: Role = Role.OPAQUE
    ufunc: np.ufunc | None = None
    reduction: str | None = None
    reduced_axes: tuple[int, ...] = ()     # axes of the reduction's input that it removes
    order_sensitive: bool = False          # a float sum: the blocked axis must precede reduced axes
    links: list[tuple[int, Node, int]] = field(default_factory=list)
    ufunc_args: tuple[Any, ...] | None = None  # what the ufunc is called with, when not node.args (`x ** 2`)
    why: str = ""                          # for opaque nodes: why they stay out of kernels

    @property
    def fusable(self) -> bool:
        return self.role in FUSABLE_ROLES

    @property
    def array(self) -> TensorMeta | None:
        """The meta when the value is an ndarray (sizes may be symbolic: see sizes.py)."""
        meta = self.meta
        if isinstance(meta, TensorMeta) and not meta.scalar:
            return meta
        return None


def registry_row(node: Node) -> OpInfo | None:
    """The op-registry row of a call node: by callable, method name, or getattr(a, "T")-style attribute."""
    try:
        if node.op == "call_method":
            return lookup_method(node.target)
        if node.op != "call_function":
            return None
        if node.target is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str):
            return lookup_attribute(node.args[1])
        return lookup_function(node.target)
    except Exception:  # the registry is still growing: an unknown call is simply opaque
        return None


def meta_of_arg(value: Any) -> Any:
    """A node argument with every input node replaced by its recorded meta (what registry rules take)."""
    return map_arg(value, lambda n: n.meta.get("val"))


def fill_meta(graph: Graph, example_inputs: list[Any]) -> None:
    """Give every node a meta["val"]: placeholders from the example inputs, calls from registry rules.

    Nodes whose rule is missing or fails keep no meta, so they and their users stay opaque.
    """
    inputs = iter(example_inputs)
    for node in graph.nodes:
        if node.op == "placeholder":
            value = next(inputs, None)
            if "val" not in node.meta and isinstance(value, (np.ndarray, np.generic)):
                node.meta["val"] = TensorMeta.from_value(value)
            continue
        if "val" in node.meta or node.op not in ("call_function", "call_method"):
            continue
        if any("val" not in n.meta for n in node.all_input_nodes):
            continue
        row = registry_row(node)
        if row is None:
            continue
        args, kwargs = meta_of_arg(node.args), meta_of_arg(node.kwargs)
        if node.op == "call_function" and node.target is builtins.getattr:
            args = args[:1]
        try:
            node.meta["val"] = row.infer(*args, **kwargs)
        except Exception:
            continue


def classify(node: Node, sizes: Sizes) -> NodeInfo:
    meta = node.meta.get("val")
    info = NodeInfo(node, meta if isinstance(meta, TensorMeta) else None)
    if node.op not in ("call_function", "call_method"):
        info.why = node.op
        return info
    if info.array is None or info.array.ndim == 0:
        info.why = "not an array of one or more dimensions"
        return info
    if node.is_impure():
        info.why = "has side effects"
        return info
    if info.array.dtype.kind not in "biufc":
        info.why = f"dtype {info.array.dtype}"
        return info
    operands = [n for n in node.all_input_nodes]
    for operand in [node, *operands]:
        meta = operand.meta.get("val")
        if isinstance(meta, TensorMeta) and not sizes.shape_known(meta):
            info.why = f"{operand.name} has a size the generated code cannot compute"
            return info
        if meta is None:
            info.why = f"no meta for {operand.name}"
            return info
    row = registry_row(node)
    if row is None:
        info.why = "not in the op registry"
        return info
    if any(is_sympy(a) for a in (*_flat(node.args), *_flat(node.kwargs))):
        info.why = "a symbolic size as an argument"
    elif row.kind == OpKind.ELEMENTWISE:
        _classify_elementwise(info, row, sizes)
    elif row.kind == OpKind.REDUCTION:
        _classify_reduction(info, sizes)
    elif node.op == "call_function" and node.target is np.linalg.norm:
        _classify_norm(info, sizes)
    else:
        info.why = f"{row.kind.value} op"
    return info


def _elementwise_links(info: NodeInfo, operands: list[Any], sizes: Sizes) -> bool:
    """Link output axes to operand axes by broadcasting; False if an operand cannot be modelled.

    A symbolic size links when it is the result's own size (equal at any size, 1 included), or when
    the hints say so: broadcasting made the trace decide (and guard) whether a size is 1 or equal to
    the others, and kernels compare the sizes they block along at run time anyway.
    """
    out = info.array
    assert out is not None
    for operand in operands:
        if not isinstance(operand, Node):
            if isinstance(operand, (list, tuple, dict, set)):
                return False  # a nested container may hide nodes; keep it simple
            continue
        meta = operand.meta.get("val")
        if not isinstance(meta, TensorMeta):
            if isinstance(meta, (bool, int, float, complex, np.generic)):
                continue  # a scalar computed in the graph: the same for every block
            if isinstance(meta, SizeExpr) or ((is_sympy(meta) and isinstance(meta, sympy.Expr)) and meta.is_integer):
                continue  # a Python int computed from sizes (n // 2): the same for every block too
            return False
        offset = out.ndim - meta.ndim
        if offset < 0:
            return False
        for axis, size in enumerate(meta.shape):
            hint, out_size = sizes.hint(size), out.shape[axis + offset]
            if (is_sympy(size) and size == out_size) or (hint == sizes.hint(out_size) and hint != 1):
                info.links.append((axis + offset, operand, axis))
            elif hint != 1 or is_sympy(size):
                return False
    return True


def _classify_elementwise(info: NodeInfo, row: OpInfo, sizes: Sizes) -> None:
    node = info.node
    target = node.target
    if node.op == "call_method":
        if target not in _ELEMENTWISE_METHODS or (target == "astype" and not _astype_copies(node)):
            info.why = f"method {target} may return its receiver"
            return
        operands = list(node.args[:1])
        if any(isinstance(a, Node) for a in (*node.args[1:], *node.kwargs.values())):
            info.why = "array-valued options"
            return
        info.role = Role.CALL
    elif isinstance(target, np.ufunc):
        if target.nout != 1 or target.signature is not None or len(node.args) != target.nin:
            info.why = "ufunc with several outputs, a signature, or out given positionally"
            return
        if not set(node.kwargs) <= _UFUNC_KWARGS or any(isinstance(v, Node) for v in node.kwargs.values()):
            info.why = f"ufunc keywords {sorted(node.kwargs)}"
            return
        operands = list(node.args)
        info.role, info.ufunc = Role.UFUNC, target
    elif (target is operator.pow or target is builtins.pow) and len(node.args) == 2 and not node.kwargs:
        # `a ** b` and pow(a, b) go through ndarray.__pow__, whose scalar fast paths call other ufuncs
        operands = list(node.args)
        dispatched = power_dispatch(*node.args)
        if dispatched is None:
            info.role = Role.POWER
        else:
            info.role, info.ufunc, info.ufunc_args = Role.UFUNC, dispatched[0], dispatched[1]
    elif row.ufunc is not None and not node.kwargs and row.ufunc.nout == 1 and len(node.args) == row.ufunc.nin:
        operands = list(node.args)
        info.role, info.ufunc = Role.UFUNC, row.ufunc
        reflected = reflected_comparison(node)
        if reflected is not None:
            info.ufunc, info.ufunc_args = reflected
    elif _is_member(target, _ELEMENTWISE_CALLS):
        if any(isinstance(v, Node) for v in node.kwargs.values()) or "out" in node.kwargs:
            info.why = "array-valued keywords"
            return
        operands = list(node.args)
        info.role = Role.CALL
    else:
        info.why = f"elementwise {row.name} has no block emitter"
        return
    if not _elementwise_links(info, operands, sizes):
        info.role, info.ufunc, info.links = Role.OPAQUE, None, []
        info.why = "operands do not broadcast to the result"


# `s > x` with a Python number s and an array x: float.__gt__ returns NotImplemented, so Python
# calls x.__lt__(s), i.e. np.less(x, s) (same values, but NumPy's warnings name that ufunc)
_REFLECTED_COMPARISONS = {operator.lt: np.greater, operator.le: np.greater_equal, operator.gt: np.less,
                          operator.ge: np.less_equal, operator.eq: np.equal, operator.ne: np.not_equal}


def reflected_comparison(node: Node) -> tuple[np.ufunc, tuple[Any, ...]] | None:
    """The ufunc call Python's reflected dispatch makes for `number <op> array`; None otherwise."""
    ufunc = _REFLECTED_COMPARISONS.get(node.target)
    if ufunc is None or len(node.args) != 2:
        return None
    left, right = node.args
    right_meta = right.meta.get("val") if isinstance(right, Node) else None
    if type(left) not in (bool, int, float, complex) or not isinstance(right_meta, TensorMeta) or right_meta.ndim == 0:
        return None
    return ufunc, (right, left)


class _Recorder(np.ndarray):
    """An array that notes which ufunc NumPy calls on it, and with what."""

    calls: list[tuple[np.ufunc | None, tuple[Any, ...]]] = []

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _Recorder.calls.append((ufunc, inputs) if method == "__call__" and not kwargs else (None, ()))
        plain = [i.view(np.ndarray) if isinstance(i, _Recorder) else i for i in inputs]
        return getattr(ufunc, method)(*plain, **kwargs)


@functools.cache
def _power_probe(dtype: np.dtype, kind: type, value: Any, base_is_array: bool) -> tuple[Any, ...] | None:
    """Which ufunc `array ** constant` (or `constant ** array`) calls: (ufunc, operand positions)."""
    constant = kind(value)
    array = np.ones(2, dtype).view(_Recorder)
    _Recorder.calls = []
    try:
        with np.errstate(all="ignore"):
            _ = array ** constant if base_is_array else constant ** array
    except Exception:
        return None  # NumPy raises for these operands: the operator stays, and raises the same at run time
    if len(_Recorder.calls) != 1 or _Recorder.calls[0][0] is None:
        return None
    ufunc, inputs = _Recorder.calls[0]
    array_position, constant_position = (0, 1) if base_is_array else (1, 0)
    return (ufunc, tuple(array_position if isinstance(i, _Recorder) else constant_position for i in inputs))


def power_dispatch(base: Any, exponent: Any) -> tuple[np.ufunc, tuple[Any, ...]] | None:
    """`base ** exponent` as the ufunc call NumPy makes for it: `x ** 2` is np.square(x) (a scalar fast
    path, which depends on the exponent's value and type), `x ** 3` is np.power(x, 3). None: unknown."""
    base_meta = base.meta.get("val") if isinstance(base, Node) else None
    exp_meta = exponent.meta.get("val") if isinstance(exponent, Node) else None
    base_array = isinstance(base_meta, TensorMeta) and base_meta.ndim > 0
    exp_array = isinstance(exp_meta, TensorMeta) and exp_meta.ndim > 0
    if base_array and exp_array:
        return (np.power, (base, exponent))  # array ** array: no scalar fast path
    if base_array and not isinstance(exponent, Node):
        meta, constant, base_is_array = base_meta, exponent, True
    elif exp_array and not isinstance(base, Node):
        meta, constant, base_is_array = exp_meta, base, False
    else:
        return None
    if type(constant) not in (int, float, bool) and not isinstance(constant, np.generic):
        return None
    value = constant.item() if isinstance(constant, np.generic) else constant
    assert isinstance(meta, TensorMeta)
    found = _power_probe(meta.dtype, type(constant), value, base_is_array)  # type: ignore[arg-type]
    if found is None:
        return None
    ufunc, positions = found
    return (ufunc, tuple((base, exponent)[p] for p in positions))


def _astype_copies(node: Node) -> bool:
    copy = node.kwargs.get("copy", node.args[5] if len(node.args) > 5 else True)
    return copy is True and not any(isinstance(a, Node) for a in node.args[1:])


def _is_member(target: Any, table: frozenset[Any]) -> bool:
    try:
        return target in table
    except TypeError:
        return False


def _bind(node: Node, signature: inspect.Signature) -> dict[str, Any] | None:
    try:
        return dict(signature.bind(*node.args, **node.kwargs).arguments)
    except TypeError:
        return None


def _normalized_axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axes: tuple[Any, ...] = (axis,)
    elif isinstance(axis, tuple) and axis and all(isinstance(a, (int, np.integer)) for a in axis):
        axes = axis
    else:
        return None  # axis=None reduces everything, including the block axis
    normalized = tuple(sorted({int(a) % ndim for a in axes if -ndim <= a < ndim}))
    return normalized if len(normalized) == len(axes) else None


def _classify_reduction(info: NodeInfo, sizes: Sizes) -> None:
    node = info.node
    name = node.target if node.op == "call_method" else _REDUCTIONS.get(_hashable(node.target))
    if name is None or (node.op == "call_method" and name not in _REDUCTION_METHODS):
        info.why = "reduction without a block emitter"
        return
    bound = _bind(node, _SIGNATURES[name])
    if bound is None:
        info.why = "reduction arguments do not bind"
        return
    source = bound.get("a")
    if not isinstance(source, Node) or any(
        isinstance(v, Node) for k, v in bound.items() if k != "a"
    ):
        info.why = "reduction of a non-node or with array-valued options"
        return
    if any(bound.get(k) not in (None, np._NoValue) for k in ("out", "where", "mean", "initial")):
        info.why = "reduction with out=, where=, mean= or initial="
        return
    keepdims = bound.get("keepdims", False)
    _finish_reduction(info, name, source, bound.get("axis"), False if keepdims is np._NoValue else keepdims,
                      bound.get("dtype"), sizes)


def _classify_norm(info: NodeInfo, sizes: Sizes) -> None:
    bound = _bind(info.node, _NORM_SIGNATURE)
    if bound is None or bound.get("ord") is not None or not isinstance(bound.get("x"), Node):
        info.why = "norm with ord= or unbound arguments"
        return
    source = bound["x"]
    if not isinstance(bound.get("axis"), (int, np.integer)):
        info.why = "norm over several or all axes"
        return
    source_meta = source.meta.get("val")
    if not isinstance(source_meta, TensorMeta) or source_meta.dtype.kind != "f":
        info.why = "norm of a non-float array"
        return
    _finish_reduction(info, "norm", source, bound["axis"], bound.get("keepdims", False), None, sizes)


def _finish_reduction(info: NodeInfo, name: str, source: Node, axis: Any, keepdims: Any, dtype: Any,
                      sizes: Sizes) -> None:
    source_meta = source.meta.get("val")
    if not isinstance(source_meta, TensorMeta) or source_meta.scalar or not isinstance(keepdims, (bool, np.bool_)):
        info.why = "reduction of a non-array"
        return
    axes = _normalized_axes(axis, source_meta.ndim)
    if axes is None:
        info.why = "reduction over all axes or a non-constant axis"
        return
    info.role, info.reduction, info.reduced_axes = Role.REDUCTION, name, axes
    exact_kinds = "biu" if dtype is None else ""
    info.order_sensitive = not (
        name in _ORDER_FREE or (name in _EXACT_IF_INTEGER and source_meta.dtype.kind in exact_kinds)
    )
    kept = [a for a in range(source_meta.ndim) if a not in axes]
    for out_axis, in_axis in enumerate(kept if not keepdims else range(source_meta.ndim)):
        if in_axis in axes:
            continue
        if sizes.hint(source_meta.shape[in_axis]) != 1:
            info.links.append((out_axis, source, in_axis))


def _hashable(target: Any) -> Any:
    try:
        hash(target)
        return target
    except TypeError:
        return None


def analyze(graph: Graph, sizes: Sizes) -> dict[Node, NodeInfo]:
    return {node: classify(node, sizes) for node in graph.nodes}


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    if isinstance(value, slice):
        return [value.start, value.stop, value.step]
    return [value]


def reduction_input_axis(info: NodeInfo, out_axis: int) -> int | None:
    """For a reduction: the input axis that output axis `out_axis` runs along."""
    for o, _, i in info.links:
        if o == out_axis:
            return i
    return None

