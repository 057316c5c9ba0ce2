"""Memory planning: which arrays share storage, when each storage dies, and where kernels write.

Kernel outputs reuse dead temporaries (in place when an input dies at the kernel); inside a kernel,
block values rotate through a few cache-sized scratch slots. Inputs, outputs and their views are never reused.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ...fx_ir import Node, TensorMeta
from ...fx_ir.ops import OpKind
from ...fx_ir.passes.aliasing import result_is_fresh
from .analysis import NodeInfo, Role, registry_row
from .scheduling import Kernel
from .sizes import Sizes
from .splitting import Split, plan_split

Step: TypeAlias = "Node | Kernel"

_FRESH_KINDS = frozenset({OpKind.ELEMENTWISE, OpKind.REDUCTION, OpKind.LINALG, OpKind.COPY_SHAPE})


@dataclass
class Storage:
    """One piece of memory and every node whose value lies in it (the owner and its views)."""

    owner: Node | None            # the node that allocated it, when it is a fresh array of ours
    nodes: list[Node] = field(default_factory=list)
    reusable: bool = True         # False: a graph input, returned, or touched by an op we cannot see into
    contiguous: bool = False      # allocated by a kernel, so C-contiguous for sure (else: check at run time)
    death: int = -1               # index of the last step that reads any of its nodes


@dataclass
class OutputBuffer:
    """Where a kernel output lives: a fresh np.empty, or the storage of a dead `source` node."""

    node: Node
    source: Node | None = None
    check_contiguous: bool = True  # the reused array came from NumPy, so its layout is checked at run time


@dataclass
class ScratchPlan:
    """Scratch slots of one kernel: slot i holds arrays of block shape `slots[i]` (shape, dtype, axis)."""

    slot_of: dict[tuple[Node, int | None], int] = field(default_factory=dict)
    slots: list[tuple[tuple[int, ...], Any, int]] = field(default_factory=list)
    inplace_power: set[tuple[Node, int | None]] = field(default_factory=set)


@dataclass
class BufferPlan:
    storage: dict[Node, Storage]
    outputs: dict[Node, OutputBuffer]
    scratch: dict[str, ScratchPlan]
    split: dict[str, Split]
    last_read: dict[Node, int]
    # a setitem-target kernel whose target may overlap its inputs checks these pairs at run time
    overlap_checks: dict[str, list[Node]]
    # `t = x.copy()` whose region idx a kernel overwrites at once: only the rest of x is copied
    elided_copies: dict[Node, CopyElision] = field(default_factory=dict)


@dataclass
class CopyElision:
    source: Node                          # x in `t = x.copy()`
    regions: list[tuple[slice, ...]]      # the parts of t outside the overwritten index, to copy from x


def _meta(node: Node) -> TensorMeta | None:
    meta = node.meta.get("val")
    return meta if isinstance(meta, TensorMeta) and not meta.scalar else None


def _step_reads(step: Step) -> list[Node]:
    if isinstance(step, Kernel):
        reads = step.externals()
        if step.target is not None and step.target.array not in reads:
            reads.append(step.target.array)
        return reads
    return list(step.all_input_nodes)


def _step_defines(step: Step) -> list[Node]:
    if isinstance(step, Kernel):
        return [] if step.target is not None else list(step.outputs)
    return [step]


def _fresh(node: Node) -> bool:
    if node.is_impure():
        return False
    if result_is_fresh(node):
        return True
    row = registry_row(node)
    if row is None or row.kind not in _FRESH_KINDS or row.layout_view or node.op == "call_method":
        return False
    try:
        effects = row.effects(*[n.meta.get("val") if isinstance(n, Node) else n for n in node.args],
                              **{k: v.meta.get("val") if isinstance(v, Node) else v for k, v in node.kwargs.items()})
    except Exception:
        return False
    return effects.view_of is None and not effects.mutates and not effects.nondeterministic


def _view_source(node: Node) -> Node | None:
    row = registry_row(node)
    if row is None or node.is_impure():
        return None
    try:
        args = [n.meta.get("val") if isinstance(n, Node) else n for n in node.args]
        kwargs = {k: v.meta.get("val") if isinstance(v, Node) else v for k, v in node.kwargs.items()}
        view_of = row.effects(*args, **kwargs).view_of
    except Exception:
        return None
    source: Any = None
    if isinstance(view_of, int) and view_of < len(node.args):
        source = node.args[view_of]
    elif isinstance(view_of, str):
        source = node.kwargs.get(view_of)
    return source if isinstance(source, Node) else None


def storages(steps: list[Step], kernel_outputs: set[Node]) -> dict[Node, Storage]:
    """Storage of every array node, following views; conservative (merged, not reusable) when unsure."""
    storage: dict[Node, Storage] = {}

    def merge(a: Storage, b: Storage) -> Storage:
        """One storage for both; the smaller one's nodes move (an unrolled loop merges each opaque
        op into one ever-growing storage: moving the big one each time was quadratic, 9 s of
        npbench symm's compile)."""
        if a is b:
            return a
        owner = a.owner if a.owner is not None else b.owner
        reusable, contiguous = a.reusable and b.reusable, a.contiguous
        big, small = (a, b) if len(a.nodes) >= len(b.nodes) else (b, a)
        big.nodes.extend(small.nodes)
        big.owner, big.reusable, big.contiguous = owner, reusable, contiguous
        for n in small.nodes:
            storage[n] = big
        return big

    def visit(node: Node) -> None:
        if node.op in ("placeholder", "get_attr"):
            storage[node] = Storage(None, [node], reusable=False)
            return
        if node.op == "output":
            return
        if node in kernel_outputs:
            storage[node] = Storage(node, [node], contiguous=True)
            return
        if _fresh(node) and _meta(node) is not None:
            storage[node] = Storage(node, [node])
            return
        source = _view_source(node)
        if source is not None and source in storage:
            own = storage[source]
            own.nodes.append(node)
            storage[node] = own
            return
        # an op we cannot see into may return (a view of) any input, or stash a reference
        merged = Storage(None, [node], reusable=False)
        storage[node] = merged
        for operand in node.all_input_nodes:
            if operand in storage:
                merged = merge(merged, storage[operand])
                merged.reusable = False

    for step in steps:
        if isinstance(step, Kernel):
            for member in step.members:
                if member in kernel_outputs:
                    visit(member)
        else:
            visit(step)
    for step in steps:
        if not isinstance(step, Kernel) and step.op == "output":
            for operand in step.all_input_nodes:
                if operand in storage:
                    storage[operand].reusable = False
    return storage


