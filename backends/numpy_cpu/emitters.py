"""Kernel bodies: NumPy statements computing one block of every member, one emitter per role.

Ufuncs write into scratch or output slices with out=; everything else computes the block as the
original call would, so each element comes out bit for bit as NumPy computes it. Split members
(see splitting.py) get one statement per component.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...fx_ir import CodeGen, Node, TensorMeta
from ...fx_ir.naming import Namespace
from ...fx_ir.printing import source_of
from .analysis import NodeInfo, Role
from .buffers import ScratchPlan, Value
from .scheduling import Kernel
from .splitting import Split

_CHAIN_UFUNCS = {"sum": "np.add", "norm": "np.add", "max": "np.maximum", "amax": "np.maximum",
                 "min": "np.minimum", "amin": "np.minimum"}


@dataclass
class KernelNames:
    """Names inside one kernel function: its parameters and the block bounds."""

    lo: str
    hi: str
    scratch: str
    params: dict[Node, str]      # external arrays, by node
    outputs: dict[Node, str]     # output member -> parameter holding its full array (or target view)


def axis_slice(text: str, axis: int | None, names: KernelNames, component: int | None = None,
               ndim: int | None = None) -> str:
    """`x[lo:hi]`, `x[:, lo:hi]`, `x[lo:hi, 1]`, `x[..., 1]`: a block along `axis`, maybe one component."""
    parts = [] if axis is None else [":"] * axis + [f"{names.lo}:{names.hi}"]
    if component is not None:
        assert ndim is not None
        if axis is None:
            parts = ["...", str(component)]
        else:
            parts = parts + [":"] * (ndim - 1 - len(parts)) + [str(component)]
    while len(parts) > 1 and parts[-1] == ":":
        parts.pop()
    return text if not parts else f"{text}[{', '.join(parts)}]"


class KernelEmitter:
    """Writes the body of one kernel function; `codegen` renders constants and callables."""

    def __init__(self, kernel: Kernel, infos: dict[Node, NodeInfo], scratch: ScratchPlan, split: Split,
                 codegen: CodeGen, names: KernelNames, namespace: Namespace) -> None:
        self.kernel, self.infos, self.scratch, self.split = kernel, infos, scratch, split
        self.codegen, self.names = codegen, names
        members = set(kernel.members)
        self.read_later: set[Node] = {o for m in kernel.members for o in m.all_input_nodes if o in members}
        self.component_names: dict[Value, str] = {
            (m, c): namespace.create_name(f"{m.name}_{'xyzw'[c]}")
            for m, n in split.components.items() for c in range(n)
        }
        self._emitters: dict[Role, Callable[[Node, NodeInfo], list[str]]] = {
            Role.UFUNC: self.emit_ufunc, Role.POWER: self.emit_power,
            Role.CALL: self.emit_call, Role.REDUCTION: self.emit_call,
        }

    def body(self) -> list[str]:
        lines: list[str] = []
        last_source = None
        for member in self.kernel.members:
            info = self.infos[member]
            source = source_of(member)
            if source is not None and source != last_source:
                lines.extend(f"# {line}" for line in source.splitlines())
                last_source = source
            if member in self.split.reductions:
                lines.extend(self.emit_split_reduction(member, info))
            elif member in self.split.components:
                for c in range(self.split.components[member]):
                    lines.extend(self._emitters[info.role](member, info, c))  # type: ignore[call-arg]
            else:
                lines.extend(self._emitters[info.role](member, info))
        return lines

    # -- operands and destinations ----------------------------------------------------------------

    def operand(self, member: Node, value: Any, component: int | None = None) -> str:
        if not isinstance(value, Node):
            return str(self.codegen.expr(value))
        if (value, component) in self.component_names:
            return self.component_names[(value, component)]
        meta = value.meta.get("val")
        ndim = meta.ndim if isinstance(meta, TensorMeta) else 0
        if component is not None and isinstance(meta, TensorMeta) and ndim > 0:
            # the operand's last axis lines up with the split axis: take the component, or broadcast it
            component = component if meta.shape[-1] != 1 else 0
        else:
            component = None
        if value in self.kernel.axis:
            return axis_slice(value.name, None, self.names, component, ndim)
        axis = self.kernel.operand_axis(self.infos[member], value)
        return axis_slice(self.names.params[value], axis, self.names, component, ndim)

    def destination(self, member: Node, component: int | None = None) -> str | None:
        """Where a ufunc member writes: its output's block, a scratch slot, or None (it allocates)."""
        if member in self.names.outputs:
            return axis_slice(self.names.outputs[member], self.kernel.axis[member], self.names)
        slot = self.scratch.slot_of.get((member, component))
        return None if slot is None else f"{self.names.scratch}[{slot}]"

    def _value_name(self, member: Node, component: int | None) -> str:
        return member.name if component is None else self.component_names[(member, component)]

    def _bind(self, member: Node, expression: str, component: int | None = None) -> str:
        """`name = expr` if a later member reads the value, else the bare expression."""
        if member in self.read_later or component is not None:
            return f"{self._value_name(member, component)} = {expression}"
        return expression

    def _call_args(self, member: Node, args: tuple[Any, ...], kwargs: dict[str, Any],
                   component: int | None = None) -> str:
        parts = [self.operand(member, a, component) for a in args]
        parts += [f"{k}={self.operand(member, v, component)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    # -- one emitter per role -----------------------------------------------------------------------

    def emit_ufunc(self, member: Node, info: NodeInfo, component: int | None = None) -> list[str]:
        assert info.ufunc is not None
        args = member.args if info.ufunc_args is None else info.ufunc_args
        call = f"{self.codegen.callable_expr(info.ufunc)}({self._call_args(member, args, member.kwargs, component)}"
        destination = self.destination(member, component)
        call += ")" if destination is None else f", out={destination})"
        return [self._bind(member, call, component)]

    def emit_power(self, member: Node, info: NodeInfo, component: int | None = None) -> list[str]:
        base, exponent = member.args
        if (member, component) in self.scratch.inplace_power:
            # `**=` on the dying base's own buffer: the same scalar fast paths as `**` (square, sqrt, ...)
            assert isinstance(base, Node)
            base_name = self._value_name(base, component)
            lines = [f"{base_name} **= {self.operand(member, exponent, component)}"]
            if member in self.read_later or component is not None:
                lines.append(f"{self._value_name(member, component)} = {base_name}")
            return lines
        expression = (f"{_paren(self.operand(member, base, component))} ** "
                      f"{_paren(self.operand(member, exponent, component))}")
        if component is not None:
            return [f"{self._value_name(member, component)} = {expression}"]
        return self._allocated(member, expression)

    def emit_call(self, member: Node, info: NodeInfo) -> list[str]:
        """Elementwise functions and reductions: the original call, on blocks."""
        if member.op == "call_method":
            receiver, *rest = member.args
            expression = (f"{_paren(self.operand(member, receiver))}.{member.target}"
                          f"({self._call_args(member, tuple(rest), member.kwargs)})")
        else:
            expression = (f"{self.codegen.callable_expr(member.target)}"
                          f"({self._call_args(member, member.args, member.kwargs)})")
        return self._allocated(member, expression)

    def emit_split_reduction(self, member: Node, info: NodeInfo) -> list[str]:
        """sum/norm/max/min over a split axis: a left-to-right ufunc chain, NumPy's own order (probed)."""
        source = member.args[0]
        assert isinstance(source, Node)
        kind = self.split.reductions[member]
        parts = [self.operand(member, source, c) for c in range(self.split.components[source])]
        name, ufunc = member.name, _CHAIN_UFUNCS[kind]
        if kind == "norm":  # (x.conj() * x).real summed, then sqrt; squares are never -0.0, so no 0 + first
            lines = [f"{name} = np.multiply({parts[0]}, {parts[0]})"]
            lines += [f"np.add({name}, np.multiply({p}, {p}), out={name})" for p in parts[1:]]
            lines.append(f"np.sqrt({name}, out={name})")
        elif kind == "sum":  # NumPy adds into its identity first: 0.0 + -0.0 is +0.0
            lines = [f"{name} = np.add(0.0, {parts[0]})"]
            lines += [f"np.add({name}, {p}, out={name})" for p in parts[1:]]
        else:
            lines = [f"{name} = {ufunc}({parts[0]}, {parts[1]})"]
            lines += [f"{ufunc}({name}, {p}, out={name})" for p in parts[2:]]
        meta = info.array
        assert meta is not None
        keepdims = meta.ndim == source.meta["val"].ndim
        if keepdims:
            lines.append(f"{name} = {name}[..., None]")
        if member in self.names.outputs:
            target = axis_slice(self.names.outputs[member], self.kernel.axis[member], self.names)
            lines.append(f"np.copyto({target}, {name})")
        return lines

    def _allocated(self, member: Node, expression: str) -> list[str]:
        """A value computed into a new block array; an output copies it into its slice (same dtype: exact)."""
        if member in self.names.outputs:
            target = axis_slice(self.names.outputs[member], self.kernel.axis[member], self.names)
            if member in self.read_later:
                return [f"{member.name} = {expression}", f"np.copyto({target}, {member.name})"]
            return [f"np.copyto({target}, {expression})"]
        return [f"{member.name} = {expression}"]


def _paren(text: str) -> str:
    head = text.split("[", 1)[0]
    if head.replace("_", "a").replace(".", "a").isalnum() and (text == head or text.endswith("]")):
        return text
    return f"({text})"

