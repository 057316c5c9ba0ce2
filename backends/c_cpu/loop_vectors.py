"""Slices in C loop bodies: views of any rank whose bounds depend on the induction variable, NumPy
float64 elementwise arithmetic on them, stores and in-place updates as C loop nests, and dot / `@`.

How NumPy's semantics are kept: a view is (pointer, lengths, strides) computed at run time as Python's
slice.indices gives each axis; an elementwise expression is evaluated element by element where it is
stored (one IEEE op per NumPy op, -ffp-contract=off), which is exact because every NumPy op of the
chain makes a fresh array. An expression read twice, read after a store, or read by anything but
elementwise code is written where NumPy computes it into a temporary buffer (`materialize`). Where the
stored-to view shares memory with a view the expression reads, other than element for element, the
expression goes through a scratch buffer first (NumPy's ufuncs and setitem copy overlapping inputs).
A dot calls NumPy's own BLAS ddot (blas.py) the way np.dot and matmul call it: NumPy's order and bits.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ...fx_ir import TensorMeta
from .blas import numpy_ddot
from .tiles import NumpyLoop
from .ufunc_loops import loop_symbol, numpy_loop

if TYPE_CHECKING:
    from .loop_codegen import LoopWriter

VEC = "vec"  # kind of a float64 array value (a view or an expression of views) in the C code

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


@dataclass(frozen=True)
class View:
    """A strided view in C: variables holding its first element's address, its length and stride
    (bytes) per axis, and the C variable of the array it views (an argument or a temporary)."""
    data: str
    lengths: tuple[str, ...]
    strides: tuple[str, ...]
    base: str

    def at(self, idx: tuple[str, ...]) -> str:
        offset = " + ".join(f"{e} * {s}" for e, s in zip(idx, self.strides))
        return f"*(double *)({self.data} + {offset})"

    def views(self) -> list[View]:
        return [self]


@dataclass(frozen=True)
class Elementwise:
    """A NumPy elementwise op on views and scalars, evaluated where it is stored (never later than the
    program point and loop body it was made in: `epoch` and `scope` say where)."""
    symbol: str  # C binary operator, or "neg"
    operands: tuple[Any, ...]  # View, Elementwise, Broadcast (all of `lengths`), or a scalar's C expression
    lengths: tuple[str, ...]
    epoch: int
    scope: int

    def at(self, idx: tuple[str, ...]) -> str:
        parts = [o.at(idx) if isinstance(o, VECTORS) else f"(double)({o})" for o in self.operands]
        if self.symbol == "neg":
            return f"dyn_neg_f8({parts[0]})"  # emitters.NAN_SAFE_SOURCE: why
        return f"({parts[0]} {self.symbol} {parts[1]})"

    def views(self) -> list[View]:
        return [v for o in self.operands if isinstance(o, VECTORS) for v in o.views()]


@dataclass(frozen=True)
class Broadcast:
    """An operand NumPy broadcasts at run time to `lengths`: its axes aligned on the right, an axis of
    length 1 repeating its element."""
    inner: Any  # View, Elementwise or Broadcast
    lengths: tuple[str, ...]

    def at(self, idx: tuple[str, ...]) -> str:
        own = idx[len(idx) - len(self.inner.lengths):]
        return self.inner.at(tuple(f"({n} == 1 ? 0 : {e})" for n, e in zip(self.inner.lengths, own)))

    def views(self) -> list[View]:
        return self.inner.views()


VECTORS = (View, Elementwise, Broadcast)
ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, operator.pow}
INPLACE = {operator.iadd, operator.isub, operator.imul, operator.itruediv}


def unit_strides(expr: Any) -> Any:
    """The expression with every view's last stride the constant 8 (C code for contiguous rows)."""
    if isinstance(expr, View):
        return replace(expr, strides=expr.strides[:-1] + ("8",))
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


def loop_nest(idx: tuple[str, ...], lengths: tuple[str, ...], statement: str) -> str:
    """C loops over every index of `lengths` in C order around `statement`."""
    heads = " ".join(f"for (int64_t {e} = 0; {e} < {n}; {e}++)" for e, n in zip(idx, lengths))
    return f"{heads} {{ {statement} }}"


def int_list(values: tuple[str, ...]) -> str:
    return f"(const int64_t[]){{{', '.join(values)}}}"