def plan_buffers(steps: list[Step], infos: dict[Node, NodeInfo], sizes: Sizes) -> BufferPlan:
    kernels = [s for s in steps if isinstance(s, Kernel)]
    kernel_outputs = {o for k in kernels for o in k.outputs}
    storage = storages(steps, kernel_outputs)
    last_read: dict[Node, int] = {}
    for index, step in enumerate(steps):
        for node in _step_defines(step):
            last_read.setdefault(node, index)
        for node in _step_reads(step):
            last_read[node] = index
    for own in {id(s): s for s in storage.values()}.values():
        own.death = max((last_read.get(n, -1) for n in own.nodes), default=-1)

    outputs: dict[Node, OutputBuffer] = {}
    overlap_checks: dict[str, list[Node]] = {}
    pool: dict[tuple[Any, ...], list[Storage]] = defaultdict(list)
    taken: set[int] = set()
    for index, step in enumerate(steps):
        if isinstance(step, Kernel):
            if step.target is not None:
                overlap_checks[step.name] = _overlap_risks(step, storage)
            for out in ([] if step.target is not None else step.outputs):
                buffer = _inplace_source(step, out, infos, storage, index, taken) or _pooled(out, pool, taken)
                outputs[out] = buffer or OutputBuffer(out)
                if buffer is not None and buffer.source is not None:
                    last_read[buffer.source] = max(last_read.get(buffer.source, index), index)
        for own in _dying(steps, index, storage):
            meta = _meta(own.owner) if own.owner is not None else None
            if own.reusable and meta is not None and id(own) not in taken:
                pool[(meta.shape, meta.dtype)].append(own)
    split = {k.name: plan_split(k, infos, sizes) for k in kernels}
    scratch = {k.name: plan_scratch(k, infos, split[k.name]) for k in kernels}
    elided = {}
    for index, step in enumerate(steps):
        if isinstance(step, Kernel) and step.target is not None and not overlap_checks.get(step.name):
            found = _copy_elision(steps, index, step, sizes)
            if found is not None:
                elided[step.target.array] = found
    return BufferPlan(storage, outputs, scratch, split, last_read, overlap_checks, elided)


