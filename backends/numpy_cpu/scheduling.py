"""Fusion: which nodes run together in one blocked kernel, along which axis, and in what order.

Axes that must run in step are unified across the graph; each kernel takes one such axis as its block axis.
"""
from __future__ import annotations

import heapq
import math
import operator
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ...fx_ir import Graph, Node, TensorMeta
from ...fx_ir.effects import is_impure_node
from ...fx_ir.passes.cse import may_warn
from .analysis import NodeInfo, Role, reduction_input_axis
from .contiguity import block_rows, efficiency, inner_elements
from .sizes import Sizes, is_static, product


@dataclass
class SetitemTarget:
    """A kernel whose only output is assigned by `array[index] = value` writes straight into that view."""

    setitem: Node
    array: Node
    index: Any


@dataclass
class Kernel:
    """Nodes evaluated together, block by block along one axis of length `extent`.

    `axis[m]` is the axis of member m's value that runs along the blocks. `outputs` are the members
    whose whole value someone outside the kernel reads. `extent` is an int, or a sympy expression
    when the kernel is `dynamic` (some member's size is symbolic: blocking is then chosen at run time).
    """

    name: str
    members: list[Node]
    axis: dict[Node, int]
    extent: Any
    outputs: list[Node] = field(default_factory=list)
    target: SetitemTarget | None = None

    @property
    def dynamic(self) -> bool:
        # an operand read row by row counts too: a static reduction of a (2, s0) array streams
        # rows of s0 elements, so its footprint, and the blocking, depend on s0
        operands = [n for n in self.externals() if isinstance(n.meta.get("val"), TensorMeta)]
        return not all(_meta(m).is_static for m in [*self.members, *operands])

    def operand_axis(self, info: NodeInfo, operand: Node) -> int | None:
        """The axis of `operand` that member `info.node` reads along the blocks (None: read whole)."""
        block = self.axis[info.node]
        for out_axis, node, in_axis in info.links:
            if node is operand and out_axis == block:
                return in_axis
        return None

    def externals(self) -> list[Node]:
        """Nodes the kernel reads but does not compute, in first-use order."""
        seen: dict[Node, None] = {}
        members = set(self.members)
        for member in self.members:
            for operand in member.all_input_nodes:
                if operand not in members:
                    seen.setdefault(operand, None)
        return list(seen)

    def nbytes(self, sizes: Sizes) -> int:
        """Bytes of the largest member value (for the example inputs): whether blocking can pay."""
        return max((sizes.hint(b) for b in self.member_bytes()), default=0)

    def member_bytes(self) -> list[Any]:
        """Bytes of each member's value, without repeats: ints, or sympy expressions."""
        found: dict[Any, None] = {}
        for m in self.members:
            found.setdefault(product(_meta(m).shape) * _meta(m).dtype.itemsize, None)
        return list(found)


def _meta(node: Node) -> TensorMeta:
    meta = node.meta["val"]
    assert isinstance(meta, TensorMeta)
    return meta


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Hashable, Hashable] = {}

    def find(self, key: Hashable) -> Hashable:
        parent = self.parent.setdefault(key, key)
        if parent == key:
            return key
        root = self.find(parent)
        self.parent[key] = root
        return root

    def union(self, a: Hashable, b: Hashable) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


def is_barrier(node: Node) -> bool:
    """Nodes nothing may be moved across: side effects (they may write memory others read) and output."""
    return node.op == "output" or bool(node.is_impure())


@dataclass
class _Candidate:
    label: Hashable
    members: list[tuple[Node, int]]


def _blockable(info: NodeInfo, axis: int) -> bool:
    if info.role != Role.REDUCTION or not info.order_sensitive:
        return True
    # A float sum keeps NumPy's exact summation order only when every reduced axis comes after the
    # blocked one (checked empirically over shapes and block sizes; see tests/backends).
    source_axis = reduction_input_axis(info, axis)
    return source_axis is not None and source_axis < min(info.reduced_axes)


