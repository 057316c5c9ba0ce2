"""Kernel IR kernels as readable C: one function per kernel, explicit loops over its output axes,
reductions as loops with accumulators, every value computed at the outermost loop where it is known.

Strides and sizes are read from the arguments at run time, so one binary serves every size.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import sympy

from ..kernel_ir import Buffer, Const, Expr, IndexValue, Kernel, Load, Op, Reduce, walk
from ..kernel_ir.exprs import format_expr, is_index_var, reduction_identity, substitute
from ..kernel_ir.values import is_symbolic
from .emitters import (QUIET_OPS, c_type, dtype_key, emitter, ignores_operand, literal, storage_type, unsigned_of,
                       uses_numpy_loop)
from .pairwise import last_axis_inputs, pairwise_kind, write_sum
from .tiles import NumpyLoop, TiledLevel, numpy_loop_of


@dataclass
class KernelSource:
    """One kernel's C source. `args`: the buffers it takes, in order (`written`: those it stores to);
    `ops`: the op names in the order the checked variant numbers them; `origins`: for each, the graph
    nodes (positions) that run it (empty: not known)."""

    name: str
    src: str
    args: list[str]
    written: list[str]
    ops: list[str] = field(default_factory=list)
    op_keys: list[str] = field(default_factory=list)  # the same computation has the same key (op_identity)
    loops: list[NumpyLoop] = field(default_factory=list)  # NumPy loops its code calls
    row_inputs: list[str] = field(default_factory=list)  # inputs its float sums need rows of (pairwise.layout_ok)
    origins: list[tuple[int, ...]] = field(default_factory=list)


@dataclass
class SizeSource:
    """Where a size symbol's value comes from: dimension `dim` of input buffer `buffer`."""

    buffer: str
    dim: int


class IndexPrinter:
    """sympy index expressions (int64 arithmetic) as C."""

    def __init__(self, name_of: dict[str, str]) -> None:
        self.name_of = name_of

    def __call__(self, e: Any) -> str:
        return self.go(sympy.sympify(e))

    def go(self, e: sympy.Basic) -> str:
        if e is sympy.true or e == sympy.true:
            return "true"
        if e is sympy.false or e == sympy.false:
            return "false"
        if isinstance(e, sympy.Symbol):
            return self.name_of.get(e.name, e.name)
        if isinstance(e, sympy.Integer):
            return f"INT64_C({int(e)})"
        if isinstance(e, sympy.Add):
            return "(" + " + ".join(self.go(t) for t in e.args) + ")"
        if isinstance(e, sympy.Mul):
            num, den = sympy.fraction(e)
            if den != 1:
                raise NotImplementedError(f"a fraction in an index: {e}")
            return "(" + " * ".join(self.go(f) for f in e.args) + ")"
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
            return "(" + " * ".join([self.go(e.base)] * int(e.exp)) + ")"
        if isinstance(e, sympy.Mod):
            return f"dyn_mod_idx({self.go(e.args[0])}, {self.go(e.args[1])})"
        if isinstance(e, sympy.floor):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            return f"dyn_floordiv_idx({self.go(num)}, {self.go(den)})"
        if isinstance(e, (sympy.Min, sympy.Max)):
            fn = "dyn_min_idx" if isinstance(e, sympy.Min) else "dyn_max_idx"
            args = [self.go(a) for a in e.args]
            out = args[0]
            for a in args[1:]:
                out = f"{fn}({out}, {a})"
            return out
        if isinstance(e, sympy.And):
            return "(" + " && ".join(self.go(a) for a in e.args) + ")"
        if isinstance(e, sympy.Or):
            return "(" + " || ".join(self.go(a) for a in e.args) + ")"
        if isinstance(e, sympy.Not):
            return f"(!{self.go(e.args[0])})"
        if isinstance(e, sympy.core.relational.Relational):
            return f"({self.go(e.lhs)} {e.rel_op} {self.go(e.rhs)})"
        raise NotImplementedError(f"index expression {e} ({type(e).__name__})")


def keyed(r: Reduce) -> bool:
    """Whether an argmax/argmin compares its float values by their order keys (dyn_key_f4/f8)."""
    return r.kind in ("argmax", "argmin") and np.dtype(r.body.dtype).kind == "f" \
        and np.dtype(r.body.dtype).itemsize in (4, 8)


_CANONICAL = sympy.Symbol("r_same", integer=True)  # a reduction's variable, renamed to compare two
_ANY_INDEX = sympy.Symbol("i_any", integer=True)
_INDEX_NAME = re.compile(r"\b[xrd][0-9]+\b")


def is_hidden_constant(e: Const) -> bool:
    """A float constant the C compiler must not see (emitters.NAN_SAFE_SOURCE): a NaN, -1.0 (x * -1.0
    and x / -1.0 would become -x, which flips a NaN's sign where NumPy's multiply keeps it), or an
    infinity (GCC's vectorizer makes `x != inf` into `!(x < inf)`, a signaling compare: 'invalid value'
    for a NaN x, which NumPy's quiet compare never raises, fuzz seed 1130620)."""
    kind = np.dtype(e.dtype).kind
    parts = [e.value] if kind == "f" else [complex(e.value).real, complex(e.value).imag] if kind == "c" else []
    return any(bool(np.isnan(v)) or bool(np.isinf(v)) or v == -1.0 for v in parts)


