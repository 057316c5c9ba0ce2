"""1-d slices in C loop bodies: views whose bounds depend on the induction variable, NumPy float64
elementwise arithmetic on them, in-place updates and stores as inner C loops, and dot / `@` of two views.

How NumPy's semantics are kept: a view is (pointer, length, stride) computed at run time as Python's
slice.indices gives it; an elementwise expression is evaluated element by element where it is stored
(one IEEE op per NumPy op, -ffp-contract=off), which is exact because every NumPy op of the chain
makes a fresh array; where the stored-to view shares memory with a view the expression reads, other
than element for element, the expression goes through a scratch buffer first (NumPy's ufuncs and
setitem copy overlapping inputs). A dot calls NumPy's own BLAS ddot (blas.py) the way np.dot and
matmul call it, so its sum has NumPy's order and bits.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ...fx_ir import TensorMeta
from .blas import numpy_ddot

if TYPE_CHECKING:
    from .loop_codegen import LoopWriter

VEC = "vec"  # kind of a 1-d float64 array value in the C code

# C helpers of the generated module (after loop_codegen.LOOP_HEAD); DYN_BLAS_INT is set per BLAS
VECTOR_HELPERS = """#include <math.h>
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
/* whether two views of n elements share memory other than element for element */
static inline int dyn_hazard(const char *a, int64_t sa, const char *b, int64_t sb, int64_t n) {
    if (n == 0 || (a == b && sa == sb)) return 0;
    const char *alo = sa < 0 ? a + (n - 1) * sa : a, *ahi = (sa < 0 ? a : a + (n - 1) * sa) + 8;
    const char *blo = sb < 0 ? b + (n - 1) * sb : b, *bhi = (sb < 0 ? b : b + (n - 1) * sb) + 8;
    return alo < bhi && blo < ahi;
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


@dataclass(frozen=True)
class View:
    """A 1-d strided view in C: variables holding its first element's address, length and stride
    (bytes), and the C variable of the argument array it views."""
    data: str
    length: str
    stride: str
    base: str

    def at(self, e: str) -> str:
        return f"*(double *)({self.data} + {e} * {self.stride})"

    def views(self) -> list[View]:
        return [self]


@dataclass(frozen=True)
class Elementwise:
    """A NumPy elementwise op on views and scalars, evaluated where it is stored (never later than the
    program point and loop body it was made in: `epoch` and `scope` say where)."""
    symbol: str  # C binary operator, or "neg"
    operands: tuple[Any, ...]  # View, Elementwise, Broadcast, or a scalar's C expression
    length: str
    epoch: int
    scope: int

    def at(self, e: str) -> str:
        parts = [o.at(e) if isinstance(o, VECTORS) else f"(double)({o})" for o in self.operands]
        if self.symbol == "neg":
            return f"(-{parts[0]})"
        return f"({parts[0]} {self.symbol} {parts[1]})"

    def views(self) -> list[View]:
        return [v for o in self.operands if isinstance(o, VECTORS) for v in o.views()]


@dataclass(frozen=True)
class Broadcast:
    """An operand NumPy broadcasts at run time: one element repeated where its length is 1."""
    inner: Any  # View, Elementwise or Broadcast
    length: str  # the broadcast length

    def at(self, e: str) -> str:
        return self.inner.at(f"({self.inner.length} == 1 ? 0 : {e})")

    def views(self) -> list[View]:
        return self.inner.views()


VECTORS = (View, Elementwise, Broadcast)


def unit_strides(expr: Any) -> Any:
    """The expression with every view's stride the constant 8 (C code for contiguous slices)."""
    if isinstance(expr, View):
        return replace(expr, stride="8")
    if isinstance(expr, Elementwise):
        return replace(expr, operands=tuple(unit_strides(o) for o in expr.operands))
    if isinstance(expr, Broadcast):
        return replace(expr, inner=unit_strides(expr.inner))
    return expr


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
    """The vector part of a LoopWriter: views, elementwise expressions, stores, in-place ops, dots."""

    def __init__(self, writer: LoopWriter) -> None:
        self.w = writer
        self.epoch = 0  # stores and nested loops emitted so far (an expression is read where made)
        self.scope = 0  # the loop body being written (nested bodies get their own)
        self.scopes = 0
        self.views: dict[Any, View] = {}  # (array C variable, index) -> its View, for a store to reuse
        self.dots = {"dot": False, "matmul": False}  # which dot flavours the loop calls
        self.used = False  # whether the loop has slices (their C code assumes aligned 8-byte strides)

    def refuse(self, why: str) -> Exception:
        from .loop_codegen import Refused

        return Refused(why)

    def view(self, array: Any, index: Any) -> View:
        w = self.w
        base, kind = w.operand(array)
        if kind != "array":
            raise self.refuse("slicing a value that is not an argument array")
        meta = array.meta.get("val")
        if not isinstance(meta, TensorMeta):
            raise self.refuse("slicing an array of unknown rank")
        parts = index if type(index) is tuple else (index,)
        if any(p is None or p is Ellipsis for p in parts) or len(parts) > meta.ndim:
            raise self.refuse("an index with None, Ellipsis or too many entries")
        parts = parts + (slice(None),) * (meta.ndim - len(parts))
        key = (base, tuple((w.operand(p.start)[0] if p.start is not None else None,
                            w.operand(p.stop)[0] if p.stop is not None else None, p.step)
                           if isinstance(p, slice) else w.operand(p)[0] for p in parts))
        if key in self.views:
            return self.views[key]
        self.used = True
        offsets, sliced = [], []
        for axis, p in enumerate(parts):
            if not isinstance(p, slice):
                offsets.append(w.index_offset(base, axis, p))
                continue
            step = 1 if p.step is None else p.step
            if type(step) is not int or step == 0 or abs(step) >= 2 ** 62:
                raise self.refuse("a slice whose step is not a nonzero constant int")
            bounds = []
            for bound in (p.start, p.stop):
                if bound is None:
                    bounds.append("0, 0")
                    continue
                e, k = w.operand(bound)
                if k != "int":
                    raise self.refuse("a slice bound that is not an int")
                bounds.append(f"1, {e}")
            first, length = w.var("f"), w.var("n")
            w.lines.append(f"int64_t {first}; int64_t {length} = dyn_slice({base}_n[{axis}], {bounds[0]}, "
                           f"{bounds[1]}, INT64_C({step}), &{first});")
            offsets.append(f"{first} * {base}_s[{axis}]")
            sliced.append((axis, length, step))
        if len(sliced) != 1:
            raise self.refuse("a slice of more than one axis (only 1-d views lower)")
        axis, length, step = sliced[0]
        data, stride = w.var("p"), w.var("s")
        w.lines.append(f"char *{data} = {base} + {' + '.join(offsets)}; "
                       f"int64_t {stride} = INT64_C({step}) * {base}_s[{axis}];")
        self.views[key] = View(data, length, stride, base)
        return self.views[key]

    def of_view(self, view: View, index: Any) -> tuple[str, View | None]:
        """view[index] of a 1-d view: (a pointer to the element, None) for an int, else (a new View)."""
        w = self.w
        part = index[0] if type(index) is tuple and len(index) == 1 else index
        if not isinstance(part, slice):
            e, k = w.operand(part)
            if k != "int":
                raise self.refuse("an index that is not an int")
            t = w.var("t")
            w.lines.append(f"int64_t {t} = {e}; if ({t} < 0) {t} += {view.length};")
            w.lines.append(f"if ({t} < 0 || {t} >= {view.length}) {{ ints[0] = {e}; ints[1] = 0; "
                           f"ints[2] = {view.length}; goto oob; }}")
            return f"(double *)({view.data} + {t} * {view.stride})", None
        step = 1 if part.step is None else part.step
        if type(step) is not int or step == 0 or abs(step) >= 2 ** 62:
            raise self.refuse("a slice whose step is not a nonzero constant int")
        bounds = []
        for bound in (part.start, part.stop):
            e, k = w.operand(bound) if bound is not None else ("0", "int")
            if k != "int":
                raise self.refuse("a slice bound that is not an int")
            bounds.append(f"{int(bound is not None)}, {e}")
        first, length, data, stride = w.var("f"), w.var("n"), w.var("p"), w.var("s")
        w.lines.append(f"int64_t {first}; int64_t {length} = dyn_slice({view.length}, {bounds[0]}, {bounds[1]}, "
                       f"INT64_C({step}), &{first});")
        w.lines.append(f"char *{data} = {view.data} + {first} * {view.stride}; "
                       f"int64_t {stride} = INT64_C({step}) * {view.stride};")
        return "", View(data, length, stride, view.base)

    def value(self, x: Any) -> Any:
        """A body value as a View, a fresh Elementwise, or a scalar C expression (None for others)."""
        e, kind = self.w.operand(x)
        if kind == "array" and len(meta_shape(x) or ()) == 1:
            return self.view(x, ())  # a whole 1-d argument
        if kind == VEC:
            expr = self.w.cexpr[x]
            if isinstance(expr, Elementwise) and (expr.epoch != self.epoch or expr.scope != self.scope):
                raise self.refuse("an array expression read after a store or in another loop body")
            return expr
        if kind in ("int", "float"):
            return e
        raise self.refuse("an array operand that is not a 1-d slice")

    def same_length(self, nodes: list[Any]) -> None:
        shapes = {meta_shape(n) for n in nodes}
        if len(shapes) != 1 or None in shapes:
            raise self.refuse("operands whose lengths are not the same expression")

    def check_lengths(self, a: str, b: str) -> None:
        """At run time, what equal shapes in the frontend's metas promise (else a ValueError)."""
        if a != b:
            self.w.lines.append(f"if ({a} != {b}) {{ ints[0] = {a}; ints[1] = {b}; goto shape; }}")

    def arithmetic(self, node: Any, symbol: str, name: str) -> None:
        operands = [self.value(a) for a in node.args]
        vectors = [(a, o) for a, o in zip(node.args, operands) if isinstance(o, VECTORS)]
        shapes = {meta_shape(a) for a, _ in vectors} | {meta_shape(node)}
        length = vectors[0][1].length
        if len(shapes) == 1 and None not in shapes:
            for _, o in vectors[1:]:
                self.check_lengths(length, o.length)
        else:
            operands = self.broadcast(operands)
            length = next(o.length for o in operands if isinstance(o, Broadcast))
        if symbol != "neg":  # negation raises no flag (and names no op in a warning)
            self.w.ops.append(name)
        self.w.bind(node, Elementwise(symbol, tuple(operands), length, self.epoch, self.scope), VEC, np.ndarray)

    def broadcast(self, operands: list[Any]) -> list[Any]:
        """Operands whose lengths the metas do not equate, broadcast as NumPy does at run time: one of
        length 1 repeats its element; other unequal lengths raise NumPy's ValueError."""
        w = self.w
        vectors = [o for o in operands if isinstance(o, VECTORS)]
        n = w.var("n")
        w.lines.append(f"int64_t {n} = {vectors[0].length};")
        for v in vectors[1:]:
            w.lines.append(f"if ({n} == 1) {n} = {v.length};")
        for v in vectors:
            w.lines.append(f"if ({v.length} != {n} && {v.length} != 1) {{ ints[0] = {n}; ints[1] = {v.length}; "
                           "goto shape; }")
        return [Broadcast(o, n) if isinstance(o, VECTORS) else o for o in operands]

    def store_loop(self, target: View, rhs: Any, update: str | None) -> None:
        """target[e] = rhs[e] (or target[e] op rhs[e]) for every e. Where rhs reads target's memory
        other than element for element, or has one element (NumPy broadcasts it), rhs goes through a
        scratch vector first; else one pass, with a copy of the loop for unit strides that the compiler
        vectorizes. (Each copy of the expression costs compile time: unrolled bodies hold many.)"""
        w = self.w
        e = w.var("e")

        def fill(t: View, x: str) -> str:
            value = x if update is None else f"{t.at(e)} {update} {x}"
            return f"for (int64_t {e} = 0; {e} < {t.length}; {e}++) {t.at(e)} = {value};"
        if not isinstance(rhs, VECTORS):
            w.lines.append(fill(target, f"(double)({rhs})"))
        else:
            w.lines.append(f"if ({rhs.length} != {target.length} && {rhs.length} != 1) "
                           f"{{ ints[0] = {target.length}; ints[1] = {rhs.length}; goto shape; }}")
            views = list(dict.fromkeys(rhs.views()))
            hazard = " || ".join([f"{rhs.length} != {target.length}"] + [
                f"dyn_hazard({target.data}, {target.stride}, {v.data}, {v.stride}, {target.length})" for v in views])
            unit = " && ".join(f"{v.stride} == 8" for v in dict.fromkeys([target, *views]))
            tmp = w.var("tmp")
            w.lines.append(f"if (!({hazard})) {{")
            w.lines.append(f"    if ({unit}) {{ {fill(unit_strides(target), unit_strides(rhs).at(e))} }}")
            w.lines.append(f"    else {{ {fill(target, rhs.at(e))} }}")
            w.lines.append("} else {")
            w.lines.append(f"    double *{tmp} = malloc(({rhs.length} + 1) * 8); if (!{tmp}) goto nomem;")
            w.lines.append(f"    for (int64_t {e} = 0; {e} < {rhs.length}; {e}++) {tmp}[{e}] = {rhs.at(e)};")
            w.lines.append(f"    {fill(target, f'{tmp}[{rhs.length} == 1 ? 0 : {e}]')}")
            w.lines.append(f"    free({tmp});\n}}")
        w.wrote(target.base)
        self.epoch += 1

    def setitem(self, array: Any, index: Any, value: Any) -> None:
        target = self.view(array, index)
        rhs = self.value(value)
        if rhs == target:  # `A[s] += x` stores A[s] into itself: NumPy copies nothing
            return
        if isinstance(rhs, VECTORS) and len(meta_shape(value) or ()) != 1:
            raise self.refuse("storing an array that is not 1-d")
        self.store_loop(target, rhs, None)

    def inplace(self, node: Any, symbol: str, name: str) -> None:
        target = self.value(node.args[0])
        if not isinstance(target, View):
            raise self.refuse("an in-place op on an array that is not a slice of an argument")
        rhs = self.value(node.args[1])
        self.w.ops.append(name)
        self.store_loop(target, rhs, symbol)
        self.w.bind(node, target, VEC, np.ndarray)

    def flip(self, node: Any) -> None:
        v = self.value(node.args[0])
        if not isinstance(v, View) or node.kwargs or len(node.args) != 1:
            raise self.refuse("np.flip of a value that is not a 1-d slice, or with an axis")
        w = self.w
        data, stride = w.var("p"), w.var("s")
        w.lines.append(f"char *{data} = {v.length} > 0 ? {v.data} + ({v.length} - 1) * {v.stride} : {v.data}; "
                       f"int64_t {stride} = -{v.stride};")
        w.bind(node, View(data, v.length, stride, v.base), VEC, np.ndarray)

    def dot(self, node: Any, flavour: str) -> None:
        """np.dot ("dot") or `@` ("matmul") of two 1-d views: NumPy's BLAS ddot as NumPy calls it."""
        if numpy_ddot() is None:
            raise self.refuse("no BLAS ddot reproducing np.dot was found in this process")
        x, y = (self.value(a) for a in node.args)
        if not (isinstance(x, View) and isinstance(y, View)):
            raise self.refuse(f"{flavour} of values that are not 1-d slices")
        self.check_lengths(x.length, y.length)  # NumPy raises ValueError too
        self.dots[flavour] = True
        var = self.w.var("d")
        self.w.lines.append(f"double {var} = dyn_dot(ddot, {int(flavour == 'dot')}, {x.length}, {x.data}, {x.stride}, "
                            f"{y.data}, {y.stride}, &{flavour}_flags, &dyn_nomem); if (dyn_nomem) goto nomem;")
        self.w.bind(node, var, "float", np.float64)
