"""Linear algebra: dot, vdot, inner, outer, tensordot, einsum, trace, diag, linalg.norm/inv/solve.

matmul and the other gufuncs live with the ufuncs; their rule is gufunc.py.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor_meta import TensorMeta
from .errors import UnsupportedArguments
from .operands import array_meta, is_ndarray, lift, operand_shape, out_effects
from .promotion import ArrayOut, meta_of, probe, probe_method
from .registry import ArgRef, Method, OpInfo, OpKind, register
from .shapes import Shape, broadcast_dim, broadcast_shapes, normalize_axes, normalize_axis, reduced_shape
from .shaping import diagonal_shape
from .symbolic import normalize, normalize_shape, prod, sizes_equal

_NoValue = np._NoValue


def _result(probed: Any, shape: Any, out: Any = None) -> TensorMeta:
    if out is not None:
        meta = meta_of(out)
        if meta is None or meta.scalar:
            raise TypeError("out must be an ndarray")
        if meta.ndim != len(shape) or not all(sizes_equal(a, b) for a, b in zip(meta.shape, shape)):
            raise ValueError("output array is not acceptable (must have the right datatype, number "
                             "of dimensions, and be a C-Array)")
        return meta
    if not isinstance(probed, ArrayOut):
        raise UnsupportedArguments("expected one array result")
    return probed.meta(shape)


def _aligned(sa: Shape, sb: Shape, ia: int, ib: int) -> None:
    if not sizes_equal(sa[ia], sb[ib]):
        dims_a = ",".join(map(str, sa))
        dims_b = ",".join(map(str, sb))
        raise ValueError(f"shapes ({dims_a}{',' if len(sa) == 1 else ''}) and ({dims_b}"
                         f"{',' if len(sb) == 1 else ''}) not aligned: {sa[ia]} (dim {ia}) != "
                         f"{sb[ib]} (dim {ib})")


def dot_shape(sa: Shape, sb: Shape) -> Shape:
    if len(sa) == 0 or len(sb) == 0:
        return broadcast_shapes(sa, sb)
    if len(sb) == 1:
        _aligned(sa, sb, len(sa) - 1, 0)
        return sa[:-1]
    _aligned(sa, sb, len(sa) - 1, len(sb) - 2)
    return (*sa[:-1], *sb[:-2], sb[-1])


def _dot_result(probed: Any, a: Any, b: Any, out: Any) -> TensorMeta:
    shape = dot_shape(operand_shape(a), operand_shape(b))
    out_meta = meta_of(out)
    if out_meta is not None and isinstance(probed, ArrayOut) and out_meta.dtype != probed.dtype:
        raise ValueError("output array is not acceptable (must have the right datatype, number of "
                         "dimensions, and be a C-Array)")
    return _result(probed, shape, out)


def _dot(a: Any, b: Any, out: Any = None) -> TensorMeta:
    a, b = lift(a), lift(b)
    return _dot_result(probe(np.dot, a, b), a, b, out)


def _dot_method(a: Any, b: Any, out: Any = None) -> TensorMeta:
    b = lift(b)
    return _dot_result(probe_method("dot", a, b), a, b, out)


def _inner(a: Any, b: Any, /) -> TensorMeta:
    a, b = lift(a), lift(b)
    probed = probe(np.inner, a, b)
    sa, sb = operand_shape(a), operand_shape(b)
    if len(sa) == 0 or len(sb) == 0:
        return _result(probed, broadcast_shapes(sa, sb))
    _aligned(sa, sb, len(sa) - 1, len(sb) - 1)
    return _result(probed, (*sa[:-1], *sb[:-1]))


def _vdot(a: Any, b: Any, /) -> TensorMeta:
    a, b = lift(a), lift(b)
    probed = probe(np.vdot, a, b)
    na, nb = prod(operand_shape(a)), prod(operand_shape(b))
    if not sizes_equal(na, nb):
        raise ValueError(f"cannot reshape array of size {nb} into shape ({na},)")
    return _result(probed, ())


def _outer(a: Any, b: Any, out: Any = None) -> TensorMeta:
    a, b = lift(a), lift(b)
    probed = probe(np.outer, a, b, out)
    return _result(probed, (prod(operand_shape(a)), prod(operand_shape(b))), out)


def _tensordot(a: Any, b: Any, axes: Any = 2) -> TensorMeta:
    a, b = lift(a), lift(b)
    probed = probe(np.tensordot, a, b, axes)
    sa, sb = operand_shape(a), operand_shape(b)
    if isinstance(axes, Sequence):
        axes_a, axes_b = axes
        axes_a = [axes_a] if not isinstance(axes_a, Sequence) else list(axes_a)
        axes_b = [axes_b] if not isinstance(axes_b, Sequence) else list(axes_b)
    else:
        n = int(axes)
        axes_a, axes_b = list(range(len(sa) - n, len(sa))), list(range(n))
    axes_a = [normalize_axis(x, len(sa)) for x in axes_a]
    axes_b = [normalize_axis(x, len(sb)) for x in axes_b]
    if len(axes_a) != len(axes_b) or not all(sizes_equal(sa[i], sb[j]) for i, j in zip(axes_a, axes_b)):
        raise ValueError("shape-mismatch for sum")
    free_a = [d for k, d in enumerate(sa) if k not in axes_a]
    free_b = [d for k, d in enumerate(sb) if k not in axes_b]
    return _result(probed, (*free_a, *free_b))


def _kron(a: Any, b: Any) -> TensorMeta:
    a, b = lift(a), lift(b)
    probed = probe(np.kron, a, b)
    sa, sb = operand_shape(a), operand_shape(b)
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    return _result(probed, [normalize(x * y) for x, y in zip(sa, sb)])


# ---------------------------------------------------------------- einsum

_LABEL = re.compile(r"\.\.\.|[A-Za-z]")


def _parse_term(term: str) -> list[str]:
    labels = _LABEL.findall(term)
    if "".join(labels) != term:
        raise ValueError(f"invalid subscript in einstein sum subscripts string: {term!r}")
    return labels


def einsum_shape(subscripts: str, shapes: Sequence[Shape]) -> tuple[Shape, bool]:
    """Output shape of np.einsum, and whether any label is summed away."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = [_parse_term(t) for t in inputs.split(",")]
    if len(terms) != len(shapes):
        raise ValueError("more operands provided to einstein sum function than specified in the "
                         "subscripts string" if len(shapes) > len(terms) else
                         "fewer operands provided to einstein sum function than specified in the "
                         "subscripts string")
    sizes: dict[str, Any] = {}
    ellipsis_shapes: list[Shape] = []
    counts: dict[str, int] = {}
    for labels, shape in zip(terms, shapes):
        named = [x for x in labels if x != "..."]
        if "..." in labels:
            extra = len(shape) - len(named)
            if extra < 0:
                raise ValueError("einstein sum subscripts string contains too many subscripts for operand")
            at = labels.index("...")
            ellipsis_shapes.append(shape[at:at + extra])
            dims = list(shape[:at]) + list(shape[at + extra:])
        else:
            if len(named) != len(shape):
                raise ValueError("operand has more dimensions than subscripts given in einstein sum, "
                                 "but no '...' ellipsis provided to broadcast the extra dimensions."
                                 if len(shape) > len(named) else
                                 "einstein sum subscripts string contains too many subscripts for operand")
            dims = list(shape)
        seen: dict[str, Any] = {}
        for label, d in zip(named, dims):
            if label in seen and not sizes_equal(seen[label], d):
                raise ValueError(f"dimensions in single operand for collapsing index '{label}' don't "
                                 f"match ({seen[label]} != {d})")
            seen[label] = d
        for label in named:  # implicit output: labels written exactly once in the whole string
            counts[label] = counts.get(label, 0) + 1
        for label, d in seen.items():
            merged = broadcast_dim(sizes[label], d) if label in sizes else d
            if merged is None:
                raise ValueError(f"operands could not be broadcast together with remapped shapes "
                                 f"(label {label!r}: {sizes[label]} vs {d})")
            sizes[label] = merged
    ell = broadcast_shapes(*ellipsis_shapes) if ellipsis_shapes else ()
    if arrow:
        out_labels = _parse_term(output)
        for label in out_labels:
            if label != "..." and label not in sizes:
                raise ValueError(f"einstein sum subscripts string included output subscript "
                                 f"'{label}' which never appeared in an input")
        if ellipsis_shapes and "..." not in out_labels and any(d != 1 for d in ell):
            raise ValueError("output has more dimensions than subscripts given in einstein sum, but "
                             "no '...' ellipsis provided to broadcast the extra dimensions.")
    else:
        out_labels = (["..."] if ellipsis_shapes else []) + sorted(label for label, c in counts.items() if c == 1)
    out_shape: list[Any] = []
    for label in out_labels:
        out_shape.extend(ell if label == "..." else [sizes[label]])
    summed = any(label not in out_labels for label in sizes) or (
        bool(ellipsis_shapes) and "..." not in out_labels)
    return normalize_shape(out_shape), summed