def find_kernels(graph: Graph, infos: dict[Node, NodeInfo], min_bytes: int, budget_bytes: int,
                 sizes: Sizes, min_run: int = 0) -> list[Kernel]:
    """Group fusable nodes into kernels: one block axis each, no side effect inside, no cycle through outsiders.

    A static kernel whose blocks would be scattered runs (shorter than `min_run` elements) is not formed:
    its members stay free for a later label (another axis) or run as straight code.
    A dynamic kernel is kept whatever its size for the example inputs: the generated code decides at
    run time, from the actual sizes, whether it runs blocked or as straight code.
    """
    order = {node: i for i, node in enumerate(graph.nodes)}
    segment: dict[Node, int] = {}
    current = 0
    for node in graph.nodes:
        if is_barrier(node):
            current += 1
            segment[node] = current
            current += 1
        else:
            segment[node] = current
    fusable = [n for n in graph.nodes if infos[n].fusable]
    uf = _UnionFind()
    for node in fusable:
        for out_axis, operand, in_axis in infos[node].links:
            uf.union((node, out_axis), (operand, in_axis))
    by_label: dict[Hashable, list[tuple[Node, int]]] = defaultdict(list)
    for node in fusable:
        meta = infos[node].array
        assert meta is not None
        labels = [uf.find((node, a)) for a in range(meta.ndim)]
        for axis, size in enumerate(meta.shape):
            long = not is_static(size) or size >= 2  # a symbolic size may be long at run time
            if long and labels.count(labels[axis]) == 1 and _blockable(infos[node], axis):
                by_label[labels[axis]].append((node, axis))

    assigned: set[Node] = set()
    kernels: list[Kernel] = []
    nodes = list(graph.nodes)
    # Labels covering the most work first; scored once, so that planning stays linear in the graph.
    for label in sorted(by_label, key=lambda lab: _score(by_label[lab], assigned, budget_bytes, sizes),
                        reverse=True):
        members = [(n, a) for n, a in by_label[label] if n not in assigned]
        if not members:
            continue
        for group in _split(nodes, members, segment, order):
            kernel = _make_kernel(f"kernel_{len(kernels)}", group, infos, sizes)
            if kernel is not None and (kernel.dynamic or (kernel.nbytes(sizes) >= min_bytes
                                                          and _shortest_run(group, budget_bytes, sizes) >= min_run)):
                kernels.append(kernel)
                assigned.update(kernel.members)
    # Each kernel is convex on its own, but two kernels may still need each other's results
    # (a1 -> b2, b1 -> a2): drop the latest-formed kernel caught in a cycle until none is left.
    while True:
        stuck = _cyclic_kernels(graph, kernels)
        if not stuck:
            break
        kernels.remove(max(stuck, key=kernels.index))
    kernels.sort(key=lambda k: order[k.members[0]])
    for i, kernel in enumerate(kernels):
        kernel.name = f"kernel_{i}"
        kernel.target = _setitem_target(kernel, graph, segment)
    return kernels


def _score(members: list[tuple[Node, int]], assigned: set[Node], budget_bytes: int,
           sizes: Sizes) -> tuple[bool, float, float]:
    """Rank a label: blocks that fit the cache and run over contiguous memory, then work covered, then outer axes.

    Work counts at the efficiency of its blocks' contiguous runs (contiguity.py): along the last axis of
    a 3-D grid a block is a scatter of single elements, and a label there that also holds a few tiny
    values (a profile along that axis) must not win over the first axis for their sake.
    """
    live = [(n, a) for n, a in members if n not in assigned]
    if not live:
        return (False, 0.0, 0.0)
    # bytes of one step along the block axis, over all members: a block must fit in the cache
    row = sum(sizes.hint(row_elements(_meta(n), a)) * _meta(n).dtype.itemsize for n, a in live)
    rows = block_rows(_meta(live[0][0]).shape[live[0][1]], row, budget_bytes, sizes)
    total = 0.0
    for node, axis in live:
        inner = inner_elements(_meta(node), axis, sizes)
        total += sizes.hint(_meta(node).size) * (1.0 if inner < 0 else efficiency(rows * inner))
    outer = -sum(a for _, a in live) / len(live)
    # Fusing more beats fitting the cache exactly, up to rows so long that scratch blocks get huge.
    return (row <= 4 * budget_bytes, total, outer)