def hazard(a: View, b: View) -> str:
    """C test: whether view b shares memory with view a other than element for element."""
    return (f"dyn_hazard({a.data}, {len(a.lengths)}, {int_list(a.lengths)}, {int_list(a.strides)}, "
            f"{b.data}, {len(b.lengths)}, {int_list(b.lengths)}, {int_list(b.strides)})")


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
        self.used = False  # whether the loop has slices (their C code assumes aligned 8-byte strides)
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
        if any(p is None or p is Ellipsis for p in parts) or len(parts) > meta.ndim:
            raise self.refuse("an index with None, Ellipsis or too many entries")
        parts = parts + (slice(None),) * (meta.ndim - len(parts))
        key = (base, tuple((w.operand(p.start)[0] if p.start is not None else None,
                            w.operand(p.stop)[0] if p.stop is not None else None, p.step)
                           if isinstance(p, slice) else w.operand(p)[0] for p in parts))
        if key in self.views:
            return self.views[key]
        self.used = True
        offsets, lengths, strides = [], [], []
        for axis, p in enumerate(parts):
            if not isinstance(p, slice):
                offsets.append(w.index_offset(base, axis, p))
                continue
            first, length, stride = self.slice_axis(f"{base}_n[{axis}]", f"{base}_s[{axis}]", p)
            offsets.append(f"{first} * {base}_s[{axis}]")
            lengths.append(length)
            strides.append(stride)
        data = w.var("p")
        w.lines.append(f"char *{data} = {base} + {' + '.join(offsets)};")
        self.views[key] = View(data, tuple(lengths), tuple(strides), base)
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
            return f"(double *)({view.data} + {' + '.join(offsets)})", None
        data = w.var("p")
        w.lines.append(f"char *{data} = {view.data} + {' + '.join(offsets)};")
        return "", View(data, tuple(lengths), tuple(strides), view.base)

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

    def arithmetic(self, node: Any, symbol: str, name: str) -> None:
        operands = [self.value(a) for a in node.args]
        vectors = [(a, o) for a, o in zip(node.args, operands) if isinstance(o, VECTORS)]
        shapes = {meta_shape(a) for a, _ in vectors} | {meta_shape(node)}
        lengths = vectors[0][1].lengths
        if len(shapes) == 1 and None not in shapes:
            for _, o in vectors[1:]:
                for a, b in zip(lengths, o.lengths):
                    self.check_lengths(a, b)
        else:
            operands, lengths = self.broadcast(operands)
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
        """np.empty_like / np.zeros_like of a float64 array: a temporary buffer of its shape (left as
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
        view = self.allocate(expr.lengths)
        if fill is not None:
            w = self.w
            idx = tuple(w.var("e") for _ in expr.lengths)
            count = w.var("k")
            value = expr.at(idx) if fill == "" else fill
            w.lines.append(f"int64_t {count} = 0;")
            w.lines.append(loop_nest(idx, expr.lengths, f"((double *){view.data})[{count}++] = {value};"))
        return view

    def allocate(self, lengths: tuple[str, ...]) -> View:
        """A temporary buffer of these lengths in C order (the function's, grown as needed, freed at
        exit; its values are whatever it held): a View of it."""
        w = self.w
        slot = f"dyn_tmp[{self.temps}]"
        cap = f"dyn_cap[{self.temps}]"
        self.temps += 1
        total, data = w.var("n"), w.var("p")
        w.lines.append(f"int64_t {total} = {' * '.join(lengths)};")
        w.lines.append(f"if ({total} > {cap}) {{ free({slot}); {slot} = malloc({total} * 8 + 8); "
                       f"if (!{slot}) goto nomem; {cap} = {total}; }}")
        strides = ["INT64_C(8)"]
        for length in reversed(lengths[1:]):
            stride = w.var("s")
            w.lines.append(f"int64_t {stride} = {strides[0]} * {length};")
            strides.insert(0, stride)
        w.lines.append(f"char *{data} = (char *){slot};")
        view = View(data, lengths, tuple(strides), slot)
        self.whole_temps.add(view)
        return view

    def store_loop(self, target: View, rhs: Any, update: str | None) -> None:
        """target[e] = rhs[e] (or target[e] op rhs[e]) for every index e. Where rhs reads target's memory
        other than element for element, or its shape differs from target's (NumPy broadcasts it), rhs
        goes through a scratch buffer first; else one pass, with a copy of the nest for unit last
        strides that the compiler vectorizes. (Each copy of the expression costs compile time.)"""
        w = self.w
        idx = tuple(w.var("e") for _ in target.lengths)

        def assign(t: View, x: str) -> str:
            value = x if update is None else f"{t.at(idx)} {update} {x}"
            return f"{t.at(idx)} = {value};"
        if not isinstance(rhs, VECTORS):
            w.lines.append(loop_nest(idx, target.lengths, assign(target, f"(double)({rhs})")))
        else:
            if len(rhs.lengths) > len(target.lengths):
                raise self.refuse("storing an array of more axes than its target")
            same = [] if len(rhs.lengths) == len(target.lengths) else ["0"]
            for r, t in zip(reversed(rhs.lengths), reversed(target.lengths)):
                if r != t:
                    w.lines.append(f"if ({r} != {t} && {r} != 1) {{ ints[0] = {t}; ints[1] = {r}; goto shape; }}")
                    same.append(f"{r} == {t}")
            views = list(dict.fromkeys(rhs.views()))
            direct = " && ".join(same + [f"!{hazard(target, v)}" for v in views]) or "1"
            unit = " && ".join(f"{v.strides[-1]} == 8" for v in dict.fromkeys([target, *views]))
            tmp, count = w.var("tmp"), w.var("k")
            spread = rhs if rhs.lengths == target.lengths else Broadcast(rhs, target.lengths)
            w.lines.append(f"if (({direct}) && {unit}) {{")
            w.lines.append(f"    {loop_nest(idx, target.lengths, assign(unit_strides(target), unit_strides(rhs).at(idx)))}")
            w.lines.append("} else {")
            w.lines.append(f"    double *{tmp} = malloc(({' * '.join(target.lengths)}) * 8 + 8); if (!{tmp}) goto nomem;")
            w.lines.append(f"    int64_t {count} = 0; {loop_nest(idx, target.lengths, f'{tmp}[{count}++] = {spread.at(idx)};')}")
            w.lines.append(f"    {count} = 0; {loop_nest(idx, target.lengths, assign(target, f'{tmp}[{count}++]'))}")
            w.lines.append(f"    free({tmp});\n}}")
        w.wrote(target.base)
        self.epoch += 1

    def setitem(self, array: Any, index: Any, value: Any) -> None:
        target = self.view(array, index)
        rhs = self.value(value)
        if rhs == target:  # `A[s] += x` stores A[s] into itself: NumPy copies nothing
            return
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
        w.bind(node, View(data, v.lengths, tuple(strides), v.base), VEC, np.ndarray)

    def square(self, node: Any) -> None:
        """`x ** 2` of a float64 array: NumPy runs its square loop (one product per element, its
        warnings "in square"); other powers and scalars' (libm's pow) are refused."""
        base, exponent = node.args
        if type(exponent) not in (int, float) or exponent != 2:
            raise self.refuse("a power other than ** 2")
        x = self.value(base)
        if not isinstance(x, VECTORS):
            raise self.refuse("a power of a scalar")
        self.w.ops.append("square")
        expr = Elementwise("*", (x, x), x.lengths, self.epoch, self.scope)
        self.w.bind(node, expr, VEC, np.ndarray)
        if needs_temporary(node):
            self.w.bind(node, self.materialize(expr), VEC, np.ndarray)

    def total(self, node: Any) -> None:
        """np.sum(x) / x.sum() of a whole float64 argument (C-contiguous: checked per call) or temporary:
        NumPy's own add loop in its reduce form over all the values in one call, from 0.0, as NumPy
        reduces a contiguous array (its pairwise sum; "... encountered in reduce")."""
        if node.kwargs or len(node.args) != 1:
            raise self.refuse("a sum with an axis, dtype or out")
        x = self.value(node.args[0])
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
        return (f"    double *dyn_tmp[{self.temps}] = {{0}}; int64_t dyn_cap[{self.temps}] = {{0}};\n",
                f"    for (int k = 0; k < {self.temps}; k++) free(dyn_tmp[k]);\n")


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
        user.target in ELEMENTWISE or (user.target is operator.setitem and user.args[2] is node)
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