def _einsum(*operands: Any, out: Any = None, **kwargs: Any) -> TensorMeta:
    if not operands or not isinstance(operands[0], str):
        raise UnsupportedArguments("einsum: only a constant subscripts string is modelled")
    subscripts, arrays = operands[0], tuple(lift(a) for a in operands[1:])
    probed = probe(np.einsum, subscripts, *arrays, **kwargs)
    shape, _ = einsum_shape(subscripts, [operand_shape(a) for a in arrays])
    if out is not None:
        return _result(None, shape, out)
    return _result(probed, shape)


def _einsum_view_of(*operands: Any, out: Any = None, **kwargs: Any) -> ArgRef | None:
    if out is not None:
        return "out"
    if len(operands) != 2 or not is_ndarray(operands[1]) or kwargs.get("optimize"):
        return None
    _, summed = einsum_shape(operands[0], [operand_shape(operands[1])])
    # a single operand that is only transposed or diagonalised comes back as a view
    return None if summed or kwargs.get("dtype") is not None else 1


def _einsum_mutates(*operands: Any, out: Any = None, **kwargs: Any) -> tuple[ArgRef, ...]:
    return ("out",) if out is not None else ()


# ---------------------------------------------------------------- trace, diag, linalg

def _trace_shape(a: Any, offset: Any, axis1: Any, axis2: Any) -> Shape:
    return diagonal_shape(operand_shape(a), offset, axis1, axis2)[:-1]


