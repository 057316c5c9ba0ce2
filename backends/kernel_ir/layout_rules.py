"""NumPy's layout of a graph's values found without computing them: views are taken of phantom arrays
(a value's shape and strides over no memory), allocations run on shrunk stand-ins and are scaled back.

A view's strides are NumPy's own arithmetic on the phantom (no element is read). An elementwise op, a
reduction or a copy allocates its result in an order NumPy derives from its operands' strides: their
signs, which are zero, how they compare and the C/F contiguity flags, never the sizes themselves. So
the op runs on stand-ins whose every axis longer than 1 is cut to 2, with those properties kept, and
the order of its stand-in result, a packed array, is the order of NumPy's full-size result. Whatever
does not fit these rules (another op, a result that is not a fresh packed array, sizes of 0) raises
GiveUp: the caller then runs the graph as NumPy (result_layout's witness).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...fx_ir import GraphModule, Interpreter, Node, TensorMeta, is_random
from ...fx_ir.node import Opcode
from ...fx_ir.ops import OpKind, lookup_attribute, lookup_function, lookup_method

UNKNOWN = object()  # a value whose layout is unknown (a write, a draw, a loop): results using it are left alone


class GiveUp(Exception):
    """A node no rule here covers."""


IN_PLACE = frozenset({
    operator.iadd, operator.isub, operator.imul, operator.imatmul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.ilshift, operator.irshift, operator.iand, operator.ior, operator.ixor,
})
# operators NumPy runs as ufuncs on arrays (matmul is no elementwise op)
_OPERATORS = frozenset({
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
    operator.neg, operator.pos, operator.abs, operator.invert, operator.and_, operator.or_, operator.xor,
    operator.lshift, operator.rshift, operator.lt, operator.le, operator.eq, operator.ne, operator.ge, operator.gt,
})
# new arrays of a shape (no array operand): C-ordered unless order="F"; positional arguments before `order`
_CREATIONS = {
    "numpy.zeros": 2, "numpy.ones": 2, "numpy.empty": 2, "numpy.full": 3, "numpy.eye": 4, "numpy.identity": 2,
    "numpy.ndarray": 2, "numpy.arange": 4, "numpy.linspace": 7, "numpy.logspace": 7, "numpy.geomspace": 6,
    "numpy.array": 1, "numpy.asarray": 1,
}
# rows whose result is allocated from the operands' strides alone (sizes only set its shape)
_ALLOCATING_KINDS = frozenset({OpKind.ELEMENTWISE, OpKind.REDUCTION, OpKind.SCAN})
_NOT_ALLOCATING = frozenset({  # reductions built of size-dependent slices (partitions, weights)
    "quantile", "percentile", "nanquantile", "nanpercentile", "median", "nanmedian", "average",
})
_COPIES = frozenset({
    "numpy.copy", "ndarray.copy", "ndarray.astype", "numpy.ascontiguousarray", "numpy.asfortranarray",
    "numpy.empty_like", "numpy.zeros_like", "numpy.ones_like", "numpy.full_like", "numpy.where", "numpy.clip",
    "ndarray.clip", "numpy.round", "numpy.around", "ndarray.round", "ndarray.conj", "ndarray.conjugate",
    # products: the output (core axes C-ordered) allocated before any BLAS call
    "operator.matmul", "numpy.matmul", "numpy.dot", "numpy.outer",
    # joins: the result's axis order sorted from all the inputs' strides
    "numpy.concatenate", "numpy.stack", "numpy.hstack", "numpy.vstack", "numpy.column_stack",
})


def is_in_place(target: Any) -> bool:
    try:
        return target in IN_PLACE
    except TypeError:  # an unhashable target is no operator
        return False


def reads_unknown(args: Any, kwargs: dict[str, Any]) -> bool:
    return _any_leaf(args, lambda v: v is UNKNOWN) or _any_leaf(kwargs, lambda v: v is UNKNOWN)


def _any_leaf(value: Any, test: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_any_leaf(v, test) for v in value)
    if isinstance(value, dict):
        return any(_any_leaf(v, test) for v in value.values())
    return bool(test(value))


def _map_leaves(value: Any, fn: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return type(value)(_map_leaves(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_leaves(v, fn) for k, v in value.items()}
    return fn(value)


def phantom(shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of this shape, strides and dtype over one element's memory: only its metadata may be
    read (read-only, so that nothing writes through it)."""
    return np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape, strides, writeable=False)


def _shrunk(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if n == 1 else 2 for n in shape)


