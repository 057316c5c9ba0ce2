"""Kernel IR kernels as readable Triton source: one @triton.jit function per kernel.

Every value is a tile over the kernel's axes (size 1 where it does not vary); reductions keep dims.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any
from dataclasses import dataclass, field

import numpy as np
import sympy

from ..kernel_ir.exprs import is_index_var, reduction_identity
from ..kernel_ir.values import is_symbolic
from ..kernel_ir import Buffer, Const, Expr, IndexValue, Kernel, Load, Op, Reduce, Store, walk
from .emitters import EMITTERS, TYPES_ITS_LITERALS, IndexPrinter, tl_dtype


@dataclass
class TileConfig:
    """How big a tile one program may hold (elements); the interpreter likes few, big programs.
    `max_row`: the longest reduced axis held whole; a longer one is looped over in chunks of it.
    `num_warps`: the warps that run one program on a GPU."""

    max_tile: int = 4096
    max_row: int = 8192
    num_warps: int = 4


@dataclass
class KernelSource:
    name: str
    src: str
    buffers: list[str]                      # pointer arguments, in order
    strides: list[tuple[str, int]]          # then one stride argument per (buffer, dim)
    grid: Any                               # programs: an int, or a sympy expression of the sizes
    blocks: list[int] = field(default_factory=list)
    sizes: list[str] = field(default_factory=list)  # then one argument per size symbol
    num_warps: int = 4


def _cdiv(n: Any, b: int) -> Any:
    return sympy.floor((n + b - 1) / b) if is_symbolic(n) else -(-n // b)


def next_pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def floor_pow2(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def _literal(value: object, dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "True" if value else "False"
    if dtype.kind == "f":
        v = float(value)  # type: ignore[arg-type]
        if math.isnan(v):  # the sign of a NaN is data (np.signbit)
            return "-float('nan')" if math.copysign(1.0, v) < 0 else "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
        return repr(v)
    return str(int(value))  # type: ignore[call-overload]


class KernelWriter:
    def __init__(self, kernel: Kernel, buffers: dict[str, Buffer], config: TileConfig) -> None:
        self.k = kernel
        self.buffers = buffers
        self.config = config
        self.rank = len(kernel.axes)
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.by_text: dict[str, str] = {}
        self.print_index = IndexPrinter(lambda v: f"a{kernel.var_axis[v]}")
        self.dot_axes: set[int] = set()
        for r in kernel.reductions():
            dot = self.dot_operands(r)
            if dot is not None:
                self.dot_axes |= {dot[2], dot[3], kernel.var_axis[r.var]}
        self.loop_axis = self.choose_loop_axis()
        self.indent = "    "
        self.count = 0  # names t0, t1, ... (never reused: loops drop their own from the caches)
        self.blocks = self.choose_blocks()
        self.counts: list[Any] = [1 if a.role == "full" else _cdiv(a.extent, b) for a, b in zip(kernel.axes, self.blocks)]
        self.masked = [is_symbolic(a.extent) or (a.extent % b if i == self.loop_axis else self.counts[i] * b != a.extent) != 0
                       for i, (a, b) in enumerate(zip(kernel.axes, self.blocks))]

    # -- tiles --------------------------------------------------------------------------------------

    def choose_blocks(self) -> list[int]:
        axes = self.k.axes
        blocks = [0] * len(axes)
        for i, a in enumerate(axes):
            if i == self.loop_axis:
                blocks[i] = floor_pow2(self.config.max_row)
            elif a.role == "full":
                if is_symbolic(a.extent):
                    raise NotImplementedError("a second reduced axis of a size known only at run time")
                blocks[i] = max(next_pow2(a.extent), 16 if i in self.dot_axes else 1)
        remaining = max(1, self.config.max_tile // math.prod(b for b in blocks if b))
        for i in reversed(range(len(axes))):
            if axes[i].role != "grid":
                continue
            if is_symbolic(axes[i].extent):
                if i in self.dot_axes:
                    raise NotImplementedError("tl.dot over a size known only at run time")
                b = min(floor_pow2(remaining), 1024)
            else:
                b = min(next_pow2(axes[i].extent), floor_pow2(remaining))
            if i in self.dot_axes:
                b = max(b, 16)
            blocks[i] = max(b, 1)
            remaining = max(1, remaining // blocks[i])
        return blocks

    def choose_loop_axis(self) -> int | None:
        """The longest reduced axis, when it is longer than max_row (and is not a tl.dot's K): the
        kernel loops over it in chunks, once per reduction over it and once for the stores."""
        reduced = {self.k.var_axis[r.var] for r in self.k.reductions()} - self.dot_axes
        # a size known only at run time is always looped over (the kernel serves every size)
        runtime = [i for i in reduced if is_symbolic(self.k.axes[i].extent)]
        if runtime:
            return runtime[0]
        long = [i for i in reduced if self.k.axes[i].extent > self.config.max_row]
        return max(long, key=lambda i: self.k.axes[i].extent) if long else None

    def size(self, n: Any) -> str:
        """A size as source: a number, or an expression of the kernel's size arguments."""
        return self.print_index(sympy.sympify(n)) if is_symbolic(n) else str(n)

    def divisor(self, n: Any) -> str:
        """A size as the right operand of // or %: a product in parentheses (fuzz seed 2080908: the
        program id's `pid // a*b*s1` of a 4-d grid is (pid // a) * b * s1 in Python)."""
        return self.print_index.divisor(sympy.sympify(n)) if is_symbolic(n) else str(n)

    def size_symbols(self) -> list[str]:
        """The graph's size symbols the kernel uses (its size arguments, after the strides)."""
        k = self.k
        found: set[sympy.Symbol] = set()
        exprs: list[Any] = [a.extent for a in k.axes] + [s.index for s in k.stores] + [s.mask for s in k.stores]
        for e in walk(s.value for s in k.stores):
            exprs.append(e.index if isinstance(e, Load) else e.expr if isinstance(e, IndexValue) else
                         e.extent if isinstance(e, Reduce) else 0)
        for e in exprs:
            if isinstance(e, sympy.Basic):
                found |= {s for s in e.free_symbols if not is_index_var(s) and not s.name.startswith("s_")}
        return sorted(s.name for s in found)

    def shape(self, axes: set[int]) -> list[int]:
        return [self.blocks[i] if i in axes else 1 for i in range(self.rank)]

    def mask(self, axes: set[int]) -> str | None:
        parts = [f"m{i}" for i in sorted(axes) if self.masked[i]]
        return " & ".join(parts) if parts else None

    # -- expressions --------------------------------------------------------------------------------

    def emit(self, text: str, hint: str = "t") -> str:
        found = self.by_text.get(text)
        if found is not None:
            return found
        name = f"{hint}{self.count}"
        self.count += 1
        self.lines.append(f"{self.indent}{name} = {text}")
        self.by_text[text] = name
        return name

    def value(self, e: Expr) -> str:
        if id(e) in self.names:
            return self.names[id(e)]
        if isinstance(e, Op):
            # operands first, in a loop: an np.stack of 600 pieces nests 600 wheres, past Python's
            # recursion limit through op() (fuzz seed 2045050)
            for x in self.operands_first(e):
                self.value(x)
        if isinstance(e, Const):
            out = self.emit(f"tl.full({self.shape(set())}, {_literal(e.value, e.dtype)}, {tl_dtype(e.dtype)})")
        elif isinstance(e, Load):
            out = self.emit(self.load(e))
        elif isinstance(e, IndexValue):
            out = self.index_value(e)
        elif isinstance(e, Op):
            out = self.emit(self.op(e))
        elif isinstance(e, Reduce):
            out = self.emit(self.reduce(e))
        else:
            raise NotImplementedError(type(e).__name__)
        self.names[id(e)] = out
        return out

    def operands_first(self, e: Op) -> list[Expr]:
        """The ops, loads and reductions under `e` not named yet, each after its operands (not into
        reductions, whose bodies may belong in a loop of their own; constants may print as literals)."""
        order: list[Expr] = []
        seen: set[int] = set()
        stack: list[tuple[Expr, bool]] = [(a, False) for a in reversed(e.args)]
        while stack:
            x, expanded = stack.pop()
            if expanded:
                order.append(x)
                continue
            if id(x) in seen or id(x) in self.names or isinstance(x, Const):
                continue
            seen.add(id(x))
            stack.append((x, True))
            if isinstance(x, Op):
                stack.extend((a, False) for a in reversed(x.args))
        return order

    def operand(self, e: Expr, op: str, siblings: tuple[Expr, ...]) -> str:
        """Constants print as literals where a tensor sibling of the same dtype types them."""
        if (isinstance(e, Const) and op in TYPES_ITS_LITERALS
                and any(not isinstance(s, Const) and s.dtype == e.dtype for s in siblings)):
            return _literal(e.value, e.dtype)
        return self.value(e)

    def load(self, e: Load) -> str:
        buf = self.buffers[e.buffer]
        axes = self.k.axes_of(e.index)
        mask = self.mask(axes)
        masked = f", mask={mask}, other=0" if mask else ""
        index = self.print_index(e.index)
        if not axes and self.rank:
            # one element, loaded as a block of ones: Triton's interpreter types a comparison of a 0-d
            # value by its operand, so `(x != 0) & block` of a loaded scalar x met float data (fuzz seed
            # 2000074: np.logical_and(np.mean(a, axis=0), b) raised InterpreterError)
            index = f"{index} + tl.zeros({self.shape(set())}, tl.int32)"
        text = f"tl.load({e.buffer}_ptr + {index}{masked})"
        return f"({text} != 0)" if buf.dtype.kind == "b" else text

    def index_value(self, e: IndexValue) -> str:
        text = self.print_index(e.expr)
        if e.dtype.kind == "b":
            if e.expr in (sympy.true, sympy.false):
                return self.emit(f"tl.full({self.shape(set())}, {text}, tl.int1)")
            return self.emit(text, "c")
        if not e.free:
            return self.emit(f"tl.full({self.shape(set())}, {text}, {tl_dtype(e.dtype)})")
        return self.emit(f"({text}).to({tl_dtype(e.dtype)})")

    def op(self, e: Op) -> str:
        exponent = e.args[1] if e.name == "power" else None
        if isinstance(exponent, Const) and e.dtype in (np.float32, np.float64) and exponent.value in (2, 3, 4):
            # libdevice's pow costs tens of float64 instructions; x*x*x is within an ulp of it
            x = self.value(e.args[0])
            return "(" + " * ".join([x] * int(exponent.value)) + ")"
        args = [self.operand(a, e.name, e.args) for a in e.args]
        dtypes = [a.dtype for a in e.args]
        if e.dtype.kind == "b" and e.name in ("add", "multiply"):
            return f"({args[0]} {'|' if e.name == 'add' else '&'} {args[1]})"
        return EMITTERS[e.name](args, dtypes, e.dtype)

    # -- reductions ---------------------------------------------------------------------------------

    def dot_operands(self, r: Reduce) -> tuple[Expr, Expr, int, int] | None:
        """A sum of products a[i, k] * b[k, j] over k: a tl.dot (i, j: the axes of a and b)."""
        body = r.body
        if r.kind != "sum" or not isinstance(body, Op) or body.name != "multiply" or body.dtype.kind != "f":
            return None
        if body.dtype.itemsize < 4:
            return None
        k = self.k.var_axis[r.var]
        a, b = body.args
        ia, ib = self.k.axes_of(a), self.k.axes_of(b)
        if k not in ia or k not in ib or len(ia) != 2 or len(ib) != 2:
            return None
        (i,), (j,) = ia - {k}, ib - {k}
        if i == j:
            return None
        return a, b, i, j

    def reduce(self, r: Reduce) -> str:
        dot = self.dot_operands(r)
        if dot is not None:
            return self.dot(r, *dot)
        return self.reduce_text(r, self.reduce_body(r))

    def reduce_body(self, r: Reduce) -> str:
        """The reduction's body as a tile over its axis, identity where the axis is padding."""
        axis = self.k.var_axis[r.var]
        body = self.value(r.body)
        body_axes = self.k.axes_of(r.body)
        if axis not in body_axes:
            body = self.emit(f"tl.broadcast_to({body}, {self.shape(body_axes | {axis})})")
        if self.masked[axis]:
            body = self.emit(f"tl.where(m{axis}, {body}, {self.identity(r)})")
        return body

    def reduce_text(self, r: Reduce, body: str) -> str:
        axis = self.k.var_axis[r.var]
        kw = f"axis={axis}, keep_dims=True"
        if r.kind == "sum":
            if r.dtype.kind in "iu" and r.dtype.itemsize < 4:
                # tl.sum adds narrow integers as 32-bit ones; NumPy's sum wraps around in the narrow type
                # (fuzz seed 2029040: an int8 matmul's 223 is -33 in NumPy)
                return f"tl.sum({body}, {kw}).to({tl_dtype(r.dtype)})"
            return f"tl.sum({body}, {kw})"
        if r.kind == "prod":
            return f"tl.reduce({body}, {axis}, _prod, keep_dims=True)"
        floating = r.body.dtype.kind == "f"
        if r.kind in ("max", "min"):
            # NumPy's max and min propagate NaN
            return f"tl.reduce({body}, {axis}, _nan_{r.kind}, keep_dims=True)" if floating else f"tl.{r.kind}({body}, {kw})"
        if r.kind in ("argmax", "argmin"):
            if not floating:
                return f"tl.{r.kind}({body}, {kw}, tie_break_left=True).to(tl.int64)"
            # NumPy's argmax and argmin give the first NaN, if there is one; tl.argmax/argmin see no NaN
            # (Triton's interpreter reduces with np.nanargmax, which raises on a slice of NaNs only:
            # fuzz seed 2012340, the argmax of a column of NaNs)
            nan = self.emit(f"({body} != {body}).to(tl.int8)")
            worst = "float('-inf')" if r.kind == "argmax" else "float('inf')"
            found = f"tl.{r.kind}(tl.where({nan} != 0, {worst}, {body}), {kw}, tie_break_left=True).to(tl.int64)"
            first = self.emit(f"tl.argmax({nan}, {kw}, tie_break_left=True).to(tl.int64)")
            return f"tl.where(tl.max({nan}, {kw}) != 0, {first}, {found})"
        fn = "max" if r.kind == "any" else "min"
        return f"(tl.{fn}({body}.to(tl.int8), {kw}) != 0)"

    def identity(self, r: Reduce) -> str:
        return _literal(reduction_identity(r.kind, r.body.dtype), r.body.dtype)

    def dot(self, r: Reduce, a: Expr, b: Expr, i: int, j: int) -> str:
        k = self.k.var_axis[r.var]
        bi, bj, bk = self.blocks[i], self.blocks[j], self.blocks[k]
        ta, tb = self.value(a), self.value(b)
        if self.masked[k]:
            ta = self.emit(f"tl.where(m{k}, {ta}, 0)")
        ta = self.emit(f"tl.reshape({ta}, [{bi}, {bk}])" if i < k else f"tl.trans(tl.reshape({ta}, [{bk}, {bi}]))")
        tb = self.emit(f"tl.reshape({tb}, [{bk}, {bj}])" if k < j else f"tl.trans(tl.reshape({tb}, [{bj}, {bk}]))")
        out = tl_dtype(r.dtype)
        product = self.emit(f"tl.dot({ta}, {tb}, input_precision='ieee', out_dtype={out})")
        if i > j:
            product = self.emit(f"tl.trans({product})")
        return f"tl.reshape({product}, {self.shape({i, j})})"

    # -- the function -------------------------------------------------------------------------------

    def write(self) -> KernelSource:
        k = self.k
        if self.loop_axis is None:
            for store in k.stores:
                self.value_for_store(store)
            body = self.lines + self.store_lines(k.stores)
        else:
            body = self.looped_body()
        buffers = list(dict.fromkeys([*k.reads(), *k.writes()]))
        strides: list[tuple[str, int]] = []
        for name in buffers:
            buf = self.buffers[name]
            if buf.runtime_strides:
                used = set().union(*(s.index.free_symbols for s in k.stores)) | self.used_symbols()
                strides += [(name, d) for d, s in enumerate(buf.strides) if s in used]
        sizes = self.size_symbols()
        params = [f"{b}_ptr" for b in buffers] + [f"s_{b}_{d}" for b, d in strides] + sizes
        head = ["@triton.jit", f"def {k.name}({', '.join(params)}):"]
        head += [f"    # {line}" for line in k.describe().splitlines()[:1]]
        head.append("    pid = tl.program_id(0)")
        head += self.axis_lines()
        src = "\n".join(head + body) + "\n"
        return KernelSource(k.name, src, buffers, strides, math.prod(self.counts), self.blocks, sizes,
                            self.config.num_warps)

    def used_symbols(self) -> set[sympy.Symbol]:
        found: set[sympy.Symbol] = set()
        for e in walk(s.value for s in self.k.stores):
            if isinstance(e, Load):
                found |= e.index.free_symbols
        return found

    def value_for_store(self, store: object) -> None:
        self.value(store.value)  # type: ignore[attr-defined]

    def axis_lines(self) -> list[str]:
        lines = []
        grid = [i for i, a in enumerate(self.k.axes) if a.role == "grid"]
        for i, axis in enumerate(self.k.axes):
            sel = ", ".join(":" if d == i else "None" for d in range(self.rank))
            arange = f"tl.arange(0, {self.blocks[i]})" + (f"[{sel}]" if self.rank > 1 else "")
            vars_ = " ".join(str(v) for v in axis.vars)
            if i == self.loop_axis:
                continue  # defined by each loop over its chunks
            if axis.role == "grid":
                later = math.prod(self.counts[g] for g in grid if g > i)
                pid = "pid" if later == 1 else f"(pid // {self.divisor(later)})"
                if grid[0] != i:
                    pid = f"({pid} % {self.divisor(self.counts[i])})"
                start = f"{pid} * {self.blocks[i]} + " if is_symbolic(self.counts[i]) or self.counts[i] > 1 else ""
                lines.append(f"    a{i} = {start}{arange}  # {vars_} < {axis.extent}, {self.counts[i]} blocks")
            else:
                lines.append(f"    a{i} = {arange}  # {vars_} < {axis.extent}")
            if self.masked[i]:
                lines.append(f"    m{i} = a{i} < {self.size(axis.extent)}")
        return lines

    def store_lines(self, stores: list[Store]) -> list[str]:
        lines = []
        for s in stores:
            value = self.names[id(s.value)] if id(s.value) in self.names else self.value(s.value)
            axes = self.k.axes_of(s.index)
            conds = [c for c in (self.mask(axes), None if s.mask == sympy.true else self.print_index(s.mask)) if c]
            if s.buffer.dtype.kind == "b":
                value = f"{value}.to(tl.int8)"
            elif s.value.dtype != s.buffer.dtype:
                value = f"{value}.to({tl_dtype(s.buffer.dtype)})"
            mask = f", mask={' & '.join(conds)}" if conds else ""
            index = self.print_index(s.index) if s.index != 0 else "0"
            spread = self.k.axes_of(s.value) - axes
            if spread or (not axes and self.rank):
                # the value is a tile where the address is not: give the address the value's shape
                index = f"{index} + tl.zeros({self.shape(axes | self.k.axes_of(s.value))}, tl.int32)"
            lines.append(f"{self.indent}tl.store({s.buffer.name}_ptr + {index}, {value}{mask})")
        return lines

    # -- a looped axis ------------------------------------------------------------------------------

    def looped_body(self) -> list[str]:
        """Reductions over the looped axis accumulate over its chunks, those that do not need each
        other in one loop (a softmax: its max, then its sum); then one loop stores what varies along it."""
        k = self.loop_axis
        assert k is not None
        groups: list[list[Reduce]] = [[]]
        for r in self.k.reductions():
            if self.k.var_axis[r.var] != k:
                continue
            if any(isinstance(e, Reduce) and e in groups[-1] for e in walk([r.body])):
                groups.append([])
            groups[-1].append(r)
        for group in groups:
            if group:
                self.looped_reduce(group)
        inner = [s for s in self.k.stores if k in self.k.axes_of(s.index) | self.k.axes_of(s.value)]
        outer = [s for s in self.k.stores if s not in inner]
        if inner:
            with self.chunks(k):
                for s in inner:
                    self.value(s.value)
                self.lines += self.store_lines(inner)
        for s in outer:
            self.value(s.value)
        return self.lines + self.store_lines(outer)

    @contextlib.contextmanager
    def chunks(self, k: int) -> Iterator[None]:
        """`for` over the chunks of axis k; values computed inside are local to the loop."""
        axis = self.k.axes[k]
        sel = ", ".join(":" if d == k else "None" for d in range(self.rank))
        arange = f"tl.arange(0, {self.blocks[k]})" + (f"[{sel}]" if self.rank > 1 else "")
        names, by_text, indent = dict(self.names), dict(self.by_text), self.indent
        self.lines.append(f"{indent}for start{k} in range(0, {self.size(axis.extent)}, {self.blocks[k]}):")
        self.indent = indent + "    "
        vars_ = " ".join(str(v) for v in axis.vars)
        self.lines.append(f"{self.indent}a{k} = start{k} + {arange}  # {vars_} < {axis.extent}, looped")
        if self.masked[k]:
            self.lines.append(f"{self.indent}m{k} = a{k} < {self.size(axis.extent)}")
        try:
            yield
        finally:
            self.names, self.by_text, self.indent = names, by_text, indent

    def looped_reduce(self, group: list[Reduce]) -> None:
        """One loop over the chunks for these reductions, each with an accumulator named in `names`."""
        k = self.loop_axis
        assert k is not None
        accs = []
        for r in group:
            acc, self.count = f"acc{self.count}", self.count + 1
            accs.append(acc)
            arg = r.kind in ("argmax", "argmin")
            shape = self.shape(self.k.axes_of(r))
            init_dtype = tl_dtype(r.body.dtype if arg else r.dtype)
            self.lines.append(f"{self.indent}{acc} = tl.full({shape}, {self.identity(r)}, {init_dtype})")
            if arg:
                self.lines.append(f"{self.indent}{acc}_at = tl.zeros({shape}, tl.int64)")
        with self.chunks(k):
            for r, acc in zip(group, accs):
                body = self.reduce_body(r)
                if r.kind not in ("argmax", "argmin"):
                    part = self.emit(self.reduce_text(r, body))
                    self.lines.append(f"{self.indent}{acc} = {self.combine(r, acc, part)}.to({tl_dtype(r.dtype)})")
                    continue
                top = "max" if r.kind == "argmax" else "min"
                part = self.emit(f"tl.reduce({body}, {k}, _nan_{top}, keep_dims=True)" if r.body.dtype.kind == "f"
                                 else f"tl.{top}({body}, axis={k}, keep_dims=True)")
                at = self.emit(f"{self.reduce_text(r, body)} + start{k}")
                better = ">" if r.kind == "argmax" else "<"
                # strictly better keeps the first position; the first NaN wins, as in NumPy
                take = self.emit(f"({part} {better} {acc}) | (({part} != {part}) & ({acc} == {acc}))")
                self.lines.append(f"{self.indent}{acc}_at = tl.where({take}, {at}, {acc}_at)")
                self.lines.append(f"{self.indent}{acc} = tl.where({take}, {part}, {acc})")
        for r, acc in zip(group, accs):
            self.names[id(r)] = f"{acc}_at" if r.kind in ("argmax", "argmin") else acc

    def combine(self, r: Reduce, acc: str, part: str) -> str:
        if r.kind == "sum":
            return f"({acc} + {part})"
        if r.kind == "prod":
            return f"({acc} * {part})"
        if r.kind in ("max", "min"):
            nan = ", propagate_nan=tl.PropagateNan.ALL" if r.dtype.kind == "f" else ""
            return f"tl.{'maximum' if r.kind == 'max' else 'minimum'}({acc}, {part}{nan})"
        return f"({acc} {'|' if r.kind == 'any' else '&'} {part})"