def _trace(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1, dtype: Any = None,
           out: Any = None) -> TensorMeta:
    probed = probe(np.trace, a, offset, axis1, axis2, dtype, out)
    return _result(probed, _trace_shape(a, offset, axis1, axis2), out)


def _trace_method(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1, dtype: Any = None,
                  out: Any = None) -> TensorMeta:
    probed = probe_method("trace", a, offset, axis1, axis2, dtype, out)
    return _result(probed, _trace_shape(a, offset, axis1, axis2), out)


def _diag(v: Any, k: Any = 0) -> TensorMeta:
    probed = probe(np.diag, v, k)
    shape = operand_shape(v)
    if len(shape) == 1:
        n = normalize(shape[0] + abs(int(k)))
        return _result(probed, (n, n))
    return _result(probed, diagonal_shape(shape, k, 0, 1))


def _diag_view_of(v: Any, k: Any = 0) -> ArgRef | None:
    return 0 if is_ndarray(v) and array_meta(v).ndim == 2 else None


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> TensorMeta:
    probed = probe(np.linalg.norm, x, ord, axis, keepdims)
    shape = operand_shape(x)
    axes = normalize_axes(axis, len(shape))
    return _result(probed, reduced_shape(shape, axes, bool(keepdims)))


def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> TensorMeta:
    probed = probe(np.linalg.vector_norm, x, axis=axis, keepdims=keepdims, ord=ord)
    shape = operand_shape(x)
    return _result(probed, reduced_shape(shape, normalize_axes(axis, len(shape)), bool(keepdims)))


def _matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> TensorMeta:
    probed = probe(np.linalg.matrix_norm, x, keepdims=keepdims, ord=ord)
    shape = operand_shape(x)
    return _result(probed, reduced_shape(shape, (len(shape) - 2, len(shape) - 1), bool(keepdims)))


