"""The `plan` stage: graph passes, meta, fusion into kernels, step order, buffers and blocking.

A Plan is pure data about one graph; `describe()` is what DYNAMO_LOGS=output_code prints for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...fx_ir import Graph, GraphModule, Node
from ...fx_ir.passes import run_passes
from .analysis import NodeInfo, analyze, fill_meta
from .blocking import Blocking, Footprint, Machine, choose_blocking, footprint
from .buffers import BufferPlan, plan_buffers
from .scheduling import Kernel, find_kernels, schedule
from .sizes import Sizes


@dataclass
class Plan:
    module: GraphModule                  # an optimized copy: the graph and the attributes it reads
    infos: dict[Node, NodeInfo]
    kernels: list[Kernel]
    steps: list[Node | Kernel]
    buffers: BufferPlan
    blocking: dict[str, Blocking | None]  # None: a dynamic kernel, blocked per call from its footprint
    footprints: dict[str, Footprint]
    machine: Machine
    sizes: Sizes

    @property
    def graph(self) -> Graph:
        return self.module.graph

    def summary(self) -> str:
        ops = sum(1 for n in self.graph.nodes if n.op not in ("placeholder", "output"))
        fused = sum(len(k.members) for k in self.kernels)
        kernels = f"{len(self.kernels)} blocked kernel{'' if len(self.kernels) == 1 else 's'}"
        return f"numpy backend: {ops} ops, {fused} of them fused into {kernels}"

    def describe(self) -> str:
        lines = [self.summary() + f" (cache {self.machine.cache_bytes // 1024} KiB/core, {self.machine.cores} cores)"]
        for index, step in enumerate(self.steps):
            if isinstance(step, Kernel):
                lines.extend(f"  {line}" for line in self._describe_kernel(index, step))
            else:
                info = self.infos.get(step)
                why = ""
                if info is not None and info.why and step.op not in ("placeholder", "output"):
                    why = f"  ({info.why})"
                lines.append(f"  [{index}] {step.format_node()}{why}")
        return "\n".join(lines)

    def _describe_kernel(self, index: int, kernel: Kernel) -> list[str]:
        b = self.blocking[kernel.name]
        scratch = self.buffers.scratch[kernel.name]
        if b is None:
            f = self.footprints[kernel.name]
            lines = [(f"[{index}] {kernel.name}: extent {kernel.extent}, {f.row_bytes} bytes/row in flight, "
                      f"~{f.work} element-ops: blocks and threads chosen per call from the sizes")]
        else:
            lines = [(f"[{index}] {kernel.name}: extent {kernel.extent}, block {b.block} ({b.blocks} blocks, "
                      f"{b.row_bytes} bytes/row in flight), {b.threads} thread(s), ~{b.work:.3g} element-ops")]
        split = self.buffers.split[kernel.name]
        for member in kernel.members:
            slots = [f"scratch[{i}]" for (node, _), i in scratch.slot_of.items() if node is member]
            where = "output" if member in kernel.outputs else (", ".join(slots) if slots else "allocates")
            if member in split.components:
                where += f" (split into {split.components[member]} components)"
            elif member in split.reductions:
                where += f" ({split.reductions[member]} over the split axis, as a ufunc chain)"
            role = self.infos[member].role.value
            lines.append(f"    {member.name:<16} axis {kernel.axis[member]}  {role:<9} -> {where}")
        for out in kernel.outputs:
            buffer = self.buffers.outputs.get(out)
            if kernel.target is not None:
                lines.append(f"    {out.name} is written straight into {kernel.target.array.name}"
                             f"[{kernel.target.index!r}] ({kernel.target.setitem.name})")
            elif buffer is not None and buffer.source is not None:
                lines.append(f"    {out.name} reuses the buffer of {buffer.source.name}")
        return lines


class PlanModule(GraphModule):
    """The optimized copy's module: it holds the attributes get_attr reads (folded constants too).

    It never generates a forward of its own, since the source stage writes the code that runs.
    """

    def recompile(self) -> Any:
        return None


def make_plan(graph_module: GraphModule, example_inputs: list[Any], machine: Machine) -> Plan:
    module = PlanModule(graph_module, graph_module.graph.copy(), graph_module.class_name)
    graph = module.graph
    fill_meta(graph, list(example_inputs))
    run_passes(graph, lint=False)  # the passes are tested with lint on; here it would only cost time
    sizes = Sizes.of_graph(graph, list(example_inputs))
    infos = analyze(graph, sizes)
    kernels = find_kernels(graph, infos, machine.min_kernel_bytes, machine.budget_bytes, sizes, machine.min_run)
    steps = schedule(graph, kernels)
    buffers = plan_buffers(steps, infos, sizes)
    footprints = {k.name: footprint(k, infos, buffers.scratch[k.name]) for k in kernels}
    blocking = {k.name: choose_blocking(k, footprints[k.name], machine) for k in kernels}
    return Plan(module, infos, kernels, steps, buffers, blocking, footprints, machine, sizes)
