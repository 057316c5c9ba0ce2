"""Branches on run-time values inside a captured loop body: both arms of the `if` are traced, each
into a graph of its own, and become one cond node (fx_ir/cond.py) whose results are the merged locals.

The arms run from the conditional jump to its merge point (the jump's immediate post-dominator in
the body's control flow: the instruction after the `if` statement, or the loop head for an arm that
ends the iteration or `continue`s). A value that differs between the arms must be of one kind in
both (a NumPy scalar of one dtype, an int); anything else is refused with the reason, and the loop
runs as before.
"""
from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .exc import Category, unsupported
from .fx_ir.cond import Cond
from .fx_ir.graph import Graph
from .fx_ir.graph_module import GraphModule
from .fx_ir.node import Node, map_arg
from .fx_ir.lazy_sympy import sympy
from .loop_body import carried_argument, carried_meta, is_int
from .shapes.loop_symbols import LoopBounds, SmallLoop
from .variables.arrays import ArrayVariable
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.graph_int import GraphIntVariable, parts_of
from .while_condition import is_graph_condition

if TYPE_CHECKING:
    from bytecode import Instr

    from .translator.core import InstructionTranslatorBase as Tx


def capture_branch(tx: "Tx", inst: "Instr", condition: VariableTracker, jump_when: bool) -> bool:
    """The conditional jump `inst` (just executed, its condition popped) on a value of the graph, inside
    a loop body being captured: both arms traced into a cond node, the translator at their merge point.
    False where this is no such jump (the caller decides the branch as before)."""
    region = tx.output.loops.bodies[-1] if tx.output.loops.bodies else None
    jump_ip = tx.ip - 1
    if region is None or region[0] is not tx or not region[1] <= jump_ip < region[2] or not is_graph_condition(condition):
        return False
    _, first, end, sink, _ = region
    merge = _merge_point(tx, jump_ip, first, end, sink)
    if merge is None:
        unsupported(Category.DATA_DEPENDENT_BRANCH, "a branch of the loop body whose arms do not meet again "
                    "before the loop ends (a break or a return in one arm)")
    target = tx.label_targets[inst.arg]
    taken, fallthrough = (target, jump_ip + 1) if jump_when else (jump_ip + 1, target)
    with _assuming(tx, condition, True):
        if_true = _Arm(tx, taken, merge, first, end)
    with _assuming(tx, condition, False):
        if_false = _Arm(tx, fallthrough, merge, first, end)
    _merge(tx, condition, if_true, if_false)
    tx.ip = merge
    return True


def _merge_point(tx: "Tx", jump_ip: int, first: int, end: int, sink: int) -> int | None:
    """The immediate post-dominator of `jump_ip` among the body's instructions [first, end), `sink`
    standing for the end of the iteration; None when a path leaves the loop first."""
    post = body_post_dominators(tx, first, end, sink)
    after = post[jump_ip] - {jump_ip}
    if not after:
        return None
    return max(after, key=lambda n: len(post[n]))  # the nearest: every other post-dominator post-dominates it


def body_post_dominators(tx: "Tx", first: int, end: int, sink: int) -> dict[int, frozenset[int]]:
    """For each instruction of a loop body [first, end): the instructions on every path from it to
    `sink` (the end of the iteration: a for loop's FOR_ITER, a while loop's bottom test), itself and
    the sink included; only itself for one with a path leaving the loop (a break, a return)."""
    nodes = list(range(first, end))
    every = frozenset([*nodes, sink])
    post: dict[int, frozenset[int]] = {n: every for n in nodes}
    post[sink] = frozenset([sink])
    changed = True
    while changed:
        changed = False
        for n in reversed(nodes):
            successors = tx.facts.successors(n)
            if not successors or any(not (first <= s < end or s == sink) for s in successors):
                new = frozenset([n])
            else:
                new = frozenset.intersection(*(post[s] for s in successors)) | {n}
            if new != post[n]:
                post[n], changed = new, True
    return post


# a comparison `d op 0` as `e >= 0`, and its negation (the other arm's)
_AS_NONNEGATIVE = {operator.ge: lambda d: d, operator.gt: lambda d: d - 1, operator.le: lambda d: -d,
                   operator.lt: lambda d: -d - 1}
_NEGATED = {operator.ge: operator.lt, operator.gt: operator.le, operator.le: operator.gt, operator.lt: operator.ge}