def _square(shape: Shape) -> None:
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at least "
                                    "two-dimensional")
    if not sizes_equal(shape[-1], shape[-2]):
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _square_rule(fn: Any, drop: int) -> Any:
    """inv / cholesky (same shape) and det (batch shape): (..., M, M) inputs."""
    def infer(a: Any, /, *args: Any, **kwargs: Any) -> TensorMeta:
        shape = operand_shape(a)
        _square(shape)
        probed = probe(fn, a, *args, **kwargs)
        return _result(probed, shape[: len(shape) - drop])
    infer.__name__ = fn.__name__
    return infer


def _solve(a: Any, b: Any) -> TensorMeta:
    a, b = lift(a), lift(b)
    sa, sb = operand_shape(a), operand_shape(b)
    _square(sa)
    probed = probe(np.linalg.solve, a, b)
    if len(sb) == 1:
        if not sizes_equal(sb[0], sa[-1]):
            raise ValueError(f"solve1: Input operand 1 has a mismatch in its core dimension 0, with "
                             f"gufunc signature (m,m),(m)->(m) (size {sb[0]} is different from {sa[-1]})")
        return _result(probed, (*sa[:-2], sa[-1]))
    if not sizes_equal(sb[-2], sa[-1]):
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                         f"signature (m,m),(m,n)->(m,n) (size {sb[-2]} is different from {sa[-1]})")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    return _result(probed, (*batch, sa[-1], sb[-1]))


def _register() -> None:
    dot_view, dot_mut = out_effects(2)
    trace_view, trace_mut = out_effects(5)
    rows = [
        OpInfo("numpy.dot", OpKind.LINALG, (np.dot,), _dot, view_of=dot_view, mutates=dot_mut),
        OpInfo("ndarray.dot", OpKind.LINALG, (Method("dot"),), _dot_method, view_of=dot_view,
               mutates=dot_mut),
        OpInfo("numpy.inner", OpKind.LINALG, (np.inner,), _inner),
        OpInfo("numpy.vdot", OpKind.LINALG, (np.vdot,), _vdot),
        OpInfo("numpy.outer", OpKind.LINALG, (np.outer,), _outer, view_of=dot_view, mutates=dot_mut),
        OpInfo("numpy.tensordot", OpKind.LINALG, (np.tensordot,), _tensordot),
        OpInfo("numpy.kron", OpKind.LINALG, (np.kron,), _kron),
        OpInfo("numpy.einsum", OpKind.LINALG, (np.einsum,), _einsum, view_of=_einsum_view_of,
               mutates=_einsum_mutates),
        OpInfo("numpy.trace", OpKind.LINALG, (np.trace,), _trace, view_of=trace_view, mutates=trace_mut),
        OpInfo("ndarray.trace", OpKind.LINALG, (Method("trace"),), _trace_method,
               view_of=trace_view, mutates=trace_mut),
        OpInfo("numpy.diag", OpKind.OTHER, (np.diag,), _diag, view_of=_diag_view_of),
        OpInfo("numpy.linalg.norm", OpKind.LINALG, (np.linalg.norm,), _norm),
        OpInfo("numpy.linalg.inv", OpKind.LINALG, (np.linalg.inv,), _square_rule(np.linalg.inv, 0)),
        OpInfo("numpy.linalg.cholesky", OpKind.LINALG, (np.linalg.cholesky,),
               _square_rule(np.linalg.cholesky, 0)),
        OpInfo("numpy.linalg.det", OpKind.LINALG, (np.linalg.det,), _square_rule(np.linalg.det, 2)),
        OpInfo("numpy.linalg.solve", OpKind.LINALG, (np.linalg.solve,), _solve),
    ]
    if hasattr(np.linalg, "vector_norm"):  # NumPy >= 2.0
        rows.append(OpInfo("numpy.linalg.vector_norm", OpKind.LINALG, (np.linalg.vector_norm,),
                           _vector_norm))
        rows.append(OpInfo("numpy.linalg.matrix_norm", OpKind.LINALG, (np.linalg.matrix_norm,),
                           _matrix_norm))
    for row in rows:
        register(row)


_register()