def _shortest_run(group: list[tuple[Node, int]], budget_bytes: int, sizes: Sizes) -> int:
    """Elements of the shortest contiguous run in a block of this group (a huge number when unknown)."""
    row = sum(max(0, sizes.hint(row_elements(_meta(n), a))) * _meta(n).dtype.itemsize for n, a in group)
    rows = block_rows(_meta(group[0][0]).shape[group[0][1]], row, budget_bytes, sizes)
    inners = [inner_elements(_meta(n), a, sizes) for n, a in group]
    return min((rows * i for i in inners if i >= 0), default=1 << 62)


def _split(nodes: list[Node], members: list[tuple[Node, int]], segment: dict[Node, int],
           order: dict[Node, int]) -> list[list[tuple[Node, int]]]:
    """Cut a label's members into groups within one side-effect-free segment, without cycles.

    A member that reads (through non-members) a value computed from the current group starts a
    new group, so every group can run as one unit after all of its inputs. So does a member that reads
    a value whose computation may warn after the group's first member that may: the group runs after
    that value, and NumPy's warnings would come in another order (fuzz seed 1131727: `2**31 == x`
    overflowing a float16 cast, then `x > np.remainder(inf, 1)` fused with it).
    """
    by_segment: dict[int, list[tuple[Node, int]]] = defaultdict(list)
    for node, axis in sorted(members, key=lambda m: order[m[0]]):
        by_segment[segment[node]].append((node, axis))
    groups: list[list[tuple[Node, int]]] = []
    for seg_members in by_segment.values():
        axis_of = dict(seg_members)
        group_of: dict[Node, int] = {}
        taint: dict[Node, int] = {}  # for non-members: the latest group they were computed from
        warned: dict[Node, int] = {}  # for non-members: the latest op that may warn in computing them
        current: list[tuple[Node, int]] = []
        first_warning = None  # the current group's first member that may warn
        gid = 0
        first, last = order[seg_members[0][0]], order[seg_members[-1][0]]
        for node in nodes[first:last + 1]:  # one segment: no barrier in between
            inputs = node.all_input_nodes
            if node in axis_of:
                outside = [i for i in inputs if i not in axis_of]
                if any(taint.get(i, -1) == gid for i in outside) \
                        or first_warning is not None and any(warned.get(i, -1) > first_warning for i in outside):
                    if current:
                        groups.append(current)
                    current, gid, first_warning = [], gid + 1, None
                current.append((node, axis_of[node]))
                group_of[node] = gid
                if first_warning is None and may_warn(node):
                    first_warning = order[node]
            else:
                marks = [group_of[i] if i in group_of else taint.get(i, -1) for i in inputs]
                if marks and max(marks) >= 0:
                    taint[node] = max(marks)
                latest = max([warned.get(i, -1) for i in inputs] + [order[node] if may_warn(node) else -1])
                if latest >= 0:
                    warned[node] = latest
        if current:
            groups.append(current)
    return groups


def row_elements(meta: TensorMeta, axis: int) -> Any:
    """Elements of one step along `axis`: the product of the other sizes."""
    return product(d for i, d in enumerate(meta.shape) if i != axis)


