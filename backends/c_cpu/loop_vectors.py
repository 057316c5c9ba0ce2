"""Slices in C loop bodies: views of any rank whose bounds depend on the induction variable, NumPy
elementwise ops and ufunc.outer on them, stores and in-place updates as C loop nests, and dot / `@`.

How NumPy's semantics are kept: a view is (pointer, lengths, strides) computed at run time as Python's
slice.indices gives each axis; an elementwise expression is evaluated element by element where it is
stored (one IEEE op per NumPy op, -ffp-contract=off; other dtypes than float64: loop_dtypes.py), which
is exact because every NumPy op of the chain makes a fresh array. An expression read twice, read after
a store, or read by anything but elementwise code is written where NumPy computes it into a temporary
buffer (`materialize`). A view the expression reads that shares memory with the stored-to view, other
than element for element, is copied before the store (NumPy's ufuncs and setitem copy overlapping
inputs).
A dot calls NumPy's own BLAS ddot (blas.py) the way np.dot and matmul call it: NumPy's order and bits.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from ...fx_ir import TensorMeta
from .blas import numpy_ddot
from .emitters import C_TYPES
from .loop_dtypes import ITEM_SIZES, compares_floats, constant, loop_dtype, raises_flags, refuse_ufunc
from .loop_reductions import axis_reduce, sums_where_stored
from .loop_exprs import (BROADCAST_STRIDE, IVDEP_MACRO, TEMP_SLOTS, VECTORS, Broadcast, Elementwise, Outer, View, hazard,
                         loop_nest, may_share, spread, substitute, temp_slot, unit_strides, walking_views)
from .tiles import NumpyLoop
from .ufunc_loops import loop_symbol, numpy_loop

if TYPE_CHECKING:
    from .loop_codegen import LoopWriter

VEC = "vec"  # kind of an array value (a view or an expression of views) in the C code

# C helpers of the generated module (after loop_codegen.LOOP_HEAD); DYN_BLAS_INT is set per BLAS
VECTOR_HELPERS = IVDEP_MACRO + """#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef double (*dyn_ddot_fn)(dyn_blas_int, const double *, dyn_blas_int, const double *, dyn_blas_int);
/* Python's slice.indices on an axis of n elements: the first index, and the length as the result */
static inline int64_t dyn_slice(int64_t n, int has_start, int64_t start, int has_stop, int64_t stop, int64_t step,
                                int64_t *first) {
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? n - 1 : n;
    if (!has_start) start = step < 0 ? hi : lo;
    else if (start < 0) { start += n; if (start < 0) start = lo; }
    else if (start > hi) start = hi;
    if (!has_stop) stop = step < 0 ? lo : hi;
    else if (stop < 0) { stop += n; if (stop < 0) stop = lo; }
    else if (stop > hi) stop = hi;
    *first = start;
    if (step < 0) return stop < start ? (start - stop - 1) / (-step) + 1 : 0;
    return start < stop ? (stop - start - 1) / step + 1 : 0;
}
/* whether two strided views (lengths and byte strides per axis) share memory other than element for
   element (the same address, lengths and strides): the ranges of bytes they span are compared */
static int dyn_hazard(const char *a, int na, const int64_t *la, const int64_t *sa,
                      const char *b, int nb, const int64_t *lb, const int64_t *sb) {
    const char *alo = a, *ahi = a + 8, *blo = b, *bhi = b + 8;
    int same = a == b && na == nb;
    for (int k = 0; k < na; k++) {
        if (la[k] == 0) return 0;
        if ((la[k] - 1) * sa[k] < 0) alo += (la[k] - 1) * sa[k]; else ahi += (la[k] - 1) * sa[k];
    }
    for (int k = 0; k < nb; k++) {
        if (lb[k] == 0) return 0;
        if ((lb[k] - 1) * sb[k] < 0) blo += (lb[k] - 1) * sb[k]; else bhi += (lb[k] - 1) * sb[k];
        if (same && (la[k] != lb[k] || (la[k] > 1 && sa[k] != sb[k]))) same = 0;
    }
    return !same && alo < bhi && blo < ahi;
}
/* NumPy's float64 arraytype dot (what matmul calls on two vectors): BLAS ddot in chunks where both
   strides are positive multiples of 8, added to 0.0; else a plain loop */
static double dyn_arraytype_dot(dyn_ddot_fn ddot, int64_t n, const char *x, int64_t sx, const char *y, int64_t sy) {
    double sum = 0.;
    if (sx > 0 && sx % 8 == 0 && sx / 8 <= DYN_BLAS_MAX && sy > 0 && sy % 8 == 0 && sy / 8 <= DYN_BLAS_MAX) {
        while (n > 0) {
            int64_t chunk = n < DYN_BLAS_CHUNK ? n : DYN_BLAS_CHUNK;
            sum += ddot((dyn_blas_int)chunk, (const double *)x, (dyn_blas_int)(sx / 8), (const double *)y,
                        (dyn_blas_int)(sy / 8));
            x += chunk * sx; y += chunk * sy; n -= chunk;
        }
        return sum;
    }
    for (int64_t k = 0; k < n; k++) sum += *(const double *)(x + k * sx) * *(const double *)(y + k * sy);
    return sum;
}
/* np.dot of two float64 vectors (NumPy's cblas_matrixproduct): a length-1 pair is one product, a
   vector with a negative stride is copied to contiguous memory first */