def _copy_elision(steps: list[Step], index: int, kernel: Kernel, sizes: Sizes) -> CopyElision | None:
    """`t = x.copy(); t[idx] = <kernel>`: t's idx region is written before anyone reads t."""
    assert kernel.target is not None
    copy = kernel.target.array
    if copy.op != "call_method" or copy.target != "copy" or len(copy.args) != 1 or copy.kwargs:
        return None  # ndarray.copy() is C-ordered whatever x is, like the np.empty that replaces it
    source = copy.args[0]
    meta = _meta(copy)
    if not isinstance(source, Node) or meta is None or not sizes.shape_known(meta):
        return None  # the empty array's shape must be computable from the inputs
    position = {id(s): i for i, s in enumerate(steps)}
    if position.get(id(copy), index) >= index:
        return None
    for user in copy.users:
        if user is not kernel.target.setitem and position.get(id(user), -1) <= index:
            return None  # someone reads t before the kernel has filled it
    items = kernel.target.index if isinstance(kernel.target.index, tuple) else (kernel.target.index,)
    if len(items) > meta.ndim or not all(isinstance(i, slice) and i.step in (None, 1) for i in items):
        return None
    regions: list[tuple[slice, ...]] = []
    if meta.is_static:
        bounds = [item.indices(size)[:2] for item, size in zip(items, meta.shape)]
        if any(stop < start for start, stop in bounds):
            return None
        for axis, (start, stop) in enumerate(bounds):
            inner = tuple(slice(a, b) for a, b in bounds[:axis])
            for lo, hi in ((0, start), (stop, meta.shape[axis])):
                if hi > lo:
                    regions.append(inner + (slice(lo, hi),))
        return CopyElision(source, regions)
    # Symbolic sizes: the complement of x[a:b] is x[:a] and x[b:] as written, whatever the size
    # (when a:b is empty, the two overlap, and both copy the same values from x).
    for axis, item in enumerate(items):
        inner = tuple(items[:axis])
        if item.start not in (None, 0):
            regions.append(inner + (slice(None, item.start),))
        if item.stop is not None:
            regions.append(inner + (slice(item.stop, None),))
    return CopyElision(source, regions)


def _dying(steps: list[Step], index: int, storage: dict[Node, Storage]) -> list[Storage]:
    seen: dict[int, Storage] = {}
    for node in [*_step_reads(steps[index]), *_step_defines(steps[index])]:
        own = storage.get(node)
        if own is not None and own.death == index:
            seen[id(own)] = own
    return list(seen.values())


def _inplace_source(kernel: Kernel, out: Node, infos: dict[Node, NodeInfo], storage: dict[Node, Storage],
                    index: int, taken: set[int]) -> OutputBuffer | None:
    """An input of the kernel that dies here and has the output's shape, dtype and block slicing."""
    out_meta = _meta(out)
    assert out_meta is not None
    position = kernel.members.index(out)
    for source in kernel.externals():
        own = storage.get(source)
        meta = _meta(source)
        if own is None or own.owner is not source or not own.reusable or own.death != index or id(own) in taken:
            continue
        if meta is None or meta.shape != out_meta.shape or meta.dtype != out_meta.dtype:
            continue
        readers = [m for m in kernel.members if source in m.all_input_nodes]
        # every block of the source must be read before the output's block overwrites it
        if any(kernel.members.index(m) > position for m in readers):
            continue
        if any(kernel.operand_axis(infos[m], source) != kernel.axis[out] for m in readers):
            continue
        if any(n is not source and n in kernel.externals() for n in own.nodes):
            continue  # a view of the source is read too: it would see the overwritten values
        taken.add(id(own))
        return OutputBuffer(out, source, check_contiguous=not own.contiguous)
    return None