@contextlib.contextmanager
def _assuming(tx: "Tx", condition: VariableTracker, holds: bool) -> Iterator[None]:
    """While an arm is traced: the bounds of a loop variable narrowed to the iterations that take it,
    where the branch compares that variable (coefficient 1 or -1) with an int (`if j - 1 >= 0`: j >= 1
    in the true arm, so `a[j - 1]` there needs no negative index). Bounds of ints only."""
    relation = getattr(condition, "relation", None)
    env = tx.output.shape_env
    narrowed = None
    if relation is not None and relation[0] in _AS_NONNEGATIVE:
        fn, difference = relation
        expr = sympy.expand(_AS_NONNEGATIVE[fn if holds else _NEGATED[fn]](difference))
        symbols = [s for s in expr.free_symbols if s in env.loop_bounds]
        if len(symbols) == 1 and len(expr.free_symbols) == 1:
            narrowed = _narrow(env, symbols[0], expr)
    if narrowed is None:
        yield
        return
    symbol, bounds, small = narrowed
    try:
        yield
    finally:
        env.loop_bounds[symbol] = bounds
        if small is not None:
            env.small_loops[str(symbol)] = small


def _narrow(env: Any, symbol: Any, expr: Any) -> tuple[Any, LoopBounds, SmallLoop | None] | None:
    """Narrow `symbol`'s bounds to where expr >= 0 (expr = c * symbol + r, c = +-1, r an int); the
    bounds it had, to put back. None where that is not so, or no iteration is left."""
    bounds = env.loop_bounds[symbol]
    slope, rest = expr.coeff(symbol), expr - expr.coeff(symbol) * symbol
    if slope not in (1, -1) or not rest.is_Integer or not all(isinstance(b, int) or getattr(b, "is_Integer", False)
                                                              for b in (bounds.lower, bounds.upper)):
        return None
    lower, upper = int(bounds.lower), int(bounds.upper)
    lower, upper = (max(lower, -int(rest)), upper) if slope == 1 else (lower, min(upper, int(rest)))
    if lower > upper:
        return None
    small = env.small_loops.get(str(symbol))
    env.loop_bounds[symbol] = LoopBounds(symbol, lower, upper, bounds.name)
    if small is not None:
        env.small_loops[str(symbol)] = SmallLoop(lower, upper, small.name, small.make_sympy)
    return symbol, bounds, small


class _Arm:
    """One arm traced from `start` to `merge` into a graph of its own: its locals and stack there."""

    def __init__(self, tx: "Tx", start: int, merge: int, first: int, end: int) -> None:
        output = tx.output
        self.graph = Graph()
        saved_graph, saved_locals, saved_stack = output.graph, dict(tx.symbolic_locals), list(tx.stack)
        saved_sizes = dict(output.shape_env.size_nodes)
        stores, log = output.side_effects.stores, len(output.side_effects.mutation_log)
        output.graph = self.graph
        tx.ip = start
        try:
            while tx.ip != merge:
                if not first <= tx.ip < end:
                    unsupported(Category.DATA_DEPENDENT_BRANCH, "an arm of a branch in the loop body leaves the loop")
                if tx.instructions[tx.ip].name == "FOR_ITER":
                    unsupported(Category.DATA_DEPENDENT_BRANCH, "an arm of a branch in the loop body holds a loop")
                tx.step()
            if output.side_effects.stores != stores or len(output.side_effects.mutation_log) != log:
                unsupported(Category.SIDE_EFFECT, "an arm of a branch in the loop body changes Python state "
                            "(an attribute, a global, a container)")
            self.locals, self.stack = dict(tx.symbolic_locals), list(tx.stack)
        finally:
            output.graph = saved_graph
            tx.symbolic_locals.clear()
            tx.symbolic_locals.update(saved_locals)
            tx.stack[:] = saved_stack
            output.shape_env.size_nodes.clear()
            output.shape_env.size_nodes.update(saved_sizes)


def _same(a: VariableTracker | None, b: VariableTracker | None) -> bool:
    if a is b:
        return True
    if isinstance(a, ArrayVariable) and isinstance(b, ArrayVariable):
        return a.node is b.node
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        return type(a.value) is type(b.value) and a.value is b.value
    return False


def _realized(tx: "Tx", a: VariableTracker | None, b: VariableTracker | None) -> tuple[Any, Any]:
    """A frame value one arm read (and so wrapped) and the other did not touch is the wrapped value
    after both; other values not yet wrapped are wrapped now (only where the arms differ, so that a
    local neither arm reads gets no guard)."""
    from .translator.core import LazyVariable  # the translator imports this module

    if a is b:
        return a, b
    for lazy, other in ((a, b), (b, a)):
        if isinstance(lazy, LazyVariable) and other is not None and not isinstance(other, LazyVariable) \
                and other.source == lazy.source:
            return other, other
    return (tx.realize(a) if a is not None else None), (tx.realize(b) if b is not None else None)