static double dyn_np_dot(dyn_ddot_fn ddot, int64_t n, const char *x, int64_t sx, const char *y, int64_t sy,
                         int *nomem) {
    if (n == 1) return *(const double *)x * *(const double *)y;
    double *tx = 0, *ty = 0, r;
    if (n > 1 && sx < 0) {
        if (!(tx = malloc(n * 8))) { *nomem = 1; return 0.0; }
        for (int64_t k = 0; k < n; k++) tx[k] = *(const double *)(x + k * sx);
        x = (const char *)tx; sx = 8;
    }
    if (n > 1 && sy < 0) {
        if (!(ty = malloc(n * 8))) { free(tx); *nomem = 1; return 0.0; }
        for (int64_t k = 0; k < n; k++) ty[k] = *(const double *)(y + k * sy);
        y = (const char *)ty; sy = 8;
    }
    r = dyn_arraytype_dot(ddot, n, x, sx, y, sy);
    free(tx); free(ty);
    return r;
}
/* NumPy's float64 matmul loop (its gufunc inner loop: BLAS gemv or NumPy's own loop, chosen by NumPy
   from the strides) on one (m, n) @ (n, p) product, called as np.matmul calls it: a missing dimension
   of a vector has length 1 and stride 0; the loop's flags are set apart ("in matmul") */
