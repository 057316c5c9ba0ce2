"""A kernel's innermost loop in tiles, where it calls NumPy's own loops: each tile of DYN_TILE values
runs in passes (C code between NumPy calls), each NumPy loop called once per tile on stack buffers.

Values a later pass (or a NumPy call) reads are kept in tile buffers; everything else stays in
registers, so a chain like `exp(a * b) / (1 + tanh(c))` is one loop nest with three loop calls per tile.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import sympy

from ..kernel_ir import Const, Expr, Op, walk
from .emitters import c_type, literal, uses_numpy_loop
from .ufunc_loops import loop_symbol

if TYPE_CHECKING:
    from .codegen import KernelWriter


@dataclass(frozen=True)
class NumpyLoop:
    """One NumPy ufunc loop a module calls: its C global (`symbol`, `symbol`_data) and what it is."""

    symbol: str
    name: str
    arg_dtypes: tuple[np.dtype, ...]
    out: np.dtype


def numpy_loop_of(e: Op, used: list[NumpyLoop]) -> NumpyLoop:
    """The loop an op calls (added to `used`, the module's list)."""
    arg_dtypes = tuple(np.dtype(a.dtype) for a in e.args)
    loop = NumpyLoop(loop_symbol(e.name, arg_dtypes, e.dtype), e.name, arg_dtypes, np.dtype(e.dtype))
    used.append(loop)
    return loop


def is_numpy_call(e: Expr) -> bool:
    return isinstance(e, Op) and uses_numpy_loop(e.name, [a.dtype for a in e.args], e.dtype)


class TiledLevel:
    """The innermost loop (over `x`) of one kernel, in tiles: `stage` of a value is the number of
    NumPy calls on its path from the loads; pass p computes the values of stage p, after the calls of
    stage p, and the last pass stores."""

    def __init__(self, writer: KernelWriter, x: sympy.Symbol, bound: set[sympy.Symbol],
                 roots: list[Expr] | None = None, finish: Callable[[str], None] | None = None) -> None:
        """`roots`: the values wanted (default: the kernel's); `finish(indent)` writes the last pass's
        end (default: the kernel's stores)."""
        self.w = writer
        self.x = x
        self.roots = roots
        self.finish = finish
        self.values = self.pending(writer, bound, roots)
        ids = {id(e) for e in self.values}
        self.deps: dict[int, list[Expr]] = {}
        self.stage: dict[int, int] = {}
        for e in self.values:
            reach = e.children() if isinstance(e, Op) else walk([e])[:-1]
            self.deps[id(e)] = [d for d in reach if id(d) in ids]
            base = max((self.stage[id(d)] for d in self.deps[id(e)]), default=0)
            self.stage[id(e)] = base + (1 if self.calls(e) else 0)
        self.last = max(self.stage.values(), default=0)
        outputs = roots if roots is not None else [s.value for s in writer.k.stores]
        self.stored = [v for v in outputs if id(v) in ids]
        self.buffered = self.buffered_values()

    def calls(self, e: Expr) -> bool:
        """Whether `e` is a NumPy call of this level (not values a row's sum gathered already)."""
        return is_numpy_call(e) and self.w.reuse_of(e) is None

    @staticmethod
    def pending(writer: KernelWriter, bound: set[sympy.Symbol], roots: list[Expr] | None = None) -> list[Expr]:
        """The values to compute at this level, in order; a value a row's sum gathered is read, so
        what it is made of is not computed again."""
        order = writer.without_reused(walk(list(roots if roots is not None else [s.value for s in writer.k.stores])))
        return [e for e in order if id(e) not in writer.names and not isinstance(e, Const) and e.free <= bound]

    @classmethod
    def wanted(cls, writer: KernelWriter, bound: set[sympy.Symbol], roots: list[Expr] | None = None) -> bool:
        """Whether values at this level call NumPy loops (else the plain loop is better)."""
        return any(is_numpy_call(e) and writer.reuse_of(e) is None for e in cls.pending(writer, bound, roots))

    def read_in(self, p: int) -> list[Expr]:
        """Values pass p reads that an earlier pass or a NumPy call made."""
        found: dict[int, Expr] = {}
        users = [e for e in self.values if self.stage[id(e)] == p and not self.calls(e)]
        reads = [d for e in users for d in self.deps[id(e)]]
        if p == self.last:
            reads += self.stored
        for d in reads:
            if self.stage[id(d)] < p or (self.calls(d) and self.stage[id(d)] <= p):
                found[id(d)] = d
        return list(found.values())

    def buffered_values(self) -> list[Expr]:
        """Values a later pass or a NumPy call reads: each gets a tile buffer (NumPy calls' results too)."""
        found: dict[int, Expr] = {}
        for p in range(self.last + 1):
            for d in self.read_in(p):
                found[id(d)] = d
        for e in self.values:
            if self.calls(e):
                found[id(e)] = e
                for a in e.children():
                    if id(a) in self.stage:
                        found[id(a)] = a
        return [e for e in self.values if id(e) in found]

    def write(self, lo: str, hi: str, indent: str) -> None:
        recording, self.w.recording = self.w.recording, False  # each pass is a scope of its own
        self.write_tiles(lo, hi, indent)
        self.w.recording = recording

    def write_tiles(self, lo: str, hi: str, indent: str) -> None:
        w, x = self.w, self.x.name
        lines = w.lines
        lines.append(f"{indent}for (int64_t {x}_0 = {lo}; {x}_0 < {hi}; {x}_0 += DYN_TILE) {{")
        ind = indent + "    "
        lines.append(f"{ind}const intptr_t {x}_n = (intptr_t)dyn_min_idx({hi} - {x}_0, DYN_TILE);")
        self.declared: set[int] = set()
        self.decl_at = len(lines)  # the tile buffers are declared here, at the top of the tile's block
        for e in self.values:  # a NumPy call's result is named by its buffer
            if self.calls(e):
                w.names[id(e)] = f"t{w.count}"
                w.count += 1
        for p in range(self.last + 1):
            for e in self.values:
                if self.stage[id(e)] == p and isinstance(e, Op) and self.calls(e):
                    self.call(e, ind)
            self.run_pass(p, ind)

    def buffer(self, e: Expr) -> str:
        return f"tile_{self.w.names[id(e)]}"

    def declare(self, e: Expr, indent: str) -> None:
        if id(e) not in self.declared:
            self.declared.add(id(e))
            self.w.lines.insert(self.decl_at, f"{indent}{c_type(e.dtype)} {self.buffer(e)}[DYN_TILE];")
            self.decl_at += 1

    def call(self, e: Op, indent: str) -> None:
        """NumPy's loop on this tile: tile buffers step by their item, values outside the tile by 0."""
        w = self.w
        loop = numpy_loop_of(e, w.loops)
        self.declare(e, indent)
        ptrs, steps = [], []
        for a in e.children():
            if id(a) in self.stage:
                self.declare(a, indent)
                ptrs.append(f"(char *){self.buffer(a)}")
                steps.append(str(np.dtype(a.dtype).itemsize))
            else:
                name = (w.emit(c_type(a.dtype), literal(a.value, a.dtype), indent) if isinstance(a, Const)
                        else w.names[id(a)])
                ptrs.append(f"(char *)&{name}")
                steps.append("0")
        ptrs.append(f"(char *){self.buffer(e)}")
        steps.append(str(np.dtype(e.dtype).itemsize))
        w.lines.append(f"{indent}{{  /* np.{e.name} on the tile */")
        w.lines.append(f"{indent}    char *args_[{len(ptrs)}] = {{{', '.join(ptrs)}}};")
        w.lines.append(f"{indent}    const intptr_t steps_[{len(steps)}] = {{{', '.join(steps)}}};")
        w.lines.append(f"{indent}    fpflags |= fetestexcept(DYN_FLAGS);  /* NumPy's loops may clear the flags */")
        w.lines.append(f"{indent}    {loop.symbol}(args_, &{self.x.name}_n, steps_, {loop.symbol}_data);")
        w.lines.append(f"{indent}}}")

    def run_pass(self, p: int, indent: str) -> None:
        w, x = self.w, self.x.name
        inner = indent + "    "
        w.lines.append(f"{indent}for (intptr_t {x}_j = 0; {x}_j < {x}_n; {x}_j++) {{")
        w.lines.append(f"{inner}const int64_t {x} = {x}_0 + (int64_t){x}_j; (void){x};")
        for d in self.read_in(p):
            w.lines.append(f"{inner}const {c_type(d.dtype)} {w.names[id(d)]} = {self.buffer(d)}[{x}_j];")
        buffered = {id(e) for e in self.buffered}
        for e in self.values:
            if self.stage[id(e)] != p or self.calls(e):
                continue
            w.value(e, inner)
            if id(e) in buffered:
                self.declare(e, indent)
                w.lines.append(f"{inner}{self.buffer(e)}[{x}_j] = {w.names[id(e)]};")
        if p == self.last:
            if self.finish is None:
                w.stores_at(inner)
            else:
                self.finish(inner)
        w.lines.append(f"{indent}}}")
