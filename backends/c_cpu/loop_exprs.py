"""Array expressions in C loop bodies: strided views, elementwise ops, broadcasts and outer products
of them, as the C that reads one element; the loop nests and overlap tests that stores are made of.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .emitters import C_TYPES
from .loop_dtypes import ITEM_SIZES, emit_ufunc


BROADCAST_STRIDE = "INT64_C(0)"  # the stride of an axis np.newaxis adds
TEMP_SLOTS = "dyn_tmp"  # the C array of the loop function's own temporary buffers (one malloc each)


@dataclass(frozen=True)
class View:
    """A strided view in C: variables holding its first element's address, its length and stride
    (bytes) per axis, the C variable of the array it views (an argument or a temporary), and its
    dtype's key (emitters.dtype_key: "f8", "i4", ...)."""
    data: str
    lengths: tuple[str, ...]
    strides: tuple[str, ...]
    base: str
    dtype: str = "f8"

    def at(self, idx: tuple[str, ...]) -> str:
        offset = " + ".join(f"{e} * {s}" for e, s in zip(idx, self.strides))
        return f"*({C_TYPES[self.dtype]} *)({self.data} + {offset})"

    def views(self) -> list[View]:
        return [self]


@dataclass(frozen=True)
class Elementwise:
    """A NumPy elementwise op on views and scalars, evaluated where it is stored (never later than the
    program point and loop body it was made in: `epoch` and `scope` say where). Its operands and
    result are of one dtype (`dtype`); a float64 op is a C operator (`symbol`), an op of another dtype
    or another ufunc is the kernels' exact C for the ufunc `ufunc` (emitters.EMITTERS)."""
    symbol: str  # C binary operator, or "neg"; "" where `ufunc` names the op
    operands: tuple[Any, ...]  # View, Elementwise, Broadcast (all of `lengths`), or a scalar's C expression
    lengths: tuple[str, ...]
    epoch: int
    scope: int
    dtype: str = "f8"
    ufunc: str = ""

    def at(self, idx: tuple[str, ...]) -> str:
        if self.ufunc:
            return emit_ufunc(self.ufunc, [o.at(idx) if isinstance(o, VECTORS) else o for o in self.operands],
                              self.dtype)
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

    @property
    def dtype(self) -> str:
        return str(self.inner.dtype)

    def at(self, idx: tuple[str, ...]) -> str:
        own = idx[len(idx) - len(self.inner.lengths):]
        return self.inner.at(tuple(f"({n} == 1 ? 0 : {e})" for n, e in zip(self.inner.lengths, own)))

    def views(self) -> list[View]:
        return self.inner.views()


@dataclass(frozen=True)
class Outer:
    """`ufunc.outer(a, b)` of two views or expressions: element (i..., j...) is ufunc(a[i...], b[j...]),
    evaluated where it is stored, like Elementwise."""
    ufunc: str
    left: Any
    right: Any
    lengths: tuple[str, ...]
    epoch: int
    scope: int
    dtype: str

    def at(self, idx: tuple[str, ...]) -> str:
        split = len(self.left.lengths)
        return emit_ufunc(self.ufunc, [self.left.at(idx[:split]), self.right.at(idx[split:])], self.dtype)

    def views(self) -> list[View]:
        return [*self.left.views(), *self.right.views()]


VECTORS = (View, Elementwise, Broadcast, Outer)


def unit_strides(expr: Any) -> Any:
    """The expression with every view's last stride its item size as a constant (C code for contiguous
    rows)."""
    if isinstance(expr, View):
        if expr.strides[-1] == BROADCAST_STRIDE:  # a new axis: its element repeats
            return expr
        return replace(expr, strides=expr.strides[:-1] + (str(ITEM_SIZES[expr.dtype]),))
    if isinstance(expr, Elementwise):
        return replace(expr, operands=tuple(unit_strides(o) for o in expr.operands))
    if isinstance(expr, Broadcast):
        return replace(expr, inner=unit_strides(expr.inner))
    if isinstance(expr, Outer):  # the right operand walks the last axis; the left one is fixed there
        return replace(expr, right=unit_strides(expr.right))
    return expr