def stand_in(array: np.ndarray) -> np.ndarray:
    """A small array of ones laid out as `array` is for NumPy's choice of a result's order: axes of 1
    kept, longer axes cut to 2, C/F-contiguous as it is, else its own strides (signs, zeros and
    comparisons kept) over a buffer of its own."""
    if 0 in array.shape or array.dtype.hasobject or array.itemsize == 0:
        raise GiveUp("an empty or object array")
    shape = _shrunk(array.shape)
    if array.flags.c_contiguous or array.flags.f_contiguous:
        return np.ones(shape, array.dtype, order="C" if array.flags.c_contiguous else "F")
    low = sum((n - 1) * s for n, s in zip(shape, array.strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, array.strides) if s > 0)
    buffer = np.zeros(high - low + array.itemsize, np.uint8)
    small = np.ndarray(shape, array.dtype, buffer, -low, array.strides)
    small[...] = 1
    if small.flags.c_contiguous or small.flags.f_contiguous:
        raise GiveUp("the stand-in is contiguous where the array is not")
    return small


def scaled_back(small: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The phantom of the full-size result of `shape` NumPy allocates in the order of `small`, a
    fresh packed array with the same axes of length 1 (its other axes cut, or the sum of cut ones
    for a join): axes are grouped by stride, axes of 1 sharing one with the next longer axis."""
    if len(small.shape) != len(shape) or 0 in shape or 0 in small.shape or small.itemsize == 0 \
            or any((n == 1) != (m == 1) for n, m in zip(small.shape, shape)):
        raise GiveUp("not the shrunk shape of the result")
    strides = [0] * small.ndim
    packed, full = small.itemsize, small.itemsize  # strides of the next group in the small and full arrays
    for stride in sorted(set(small.strides)):
        axes = [k for k in range(small.ndim) if small.strides[k] == stride]
        long_axes = [k for k in axes if small.shape[k] > 1]
        if stride != packed or len(long_axes) > 1:
            raise GiveUp("not a packed allocation")
        for k in axes:
            strides[k] = full
        if long_axes:
            packed *= small.shape[long_axes[0]]
            full *= shape[long_axes[0]]
    return phantom(shape, tuple(strides), small.dtype)


def _is_basic_index(index: Any) -> bool:
    if isinstance(index, tuple):
        return all(_is_basic_index(part) for part in index if not isinstance(part, tuple))\
            and not any(isinstance(part, tuple) for part in index)
    if isinstance(index, slice):
        return all(v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))
                   for v in (index.start, index.stop, index.step))
    return index is None or index is Ellipsis or (isinstance(index, (int, np.integer)) and not isinstance(index, bool))


def _is_reshape(node: Node) -> bool:
    if node.op == Opcode.CALL_METHOD:
        return node.target == "reshape"
    return node.op == Opcode.CALL_FUNCTION and node.target is np.reshape


def _reshaped(array: np.ndarray, args: tuple[Any, ...], kwargs: dict[str, Any], method: bool) -> np.ndarray:
    """NumPy's reshape: a view where the strides allow one, else a copy in the reshape's order."""
    if kwargs.get("copy") is not None:
        raise GiveUp("reshape with copy=")

    def reshape(a: np.ndarray, copy: Any) -> np.ndarray:
        return a.reshape(*args, copy=copy, **kwargs) if method else np.reshape(a, *args, copy=copy, **kwargs)
    try:
        return reshape(array, False)  # no element is read: a view or ValueError
    except ValueError:
        pass
    order = kwargs.get("order", "C")
    if order == "A":
        order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
    if order not in ("C", "F"):
        raise GiveUp(f"reshape order {order!r}")
    # the copy is packed in the order, then viewed in the new shape (which a packed array allows)
    packed = phantom(array.shape, _packed_strides(array.shape, array.itemsize, order), array.dtype)
    return reshape(packed, False)


def _packed_strides(shape: tuple[int, ...], itemsize: int, order: str) -> tuple[int, ...]:
    strides, step = [0] * len(shape), itemsize
    for k in (reversed(range(len(shape))) if order == "C" else range(len(shape))):
        strides[k] = step
        step *= max(shape[k], 1)
    return tuple(strides)


class LayoutRun(Interpreter):
    """Runs a graph for the layout of its values, never running what writes or draws: such a value,
    and what reads it, is UNKNOWN; an `out=` call or an in-place operator gives the array it writes.
    `value_of` gives the other nodes' values."""

    def run_node(self, node: Node) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        if node.op in (Opcode.PLACEHOLDER, Opcode.OUTPUT, Opcode.GET_ATTR):
            return getattr(self, node.op.value)(node.target, args, kwargs)
        if node.op == Opcode.CALL_MODULE or reads_unknown(args, kwargs):
            return UNKNOWN
        out = kwargs.get("out")
        if out is not None:  # NumPy returns the given output (a tuple of one for out=(a,))
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        if node.op == Opcode.CALL_FUNCTION and is_in_place(node.target) and isinstance(args[0], np.ndarray):
            return args[0]  # an ndarray's in-place operator returns it, its layout unchanged
        if node.is_impure() or (node.op == Opcode.CALL_FUNCTION and is_random(node.target)):
            return UNKNOWN  # what writes or draws is never run here
        return self.value_of(node, args, kwargs)

    def value_of(self, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError


class PhantomRun(LayoutRun):
    """Runs a graph over phantoms: each array value has NumPy's shape and strides, no data. Inputs
    are the call's own arrays; `sizes` binds the graph's size symbols for shapes in node metas."""

    def __init__(self, gm: GraphModule, sizes: dict[Any, int]) -> None:
        super().__init__(gm)
        self.sizes = sizes

    def value_of(self, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._is_view(node, args, kwargs):  # views read no element: NumPy's own strides
            return getattr(self, node.op.value)(node.target, args, kwargs)
        if self._allocates(node, args):
            return self._on_stand_ins(node, args, kwargs)
        created = self._created(node, args, kwargs)
        if created is not None:
            return created
        if _is_reshape(node) and isinstance(args[0], np.ndarray) and not _any_leaf((args[1:], kwargs), _is_array):
            return _reshaped(args[0], args[1:], kwargs, node.op == Opcode.CALL_METHOD)
        raise GiveUp(f"no layout rule for {node.format_node()}")

    @staticmethod
    def _is_view(node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if node.target is operator.getitem and args and isinstance(args[0], (tuple, list)):
            return True  # an item of a tuple of results (np.divmod's)
        if not args or not isinstance(args[0], np.ndarray) or _any_leaf((args[1:], kwargs), _is_array):
            return False
        if node.target is operator.getitem:
            return len(args) == 2 and _is_basic_index(args[1])
        if node.target is getattr:
            row = lookup_attribute(args[1]) if len(args) == 2 and isinstance(args[1], str) else None
        elif node.op == Opcode.CALL_METHOD:
            row = lookup_method(node.target)
        else:
            row = lookup_function(node.target)
        # a reshape may copy: it runs as a view only (reshaped below)
        return row is not None and (row.kind == OpKind.METADATA or (row.kind == OpKind.VIEW and not row.layout_view))

    @staticmethod
    def _allocates(node: Node, args: tuple[Any, ...]) -> bool:
        if node.op == Opcode.CALL_METHOD:
            row = lookup_method(node.target)
        elif node.target in _OPERATORS:
            return True
        else:
            row = lookup_function(node.target)
        if row is None:
            return False
        if row.kind in _ALLOCATING_KINDS or row.name.endswith(".outer"):
            return row.name.rsplit(".", 1)[-1] not in _NOT_ALLOCATING
        if row.name == "numpy.linalg.norm":  # the 2-norm: a sum of squares along axes (other ords: SVDs)
            return len(args) < 2 and node.kwargs.get("ord") is None
        return row.name in _COPIES

    def _created(self, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> np.ndarray | None:
        """A new array made of no array: packed in C order, or F for order="F" (np.zeros((n, m)), ...)."""
        row = lookup_function(node.target) if node.op == Opcode.CALL_FUNCTION else None
        if row is None or row.name not in _CREATIONS or _any_leaf((args, kwargs), _is_array):
            return None
        if len(args) > _CREATIONS[row.name] or {"buffer", "strides", "like"} & kwargs.keys():
            raise GiveUp(f"{row.name} with these arguments")
        if row.name in ("numpy.zeros", "numpy.empty", "numpy.ones"):
            # np.empty with the same arguments: the same layout, its memory never touched (cheap)
            return np.empty(*args, **kwargs)
        meta = node.meta.get("val")
        if not isinstance(meta, TensorMeta) or meta.scalar:
            raise GiveUp("no array meta")
        shape, order = self._shape(meta), kwargs.get("order", "C")
        if 0 in shape or order not in ("C", "F", "A", "K", None):
            raise GiveUp("an empty array or another order")
        return phantom(shape, _packed_strides(shape, meta.dtype.itemsize, "F" if order == "F" else "C"), meta.dtype)

    def _on_stand_ins(self, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        made: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id of a value -> (it, its stand-in)

        def small(value: Any) -> Any:
            if not isinstance(value, np.ndarray):
                return value
            if id(value) not in made:
                made[id(value)] = (value, stand_in(value))
            return made[id(value)][1]
        small_args, small_kwargs = _map_leaves(args, small), _map_leaves(kwargs, small)
        if node.op == Opcode.CALL_METHOD:
            result = getattr(small_args[0], node.target)(*small_args[1:], **small_kwargs)
        else:
            result = node.target(*small_args, **small_kwargs)
        meta = node.meta.get("val")
        if meta is None and _is_elementwise(node):  # a node a backend added: the operands' broadcast shape
            shapes = [value.shape for value, _ in made.values()]
            meta = _Broadcast(np.broadcast_shapes(*shapes))
            if isinstance(result, tuple):
                meta = (meta,) * len(result)
        return self._full_size(result, meta, made)

    def _full_size(self, small: Any, meta: Any, made: dict[int, tuple[np.ndarray, np.ndarray]]) -> Any:
        if isinstance(small, tuple) and isinstance(meta, tuple) and len(small) == len(meta):
            return tuple(self._full_size(s, m, made) for s, m in zip(small, meta))
        if isinstance(meta, _Broadcast) and type(small) is np.ndarray:
            return scaled_back(small, meta.shape)
        if not isinstance(small, np.ndarray):
            return small  # a NumPy or Python scalar: no layout
        for value, standing in made.values():
            if small is standing:
                return value  # the op returned its operand itself
            if np.may_share_memory(small, standing):
                raise GiveUp("a view of an operand")
        if type(small) is not np.ndarray or not isinstance(meta, TensorMeta) or meta.scalar:
            raise GiveUp("no array meta")
        return scaled_back(small, self._shape(meta))

    def _shape(self, meta: TensorMeta) -> tuple[int, ...]:
        shape = []
        for dim in meta.shape:
            if isinstance(dim, (int, np.integer)):
                shape.append(int(dim))
                continue
            value = self.sizes.get(dim)
            if value is None:
                value = dim.subs(self.sizes) if self.sizes else dim
                if not getattr(value, "is_Integer", False):
                    raise GiveUp(f"size {dim} unknown")
            shape.append(int(value))
        return tuple(shape)


@dataclass(frozen=True)
class _Broadcast:
    """The shape of an elementwise result whose node has no meta."""

    shape: tuple[int, ...]


def _is_elementwise(node: Node) -> bool:
    if node.op != Opcode.CALL_FUNCTION:
        return False
    if node.target in _OPERATORS or isinstance(node.target, np.ufunc):
        return True
    row = lookup_function(node.target)
    return row is not None and row.kind == OpKind.ELEMENTWISE


def is_view_node(node: Node) -> bool:
    """A node NumPy runs as a view of its first argument, a node, whose other arguments are constants
    (a reshape or ravel: a view where the strides allow, as NumPy decides when it runs)."""
    if node.op not in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) or not node.args \
            or not isinstance(node.args[0], Node) or node.is_impure() \
            or _any_leaf((node.args[1:], node.kwargs), lambda v: isinstance(v, Node)):
        return False
    if node.target is operator.getitem:
        return len(node.args) == 2 and _is_basic_index(node.args[1])
    if node.target is getattr:
        return len(node.args) == 2 and node.args[1] in ("T", "mT")
    row = lookup_method(node.target) if node.op == Opcode.CALL_METHOD else lookup_function(node.target)
    return row is not None and row.kind == OpKind.VIEW and row.view_of is not None


def replayed(chain: tuple[Node, ...], value: Any) -> Any:
    """The view nodes of `chain` run one after the other from `value` (is_view_node holds for each)."""
    for node in chain:
        if node.op == Opcode.CALL_METHOD:
            value = getattr(value, node.target)(*node.args[1:], **node.kwargs)
        else:
            value = node.target(value, *node.args[1:], **node.kwargs)
    return value


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray)


def size_bindings(gm: GraphModule, args: tuple[Any, ...]) -> dict[Any, int]:
    """The graph's size symbols bound to this call's sizes (from inputs whose meta dims are symbols)."""
    sizes: dict[Any, int] = {}
    placeholders = [n for n in gm.graph.nodes if n.op == Opcode.PLACEHOLDER]
    for node, value in zip(placeholders, args):
        meta = node.meta.get("val")
        if isinstance(meta, TensorMeta) and isinstance(value, np.ndarray) and value.ndim == meta.ndim:
            for dim, size in zip(meta.shape, value.shape):
                if not isinstance(dim, (int, np.integer)) and getattr(dim, "is_Symbol", False):
                    sizes[dim] = size
    return sizes