def _merge(tx: "Tx", condition: VariableTracker, if_true: _Arm, if_false: _Arm) -> None:
    """The cond node of the two arms; the frame's locals and stack after it (the translator is at the
    merge point, where both arms stopped)."""
    output = tx.output
    live = tx.facts.live_locals(tx.ip)
    places: list[tuple[str | int, VariableTracker, VariableTracker]] = []
    merged_locals: dict[str, VariableTracker] = {}
    for name in dict.fromkeys([*if_true.locals, *if_false.locals]):
        a, b = _realized(tx, if_true.locals.get(name), if_false.locals.get(name))
        if _same(a, b):
            merged_locals[name] = a
        elif name in live:
            places.append((name, _mergeable(name, a, b), b))
    if len(if_true.stack) != len(if_false.stack):
        unsupported(Category.DATA_DEPENDENT_BRANCH, "the arms of a branch leave stacks of different depths")
    stack = list(if_true.stack)
    for k, (a, b) in enumerate(zip(if_true.stack, if_false.stack)):
        if not _same(a, b):
            places.append((k, _mergeable("the value of a conditional expression", a, b), b))
    if_true.graph.output(tuple(carried_argument(a) for _, a, _ in places))
    if_false.graph.output(tuple(carried_argument(b) for _, _, b in places))
    operands = _lift_operands(if_true.graph, if_false.graph)
    name = f"cond_{len(output.submodules)}"
    where = f"{output.current_location.filename}:{output.current_location.lineno}" if output.current_location else ""
    output.submodules[name] = Cond(GraphModule(output.submodules, if_true.graph),
                                   GraphModule(output.submodules, if_false.graph), len(places), where)
    metas = tuple(carried_meta(a) for _, a, _ in places)
    node = output.create_node("call_module", name, (carried_argument(condition), *operands), {}, metas)
    node.meta["impure"] = True  # an arm's writes stay in order with the reads and writes around it
    for index, (place, a, b) in enumerate(places):
        item = output.create_node("call_function", operator.getitem, (node, index), {}, carried_meta(a))
        if isinstance(place, str):
            merged_locals[place] = _merged_value(output, item, a, b)
        else:
            stack[place] = _merged_value(output, item, a, b)
    tx.symbolic_locals.clear()
    tx.symbolic_locals.update(merged_locals)
    tx.stack[:] = stack


def _mergeable(what: str, a: VariableTracker | None, b: VariableTracker | None) -> VariableTracker:
    """`a` (the value after the true arm) when a value of one kind stands for `a` and `b` (the false arm's)."""
    if a is None or b is None:
        unsupported(Category.DATA_DEPENDENT_BRANCH, f"{what} is assigned in one arm of a branch only")
    if is_int(a) and is_int(b):
        return a
    if (type(a) is ArrayVariable and type(b) is ArrayVariable and (a.meta.scalar or a.meta.ndim == 0)
            and a.meta.scalar == b.meta.scalar and a.meta.dtype == b.meta.dtype and a.meta.ndim == b.meta.ndim
            and not any(v.node.meta.get("device") or v.node.meta.get("array_type") for v in (a, b))):
        return a
    unsupported(Category.DATA_DEPENDENT_BRANCH, f"{what} is {a.describe()} after one arm of a branch and "
                f"{b.describe()} after the other: its type would depend on the data")


def _merged_value(output: Any, item: Node, a: VariableTracker, b: VariableTracker) -> VariableTracker:
    """What the frame holds for `item`, the value of `a` or `b` (of one kind) as the branch went."""
    if isinstance(a, ArrayVariable) and isinstance(b, ArrayVariable):
        return ArrayVariable(item, a.meta, a.bases | b.bases)
    (bound_a, carried_a), (bound_b, carried_b) = parts_of(a), parts_of(b)
    if bound_a is None or bound_b is None or carried_a is not carried_b:
        return GraphIntVariable(output, item, bound=None)
    return GraphIntVariable(output, item, bound=max(bound_a, bound_b), carried=carried_a)


def _lift_operands(*graphs: Graph) -> list[Node]:
    """Every node of another graph that the arms read becomes a placeholder of each arm, the same
    placeholders in the same order in both; the outer nodes, in that order."""
    outer: dict[Node, None] = {}
    for graph in graphs:
        for node in graph.nodes:
            for value in node.all_input_nodes:
                if value.graph is not graph:
                    outer.setdefault(value, None)
    for graph in graphs:
        first = next(iter(graph.nodes), None)
        placeholders: dict[Node, Node] = {}
        for value in outer:
            with graph.inserting_before(first):
                placeholder = placeholders[value] = graph.placeholder(value.name)
            placeholder.meta["val"] = value.meta.get("val")
        def inside(value: Node, placeholders: dict[Node, Node] = placeholders) -> Node:
            return placeholders.get(value, value)

        for node in list(graph.nodes):
            if node.op != "placeholder":
                node.args = map_arg(node.args, inside)
                node.kwargs = map_arg(node.kwargs, inside)
    return list(outer)