static void dyn_matmul(void (*fn)(char **, const int64_t *, const int64_t *, void *), void *fn_data,
                       const char *a, int64_t m, int64_t n, int64_t sam, int64_t san, const char *b, int64_t p,
                       int64_t sbn, int64_t sbp, char *out, int64_t som, int64_t sop, int *flags) {
    char *args[3] = {(char *)a, (char *)b, out};
    const int64_t dims[4] = {1, m, n, p}, steps[9] = {0, 0, 0, sam, san, sbn, sbp, som, sop};
    int before = fetestexcept(FE_ALL_EXCEPT);
    fn(args, dims, steps, fn_data);
    int raised = fetestexcept(FE_ALL_EXCEPT) & ~before;
    if (raised) { *flags |= raised; feclearexcept(raised); }
}
/* a dot's floating-point flags are its own (NumPy reports them "in dot"/"in matmul"): set apart */
static inline double dyn_dot(dyn_ddot_fn ddot, int numpy_dot, int64_t n, const char *x, int64_t sx, const char *y,
                             int64_t sy, int *flags, int *nomem) {
    int before = fetestexcept(FE_ALL_EXCEPT);
    double r = numpy_dot ? dyn_np_dot(ddot, n, x, sx, y, sy, nomem) : dyn_arraytype_dot(ddot, n, x, sx, y, sy);
    int raised = fetestexcept(FE_ALL_EXCEPT) & ~before;
    if (raised) { *flags |= raised; feclearexcept(raised); }
    return r;
}
"""


def blas_header() -> str:
    """The BLAS int type and limits of NumPy's ddot (the C module's text depends on them)."""
    ddot = numpy_ddot()
    bits = ddot.int_bits if ddot is not None else 64
    return (f"typedef int{bits}_t dyn_blas_int;\n#define DYN_BLAS_MAX (INT{bits}_MAX - 1)\n"
            f"#define DYN_BLAS_CHUNK (INT{bits}_MAX / 2 + 1)\n")


ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, operator.pow,
               operator.floordiv, operator.mod, operator.and_, operator.or_, operator.xor, operator.lshift,
               operator.rshift, operator.invert}
INPLACE = {operator.iadd, operator.isub, operator.imul, operator.itruediv}



def meta_shape(node: Any) -> Any:
    meta = node.meta.get("val") if hasattr(node, "meta") else None
    return tuple(meta.shape) if isinstance(meta, TensorMeta) else None


def is_slicing(array: Any, index: Any) -> bool:
    """Whether getitem(array, index) gives an array (a slice, or fewer indices than axes)."""
    parts = index if type(index) is tuple else (index,)
    meta = array.meta.get("val") if hasattr(array, "meta") else None
    ndim = meta.ndim if isinstance(meta, TensorMeta) else None
    return any(isinstance(p, slice) for p in parts) or (ndim is not None and len(parts) < ndim)



class Vectors:
    """The array part of a LoopWriter: views, elementwise expressions, temporaries, stores, in-place
    ops, dots."""

    def __init__(self, writer: LoopWriter) -> None:
        self.w = writer
        self.epoch = 0  # stores and nested loops emitted so far (an expression is read where made)
        self.scope = 0  # the loop body being written (nested bodies get their own)
        self.scopes = 0
        self.views: dict[Any, View] = {}  # (array C variable, index) -> its View, for a store to reuse
        self.dots = {"dot": False, "matmul": False}  # which dot flavours the loop calls
        self.used = False  # whether the loop has slices (their C code assumes aligned whole-item strides)
        self.ufuncs = False  # whether expressions use the kernels' C of ufuncs (loop_dtypes.ufunc_helpers)
        self.quiet = False  # whether they compare floats (the function is then not vectorized)
        self.reversed: set[View] = set()  # views that walk an axis backwards (a negative step, np.flip)
        self.temps = 0  # temporary buffers: the function's dyn_tmp[k], kept across iterations, freed at exit
        self.whole_temps: set[View] = set()  # views of whole temporary buffers (C-contiguous)
        self.contiguous: set[str] = set()  # C variables of arguments summed whole: C-contiguous per call

    def refuse(self, why: str) -> Exception:
        from .loop_codegen import Refused

        return Refused(why)

    def view(self, array: Any, index: Any) -> View:
        w = self.w
        base, kind = w.operand(array)
        if kind == VEC and isinstance(base, View):  # a slice of a temporary (b = np.zeros_like(u); b[1:-1] = ...)
            _, sub = self.of_view(base, index)
            if sub is None:
                raise self.refuse("an element of a temporary as a slice")
            return sub
        if kind != "array":
            raise self.refuse("slicing a value that is not an argument array")
        meta = array.meta.get("val")
        if not isinstance(meta, TensorMeta) or meta.ndim == 0:
            raise self.refuse("slicing an array of unknown rank or a 0-d array")
        parts = index if type(index) is tuple else (index,)
        taken = sum(1 for p in parts if p is not None)  # np.newaxis adds an axis and takes none
        if any(p is Ellipsis for p in parts) or taken > meta.ndim:
            raise self.refuse("an index with Ellipsis or too many entries")
        parts = parts + (slice(None),) * (meta.ndim - taken)
        key = (base, tuple((w.operand(p.start)[0] if p.start is not None else None,
                            w.operand(p.stop)[0] if p.stop is not None else None, p.step)
                           if isinstance(p, slice) else "newaxis" if p is None else w.operand(p)[0] for p in parts))
        if key in self.views:
            return self.views[key]
        self.used = True
        offsets, lengths, strides = [], [], []
        axis = -1
        for p in parts:
            if p is None:  # a new axis of length 1
                lengths.append("INT64_C(1)")
                strides.append(BROADCAST_STRIDE)
                continue
            axis += 1
            if not isinstance(p, slice):
                offsets.append(w.index_offset(base, axis, p))
                continue
            first, length, stride = self.slice_axis(f"{base}_n[{axis}]", f"{base}_s[{axis}]", p)
            offsets.append(f"{first} * {base}_s[{axis}]")
            lengths.append(length)
            strides.append(stride)
        data = w.var("p")
        w.lines.append(f"char *{data} = {base} + {' + '.join(offsets) or '0'};")
        self.views[key] = View(data, tuple(lengths), tuple(strides), base, loop_dtype(meta.dtype))
        if any(isinstance(p, slice) and p.step is not None and p.step < 0 for p in parts):
            self.reversed.add(self.views[key])
        return self.views[key]

    def slice_axis(self, size: str, stride: str, part: slice) -> tuple[str, str, str]:
        """C variables of one sliced axis of `size` elements `stride` bytes apart: (first index, length,
        stride of the slice), as Python's slice.indices gives them."""
        w = self.w
        step = 1 if part.step is None else part.step
        if type(step) is not int or step == 0 or abs(step) >= 2 ** 62:
            raise self.refuse("a slice whose step is not a nonzero constant int")
        bounds = []
        for bound in (part.start, part.stop):
            if bound is None:
                bounds.append("0, 0")
                continue
            e, k = w.operand(bound)
            if k != "int":
                raise self.refuse("a slice bound that is not an int")
            bounds.append(f"1, {e}")
        first, length, sliced = w.var("f"), w.var("n"), w.var("s")
        w.lines.append(f"int64_t {first}; int64_t {length} = dyn_slice({size}, {bounds[0]}, {bounds[1]}, "
                       f"INT64_C({step}), &{first}); int64_t {sliced} = INT64_C({step}) * {stride};")
        return first, length, sliced

    def of_view(self, view: View, index: Any) -> tuple[str, View | None]:
        """view[index]: (a pointer to the element, None) where every axis gets an int, else ("", the View)."""
        w = self.w
        parts = index if type(index) is tuple else (index,)
        if any(p is None or p is Ellipsis for p in parts) or len(parts) > len(view.lengths):
            raise self.refuse("an index with None, Ellipsis or too many entries")
        parts = parts + (slice(None),) * (len(view.lengths) - len(parts))
        offsets, lengths, strides = [], [], []
        for axis, (part, size, stride) in enumerate(zip(parts, view.lengths, view.strides)):
            if isinstance(part, slice):
                first, length, sliced = self.slice_axis(size, stride, part)
                offsets.append(f"{first} * {stride}")
                lengths.append(length)
                strides.append(sliced)
                continue
            e, k = w.operand(part)
            if k != "int":
                raise self.refuse("an index that is not an int")
            t = w.var("t")
            w.lines.append(f"int64_t {t} = {e}; if ({t} < 0) {t} += {size};")
            w.lines.append(f"if ({t} < 0 || {t} >= {size}) {{ ints[0] = {e}; ints[1] = {axis}; "
                           f"ints[2] = {size}; goto oob; }}")
            offsets.append(f"{t} * {stride}")
        if not lengths:
            if view.dtype != "f8":
                raise self.refuse("an element of an array that is not float64")
            return f"(double *)({view.data} + {' + '.join(offsets)})", None
        data = w.var("p")
        w.lines.append(f"char *{data} = {view.data} + {' + '.join(offsets)};")
        return "", View(data, tuple(lengths), tuple(strides), view.base, view.dtype)

    def value(self, x: Any) -> Any:
        """A body value as a View, a fresh Elementwise, or a scalar C expression."""
        e, kind = self.w.operand(x)
        if kind == "array" and len(meta_shape(x) or ()) >= 1:
            return self.view(x, ())  # a whole argument
        if kind == VEC:
            expr = self.w.cexpr[x]
            if not isinstance(expr, View) and (expr.epoch != self.epoch or expr.scope != self.scope):
                raise self.refuse("an array expression read after a store or in another loop body")
            return expr
        if kind in ("int", "float"):
            return e
        raise self.refuse("an array operand that is not a slice of a float64 array")

    def check_lengths(self, a: str, b: str) -> None:
        """At run time, what equal shapes in the frontend's metas promise (else a ValueError)."""
        if a != b:
            self.w.lines.append(f"if ({a} != {b}) {{ ints[0] = {a}; ints[1] = {b}; goto shape; }}")

    def result_dtype(self, node: Any) -> str:
        meta = node.meta.get("val")
        try:
            return loop_dtype(meta.dtype) if isinstance(meta, TensorMeta) else loop_dtype(None)
        except (LookupError, TypeError):
            raise self.refuse(f"{getattr(node.target, '__name__', node.target)} giving an array of another "
                              "dtype than float, int or unsigned") from None

    def typed(self, arg: Any, operand: Any, dtype: str) -> Any:
        """An operand of an op whose operands and result are all of `dtype`: a vector of that dtype, or a
        scalar NumPy converts to it exactly (C of the converted value)."""
        if isinstance(operand, VECTORS):
            if operand.dtype == dtype:
                return operand
            if dtype[0] == "f" and np.can_cast(np.dtype(operand.dtype), np.dtype(dtype), "safe"):
                # NumPy casts the operand first: float32 or a narrower int to float64 (C's conversion)
                return Elementwise("", (operand,), operand.lengths, self.epoch, self.scope, dtype, "cast")
            raise self.refuse(f"an op mixing {operand.dtype} and {dtype} arrays (NumPy casts)")
        if dtype == "f8":
            return f"(double)({operand})"
        if hasattr(arg, "op"):
            if dtype == "i8" and self.w.kinds.get(arg) == "int":  # a Python int in int64_t, as NumPy converts it
                return f"(int64_t)({operand})"
            raise self.refuse(f"a scalar that is not a constant with {dtype} arrays (NumPy may raise)")
        converted = constant(arg, dtype)
        if converted is None:
            raise self.refuse(f"the constant {arg!r} with {dtype} arrays (NumPy raises, warns or rounds)")
        return converted

    def ufunc(self, node: Any, name: str | None = None, args: tuple[Any, ...] | None = None) -> None:
        """A NumPy ufunc or operator on arrays of one dtype (`name`: the ufunc's; `args`: its operands,
        the node's by default), as the kernels' exact C of the ufunc for that dtype
        (emitters.EMITTERS), evaluated where stored."""
        name = name or node.target.__name__
        args = node.args if args is None else args
        dtype = self.result_dtype(node)
        why = refuse_ufunc(name, dtype)
        if why is not None:
            raise self.refuse(why)
        operands = [self.typed(a, self.value(a), dtype) for a in args]
        lengths, operands = self.shaped(node, args, operands)
        self.note_op(name, dtype)
        expr = Elementwise("", tuple(operands), lengths, self.epoch, self.scope, dtype, name)
        self.w.bind(node, expr, VEC, np.ndarray)
        if needs_temporary(node):
            self.w.bind(node, self.materialize(expr), VEC, np.ndarray)

    def note_op(self, name: str, dtype: str) -> None:
        """Names an op that can raise NumPy's flags in the loop's warnings; a float compare keeps the
        function's loops scalar."""
        self.ufuncs = True
        if raises_flags(name, dtype):
            self.w.ops.append(name)
        if compares_floats(name, dtype):
            self.quiet = True

    def outer(self, node: Any) -> None:
        """`ufunc.outer(a, b)` of two arrays of one dtype (NPBench floyd_warshall's np.add.outer of a
        column and a row): element (i..., j...) is ufunc(a[i...], b[j...]), evaluated where stored."""
        name = node.target.__self__.__name__
        if node.kwargs or len(node.args) != 2:
            raise self.refuse(f"np.{name}.outer with keywords")
        dtype = self.result_dtype(node)
        why = refuse_ufunc(name, dtype)
        if why is not None:
            raise self.refuse(why)
        left, right = (self.value(a) for a in node.args)
        if not (isinstance(left, VECTORS) and isinstance(right, VECTORS)):
            raise self.refuse(f"np.{name}.outer of a scalar")
        left, right = (self.typed(a, o, dtype) for a, o in zip(node.args, (left, right)))
        self.note_op(name, dtype)
        expr = Outer(name, left, right, left.lengths + right.lengths, self.epoch, self.scope, dtype)
        self.w.bind(node, expr, VEC, np.ndarray)
        if needs_temporary(node):
            self.w.bind(node, self.materialize(expr), VEC, np.ndarray)

    def shaped(self, node: Any, args: tuple[Any, ...], operands: list[Any]) -> tuple[tuple[str, ...], list[Any]]:
        """The result's lengths and the operands, checked equal where the metas equate the shapes and
        broadcast at run time where they do not."""
        vectors = [(a, o) for a, o in zip(args, operands) if isinstance(o, VECTORS)]
        if not vectors:
            raise self.refuse("an op of scalars that is an array")
        shapes = {meta_shape(a) for a, _ in vectors} | {meta_shape(node)}
        lengths = vectors[0][1].lengths
        if len(shapes) == 1 and None not in shapes:
            for _, o in vectors[1:]:
                for a, b in zip(lengths, o.lengths):
                    self.check_lengths(a, b)
            return lengths, operands
        operands, lengths = self.broadcast(operands)
        return lengths, operands

    def arithmetic(self, node: Any, symbol: str, name: str) -> None:
        if self.result_dtype(node) != "f8" or any(
                isinstance(o, VECTORS) and o.dtype != "f8" for o in map(self.value, node.args)):
            self.ufunc(node, name)
            return
        lengths, operands = self.shaped(node, node.args, [self.value(a) for a in node.args])
        if symbol != "neg":  # negation raises no flag (and names no op in a warning)
            self.w.ops.append(name)
        expr = Elementwise(symbol, tuple(operands), lengths, self.epoch, self.scope)
        self.w.bind(node, expr, VEC, np.ndarray)
        if needs_temporary(node):
            self.w.bind(node, self.materialize(expr), VEC, np.ndarray)

    def broadcast(self, operands: list[Any]) -> tuple[list[Any], tuple[str, ...]]:
        """Operands whose shapes the metas do not equate, broadcast as NumPy does at run time (axes
        aligned on the right, an axis of length 1 repeated; other unequal lengths raise NumPy's
        ValueError): the operands wrapped, and the result's lengths."""
        w = self.w
        vectors = [o for o in operands if isinstance(o, VECTORS)]
        ndim = max(len(v.lengths) for v in vectors)
        lengths = []
        for axis in range(ndim):
            own = [v.lengths[axis - ndim + len(v.lengths)] for v in vectors if axis - ndim + len(v.lengths) >= 0]
            n = w.var("n")
            w.lines.append(f"int64_t {n} = {own[0]};")
            for length in own[1:]:
                w.lines.append(f"if ({n} == 1) {n} = {length};")
            for length in own:
                w.lines.append(f"if ({length} != {n} && {length} != 1) {{ ints[0] = {n}; ints[1] = {length}; "
                               "goto shape; }")
            lengths.append(n)
        result = tuple(lengths)
        return [Broadcast(o, result) if isinstance(o, VECTORS) else o for o in operands], result

    def like(self, node: Any, fill: str | None) -> None:
        """np.empty_like / np.zeros_like of an array: a temporary buffer of its shape and dtype (left as
        it is, or filled with `fill`)."""
        if len(node.args) != 1:
            raise self.refuse(f"{node.target.__name__} with a dtype, order or shape")
        source = self.value(node.args[0])
        if not isinstance(source, VECTORS):
            raise self.refuse(f"{node.target.__name__} of a value that is not an array")
        self.w.bind(node, self.materialize(source, fill), VEC, np.ndarray)

    def materialize(self, expr: Any, fill: str | None = "") -> View:
        """The expression's values computed now into a temporary buffer (C order), as NumPy makes its
        fresh array here: a View of it. The buffer is the function's, grown as needed, freed at exit.
        `fill`: a constant to fill it with instead, None to leave it as it is (np.empty_like)."""
        view = self.allocate(expr.lengths, expr.dtype)
        if fill is not None:
            w = self.w
            idx = tuple(w.var("e") for _ in expr.lengths)
            count = w.var("k")
            value = expr.at(idx) if fill == "" else fill
            w.lines.append(f"int64_t {count} = 0;")
            # the buffer is new: nothing the expression reads is in it
            w.lines.append(loop_nest(idx, expr.lengths, f"(({C_TYPES[view.dtype]} *){view.data})[{count}++] = {value};",
                                     True))
        return view

    def allocate(self, lengths: tuple[str, ...], dtype: str = "f8") -> View:
        """A temporary buffer of these lengths and dtype in C order (the function's, grown as needed,
        freed at exit; its values are whatever it held): a View of it."""
        w = self.w
        slot = temp_slot(self.temps)
        cap = f"dyn_cap[{self.temps}]"
        self.temps += 1
        total, data = w.var("n"), w.var("p")
        w.lines.append(f"int64_t {total} = {' * '.join(lengths)};")
        # capacities count bytes: one buffer may hold values of several dtypes in turn
        w.lines.append(f"if ({total} * {ITEM_SIZES[dtype]} > {cap}) {{ free({slot}); {slot} = malloc({total} * "
                       f"{ITEM_SIZES[dtype]} + 8); if (!{slot}) goto nomem; {cap} = {total} * {ITEM_SIZES[dtype]}; }}")
        strides = [f"INT64_C({ITEM_SIZES[dtype]})"]
        for length in reversed(lengths[1:]):
            stride = w.var("s")
            w.lines.append(f"int64_t {stride} = {strides[0]} * {length};")
            strides.insert(0, stride)
        w.lines.append(f"char *{data} = (char *){slot};")
        view = View(data, lengths, tuple(strides), slot, dtype)
        self.whole_temps.add(view)
        return view

    def store_loop(self, target: View, rhs: Any, update: str | None) -> None:
        """target[e] = rhs[e] (or target[e] op rhs[e]) for every index e, rhs broadcast to target's shape
        as NumPy broadcasts it. A view rhs reads that shares target's memory other than element for
        element is copied first (`snapshot`); then one pass, with a copy of the nest for unit last
        strides that the compiler vectorizes. (Each copy of the expression costs compile time.)"""
        w = self.w
        idx = tuple(w.var("e") for _ in target.lengths)

        def assign(t: View, x: str) -> str:
            value = x if update is None else f"{t.at(idx)} {update} {x}"
            return f"{t.at(idx)} = {value};"
        if not isinstance(rhs, VECTORS):
            w.lines.append(loop_nest(idx, target.lengths, assign(target, f"({C_TYPES[target.dtype]})({rhs})")))
        else:
            if len(rhs.lengths) > len(target.lengths):
                raise self.refuse("storing an array of more axes than its target")
            for r, t in zip(reversed(rhs.lengths), reversed(target.lengths)):
                if r != t:
                    w.lines.append(f"if ({r} != {t} && {r} != 1) {{ ints[0] = {t}; ints[1] = {r}; goto shape; }}")
            rhs, copies = self.snapshot(target, rhs)
            spread_rhs = spread(rhs, target.lengths, w)
            walking = dict.fromkeys(v for v in [target, *walking_views(spread_rhs)] if v.strides[-1] != BROADCAST_STRIDE)
            unit = " && ".join(f"{v.strides[-1]} == {ITEM_SIZES[v.dtype]}" for v in walking)
            # after snapshot() every view read is disjoint from the target or read element for element
            w.lines.append(f"if ({unit}) {{")
            w.lines.append(f"    {loop_nest(idx, target.lengths, assign(unit_strides(target), unit_strides(spread_rhs).at(idx)), True)}")
            w.lines.append("} else {")
            w.lines.append(f"    {loop_nest(idx, target.lengths, assign(target, spread_rhs.at(idx)), True)}")
            w.lines.append("}" + (f" free({copies});" if copies else ""))
        w.wrote(target.base)
        self.epoch += 1

    def snapshot(self, target: View, rhs: Any) -> tuple[Any, str | None]:
        """rhs with every view it reads that shares target's memory other than element for element
        (checked at run time: dyn_hazard) read from a copy in C order made before the store, as NumPy's
        ufuncs and setitem copy such inputs first (only the overlapping inputs are copied: floyd_warshall's
        row and column of k, not the whole expression). Returns (rhs, the C variable of the copies'
        buffer, to free after the store; None where no view can overlap)."""
        views = [v for v in dict.fromkeys(rhs.views()) if v != target and may_share(target, v)]
        if not views:
            return rhs, None
        w = self.w
        buffer, total = w.var("snap"), w.var("n")
        flags = []
        w.lines.append(f"int64_t {total} = 0;")
        for v in views:
            flags.append(w.var("h"))
            w.lines.append(f"int {flags[-1]} = {hazard(target, v)}; if ({flags[-1]}) {total} += "
                           f"({' * '.join(v.lengths)}) * {ITEM_SIZES[v.dtype]};")
        w.lines.append(f"char *{buffer} = {total} ? malloc({total} + 8) : 0; if ({total} && !{buffer}) goto nomem;")
        offset = w.var("o")
        w.lines.append(f"int64_t {offset} = 0;")
        copies: dict[View, View] = {}
        for v, flag in zip(views, flags):
            data = w.var("p")
            strides = tuple(w.var("s") for _ in v.strides)
            w.lines.append(f"char *{data} = {v.data}; " + " ".join(
                f"int64_t {s} = {old};" for s, old in zip(strides, v.strides)))
            inner = tuple(w.var("e") for _ in v.lengths)
            count, ctype = w.var("k"), C_TYPES[v.dtype]
            contiguous = [f"{strides[-1]} = {ITEM_SIZES[v.dtype]};"] + [
                f"{strides[k]} = {strides[k + 1]} * {v.lengths[k + 1]};" for k in reversed(range(len(v.lengths) - 1))]
            w.lines.append(f"if ({flag}) {{ int64_t {count} = 0; {data} = {buffer} + {offset}; "
                           + loop_nest(inner, v.lengths, f"(({ctype} *){data})[{count}++] = {v.at(inner)};", True)
                           + f" {offset} += {count} * {ITEM_SIZES[v.dtype]}; {' '.join(contiguous)} }}")
            copies[v] = View(data, v.lengths, strides, v.base, v.dtype)
        return substitute(rhs, copies), buffer

    def setitem(self, array: Any, index: Any, value: Any) -> None:
        target = self.view(array, index)
        rhs = self.value(value)
        if rhs == target:  # `A[s] += x` stores A[s] into itself: NumPy copies nothing
            return
        if isinstance(rhs, VECTORS) and rhs.dtype[0] == target.dtype[0] == "f" \
                and ITEM_SIZES[rhs.dtype] > ITEM_SIZES[target.dtype]:
            # NumPy's setitem casts float64 to float32 (C's conversion: rounded, its flags "in cast")
            self.w.ops.append("cast")
            rhs = Elementwise("", (rhs,), rhs.lengths, self.epoch, self.scope, target.dtype, "cast")
        elif isinstance(rhs, VECTORS) or target.dtype != "f8":  # NumPy casts other dtypes on assignment
            rhs = self.typed(value, rhs, target.dtype)
        self.store_loop(target, rhs, None)

    def inplace(self, node: Any, symbol: str, name: str) -> None:
        target = self.value(node.args[0])
        if not isinstance(target, View):
            raise self.refuse("an in-place op on an array that is not a slice of an argument")
        rhs = self.value(node.args[1])
        if target.dtype != "f8" or isinstance(rhs, VECTORS) and rhs.dtype != "f8":
            # target op= rhs computed as the ufunc on the target's dtype, stored element for element
            why = refuse_ufunc(name, target.dtype)
            if why is not None:
                raise self.refuse(why)
            rhs = self.typed(node.args[1], rhs, target.dtype)
            self.note_op(name, target.dtype)
            if isinstance(rhs, VECTORS) and rhs.lengths != target.lengths:
                if len(rhs.lengths) > len(target.lengths):
                    raise self.refuse("an in-place op with an array of more axes than its target")
                for r, t in zip(reversed(rhs.lengths), reversed(target.lengths)):
                    self.w.lines.append(f"if ({r} != {t} && {r} != 1) {{ ints[0] = {t}; ints[1] = {r}; goto shape; }}")
                rhs = Broadcast(rhs, target.lengths)
            expr = Elementwise("", (target, rhs), target.lengths, self.epoch, self.scope, target.dtype, name)
            self.store_loop(target, expr, None)
            self.w.bind(node, target, VEC, np.ndarray)
            return
        self.w.ops.append(name)
        self.store_loop(target, rhs, symbol)
        self.w.bind(node, target, VEC, np.ndarray)

    def flip(self, node: Any) -> None:
        v = self.value(node.args[0])
        if not isinstance(v, View) or node.kwargs or len(node.args) != 1:
            raise self.refuse("np.flip of a value that is not a slice, or with an axis")
        w = self.w
        data = w.var("p")
        nonempty = " && ".join(f"{n} > 0" for n in v.lengths)
        last = " + ".join(f"({n} - 1) * {s}" for n, s in zip(v.lengths, v.strides))
        w.lines.append(f"char *{data} = {v.data}; if ({nonempty}) {data} += {last};")
        strides = []
        for s in v.strides:
            strides.append(w.var("s"))
            w.lines.append(f"int64_t {strides[-1]} = -{s};")
        flipped = View(data, v.lengths, tuple(strides), v.base, v.dtype)
        self.reversed.add(flipped)
        w.bind(node, flipped, VEC, np.ndarray)

    def square(self, node: Any) -> None:
        """`x ** 2` of a float64 array: NumPy runs its square loop (one product per element, its
        warnings "in square"); other powers and scalars' (libm's pow) are refused."""
        base, exponent = node.args
        if type(exponent) not in (int, float) or exponent != 2:
            raise self.refuse("a power other than ** 2")
        x = self.value(base)
        if not isinstance(x, VECTORS):
            raise self.refuse("a power of a scalar")
        if x.dtype != "f8":
            self.ufunc(node, "square", (base,))
            return
        self.w.ops.append("square")
        expr = Elementwise("*", (x, x), x.lengths, self.epoch, self.scope)
        self.w.bind(node, expr, VEC, np.ndarray)
        if needs_temporary(node):
            self.w.bind(node, self.materialize(expr), VEC, np.ndarray)

    def total(self, node: Any) -> None:
        """np.sum(x) / x.sum() of a whole float64 argument (C-contiguous: checked per call) or temporary:
        NumPy's own add loop in its reduce form over all the values in one call, from 0.0, as NumPy
        reduces a contiguous array (its pairwise sum; "... encountered in reduce")."""
        axis = node.kwargs.get("axis", node.args[1] if len(node.args) > 1 else None)
        if set(node.kwargs) - {"axis"} or len(node.args) > 2 or node.kwargs and len(node.args) > 1:
            raise self.refuse("a sum with a dtype, out or keepdims")
        if axis is not None:
            axis_reduce(self, node, axis)
            return
        x = self.value(node.args[0])
        if isinstance(x, VECTORS) and x.dtype != "f8":
            raise self.refuse(f"a sum of {x.dtype} values")
        whole_argument = getattr(node.args[0], "op", None) == "placeholder" and isinstance(x, View)
        if not (whole_argument or x in self.whole_temps):
            raise self.refuse("a sum of a slice (NumPy's order depends on its layout)")
        if whole_argument:
            self.contiguous.add(x.base)
        f8 = np.dtype(np.float64)
        loop = NumpyLoop(loop_symbol("add", (f8, f8), f8), "add", (f8, f8), f8)
        if loop not in self.w.numpy_loops:
            self.w.numpy_loops.append(loop)
        var, n = self.w.var("x"), self.w.var("n")
        self.w.ops.append("reduce")
        self.w.lines.append(f"double {var} = 0.0; int64_t {n} = {' * '.join(x.lengths)}; if ({n} > 0) {{ "
                            f"char *args_[3] = {{(char *)&{var}, {x.data}, (char *)&{var}}}; "
                            "const int64_t steps_[3] = {0, 8, 0}; fpflags |= fetestexcept(DYN_FLAGS); "
                            f"{loop.symbol}(args_, &{n}, steps_, {loop.symbol}_data); }}")
        self.w.bind(node, var, "float", np.float64)

    def extreme(self, node: Any) -> None:
        """np.max / np.min of an array along constant axes (loop_reductions.axis_reduce)."""
        axis = node.kwargs.get("axis", node.args[1] if len(node.args) > 1 else None)
        if axis is None or len(node.args) > 2 or node.kwargs and len(node.args) > 1:
            raise self.refuse(f"np.{node.target.__name__} of a whole array or with out, keepdims or initial")
        axis_reduce(self, node, axis)

    def copy(self, node: Any) -> None:
        """`x.copy()` of a slice or an argument: its values now, in a temporary buffer in C order."""
        if len(node.args) != 1:
            raise self.refuse("copy() with an order")
        source = self.value(node.args[0])
        if not isinstance(source, VECTORS):
            raise self.refuse("copy() of a value that is not an array")
        self.w.bind(node, self.materialize(source), VEC, np.ndarray)

    def matvec(self, node: Any, x: View, y: View) -> None:
        """`x @ y` of a vector and a matrix (either way round): NumPy's own float64 matmul loop called as
        np.matmul calls it (BLAS gemv where NumPy picks it, else NumPy's loop: NumPy's bits either
        way), into a fresh vector."""
        f8 = np.dtype(np.float64)
        if numpy_loop("matmul", (f8, f8), f8) is None:
            raise self.refuse("NumPy's matmul loop for float64 was not found")
        loop = NumpyLoop(loop_symbol("matmul", (f8, f8), f8), "matmul", (f8, f8), f8)
        if loop not in self.w.numpy_loops:
            self.w.numpy_loops.append(loop)
        if len(x.lengths) == 1:  # (n,) @ (n, p): m is missing
            self.check_lengths(x.lengths[0], y.lengths[0])
            out = self.allocate((y.lengths[1],))
            a = (x.data, "INT64_C(1)", x.lengths[0], "INT64_C(0)", x.strides[0])
            b = (y.data, y.lengths[1], y.strides[0], y.strides[1])
            o = (out.data, "INT64_C(0)", "INT64_C(8)")
        else:  # (m, n) @ (n,): p is missing
            self.check_lengths(x.lengths[1], y.lengths[0])
            out = self.allocate((x.lengths[0],))
            a = (x.data, x.lengths[0], x.lengths[1], x.strides[0], x.strides[1])
            b = (y.data, "INT64_C(1)", y.strides[0], "INT64_C(0)")
            o = (out.data, "INT64_C(8)", "INT64_C(0)")
        self.dots["matmul"] = True
        self.w.lines.append(f"dyn_matmul((void (*)(char **, const int64_t *, const int64_t *, void *)){loop.symbol}, "
                            f"{loop.symbol}_data, {', '.join(a)}, {', '.join(b)}, {', '.join(o)}, &matmul_flags);")
        self.w.bind(node, out, VEC, np.ndarray)

    def dot(self, node: Any, flavour: str) -> None:
        """np.dot ("dot") or `@` ("matmul") of two 1-d views: NumPy's BLAS ddot as NumPy calls it; `@` of
        a vector and a matrix: NumPy's matmul loop (`matvec`)."""
        x, y = (self.value(a) for a in node.args)
        if any(isinstance(v, VECTORS) and v.dtype != "f8" for v in (x, y)):
            raise self.refuse(f"{flavour} of arrays that are not float64")
        if flavour == "matmul" and isinstance(x, View) and isinstance(y, View) \
                and sorted((len(x.lengths), len(y.lengths))) == [1, 2]:
            self.matvec(node, x, y)
            return
        if numpy_ddot() is None:
            raise self.refuse("no BLAS ddot reproducing np.dot was found in this process")
        if not (isinstance(x, View) and isinstance(y, View) and len(x.lengths) == len(y.lengths) == 1):
            raise self.refuse(f"{flavour} of values that are not 1-d slices")
        self.check_lengths(x.lengths[0], y.lengths[0])  # NumPy raises ValueError too
        self.dots[flavour] = True
        var = self.w.var("d")
        self.w.lines.append(f"double {var} = dyn_dot(ddot, {int(flavour == 'dot')}, {x.lengths[0]}, {x.data}, "
                            f"{x.strides[0]}, {y.data}, {y.strides[0]}, &{flavour}_flags, &dyn_nomem); "
                            "if (dyn_nomem) goto nomem;")
        self.w.bind(node, var, "float", np.float64)

    def declarations(self) -> tuple[str, str]:
        """C code of the function's temporary buffers: (declarations, what frees them at exit)."""
        if not self.temps:
            return "", ""
        return (f"    double *{TEMP_SLOTS}[{self.temps}] = {{0}}; int64_t dyn_cap[{self.temps}] = {{0}};\n",
                f"    for (int k = 0; k < {self.temps}; k++) free({TEMP_SLOTS}[k]);\n")


def evaluates_where_stored(target: Any) -> bool:
    """Whether a call of `target` embeds its array operands' expressions (an elementwise op)."""
    if isinstance(target, np.ufunc):
        return target.nout == 1 and target.signature is None
    owner = getattr(target, "__self__", None)
    return isinstance(owner, np.ufunc) and getattr(target, "__name__", "") == "outer"


def needs_temporary(node: Any) -> bool:
    """Whether an elementwise expression must be computed where it is made rather than where it is
    stored: it has several users, a user that is not elementwise code (a dot, a nested loop, the
    loop's output), or a store or nested loop comes between it and its user (which could change what
    its views read)."""
    users = list(node.users)
    if len(users) != 1:
        return True
    user = users[0]
    lazy = user.op == "call_function" and (
        user.target in ELEMENTWISE or evaluates_where_stored(user.target) or sums_where_stored(user, node)
        or (user.target is operator.setitem and user.args[2] is node)
        or (user.target in INPLACE and user.args[1] is node and user.args[0] is not node))
    if not lazy:
        return True
    between = node.next
    while between is not None and between is not user:
        if between.op == "call_module" or (between.op == "call_function" and (
                between.target is operator.setitem or between.target in INPLACE)):
            return True
        between = between.next
    return False