def op_identity(e: Expr) -> str:
    """The same computation gets the same key, whatever its index variables are named (a value two
    places of one kernel compute, each inlined, raises its flags once in NumPy)."""
    try:
        same = substitute(e, {v: _ANY_INDEX for v in e.free})
        return _INDEX_NAME.sub("_", format_expr(same))
    except RecursionError:
        return f"#{id(e)}"


def op_shape(e: Expr) -> str:
    """The computation without its indices: the same ops on the same buffers and constants."""
    try:
        return _LOAD_INDEX.sub("[*]", op_identity(e))
    except RecursionError:
        return f"#{id(e)}"


_LOAD_INDEX = re.compile(r"\[[^\[\]]*(\[[^\[\]]*\][^\[\]]*)*\]")
_ORDERED = ("dyn_isless", "dyn_isgreater", "dyn_max_f", "dyn_min_f", "dyn_cast_f")


class KernelWriter:
    """Writes one kernel. `checked=True` adds a flag test after every op (the variant that tells
    which op raised a floating-point flag, run only when the fast one raised some)."""

    def __init__(self, kernel: Kernel, buffers: dict[str, Buffer], sizes: dict[str, SizeSource],
                 checked: bool = False, op_origins: dict[Expr, tuple[int, ...]] | None = None) -> None:
        self.k = kernel
        self.op_origins = op_origins or {}
        self.origins: list[tuple[int, ...]] = []
        self._by_identity: dict[Callable[[Expr], str], dict[str, tuple[int, ...]]] = {}
        self._by_owner: dict[str, set[int]] | None = None   # op identity -> nodes whose value computes it
        self.buffers = buffers
        self.size_sources = sizes
        self.checked = checked
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.count = 0
        self.ops: list[str] = []
        self.op_keys: list[str] = []
        self.reduced: dict[tuple[Any, ...], str] = {}  # reductions this rows function computed at a loop level
        self.recording = False
        # a float sum's gathered values, by its canonical body: (buffer, extent), for the same values
        # at the innermost level of the same row (a softmax's numerator: exp computed once)
        self.gathered: dict[str, tuple[str, str]] = {}
        self.last_gathered: tuple[str, str] | None = None
        self.function_buffers: list[tuple[str, str, str]] = []  # (name, C type, length): per rows call
        self.reuse_memo: dict[int, str | None] = {}
        # per rows function: the constant's C literal -> (local, C type, its opaque initializer)
        self.hidden_constants: dict[str, tuple[str, str, str]] = {}
        self.loops: list[NumpyLoop] = []
        self.row_inputs: list[str] = []
        self.last_strides = {str(b.strides[-1]): name for name, b in buffers.items() if b.kind == "input" and b.shape}
        roots = [s.value for s in kernel.stores]
        self.exprs = walk(roots)
        self.xs = sorted((v for v in kernel.var_axis if v.name.startswith("x")), key=lambda v: int(v.name[1:]))
        self.extent = {x: kernel.axes[kernel.var_axis[x]].extent for x in self.xs}
        self.args = list(dict.fromkeys([*kernel.reads(), *kernel.writes()]))
        self.size_names = self.used_sizes()
        self.shape_only: set[str] = set()
        for name in self.size_names:
            source = sizes[name].buffer
            if source not in self.args:
                self.args.append(source)  # passed only for its shape
                self.shape_only.add(source)
        self.arg_index = {b: i for i, b in enumerate(self.args)}
        names = {x.name: x.name for x in self.xs}
        for name in self.size_names:
            names[name] = f"size_{name}"
        self.index = IndexPrinter(names)

    # -- what the kernel needs ----------------------------------------------------------------------

    def index_exprs(self) -> list[Any]:
        found: list[Any] = [self.extent[x] for x in self.xs]
        for s in self.k.stores:
            found += [s.index, s.mask]
        for e in self.exprs:
            if isinstance(e, Load):
                found.append(e.index)
            elif isinstance(e, IndexValue):
                found.append(e.expr)
            elif isinstance(e, Reduce):
                found.append(e.extent)
        return found

    def used_sizes(self) -> list[str]:
        found: set[str] = set()
        for e in self.index_exprs():
            if isinstance(e, sympy.Basic):
                found |= {s.name for s in e.free_symbols if not is_index_var(s) and not s.name.startswith("s_")}
        missing = found - set(self.size_sources)
        if missing:
            raise NotImplementedError(f"size symbols {sorted(missing)} are not sizes of an input")
        return sorted(found)

    def used_strides(self) -> set[str]:
        found: set[str] = set()
        for e in self.index_exprs():
            if isinstance(e, sympy.Basic):
                found |= {s.name for s in e.free_symbols if s.name.startswith("s_")}
        return found

    # -- values -------------------------------------------------------------------------------------

    def emit(self, ctype: str, text: str, indent: str) -> str:
        name = f"t{self.count}"
        self.count += 1
        # the checked variant's values are variables: DYN_CHECK pins each one between two barriers
        self.lines.append(f"{indent}{'' if self.checked else 'const '}{ctype} {name} = {text};")
        return name

    def operand(self, e: Expr) -> str:
        if isinstance(e, Const):
            return self.hidden_constant(e) if is_hidden_constant(e) else literal(e.value, e.dtype)
        return self.names[id(e)]

    def hidden_constant(self, e: Const) -> str:
        """A local of the rows function holding constant `e`, read where the compiler cannot see its
        value (emitters.NAN_SAFE_SOURCE: folds around a known NaN or -1.0 move a NaN's sign bit)."""
        literal_text = literal(e.value, e.dtype)  # NaNs by their bits: dyn_f64_bits(0x...)
        if literal_text not in self.hidden_constants:
            opaque = literal(e.value, e.dtype, opaque_float)
            self.hidden_constants[literal_text] = (f"hidden{len(self.hidden_constants)}", c_type(e.dtype), opaque)
        return self.hidden_constants[literal_text][0]

    def value(self, e: Expr, indent: str) -> None:
        """Assign `e` to a local (its operands are named already)."""
        if isinstance(e, Const):
            return
        reused = self.reuse_of(e)
        if reused is not None:
            self.names[id(e)] = self.emit(c_type(e.dtype), reused, indent)
            return
        if isinstance(e, Load):
            buf = self.buffers[e.buffer]
            text = f"p_{e.buffer}[{self.index(e.index)}]"
            if buf.dtype.kind == "b":
                text = f"({text} != 0)"
            self.names[id(e)] = self.emit(c_type(e.dtype), text, indent)
        elif isinstance(e, IndexValue):
            text = self.index(e.expr)
            if e.dtype.kind != "b":
                text = f"(({c_type(e.dtype)}){text})"
            self.names[id(e)] = self.emit(c_type(e.dtype), text, indent)
        elif isinstance(e, Op) and uses_numpy_loop(e.name, [a.dtype for a in e.args], e.dtype):
            self.numpy_call(e, indent)
        elif isinstance(e, Op):
            args = [self.operand(a) for a in e.args]
            if e.name == "where" and not self.checked:
                self.keep_unselected(e, indent)
                self.keep_operands_of_a_fold(e, indent)
            elif len(e.args) == 2 and not self.checked:
                self.keep_ignored(e, indent)
                self.keep_operands_of_a_fold(e, indent)
            text = emitter(e.name, [a.dtype for a in e.args], e.dtype)(args, [a.dtype for a in e.args], e.dtype)
            self.names[id(e)] = self.emit(c_type(e.dtype), text, indent)
            if self.checked:
                self.check_after(e.name, e, indent)
        elif isinstance(e, Reduce):
            self.reduce_once(e, indent)
        else:
            raise NotImplementedError(type(e).__name__)

    def keep_unselected(self, e: Op, indent: str) -> None:
        """NumPy computes both operands of `where` for every element; C would compute only the selected
        one: GCC sinks a float op into the branch that selects it, drops one never selected (a value
        partly overwritten in the kernel, `a //= a; a[1:] = 200`, fuzz seed 1020367; `0.1 / a` wholly
        overwritten, 1007609) or masks it (AVX-512), and its flags go missing. Each float op operand is
        pinned as computed (the checked variant pins every value already), but a concatenate's piece:
        its loads are clamped into the piece, whose every element some output selects (and pinned, the
        loop would no longer vectorize: np.concatenate([a * 2.0, b / 3.0]) took 1.3x the time)."""
        for a in e.args[1:]:
            if isinstance(a, (Op, Reduce)) and a.dtype.kind in "fc" and getattr(a, "name", "") not in QUIET_OPS:
                loads = [x for x in walk([a]) if isinstance(x, Load)]
                if loads and all(x.index.has(sympy.Min, sympy.Max) for x in loads):
                    continue
                self.lines.append(f"{indent}{keep_macro(a.dtype)}({self.operand(a)});")

    def keep_ignored(self, e: Op, indent: str) -> None:
        """A binary op whose constant operand fixes its value (`False & (b != a / 0.0)`, fuzz seed 1072985):
        the C compiler folds it and drops the float ops only the other operand read, which NumPy runs
        (and whose flags it reports). That operand is pinned as computed when float ops that may raise
        a flag are under it (the operand itself: it is in scope where the op is, values under it may
        be in a tile loop's earlier pass, fuzz seed 1100513)."""
        for position, constant in enumerate(e.args):
            other = e.args[1 - position]
            if not isinstance(constant, Const) or not isinstance(other, (Op, Reduce)) or not ignores_operand(
                    e.name, constant.value, constant.dtype, position, other.dtype, e.dtype):
                continue
            self.keep_if_it_may_raise(other, indent)

    def keep_operands_of_a_fold(self, e: Op, indent: str) -> None:
        """An op the C compiler folds by the identity of its operands: `c ? x : x` is x whatever c is (fuzz
        seed 1110198, `np.where(v / v > s, x, x)`), and on integers and booleans `x ^ x`, `x - x`, `x == x`
        are constants and `x & ~x` is false. It drops the float ops only the folded operand read, with
        their flags. The operands are pinned as computed when float ops that may raise are under them
        (operands the same expression, or one the negation of the other: what a program writes; a fold
        GCC finds through arithmetic, (x + 1) - (x + 2), is not looked for)."""
        args = e.args
        if e.name == "where":
            folded = [args[0]] if args[1] is args[2] else []
        elif any(a.dtype.kind in "fc" for a in args):
            folded = []   # float identities are not folds: x - x is nan for inf, x == x false for nan
        else:
            first, second = args
            folded = list(args) if first is second or _negates(first, second) or _negates(second, first) else []
        for operand in folded:
            self.keep_if_it_may_raise(operand, indent)

    def keep_if_it_may_raise(self, operand: Expr, indent: str) -> None:
        """Pins `operand` as computed (DYN_KEEP) when float ops that may raise a flag are under it."""
        if isinstance(operand, (Op, Reduce)) and any(
                isinstance(x, (Op, Reduce)) and x.dtype.kind in "fc" and getattr(x, "name", "") not in QUIET_OPS
                for x in walk([operand])):
            self.lines.append(f"{indent}{keep_macro(operand.dtype)}({self.operand(operand)});")

    def numpy_call(self, e: Op, indent: str) -> None:
        """NumPy's loop for one value (a call with one element: values outside a tiled loop)."""
        loop = numpy_loop_of(e, self.loops)
        args = [self.addressable(a, indent) for a in e.args]
        name = f"t{self.count}"
        self.count += 1
        self.lines.append(f"{indent}{c_type(e.dtype)} {name};")
        macro = "DYN_CX_NP_CALL" if "c" in {a.dtype.kind for a in (*e.args, e)} else "DYN_NP_CALL"
        self.lines.append(f"{indent}{macro}{len(args)}({loop.symbol}, {', '.join(args)}, {name});")
        self.names[id(e)] = name
        if self.checked:
            self.check_after(e.name, e, indent)

    def check_after(self, name: str, e: Expr, indent: str, value: str | None = None) -> None:
        """The checked variant's flag test after op `e` (reported as NumPy's `name`), whose result is the
        local `value` (by default `e`'s), with the graph nodes that run it."""
        self.lines.append(f"{indent}DYN_CHECK({len(self.ops)}, {value or self.names[id(e)]});")
        self.ops.append(name)
        self.op_keys.append(op_identity(e))
        self.origins.append(self.op_origins.get(e) or self.origins_by_identity(op_identity, e)
                            or self.origins_by_identity(op_shape, e) or self.origins_by_owner(e))

    def origins_by_identity(self, identity: Callable[[Expr], str], e: Expr) -> tuple[int, ...]:
        """The graph nodes of an op computed at other indices than its node's value: inlined into a
        reduction it runs at the reduction's variable (fuzz seed 1020200: `v % w` inlined into a matmul's
        sum and stored for a later read warned twice, once without its node), into a concatenate's
        branches at shifted indices (1020342). By `identity`, an ambiguous one (two nodes) gives none."""
        table = self._by_identity.get(identity)
        if table is None:
            found: dict[str, set[tuple[int, ...]]] = {}
            for expr, positions in self.op_origins.items():
                found.setdefault(identity(expr), set()).add(tuple(positions))
            table = self._by_identity[identity] = {key: next(iter(ps)) for key, ps in found.items() if len(ps) == 1}
        return table.get(identity(e), ())

    def origins_by_owner(self, e: Expr) -> tuple[int, ...]:
        """The graph nodes of an op inside a node's value, not its last (the subtract of np.std): each node of
        this kernel whose value computes it, not through another node's value. Three `v.std(axis=1)` of an
        unrolled loop are three NumPy calls, each warning; their sums are one computation here (reduce_once),
        and the subtract in them was reported once, without a node (fuzz seed 1110533)."""
        if self._by_owner is None:
            self._by_owner = {}
            tops = [x for x in self.exprs if x in self.op_origins]
            for top in tops:
                inside = [c for c in top.children() if c not in self.op_origins]
                seen: set[int] = set()
                while inside:
                    x = inside.pop()
                    if id(x) in seen:
                        continue
                    seen.add(id(x))
                    if isinstance(x, (Op, Reduce)):
                        self._by_owner.setdefault(op_identity(x), set()).update(self.op_origins[top])
                    inside.extend(c for c in x.children() if c not in self.op_origins)
        return tuple(sorted(self._by_owner.get(op_identity(e), ())))

    def reduce_once(self, r: Reduce, indent: str) -> None:
        """A reduction, or the accumulator of the same one (up to its variables' names) computed at an
        enclosing loop level of this row: a softmax's row max is found once, not per use."""
        body = self.same_key(substitute(r.body, {r.var: _CANONICAL}))
        key = (r.kind, str(r.dtype), str(r.extent), body)
        if key in self.reduced:
            self.names[id(r)] = self.reduced[key]
            return
        recording, self.recording = self.recording, False  # values inside are not in the level's scope
        self.last_gathered = None
        self.reduction(r, indent)
        self.recording = recording
        if recording:
            self.reduced[key] = self.names[id(r)]
            if self.last_gathered is not None:
                self.gathered[body] = self.last_gathered

    def without_reused(self, order: list[Expr]) -> list[Expr]:
        """`order` less what only values read from a row's gathered sum values are made of."""
        if not self.gathered:
            return order
        skip: set[int] = set()
        for e in reversed(order):  # parents first
            if id(e) not in skip and self.reuse_of(e) is not None:
                inner = {id(d) for d in walk([e])[:-1]}
                needed = {id(d) for p in order if id(p) not in skip and id(p) not in inner and p is not e
                          for d in p.children()}
                skip |= inner - needed
        return [e for e in order if id(e) not in skip]

    def same_key(self, e: Expr) -> str:
        """`e` as text in which a reduction computed already is its accumulator's name."""
        try:
            return format_expr(e, lambda d: self.names.get(id(d)) if isinstance(d, Reduce) else None)
        except RecursionError:
            return f"#{id(e)}"

    def reuse_of(self, e: Expr) -> str | None:
        """C reading `e` from a row's gathered sum values (the same values along the innermost axis), or None."""
        if not self.gathered or not isinstance(e, Op) or not self.xs or self.xs[-1] not in e.free:
            return None
        if id(e) not in self.reuse_memo:
            x = self.xs[-1]
            found = self.gathered.get(self.same_key(substitute(e, {x: _CANONICAL})))
            same = found is not None and found[1] == str(self.extent[x])
            self.reuse_memo[id(e)] = f"{found[0]}[{x.name}]" if same and found is not None else None
        return self.reuse_memo[id(e)]
    def addressable(self, e: Expr, indent: str) -> str:
        """A local holding `e` (a constant gets one) whose address a NumPy loop can take."""
        if isinstance(e, Const):
            return self.emit(c_type(e.dtype), literal(e.value, e.dtype), indent)
        return self.names[id(e)]

    def values_at(self, bound: set[sympy.Symbol], indent: str, roots: list[Expr] | None = None) -> None:
        """Every value (reachable from `roots`) computable with the index variables in `bound`."""
        order = self.without_reused(self.exprs if roots is None else walk(roots))
        for e in order:
            if id(e) in self.names or isinstance(e, Const) or not e.free <= bound:
                continue
            self.value(e, indent)

    def reduction(self, r: Reduce, indent: str) -> None:
        bound = set(r.free)
        var = r.var.name
        t = c_type(r.dtype)
        acc = f"acc{self.count}"
        self.count += 1
        if pairwise_kind(r):
            if r.kind == "sum":
                inputs = last_axis_inputs(r, self.last_strides)
                if isinstance(inputs, str):
                    raise NotImplementedError(inputs)
                self.row_inputs += inputs
            write_sum(self, r, indent, acc, self.identity(r))
            self.names[id(r)] = acc
            return
        extent = self.index(r.extent) if is_symbolic(r.extent) else f"INT64_C({int(r.extent)})"
        body_t = c_type(r.body.dtype)
        arg = r.kind in ("argmax", "argmin")
        if arg and keyed(r):  # nothing is below the first value's key (argmin), nor above it (argmax)
            bits = 8 * np.dtype(r.body.dtype).itemsize
            self.lines.append(f"{indent}int{bits}_t {acc}_best = INT{bits}_{'MAX' if r.kind == 'argmin' else 'MIN'};")
            self.lines.append(f"{indent}int64_t {acc} = 0;")
        elif arg:
            init = literal(reduction_identity(r.kind, r.body.dtype), r.body.dtype)
            self.lines.append(f"{indent}{body_t} {acc}_best = {init};")
            self.lines.append(f"{indent}int64_t {acc} = 0;")
        else:
            self.lines.append(f"{indent}{t} {acc} = {self.identity(r)};")
        self.lines.append(f"{indent}for (int64_t {var} = 0; {var} < {extent}; {var}++) {{")
        inner = indent + "    "
        saved = dict(self.names)
        self.values_at(bound | {r.var}, inner, [r.body])
        v = self.operand(r.body)
        self.lines.append(inner + self.combine(r, acc, v))
        self.lines.append(f"{indent}}}")
        self.names = saved
        self.names[id(r)] = acc

    def identity(self, r: Reduce) -> str:
        return literal(reduction_identity(r.kind, r.dtype), r.dtype)

    def combine(self, r: Reduce, acc: str, v: str) -> str:
        dtype = r.dtype
        if r.kind in ("sum", "prod"):
            op = "+" if r.kind == "sum" else "*"
            if dtype.kind == "b":
                return f"{acc} = {acc} {'|' if op == '+' else '&'} {v};"
            if dtype.kind == "f":
                return f"{acc} = {acc} {op} {v};"
            u = unsigned_of(dtype)
            return f"{acc} = ({c_type(dtype)})(({u}){acc} {op} ({u}){v});"
        if r.kind in ("max", "min"):
            if dtype.kind == "f":
                return f"{acc} = dyn_{r.kind}_{dtype_key(dtype)}({acc}, {v});"
            if dtype.kind == "b":
                return f"{acc} = {acc} {'|' if r.kind == 'max' else '&'} {v};"
            return f"if ({v} {'>' if r.kind == 'max' else '<'} {acc}) {acc} = {v};"
        if r.kind in ("any", "all"):
            return f"{acc} = {acc} {'|' if r.kind == 'any' else '&'} {v};"
        better = ">" if r.kind == "argmax" else "<"
        if keyed(r):
            # the float's order key: integer compares and selects, which vectorize and raise no flag
            # (a quiet float compare keeps the whole loop scalar: DYN_QUIET_COMPARES)
            bits = 8 * np.dtype(r.body.dtype).itemsize
            nan_key = f"INT{bits}_{'MIN' if r.kind == 'argmin' else 'MAX'}"
            return (f"{{ const int{bits}_t {acc}_key = dyn_key_f{bits // 8}({v}, {nan_key}); "
                    f"const bool {acc}_take = {acc}_key {better} {acc}_best; "
                    f"{acc}_best = {acc}_take ? {acc}_key : {acc}_best; {acc} = {acc}_take ? {r.var.name} : {acc}; }}")
        if r.body.dtype.kind == "f":
            # the first extreme, or the first NaN (after which nothing replaces it)
            quiet = "dyn_isgreater" if better == ">" else "dyn_isless"
            cond = f"{acc}_best == {acc}_best && ({v} != {v} || {quiet}({v}, {acc}_best))"
        else:
            cond = f"{v} {better} {acc}_best"
        return f"if ({cond}) {{ {acc}_best = {v}; {acc} = {r.var.name}; }}"

    # -- the function -------------------------------------------------------------------------------

    def stores_at(self, indent: str) -> None:
        for s in self.k.stores:
            value = self.operand(s.value)
            t = storage_type(s.buffer.dtype)
            if s.value.dtype != s.buffer.dtype and s.buffer.dtype.kind != "b":
                value = f"({c_type(s.buffer.dtype)}){value}"
            line = f"p_{s.buffer.name}[{self.index(s.index)}] = ({t}){value};"
            if s.mask != sympy.true:
                line = f"if ({self.index(s.mask)}) {line}"
            self.lines.append(indent + line)

    def prologue(self, indent: str, skip: set[str]) -> list[str]:
        lines = []
        strides = self.used_strides() - skip
        for name in self.size_names:
            src = self.size_sources[name]
            lines.append(f"{indent}const int64_t size_{name} = (int64_t)a[{self.arg_index[src.buffer]}].shape[{src.dim}];")
        for b in self.args:
            if b in self.shape_only:
                # its data is never read: it may be of a dtype kernels have no type for (a float16 input whose
                # size the trace guarded equal to a float64 one's names the size: fuzz seed 1130709)
                continue
            buf = self.buffers[b]
            i = self.arg_index[b]
            lines.append(f"{indent}{storage_type(buf.dtype)} *p_{b} = ({storage_type(buf.dtype)} *)a[{i}].data;")
            for d, s in enumerate(buf.strides):
                if isinstance(s, sympy.Symbol) and s.name in strides:
                    lines.append(f"{indent}const int64_t {s.name} = (int64_t)a[{i}].strides[{d}] / "
                                 f"{buf.dtype.itemsize};")
        lines.append(f"{indent}(void)p_{self.args[0]};" if self.args else "")
        return lines

    def inner_strides(self) -> list[tuple[str, int, int]]:
        """(stride name, argument, itemsize) of each buffer's last dimension whose stride is a run-time
        value: a second copy of the loops takes them as 1, so that contiguous data vectorizes."""
        used = self.used_strides()
        found = []
        for b in self.args:
            buf = self.buffers[b]
            if buf.strides and isinstance(buf.strides[-1], sympy.Symbol) and buf.strides[-1].name in used:
                found.append((buf.strides[-1].name, self.arg_index[b], buf.dtype.itemsize))
        return found

    def extent_text(self, x: sympy.Symbol) -> str:
        n = self.extent[x]
        return self.index(n) if is_symbolic(n) else f"INT64_C({int(n)})"

    def rows_function(self, name: str, unit: list[str]) -> list[str]:
        """The loops over rows [lo, hi) of the outermost axis; strides named in `unit` are 1."""
        self.names, self.count = {}, 0
        self.reduced, self.recording = {}, True
        self.gathered, self.reuse_memo, self.function_buffers = {}, {}, []
        self.hidden_constants = {}
        saved = dict(self.index.name_of)
        for stride in unit:
            self.index.name_of[stride] = "INT64_C(1)"
        body: list[str] = []
        self.lines = body
        ind = "    "
        bound: set[sympy.Symbol] = set()
        self.values_at(bound, ind)
        depth = ind
        for level, x in enumerate(self.xs):
            lo, hi = ("lo", "hi") if level == 0 else ("INT64_C(0)", self.extent_text(x))
            body.append(f"{depth}for (int64_t {x.name} = {lo}; {x.name} < {hi}; {x.name}++) {{")
            depth += "    "
            bound = bound | {x}
            if level == len(self.xs) - 1 and not self.checked and TiledLevel.wanted(self, bound):
                body.pop()  # the loop over x becomes a loop over tiles of x
                TiledLevel(self, x, bound).write(lo, hi, depth[:-4])
                break
            self.values_at(bound, depth)
        else:
            self.stores_at(depth)
        for _ in self.xs:
            depth = depth[:-4]
            body.append(f"{depth}}}")
        self.index.name_of = saved
        extra = ", int *opflags" if self.checked else ""
        # GCC's vectorizer turns quiet comparisons into signaling ones (the invalid flag on NaN, which
        # NumPy never raises there): loops that compare floats stay scalar
        quiet = " DYN_QUIET_COMPARES" if any(q in line for line in body for q in _ORDERED) else ""
        # never inlined: the flags are read around its call, and no float op may move across that
        rows = [f"static void __attribute__((noinline)){quiet} {name}(const dyn_arg *a, int64_t lo, int64_t hi, int *flp{extra}) {{",
                "    int fpflags = 0;", *self.prologue("    ", skip=set(unit))]
        if not self.xs:
            rows.append("    (void)lo; (void)hi;")
        for local, t, opaque in self.hidden_constants.values():
            rows.append(f"    const {t} {local} = {opaque};")
        for buf, t, n in self.function_buffers:  # float sums' values: one buffer per call, not per row
            rows.append(f"    {t} *const {buf} = ({t} *)malloc((size_t)dyn_max_idx({n}, 1) * sizeof({t}));")
            rows.append(f"    if ({buf} == NULL) abort();")
        frees = [f"    free({buf});" for buf, _, _ in self.function_buffers]
        return rows + body + frees + ["    *flp |= fpflags;", "}"]

    def write(self) -> KernelSource:
        k = self.k
        name = k.name + ("_checked" if self.checked else "")
        try:
            described = k.describe()
        except RecursionError:  # a very deep expression (a long unrolled chain): the axes only
            described = k.describe_axes() if hasattr(k, "describe_axes") else f"kernel {k.name}"
        head = [f"/* {line[:2000]} */" for line in described.replace("*/", "* /").splitlines()]
        unit = [] if self.checked else self.inner_strides()
        rows = self.rows_function(f"{name}_rows", [])
        ops = list(self.ops)
        if unit:
            rows += ["", *self.rows_function(f"{name}_rows_unit", [s for s, _, _ in unit])]
        src = "\n".join(head + rows + self.entry(name, unit)) + "\n"
        return KernelSource(name, src, list(self.args), k.writes(), ops, list(self.op_keys[:len(ops)]),
                            list(dict.fromkeys(self.loops)),
                            list(dict.fromkeys(self.row_inputs)), list(self.origins[:len(ops)]))

    def entry(self, name: str, unit: list[tuple[str, int, int]]) -> list[str]:
        """The exported function: sizes, an early return for empty work, threads when it pays, and the
        copy of the loops for unit inner strides when the arrays have them."""
        pro = []
        if self.checked:
            pass
        elif unit:
            conds = [f"(int64_t)a[{i}].strides[{len(self.buffers[self.args[i]].shape) - 1}] == {size}"
                     for _, i, size in unit]
            pro.append(f"    void (*const rows)(const dyn_arg *, int64_t, int64_t, int *) = "
                       f"({' && '.join(conds)}) ? {name}_rows_unit : {name}_rows;")
        else:
            pro.append(f"    void (*const rows)(const dyn_arg *, int64_t, int64_t, int *) = {name}_rows;")
        for sname in self.size_names:
            src = self.size_sources[sname]
            pro.append(f"    const int64_t size_{sname} = (int64_t)a[{self.arg_index[src.buffer]}].shape[{src.dim}];")
        extents = [self.extent_text(x) for x in self.xs]
        n0 = extents[0] if extents else "INT64_C(1)"
        work = " * ".join(f"({e})" for e in extents) or "INT64_C(1)"
        for r in self.k.reductions():  # each reduction multiplies the work of the points it serves
            work += f" * ({self.index(r.extent) if is_symbolic(r.extent) else int(r.extent)} + 1)"
        parallel = bool(self.xs) and all(self.xs[0] in s.index.free_symbols for s in self.k.stores)
        if self.checked:
            # the op flags are one more buffer argument: the rerun passes them through call_native like
            # the arrays (no ctypes structures whose lifetime the caller must manage)
            return ["", f"int {name}(const dyn_arg *a) {{", *pro,
                    f"    int *const opflags = (int *)a[{len(self.args)}].data;",
                    "    int fl = 0; feclearexcept(FE_ALL_EXCEPT);",
                    f"    if ({' || '.join(f'({e}) == 0' for e in extents) or '0'}) return 0;",
                    f"    {name}_rows(a, 0, {n0}, &fl, opflags);",
                    "    return (fl | dyn_test_flags()) & DYN_FLAGS;", "}"]
        # NumPy's loops may raise flags on the x87 unit too (libm's fmod): then both units are read
        clear, test = ("dyn_clear_flags()", "dyn_test_flags()") if not self.loops else \
            ("feclearexcept(FE_ALL_EXCEPT)", "fetestexcept(DYN_FLAGS)")
        lines = ["", f"int {name}(const dyn_arg *a) {{", *pro, "    int fl = 0;"]
        if extents:
            lines.append(f"    if ({' || '.join(f'({e}) <= 0' for e in extents)}) return 0;")
        if parallel:
            lines += [
                "#ifdef _OPENMP",
                f"    const int64_t n0 = {n0};",
                f"    if (dyn_threads != 1 && n0 > 1 && ({work}) >= dyn_parallel_work && !dyn_machine_busy()) {{",
                "        int nt = dyn_threads > 0 ? dyn_threads : omp_get_max_threads();",
                "        if (nt > n0) nt = (int)n0;",
                "        #pragma omp parallel num_threads(nt) reduction(|:fl)",
                "        {",
                f"            {clear};",
                "            const int64_t tid = omp_get_thread_num(), nth = omp_get_num_threads();",
                "            rows(a, n0 * tid / nth, n0 * (tid + 1) / nth, &fl);",
                f"            fl |= {test};",
                "        }",
                "        return fl & DYN_FLAGS;",
                "    }",
                "#endif",
            ]
        lines += [f"    {clear};",
                  f"    rows(a, 0, {n0}, &fl);",
                  f"    return (fl | {test}) & DYN_FLAGS;", "}"]
        return lines