def loop_nest(idx: tuple[str, ...], lengths: tuple[str, ...], statement: str, independent: bool = False) -> str:
    """C loops over every index of `lengths` in C order around `statement`. `independent`: no
    iteration reads what another writes (a store whose inputs are disjoint from its target or read
    element for element, a copy into a fresh buffer): the innermost loop says so (DYN_IVDEP), and the
    compiler vectorizes it without versioning it for every pair of pointers that might alias."""
    heads = [f"for (int64_t {e} = 0; {e} < {n}; {e}++)" for e, n in zip(idx, lengths)]
    if independent and heads:
        heads[-1] = "DYN_IVDEP " + heads[-1]
    return f"{' '.join(heads)} {{ {statement} }}"


# C: the pragma that tells the compiler a loop's iterations are independent (GCC's, clang's)
IVDEP_MACRO = """#if defined(__clang__)
#define DYN_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define DYN_IVDEP _Pragma("GCC ivdep")
#else
#define DYN_IVDEP
#endif
"""


def spread(expr: Any, lengths: tuple[str, ...], w: Any) -> Any:
    """expr broadcast to `lengths` as NumPy broadcasts (axes aligned on the right, an axis of length 1
    repeating its element), with every view made of `lengths`' rank and given stride 0 along an axis
    it repeats: the strides are computed once, before the loop (C statements into w.lines), instead of
    a test per element and axis (`Broadcast.at`), which the compiler unswitches into a copy of the
    loop per test. An outer product stays a Broadcast."""
    if isinstance(expr, View):
        if expr.lengths == lengths:
            return expr
        strides = [BROADCAST_STRIDE] * (len(lengths) - len(expr.lengths))
        for n, s in zip(expr.lengths, expr.strides):
            if s == BROADCAST_STRIDE:
                strides.append(s)
                continue
            stride = w.var("b")
            w.lines.append(f"int64_t {stride} = {n} == 1 ? 0 : {s};")
            strides.append(stride)
        return View(expr.data, lengths, tuple(strides), expr.base, expr.dtype)
    if isinstance(expr, Broadcast):  # an axis of length 1 of the inner value repeats whatever the nesting
        return spread(expr.inner, lengths, w)
    if isinstance(expr, Elementwise):
        operands = tuple(spread(o, lengths, w) if isinstance(o, VECTORS) else o for o in expr.operands)
        if operands == expr.operands and expr.lengths == lengths:
            return expr
        return replace(expr, operands=operands, lengths=lengths)
    if isinstance(expr, Outer) and expr.lengths != lengths:
        return Broadcast(expr, lengths)
    return expr


def int_list(values: tuple[str, ...]) -> str:
    return f"(const int64_t[]){{{', '.join(values)}}}"


def temp_slot(k: int) -> str:
    """The C lvalue of the loop function's k-th temporary buffer (a View's base)."""
    return f"{TEMP_SLOTS}[{k}]"


def may_share(a: View, b: View) -> bool:
    """Whether two views can share memory, as far as the code generator knows: views of one base may,
    and so may views of two arguments (the caller can pass one array twice, or views of one); a
    temporary buffer is the function's own malloc, so it shares no byte with an argument or with another
    temporary. (The run-time test, `hazard`, decides the cases left.)"""
    if a.base == b.base:
        return True
    return not (a.base.startswith(TEMP_SLOTS + "[") or b.base.startswith(TEMP_SLOTS + "["))


def hazard(a: View, b: View) -> str:
    """C test: whether view b shares memory with view a other than element for element."""
    return (f"dyn_hazard({a.data}, {len(a.lengths)}, {int_list(a.lengths)}, {int_list(a.strides)}, "
            f"{b.data}, {len(b.lengths)}, {int_list(b.lengths)}, {int_list(b.strides)})")


def substitute(expr: Any, views: dict[View, View]) -> Any:
    """The expression with the views in `views` replaced."""
    if isinstance(expr, View):
        return views.get(expr, expr)
    if isinstance(expr, Elementwise):
        return replace(expr, operands=tuple(substitute(o, views) for o in expr.operands))
    if isinstance(expr, Broadcast):
        return replace(expr, inner=substitute(expr.inner, views))
    if isinstance(expr, Outer):
        return replace(expr, left=substitute(expr.left, views), right=substitute(expr.right, views))
    return expr


def walking_views(expr: Any) -> list[View]:
    """The views of an expression whose last axis moves with the store's last index (an outer
    product's left operand stays put along it)."""
    if isinstance(expr, View):
        return [expr]
    if isinstance(expr, Elementwise):
        return [v for o in expr.operands if isinstance(o, VECTORS) for v in walking_views(o)]
    if isinstance(expr, Broadcast):
        return walking_views(expr.inner)
    if isinstance(expr, Outer):
        return walking_views(expr.right)
    return []
