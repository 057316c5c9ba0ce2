"""Kernel bodies: one line of NumPy per member, computing one block, one emitter per role.

Ufuncs write into scratch or output slices with out=; everything else computes the block as
the original call would, so each element comes out bit for bit as NumPy computes it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...fx_ir import CodeGen, Node
from .analysis import NodeInfo, Role
from .buffers import ScratchPlan
from .scheduling import Kernel


@dataclass
class KernelNames:
    """Names inside one kernel function: its parameters and the block bounds."""

    lo: str
    hi: str
    scratch: str
    params: dict[Node, str]      # external arrays and full outputs, by node
    outputs: dict[Node, str]     # output member -> parameter holding its full array (or target view)


def axis_slice(text: str, axis: int, names: KernelNames) -> str:
    """`x[lo:hi]`, `x[:, lo:hi]`, ...: the block of an array along `axis`."""
    return f"{text}[{', '.join([':'] * axis + [f'{names.lo}:{names.hi}'])}]"


class KernelEmitter:
    """Writes the body of one kernel function; `codegen` renders constants and callables."""

    def __init__(self, kernel: Kernel, infos: dict[Node, NodeInfo], scratch: ScratchPlan, codegen: CodeGen,
                 names: KernelNames) -> None:
        self.kernel, self.infos, self.scratch, self.codegen, self.names = kernel, infos, scratch, codegen, names
        members = set(kernel.members)
        self.read_later: dict[Node, int] = {}
        for i, member in enumerate(kernel.members):
            for operand in member.all_input_nodes:
                if operand in members:
                    self.read_later[operand] = i
        self._emitters: dict[Role, Callable[[Node, NodeInfo], list[str]]] = {
            Role.UFUNC: self.emit_ufunc, Role.POWER: self.emit_power,
            Role.CALL: self.emit_call, Role.REDUCTION: self.emit_call,
        }

    def body(self) -> list[str]:
        lines: list[str] = []
        for member in self.kernel.members:
            info = self.infos[member]
            lines.extend(self._emitters[info.role](member, info))
        return lines

    # -- operands and destinations ----------------------------------------------------------------

    def operand(self, member: Node, value: Any) -> str:
        if not isinstance(value, Node):
            return self.codegen.expr(value)
        if value in self.kernel.axis:
            return value.name
        axis = self.kernel.operand_axis(self.infos[member], value)
        text = self.names.params[value]
        return text if axis is None else axis_slice(text, axis, self.names)

    def destination(self, member: Node) -> str | None:
        """Where a ufunc member writes: its output's block, a scratch slot, or None (it allocates)."""
        if member in self.names.outputs:
            return axis_slice(self.names.outputs[member], self.kernel.axis[member], self.names)
        slot = self.scratch.slot_of.get(member)
        return None if slot is None else f"{self.names.scratch}[{slot}]"

    def _bind(self, member: Node, expression: str) -> str:
        """`name = expr` if a later member reads the value, else the bare expression."""
        return f"{member.name} = {expression}" if member in self.read_later else expression

    def _call_args(self, member: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        parts = [self.operand(member, a) for a in args]
        parts += [f"{k}={self.operand(member, v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    # -- one emitter per role -----------------------------------------------------------------------

    def emit_ufunc(self, member: Node, info: NodeInfo) -> list[str]:
        assert info.ufunc is not None
        call = f"{self.codegen.callable_expr(info.ufunc)}({self._call_args(member, member.args, member.kwargs)}"
        destination = self.destination(member)
        call += ")" if destination is None else f", out={destination})"
        return [self._bind(member, call)]

    def emit_power(self, member: Node, info: NodeInfo) -> list[str]:
        base, exponent = member.args
        if member in self.scratch.inplace_power:
            # `**=` on the dying base's own buffer: the same scalar fast paths as `**` (square, sqrt, ...)
            assert isinstance(base, Node)
            lines = [f"{base.name} **= {self.operand(member, exponent)}"]
            if member in self.read_later:
                lines.append(f"{member.name} = {base.name}")
            return lines
        expression = f"{self._paren(self.operand(member, base))} ** {self._paren(self.operand(member, exponent))}"
        return self._allocated(member, expression)

    def emit_call(self, member: Node, info: NodeInfo) -> list[str]:
        """Elementwise functions and reductions: the original call, on blocks."""
        if member.op == "call_method":
            receiver, *rest = member.args
            expression = (f"{self._paren(self.operand(member, receiver))}.{member.target}"
                          f"({self._call_args(member, tuple(rest), member.kwargs)})")
        else:
            expression = (f"{self.codegen.callable_expr(member.target)}"
                          f"({self._call_args(member, member.args, member.kwargs)})")
        return self._allocated(member, expression)

    def _allocated(self, member: Node, expression: str) -> list[str]:
        """A value computed into a new block array; an output copies it into its slice (same dtype: exact)."""
        if member in self.names.outputs:
            target = axis_slice(self.names.outputs[member], self.kernel.axis[member], self.names)
            if member in self.read_later:
                return [f"{member.name} = {expression}", f"np.copyto({target}, {member.name})"]
            return [f"np.copyto({target}, {expression})"]
        return [f"{member.name} = {expression}"]

    @staticmethod
    def _paren(text: str) -> str:
        simple = text.replace("_", "a").replace(".", "a")
        if simple.isalnum() or (text.endswith("]") and "[" in text and " " not in text.split("[", 1)[0]):
            return text
        return f"({text})"