def _pooled(out: Node, pool: dict[tuple[Any, ...], list[Storage]], taken: set[int]) -> OutputBuffer | None:
    meta = _meta(out)
    assert meta is not None
    candidates = pool.get((meta.shape, meta.dtype))
    while candidates:
        own = candidates.pop()
        if id(own) not in taken and own.owner is not None:
            taken.add(id(own))
            return OutputBuffer(out, own.owner, check_contiguous=not own.contiguous)
    return None


def _overlap_risks(kernel: Kernel, storage: dict[Node, Storage]) -> list[Node]:
    """Kernel inputs that might share memory with the setitem target (checked at run time)."""
    assert kernel.target is not None
    target = storage.get(kernel.target.array)
    risky = []
    for source in kernel.externals():
        if _meta(source) is None:
            continue
        own = storage.get(source)
        # a target the graph allocated itself can only be reached through its own storage
        if target is None or own is None or own is target or target.owner is None:
            risky.append(source)
    return risky


Value: TypeAlias = "tuple[Node, int | None]"  # a member's block value, or one component of a split member


def member_values(member: Node, split: Split) -> list[Value]:
    n = split.components.get(member)
    return [(member, None)] if n is None else [(member, c) for c in range(n)]


def operand_values(kernel: Kernel, split: Split, member: Node, component: int | None) -> list[Value]:
    """The block values (of other members) that computing `member` (component `component`) reads."""
    values: list[Value] = []
    for operand in dict.fromkeys(member.all_input_nodes):
        if operand not in kernel.axis:
            continue
        n = split.components.get(operand)
        if n is None:
            values.append((operand, None))
        elif member in split.components:
            values.append((operand, component))
        else:  # a reduction over the split axis reads every component
            values.extend((operand, c) for c in range(n))
    return values


def plan_scratch(kernel: Kernel, infos: dict[Node, NodeInfo], split: Split) -> ScratchPlan:
    """Give each block value that needs a buffer a slot, reusing slots of values that died (in place if possible)."""
    plan = ScratchPlan()
    outputs = set(kernel.outputs)
    order = [(v, operand_values(kernel, split, v[0], v[1])) for m in kernel.members for v in member_values(m, split)]
    last_use: dict[Value, int] = {}
    for i, (_, reads) in enumerate(order):
        for value in reads:
            last_use[value] = i
    # an elementwise function may hand back its operand itself (round of integers does): keep the
    # operand's slot alive as long as the result is
    for i in range(len(order) - 1, -1, -1):
        value, reads = order[i]
        if infos[value[0]].role == Role.CALL:
            for operand in reads:
                last_use[operand] = max(last_use[operand], last_use.get(value, i))
    free: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, (value, reads) in enumerate(order):
        member, component = value
        role = infos[member].role
        dying = [o for o in reads if o in plan.slot_of and last_use.get(o) == i]
        key = _slot_key(kernel, value)
        if member not in outputs and role in (Role.UFUNC, Role.POWER):
            reuse = next((o for o in dying if _slot_key(kernel, o) == key), None)
            if role == Role.POWER:
                # `a **= b` only in a dying scratch holding the base: NumPy's own fast paths apply
                if reuse is not None and reuse[0] is member.args[0]:
                    plan.slot_of[value] = plan.slot_of[reuse]
                    plan.inplace_power.add(value)
                    dying.remove(reuse)
            elif reuse is not None:
                plan.slot_of[value] = plan.slot_of[reuse]
                dying.remove(reuse)
            else:
                slots = free.get(key)
                if slots:
                    plan.slot_of[value] = slots.pop()
                else:
                    plan.slot_of[value] = len(plan.slots)
                    plan.slots.append(key)
        for operand in dying:
            free[_slot_key(kernel, operand)].append(plan.slot_of[operand])
    return plan


def _slot_key(kernel: Kernel, value: Value) -> tuple[tuple[int, ...], Any, int]:
    node, component = value
    meta = _meta(node)
    assert meta is not None
    shape = tuple(meta.shape) if component is None else tuple(meta.shape[:-1])
    return (shape, meta.dtype, kernel.axis[node])