def keep_macro(dtype: np.dtype) -> str:
    """DYN_KEEP pins a float in its vector register; other values (complex pairs, ints) wherever they are."""
    return "DYN_KEEP" if np.dtype(dtype).kind == "f" else "DYN_KEEP_ANY"


def opaque_float(value: object, dtype: np.dtype) -> str:
    """A float constant the C compiler cannot see (emitters.NAN_SAFE_SOURCE), exact by its bits."""
    if np.dtype(dtype).itemsize == 4:
        return f"dyn_f32_opaque(0x{int(np.array(value, np.float32).view(np.uint32)):08x}U)"
    return f"dyn_f64_opaque(0x{struct.unpack('<Q', struct.pack('<d', float(value)))[0]:016x}ULL)"  # type: ignore[arg-type]


def _negates(value: Expr, other: Expr) -> bool:
    """Whether `value` is `other` negated (~x, not x, -x): x & ~x and x + -x fold to constants."""
    return isinstance(value, Op) and value.name in ("invert", "logical_not", "negative") and value.args[0] is other


# one value through NumPy's loop: the flags raised so far are kept first (NumPy's loops may clear them)
CALL_MACROS = r"""
/* a float value the program computes whatever selects it afterwards (its flags are NumPy's) */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define DYN_KEEP(v) __asm__ volatile("" : : "x"(v))
#else
#define DYN_KEEP(v) __asm__ volatile("" : : "g"(v))
#endif
#define DYN_KEEP_ANY(v) __asm__ volatile("" : : "g"(v))
#define DYN_NP_CALL1(fn, a, out) do { char *args_[2] = {(char *)&(a), (char *)&(out)}; \
    const intptr_t n_ = 1, steps_[2] = {0, 0}; fpflags |= fetestexcept(DYN_FLAGS); \
    fn(args_, &n_, steps_, fn##_data); } while (0)
#define DYN_NP_CALL2(fn, a, b, out) do { char *args_[3] = {(char *)&(a), (char *)&(b), (char *)&(out)}; \
    const intptr_t n_ = 1, steps_[3] = {0, 0, 0}; fpflags |= fetestexcept(DYN_FLAGS); \
    fn(args_, &n_, steps_, fn##_data); } while (0)
"""

CHECK_MACRO = r"""
/* the op's value v is computed before the test and read after it: the compiler may otherwise move
 * float arithmetic across the flag test (no FENV_ACCESS), and blame one op's flag on the op before
 * (fuzz seed 1002594: 2.5 / (a + a) reported its division by zero as `add`'s) */
#define DYN_CHECK(k, v) do { __asm__ volatile("" : "+m"(v) : : "memory"); \
    int f_ = fetestexcept(DYN_FLAGS) | fpflags; \
    if (f_) { opflags[k] |= f_; fpflags = 0; feclearexcept(FE_ALL_EXCEPT); } \
    __asm__ volatile("" : "+m"(v) : : "memory"); } while (0)
"""