def _make_kernel(name: str, group: list[tuple[Node, int]], infos: dict[Node, NodeInfo],
                 sizes: Sizes) -> Kernel | None:
    members = [n for n, _ in group]
    axis = dict(group)
    # a static size, when a member has one, so that the kernel is static if it can be
    extents = [_meta(m).shape[axis[m]] for m in members]
    extent = next((e for e in extents if is_static(e)), extents[0])
    kernel = Kernel(name, members, axis, int(extent) if is_static(extent) else extent)
    member_set = set(members)
    for node in members:
        if sizes.hint(_meta(node).shape[axis[node]]) != sizes.hint(extent):
            return None
        for operand in node.all_input_nodes:
            if operand in member_set and kernel.operand_axis(infos[node], operand) != axis[operand]:
                return None  # a member read across the block axis: not blockable together
    kernel.outputs = [m for m in members if any(u not in member_set for u in m.users)]
    return kernel if kernel.outputs else None


def _cyclic_kernels(graph: Graph, kernels: list[Kernel]) -> list[Kernel]:
    """Kernels that a topological order of the steps cannot place (those in or after a cycle)."""
    unit_of: dict[Node, Node | Kernel] = {m: k for k in kernels for m in k.members}
    units: list[Node | Kernel] = []
    seen: set[int] = set()
    for node in graph.nodes:
        unit = unit_of.get(node, node)
        if id(unit) not in seen:
            seen.add(id(unit))
            units.append(unit)
    order = {node: i for i, node in enumerate(graph.nodes)}
    try:
        _topological(units, unit_of, order)
    except _Cycle as cycle:
        return [u for u in cycle.left if isinstance(u, Kernel)]
    return []


def _setitem_target(kernel: Kernel, graph: Graph, segment: dict[Node, int]) -> SetitemTarget | None:
    if len(kernel.outputs) != 1:
        return None
    value = kernel.outputs[0]
    users = list(value.users)
    if len(users) != 1:
        return None
    setitem = users[0]
    if setitem.op != "call_function" or setitem.target is not operator.setitem or setitem.kwargs or setitem.users:
        return None
    if segment[setitem] != segment[kernel.members[-1]] + 1 or len(setitem.args) != 3:
        return None
    array, index, assigned = setitem.args
    if assigned is not value or not isinstance(array, Node) or array in kernel.members:
        return None
    if not _basic_index(index):
        return None
    array_meta, value_meta = array.meta.get("val"), _meta(value)
    if not isinstance(array_meta, TensorMeta) or array_meta.dtype != value_meta.dtype:
        return None
    try:
        from ...fx_ir.ops import lookup_function

        row = lookup_function(operator.getitem)
        view_meta = row.infer(array_meta, index) if row is not None else None
    except Exception:
        return None
    if not isinstance(view_meta, TensorMeta) or tuple(view_meta.shape) != tuple(value_meta.shape):
        return None
    return SetitemTarget(setitem, array, index)


def _basic_index(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, slice):
            if not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in
                       (item.start, item.stop, item.step)):
                return False
        elif not (item is None or item is Ellipsis or (isinstance(item, int) and not isinstance(item, bool))):
            return False
    return True


def schedule(graph: Graph, kernels: list[Kernel]) -> list[Node | Kernel]:
    """The order steps run in: each kernel as one step, barriers where they were, else topological.

    Within a segment between side effects, a step runs as soon as its inputs exist, in original order
    otherwise; a kernel writing into a setitem target runs last, right before its setitem.
    """
    order = {node: i for i, node in enumerate(graph.nodes)}
    unit_of: dict[Node, Node | Kernel] = {}
    absorbed: set[Node] = set()
    for kernel in kernels:
        for member in kernel.members:
            unit_of[member] = kernel
        if kernel.target is not None:
            absorbed.add(kernel.target.setitem)
    steps: list[Node | Kernel] = []
    pending: list[Node | Kernel] = []

    def flush() -> None:
        steps.extend(_topological(pending, unit_of, order))
        pending.clear()

    seen_kernels: set[int] = set()
    for node in graph.nodes:
        if is_barrier(node):
            flush()
            if node not in absorbed:
                steps.append(node)
            continue
        unit = unit_of.get(node, node)
        if isinstance(unit, Kernel):
            if id(unit) in seen_kernels:
                continue
            seen_kernels.add(id(unit))
        pending.append(unit)
    flush()
    return steps


