"""A lowered graph: buffers, fused kernels and NumPy steps in run order, and how to build the result.

Kernels are index-based (stores of expressions over tile axes); an emitter turns each into target code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy

from ...fx_ir import map_aggregate
from .exprs import Expr, Reduce, format_expr, loads, walk
from .values import Buffer


@dataclass
class Axis:
    """One dimension of a kernel's tile. `role`: "grid" (split in blocks across programs), or "full"
    (one program sees all of it: reduced axes and the output axes they share)."""

    extent: int
    role: str
    vars: list[sympy.Symbol] = field(default_factory=list)


@dataclass
class Store:
    """`buffer[index] = value` for every point of the output space where `mask` holds."""

    buffer: Buffer
    index: sympy.Expr
    value: Expr
    mask: sympy.Basic = sympy.true


@dataclass
class Kernel:
    """Stores over one output space; `var_axis` maps every index variable to its tile axis."""

    name: str
    axes: list[Axis]
    stores: list[Store]
    var_axis: dict[sympy.Symbol, int]
    origins: list[str] = field(default_factory=list)  # the graph nodes whose values it stores

    def reads(self) -> list[str]:
        from .exprs import loads
        return list(dict.fromkeys(ld.buffer for ld in loads(s.value for s in self.stores)))

    def writes(self) -> list[str]:
        return list(dict.fromkeys(s.buffer.name for s in self.stores))

    def reductions(self) -> list[Reduce]:
        return [e for e in walk(s.value for s in self.stores) if isinstance(e, Reduce)]

    def axes_of(self, expr: Expr | sympy.Basic) -> set[int]:
        free = expr.free if isinstance(expr, Expr) else {s for s in expr.free_symbols if s in self.var_axis}
        return {self.var_axis[v] for v in free if v in self.var_axis}

    def describe(self) -> str:
        axes = ", ".join(f"{a.role}[{a.extent}]({' '.join(map(str, a.vars))})" for a in self.axes)
        lines = [f"kernel {self.name}  axes: {axes}  (nodes: {', '.join(self.origins)})"]
        for s in self.stores:
            mask = "" if s.mask == sympy.true else f"  where {s.mask}"
            lines.append(f"    {s.buffer.name}[{s.index}] = {format_expr(s.value)}{mask}")
        return "\n".join(lines)


@dataclass
class HostStep:
    """A graph node run as NumPy code between kernels (a fallback), with the reason it is not lowered.

    `args`/`kwargs` hold the node's arguments with every node replaced by a Ref to a host value.
    """

    node: str
    call: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    result: str | None          # the value name the result is stored under
    reason: str
    mutates: tuple[str, ...] = ()  # buffers whose memory the call may write

    def describe(self) -> str:
        return f"numpy {self.node} -> {self.result}  ({self.reason})"


@dataclass(frozen=True)
class Ref:
    """A value of the running program: a buffer, a constant, or a host value made by a HostStep.
    `scalar`: hand it back as a NumPy scalar (`array[()]`), as NumPy's reductions to one value do."""

    name: str
    scalar: bool = False


@dataclass
class Program:
    """Everything one compiled graph does: `steps` (Kernel or HostStep) in order; `output` is the
    graph's output structure with Refs in place of values; `placeholders` name the input buffers."""

    buffers: dict[str, Buffer]
    steps: list[Kernel | HostStep]
    placeholders: list[str]
    output: Any
    fallbacks: list[tuple[str, str]] = field(default_factory=list)  # (node, reason)
    constants: dict[str, Any] = field(default_factory=dict)  # host values known before the run
    # the graph nodes (positions) whose op each Op expression computes: identical nodes are one
    # interned expression, and NumPy warns once per node whose op raised a flag
    op_origins: dict[Expr, tuple[int, ...]] = field(default_factory=dict)
    # the same with, for each node, how many steps came before it: an expression loads buffers by name, so
    # one interned expression may stand for nodes with a write into what it loads between them
    op_origin_steps: dict[Expr, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    @property
    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel)]

    def origins_in(self, kernel: Kernel) -> dict[Expr, tuple[int, ...]]:
        """op_origins as `kernel` computes them: of the nodes of one expression, those that saw the buffers
        it loads as the kernel sees them (no step writing one of them between). An unrolled loop's
        `np.mod(c, a)` after each `a[a < x] = y` is one expression computed by three kernels, each for
        one node: reported for all three by each kernel, NumPy's two warnings became three (fuzz seed
        1074276). Where none fits, every node (as before)."""
        at = next(k for k, step in enumerate(self.steps) if step is kernel)
        writers = [set(step.writes()) if isinstance(step, Kernel) else set(step.mutates) for step in self.steps]
        found: dict[Expr, tuple[int, ...]] = {}
        for expr, records in self.op_origin_steps.items():
            if len(records) < 2:
                found[expr] = self.op_origins[expr]
                continue
            read = sorted({load.buffer for load in loads([expr])})
            seen = self._versions(read, writers, at)
            found[expr] = tuple(p for p, count in records
                                if self._versions(read, writers, count) == seen) or self.op_origins[expr]
        return found

    def _versions(self, names: list[str], writers: list[set[str]], count: int) -> tuple[int, ...]:
        """How many times each buffer was written by the first `count` steps. An input's first version is
        the caller's; a temporary's is its first write, which may come after a node that reads it lazily
        (its kernel not made yet)."""
        return tuple(max(1, (name in self.placeholders) + sum(1 for w in writers[:count] if name in w))
                     for name in names)

    def names_used(self) -> set[str]:
        """The values some step reads or writes, or the output hands back (an input absent from it,
        loaded before a graph break say, is only passed along)."""
        used: set[str] = set()

        def note(x: Any) -> Any:
            if isinstance(x, Ref):
                used.add(x.name)
            return x
        for step in self.steps:
            if isinstance(step, Kernel):
                used.update(step.reads(), step.writes())
            else:
                map_aggregate((step.args, step.kwargs), note)
        map_aggregate(self.output, note)
        return used

    def describe(self) -> str:
        lines = ["buffers:"] + [f"    {b!r}" for b in self.buffers.values()]
        for step in self.steps:
            lines.append(step.describe())
        lines.append(f"output: {self.output}")
        return "\n".join(lines)
