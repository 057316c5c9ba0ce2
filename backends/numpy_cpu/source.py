"""The `source` stage: a plan becomes one readable Python module, kernels first, then `forward`.

Straight nodes print as fx_ir's CodeGen prints them; each kernel call keeps the straight code of its
members as the branch taken when the run-time layout check fails.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from ...fx_ir.lazy_sympy import sympy

from ...fx_ir import CodeGen, Node, loop_of
from ...fx_ir.naming import Namespace
from ...fx_ir.printing import source_of
from . import runtime
from .analysis import Role
from .buffers import CopyElision
from .emitters import KernelEmitter, KernelNames, axis_slice
from .scheduling import Kernel
from .sizes import shape_source, symbols_of
from .sizes import source as size_source

if TYPE_CHECKING:
    from .plan import Plan


@dataclass
class LoopSpec:
    """What the callable stage builds a runtime.BlockedLoop (or, for a dynamic kernel, a
    runtime.DynamicLoop around the generated `layout_function`) from, once the source has run."""

    kernel_function: str
    loop_global: str
    extent: int
    block: int
    threads: int
    slots: list[tuple[tuple[Any, ...], np.dtype, int]]
    layout_function: str | None = None


@dataclass
class ModuleSource:
    src: str
    globals: dict[str, Any]
    loops: list[LoopSpec] = field(default_factory=list)
    function_name: str = "forward"


class SourceWriter(CodeGen):
    """CodeGen for a whole plan. Reuses CodeGen's per-opcode emitters (and its `_body`) for straight nodes."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan.graph, "self")
        self.plan = plan
        self._kernel_sources: list[str] = []
        self._extra_frees: list[str] = []  # forward locals a kernel step made (views), freed after it
        self._layouts: dict[str, tuple[str, list[str]]] = {}  # dynamic kernel -> its layout function, size names
        self._node_names = frozenset(n.name for n in self.graph.nodes) | {"np"}
        self._loops: list[LoopSpec] = []
        self._size_names: dict[sympy.Symbol, str] = {}  # symbols the forward reads from its inputs' shapes
        for helper in ("c_ordered", "overlaps", "errors_raise"):
            self.globals[helper] = getattr(runtime, helper)
            self._globals_ns.claim(helper)

    def write(self) -> ModuleSource:
        for node in self.graph.nodes:
            for operand in node.all_input_nodes:
                self._last_use[operand] = node  # CodeGen's in-place operator form relies on it
        self._dying: dict[int, list[Node]] = {}
        for node, last in self.plan.buffers.last_read.items():
            self._dying.setdefault(last, []).append(node)
        last_source = None
        for index, step in enumerate(self.plan.steps):
            if isinstance(step, Kernel):
                self._write_kernel(step)
                last_source = None
            else:
                source = source_of(step)
                if source is not None and source != last_source and step.op != "placeholder":
                    self._body.extend(f"# {line}" for line in source.splitlines())
                    last_source = source
                elision = self.plan.buffers.elided_copies.get(step)
                if elision is not None:
                    self._write_elided_copy(step, elision)
                else:
                    getattr(self, f"emit_{step.op.value}")(step)
            self._free(index)
        self._body[:0] = self._size_bindings()
        header = f"def forward({', '.join(self._params)}):"
        body = "\n".join("    " + line for line in (self._body or ["pass"]))
        kernels = "".join(text + "\n\n" for text in self._kernel_sources)
        summary = self.plan.summary()
        src = f"# {summary}\n{kernels}{header}\n{body}\n"
        return ModuleSource(src, self.globals, self._loops)

    def emit_call_module(self, node: Node) -> None:
        loop = loop_of(node)
        if loop is None or loop.run_loop is None:
            super().emit_call_module(node)
            return
        # the backend's whole loop called directly: the loop object's own call (a Python frame that
        # repacks the arguments and the tuple of results) cost ~2 us, paid per call of a nested loop
        call = f"{self._attribute_path(node.target)}.run_loop({self._call_args(node.args, node.kwargs)})"
        self._assign(node, call)

    # -- symbolic sizes ------------------------------------------------------------------------------

    def _sizes(self, values: Any) -> dict[sympy.Symbol, str]:
        """Names of the symbols in `values`, bound at the top of forward from the inputs' shapes."""
        for symbol in sorted(symbols_of(values), key=str):
            if symbol not in self._size_names:
                self._size_names[symbol] = self._globals_ns.create_name(str(symbol))
        return self._size_names

    def _size_bindings(self) -> list[str]:
        lines = []
        origins = self.plan.sizes.origins
        for symbol, name in self._size_names.items():
            node, dim = origins[symbol]
            lines.append(f"{name} = {node.name}.shape[{dim}]")
        return lines

    def _shape(self, shape: tuple[Any, ...]) -> str:
        return shape_source(tuple(shape), self._sizes(shape))

    # -- frees --------------------------------------------------------------------------------------

    def _free(self, index: int) -> None:
        dead = [
            node.name for node in self._dying.get(index, ())
            if node in self._bound and node.op not in ("placeholder", "get_attr")
        ] + self._extra_frees
        self._extra_frees = []
        if not dead or not self._body or self._body[-1].startswith("return"):
            return
        if isinstance(self.plan.steps[index], Kernel) or self._body[-1].startswith("#"):
            self._body.append(f"del {', '.join(sorted(dead))}")
        else:
            self._body[-1] += f";  del {', '.join(sorted(dead))}"

    # -- kernels ------------------------------------------------------------------------------------

    def _write_kernel(self, kernel: Kernel) -> None:
        plan = self.plan
        blocking = plan.blocking[kernel.name]
        scratch = plan.buffers.scratch[kernel.name]
        function = self._globals_ns.create_name(kernel.name)
        loop = self._globals_ns.create_name(f"{kernel.name}_loop")
        local = Namespace(self._node_names)
        names = KernelNames(lo=local.create_name("lo"), hi=local.create_name("hi"),
                            scratch=local.create_name("scratch"), params={}, outputs={})
        externals = kernel.externals()
        for node in externals:
            names.params[node] = node.name
        arguments = [n.name for n in externals]
        view = None
        if kernel.target is not None:
            value = kernel.outputs[0]
            names.outputs[value] = local.create_name(f"{kernel.target.setitem.name}_view")
            view = self._globals_ns.create_name(f"{kernel.target.setitem.name}_view")
            arguments.append(view)
        else:
            for out in kernel.outputs:
                names.outputs[out] = local.create_name(f"{out.name}_out")
                arguments.append(out.name)
        emitter = KernelEmitter(kernel, plan.infos, scratch, plan.buffers.split[kernel.name], self, names, local)
        params = [names.lo, names.hi, names.scratch, *[n.name for n in externals], *names.outputs.values()]
        members = ", ".join(m.name for m in kernel.members)
        axis_note = f"axis {kernel.axis[kernel.outputs[0]]} of {kernel.outputs[0].name}"
        if blocking is None:
            sizing = "blocks and threads chosen per call from the sizes"
        else:
            sizing = f'{_count(blocking.blocks, "block")} of {blocking.block}, {_count(blocking.threads, "thread")}'
        doc = f'    """{members}: rows {names.lo}:{names.hi} along {axis_note} ({sizing})."""'
        lines = [f"def {function}({', '.join(params)}):", doc, *("    " + line for line in emitter.body())]
        self._kernel_sources.append("\n".join(lines))
        slots = [(shape, np.dtype(dtype), axis) for shape, dtype, axis in scratch.slots]
        if blocking is None:
            layout = self._write_layout(kernel)
            self._loops.append(LoopSpec(function, loop, 0, 0, 0, slots, layout))
        else:
            self._loops.append(LoopSpec(function, loop, kernel.extent, blocking.block, blocking.threads, slots))
        self._write_kernel_call(kernel, loop, externals, arguments, view)

    def _write_layout(self, kernel: Kernel) -> str:
        """`kernel_0_layout(s0, s1)`: a dynamic kernel's footprint for given sizes, which blocking needs."""
        f = self.plan.footprints[kernel.name]
        values = [f.extent, f.row_bytes, *f.row_elements, f.work, *(d for shape, _, _ in f.slots for d in shape)]
        names = dict(self._sizes(values))
        symbols = sorted(symbols_of(values), key=str)
        local = {symbol: str(symbol) for symbol in symbols}
        function = self._globals_ns.create_name(f"{kernel.name}_layout")

        def go(value: Any) -> str:
            return size_source(value, local)

        per_row = [go(e) for e in f.row_elements]
        slots = shape_source(tuple(shape_source(tuple(shape), local) for shape, _, _ in f.slots), {})
        self._layouts[kernel.name] = (function, [names[s] for s in symbols])
        row_elements = per_row[0] if len(per_row) == 1 else f"max({', '.join(per_row)})"
        doc = f"{kernel.name} at these sizes: extent, bytes in flight per row, elements per row, work, scratch shapes."
        self._kernel_sources.append("\n".join([
            f"def {function}({', '.join(local[s] for s in symbols)}):",
            f'    """{doc}"""',
            f"    return {go(f.extent)}, {go(f.row_bytes)}, {row_elements}, {go(f.work)}, {slots}",
        ]))
        return function

    def _write_kernel_call(self, kernel: Kernel, loop: str, externals: list[Node], arguments: list[str],
                           view: str | None) -> None:
        arrays = [n.name for n in externals if self._is_array(n)]
        self._body.append(f"# {kernel.name}: {len(kernel.members)} ops fused, evaluated block by block")
        condition = f"c_ordered({', '.join(arrays)})" if arrays else "True"
        layout = self._layouts.get(kernel.name)
        if layout is not None:
            condition = f"{self._dynamic_condition(kernel)} and {condition}"
            arguments = [shape_source(tuple(layout[1]), {}), *arguments]
        if kernel.target is not None:
            assert view is not None
            target = kernel.target
            self._body.append(f"{view} = {self._operand(target.array, receiver=True)}[{self._subscript(target.index)}]")
            risky = [n.name for n in self.plan.buffers.overlap_checks.get(kernel.name, []) if self._is_array(n)]
            if risky:
                condition += f" and not overlaps({view}, {', '.join(risky)})"
            condition += " and not errors_raise()"
        self._body.append(f"if {condition}:")
        if kernel.target is None:
            for out in kernel.outputs:
                self._body.append("    " + self._allocation(out))
                self._bound.add(out)
        self._body.append(f"    {loop}({', '.join(arguments)})")
        self._body.append("else:")
        straight_start = len(self._body)
        self._write_straight(kernel)
        for i in range(straight_start, len(self._body)):
            self._body[i] = "    " + self._body[i]
        if view is not None:
            self._extra_frees.append(view)

    def _dynamic_condition(self, kernel: Kernel) -> str:
        """Whether blocking pays at these sizes, and the sizes the kernel blocks along agree.

        The trace decided (and guarded) which sizes broadcasting makes equal; sizes that print
        differently are still compared, so that a kernel never slices past an array's end.
        """
        minimum = self.plan.machine.min_kernel_bytes
        member_bytes = kernel.member_bytes()
        names = self._sizes(member_bytes)
        parts = [size_source(b, names) for b in member_bytes]
        big = parts[0] if len(parts) == 1 else f"max({', '.join(parts)})"
        checks = [f"{big} >= {minimum}"]
        for size, value in self.plan.buffers.split[kernel.name].assumed.items():
            checks.append(f"{size_source(size, self._sizes([size]))} == {value}")  # split into `value` components
        extent = size_source(kernel.extent, self._sizes([kernel.extent]))
        seen = {extent}
        infos = self.plan.infos
        for member in kernel.members:
            sizes = [member.meta["val"].shape[kernel.axis[member]]]
            sizes += [o.meta["val"].shape[a] for o in member.all_input_nodes if o not in kernel.axis
                      and (a := kernel.operand_axis(infos[member], o)) is not None]
            for size in sizes:
                text = size_source(size, self._sizes([size]))
                if text not in seen:
                    seen.add(text)
                    checks.append(f"{text} == {extent}")
        return " and ".join(checks)

    def _write_elided_copy(self, node: Node, elision: CopyElision) -> None:
        """`t = x.copy()` whose interior a kernel overwrites next: copy only the border regions."""
        meta = node.meta["val"]
        source = elision.source.name
        written = self._subscript(self._elided_index(node))
        self._body.append(f"# {source}.copy(), but [{written}] is computed straight into it below")
        self._body.append(f"{node.name} = np.empty({self._shape(meta.shape)}, dtype={self._dtype_name(meta.dtype)}) "
                          f"if type({source}) is np.ndarray else {source}.copy()")
        self._bound.add(node)
        for region in elision.regions:
            index = ", ".join(_slice_text(r) for r in region)
            self._body.append(f"{node.name}[{index}] = {source}[{index}]")

    def _elided_index(self, node: Node) -> Any:
        for kernel in self.plan.kernels:
            if kernel.target is not None and kernel.target.array is node:
                return kernel.target.index
        raise AssertionError(f"no kernel overwrites {node.name}")

    def _allocation(self, out: Node) -> str:
        meta = out.meta["val"]
        empty = f"np.empty({self._shape(meta.shape)}, dtype={self._dtype_name(meta.dtype)})"
        buffer = self.plan.buffers.outputs.get(out)
        if buffer is None or buffer.source is None:
            return f"{out.name} = {empty}"
        source = buffer.source.name
        if not buffer.check_contiguous:
            return f"{out.name} = {source}  # reuses the dead buffer of {source}"
        return f"{out.name} = {source} if {source}.flags.c_contiguous else {empty}  # reuses {source}"

    def _write_straight(self, kernel: Kernel) -> None:
        """The members as plain NumPy statements, freeing intermediates as they die."""
        members = set(kernel.members)
        outputs = set(kernel.outputs)
        last: dict[Node, Node] = {}
        for member in kernel.members:
            for operand in member.all_input_nodes:
                if operand in members:
                    last[operand] = member
        last_source = None
        for member in kernel.members:
            # each member at its own user line, as in the kernel: a warning of the small-size branch
            # points where plain NumPy's does, not at the line of the statement before the kernel
            source = source_of(member)
            if source is not None and source != last_source:
                self._body.extend(f"# {line}" for line in source.splitlines())
                last_source = source
            reused = self._dying_buffer(member, members, outputs, last)
            if reused is None:
                getattr(self, f"emit_{member.op.value}")(member)
            else:
                info = self.plan.infos[member]
                args = member.args if info.ufunc_args is None else info.ufunc_args
                self._assign(member, f"{self.callable_expr(info.ufunc)}({self._call_args(args, member.kwargs)}, "
                                     f"out={reused.name})")
            dead = [o.name for o in dict.fromkeys(member.all_input_nodes)
                    if last.get(o) is member and o not in outputs and o in members]
            if dead:
                self._body[-1] += f";  del {', '.join(dead)}"
        if kernel.target is not None:
            self.emit_call_function(kernel.target.setitem)
            self._body[-1] += f";  del {kernel.outputs[0].name}"
        else:
            self._bound.update(kernel.outputs)

    def _dying_buffer(self, member: Node, members: set[Node], outputs: set[Node],
                      last: dict[Node, Node]) -> Node | None:
        """An intermediate of the kernel that dies at `member`, a ufunc whose result has its shape
        and dtype: the ufunc writes into it (out=), as NumPy's own temporary elision does for
        `0.5 * (a - b)`. Named temporaries defeat that elision, and a second live temporary of a
        few hundred KiB costs a fresh mmap and its page faults on every call (7x the ufunc here)."""
        info = self.plan.infos[member]
        meta = info.array
        if info.role is not Role.UFUNC or info.ufunc is None or info.ufunc.nout != 1 or member.kwargs or meta is None:
            return None
        # Below malloc's mmap threshold a temporary is cheap and `a + b` beats np.add(..., out=):
        # sizes known only per call (a dynamic graph takes this branch when they are small) too.
        if not all(isinstance(size, int) for size in meta.shape) or meta.size * meta.dtype.itemsize < _ELIDE_BYTES:
            return None
        args = member.args if info.ufunc_args is None else info.ufunc_args
        for operand in args:
            if not (isinstance(operand, Node) and operand in members and operand not in outputs
                    and last.get(operand) is member):
                continue
            operand_info = self.plan.infos[operand]
            operand_meta = operand_info.array
            # a ufunc member's value is a fresh array of its own (never a view of an input)
            if (operand_info.role is Role.UFUNC and not operand.kwargs and operand_meta is not None and operand_meta.shape == meta.shape
                    and operand_meta.dtype == meta.dtype):
                return operand
        return None

    def _dtype_name(self, dtype: np.dtype) -> str:
        scalar_type = getattr(np, dtype.name, None) if dtype.isnative else None
        if isinstance(scalar_type, type) and np.dtype(scalar_type) == dtype:
            return f"np.{dtype.name}"
        return str(self.expr(dtype))

    @staticmethod
    def _is_array(node: Node) -> bool:
        from ...fx_ir import TensorMeta

        meta = node.meta.get("val")
        return isinstance(meta, TensorMeta) and not meta.scalar


# From this size up a second live temporary costs a fresh mmap and its page faults (glibc's
# default threshold is 128 KiB); NumPy elides temporaries from 256 KiB.
_ELIDE_BYTES = 128 * 1024


def _slice_text(item: slice) -> str:
    return f"{'' if item.start is None else item.start}:{'' if item.stop is None else item.stop}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def kernel_slice_text(name: str, axis: int) -> str:
    """For docs and tests: how a kernel reads rows lo:hi of `name` along `axis`."""
    return axis_slice(name, axis, KernelNames("lo", "hi", "scratch", {}, {}))