def _topological(units: list[Node | Kernel], unit_of: dict[Node, Node | Kernel],
                 order: dict[Node, int]) -> list[Node | Kernel]:
    def nodes_of(unit: Node | Kernel) -> list[Node]:
        return unit.members if isinstance(unit, Kernel) else [unit]

    def priority(unit: Node | Kernel) -> float:
        if isinstance(unit, Kernel):
            return math.inf if unit.target is not None else order[unit.members[-1]]
        return order[unit]

    index = {id(u): i for i, u in enumerate(units)}
    waiting: dict[int, int] = {}
    dependents: dict[int, list[int]] = defaultdict(list)
    for i, unit in enumerate(units):
        deps: set[int] = set()
        inside = set(nodes_of(unit))
        reads = [o for node in inside for o in node.all_input_nodes]
        if isinstance(unit, Kernel) and unit.target is not None:
            reads.append(unit.target.array)  # the kernel writes into it: it must exist first
        for operand in reads:
            if operand in inside:
                continue
            j = index.get(id(unit_of.get(operand, operand)))
            if j is not None and j != i:
                deps.add(j)
        waiting[i] = len(deps)
        for j in deps:
            dependents[j].append(i)
    _keep_warning_order(units, nodes_of, order, waiting, dependents)
    ready = [(priority(u), i) for i, u in enumerate(units) if waiting[i] == 0]
    heapq.heapify(ready)
    result: list[Node | Kernel] = []
    while ready:
        _, i = heapq.heappop(ready)
        result.append(units[i])
        for j in dependents[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (priority(units[j]), j))
    if len(result) != len(units):
        placed = {id(u) for u in result}
        raise _Cycle([u for u in units if id(u) not in placed])
    return result


def _keep_warning_order(units: list[Node | Kernel], nodes_of: Any, order: dict[Node, int],
                        waiting: dict[int, int], dependents: dict[int, list[int]]) -> None:
    """Steps that may warn run in the program order of their first op that may: NumPy warns in that order
    (fuzz seed 1045852: a kernel of `remainder` and a later `**` ran after the `//` between them, so its
    warning came first). An edge the data already orders the other way is left out, and steps that write
    into existing memory stay out of the chain: the order of reads before such a write is kept by
    priority, not by edges, and a chain edge could move a reader of the old contents after it (fuzz:
    `negative(x)` of an `x += 1.0` ran after a kernel storing `np.square(y)` into x, chained behind it)."""
    first_warning = {}
    for i, unit in enumerate(units):
        if _writes_memory(unit, nodes_of):
            continue
        warning = [order[n] for n in nodes_of(unit) if may_warn(n)]
        if warning:
            first_warning[i] = min(warning)
    chain = sorted(first_warning, key=first_warning.__getitem__)
    for before, after in zip(chain, chain[1:]):
        if not _reaches(after, before, dependents):
            dependents[before].append(after)
            waiting[after] += 1


def _writes_memory(unit: Node | Kernel, nodes_of: Any) -> bool:
    """Whether a step stores into an array that exists before it (a kernel's setitem target, an
    in-place operator, a ufunc's out=); other impure calls (random draws) count too, which only keeps
    them to their program order."""
    if isinstance(unit, Kernel) and unit.target is not None:
        return True
    return any(node.op in ("call_function", "call_method") and is_impure_node(node) for node in nodes_of(unit))


def _reaches(start: int, goal: int, dependents: dict[int, list[int]]) -> bool:
    stack, seen = [start], {start}
    while stack:
        i = stack.pop()
        if i == goal:
            return True
        for j in dependents.get(i, ()):
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return False


class _Cycle(RuntimeError):
    """Two kernels need each other's results; find_kernels never keeps such a set."""

    def __init__(self, left: list[Node | Kernel]) -> None:
        super().__init__("kernel grouping left a cycle between steps")
        self.left = left
