"""Loops that stay loops: a `for i in range(...)` loop too long to unroll, or with a symbolic trip
count, is traced once with `i` as a symbolic int into a body graph and becomes one loop node.

Locals the body assigns and the code reads later (or in the next iteration) are the loop-carried
values; arrays the body writes in place are written in place by the body graph, as NumPy would.
A body that cannot be captured whole raises RetraceWithoutLoop, and the frame is traced again
with that loop run as before (unrolled, or in Python), the reason kept for explain().
"""
from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Any

from bytecode import Label

from . import bytecode_compat as compat
from . import config
from .backends.registry import graph_op_limit, loops_native
from .exc import Unsupported
from .fx_ir.graph import Graph
from .fx_ir.graph_module import GraphModule
from .fx_ir.int_expr import IntExpr
from .fx_ir.lazy_sympy import sympy
from .fx_ir.loops import ForLoop
from .fx_ir.node import Node, map_arg
from .fx_ir.ops import symbolic as sizes
from .loop_body import (LONGEST_LOOP, BodyTrace, NotCaptured, carried_argument, carried_int_bound, carried_meta,
                        carried_value, is_int, reason_of, stored_locals, value_bases)
from .loop_counters import check_fits_int64, check_step, find_counters, iterations_before, value_of
from .loop_items import ItemPlan, plan_of
from .loop_records import CapturedLoop, LoopKey, LoopRecords, RejectedLoop, RetraceWithoutLoop
from .shapes.loop_symbols import LoopBounds, SmallLoop
from .variables.arrays import ArrayVariable
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.symbolic import LoopIndexVariable, SymbolicIntVariable

if TYPE_CHECKING:
    from .translator.core import InstructionTranslatorBase as Tx

# Instructions a body traced once cannot contain: they leave the loop or change Python state that
# the next iteration would see differently.
_LEAVING = frozenset({"RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE", "RAISE_VARARGS", "RERAISE"})
_STORES = {"STORE_GLOBAL": "assigns a global", "DELETE_GLOBAL": "deletes a global",
           "STORE_DEREF": "assigns a closure variable", "DELETE_DEREF": "deletes a closure variable",
           "STORE_ATTR": "assigns an attribute", "DELETE_ATTR": "deletes an attribute",
           "DELETE_FAST": "deletes a local", "STORE_NAME": "assigns a name", "DELETE_SUBSCR": "deletes an item"}


class NeedsPeeling(NotCaptured):
    """A Python number is carried: its type may change in the first iteration (0.0 + np.float64)."""


class DependsOnOuterLoop(NotCaptured):
    """A question of the body depends on enclosing loops' variables only (`if E - w >= 0` in a loop
    nested in the loops over E and w): unrolling this loop would not answer it, so the outermost of
    those loops is the one that runs as before."""

    def __init__(self, reason: str, symbols: frozenset) -> None:
        super().__init__(reason)
        self.symbols = symbols


class UnrollInstead(NotCaptured):
    """A short loop that unrolling makes faster (_fuses_across_iterations)."""


class _IterationMarker(VariableTracker):
    """Stands where the range iterator would be on the stack while the body is traced."""

    def describe(self) -> str:
        return "the iterator of a captured loop"


def iterate(tx: "Tx", iterable: VariableTracker) -> VariableTracker | None:
    """GET_ITER of `iterable` (popped): the iterator to push, or None when the whole loop became a
    loop node (the translator then stands after the loop, the iterator never pushed)."""
    if tx.ip >= len(tx.instructions) or tx.instructions[tx.ip].name != "FOR_ITER":
        return iterable.iterator(tx)
    plan = plan_of(tx, iterable)
    if plan is None:
        return iterable.iterator(tx)
    length = plan.length
    records = tx.output.loops
    key = records.key(tx.code, tx.ip)
    short = (not sizes.is_symbolic(length) and int(length) <= config.loop_unroll_threshold and not _has_inner_loop(tx)
             and key not in records.forced)
    if short and not loops_native(tx.output.backend):
        # short, known and innermost: unrolled (a flat graph fuses across iterations), unless its body
        # calls functions whose loops make the unrolled trace too long (unrolled_past_budget)
        iterator = iterable.iterator(tx)
        if key not in records.rejected:
            records.unrolled.append((key, iterator))
        return iterator
    # a backend compiling loop nodes natively: a short loop too is captured, unless unrolling fuses it
    if key in records.rejected:
        return iterable.iterator(tx)
    if key in records.peeled:
        return _PeelingIterator(tx, key, tx.ip, plan, unroll_if_fused=short)
    capture(tx, key, tx.ip, plan, peeled=False, unroll_if_fused=short)
    return None


def capture(tx: "Tx", key: Any, for_ip: int, plan: ItemPlan, peeled: bool, unroll_if_fused: bool = False) -> None:
    """Trace the loop at `for_ip` over `plan` (its range and items) into a loop node, or raise
    RetraceWithoutLoop. `unroll_if_fused`: a short loop, unrolled after all where unrolling fuses its
    iterations (_fuses_across_iterations)."""
    loop = _LoopCapture(tx, key, for_ip, plan, peeled, unroll_if_fused)
    try:
        loop.run()
    except UnrollInstead as why:
        raise RetraceWithoutLoop(key, RejectedLoop(loop.location, loop.variable, str(why), unrolled=True)) from None
    except DependsOnOuterLoop as why:
        owner = next((tx.output.loops.capturing[s] for s in tx.output.loops.capturing if s in why.symbols), None)
        assert owner is not None  # the symbols of a question are those of loops being captured
        owner_key, location, variable = owner
        raise RetraceWithoutLoop(owner_key, RejectedLoop(location, variable, str(why))) from None
    except NeedsPeeling as why:
        raise RetraceWithoutLoop(key, RejectedLoop(loop.location, loop.variable, str(why)), peel=True) from None
    except NotCaptured as why:
        raise RetraceWithoutLoop(key, RejectedLoop(loop.location, loop.variable, str(why))) from None


def loop_targets(tx: "Tx", for_ip: int) -> list[str] | None:
    """The locals the `for` at `for_ip` assigns each item to (`i`, or `i, row` unpacked, nested
    unpacking included), or None when a target is not a plain local."""
    names: list[str] = []
    needed, index = 1, for_ip + 1
    while needed:
        if index >= len(tx.instructions):
            return None
        inst = tx.instructions[index]
        if inst.name == "STORE_FAST" and isinstance(inst.arg, str):
            names.append(inst.arg)
            needed -= 1
        elif inst.name == "STORE_FAST_STORE_FAST" and isinstance(inst.arg, tuple) and needed >= 2:
            names.extend(str(name) for name in inst.arg)  # 3.13: two targets in one instruction
            needed -= 2
        elif inst.name == "UNPACK_SEQUENCE" and isinstance(inst.arg, int):
            needed += inst.arg - 1
        else:
            return None
        index += 1
    return names


class _PeelingIterator(VariableTracker):
    """The iterator of a loop whose first iteration is unrolled (it turns a Python number carried
    through the loop into a NumPy scalar of the graph) and whose other iterations become a loop node,
    captured when FOR_ITER asks for the second item."""

    def __init__(self, tx: "Tx", key: Any, for_ip: int, plan: ItemPlan, unroll_if_fused: bool = False) -> None:
        super().__init__()
        self.key, self.for_ip = key, for_ip
        self.unroll_if_fused = unroll_if_fused
        self.plan = plan
        self.started = False
        self.location = tx.location()
        self.variable = ", ".join(loop_targets(tx, for_ip) or ["?"])

    def describe(self) -> str:
        return "the iterator of a loop with its first iteration unrolled"

    def next_item(self, tx: "Tx") -> VariableTracker | None:
        env = tx.output.shape_env
        plan = self.plan
        if not self.started:
            self.started = True
            if isinstance(plan.start, int) and isinstance(plan.stop, int):  # no sympy for int bounds
                runs = plan.stop > plan.start if plan.step > 0 else plan.stop < plan.start
            else:
                runs = env.decide_relation(sympy.Gt(plan.stop, plan.start) if plan.step > 0
                                           else sympy.Lt(plan.stop, plan.start))
            if not runs:
                return None
            return plan.item(tx, SymbolicIntVariable.create(tx.output, plan.start))
        if isinstance(plan.start, int):
            rest = plan.start + plan.step
        else:
            rest = sympy.sympify(plan.start) + plan.step
            rest = int(rest) if rest.is_Integer else rest
        me = tx.pop()
        capture(tx, self.key, self.for_ip, ItemPlan(rest, plan.stop, plan.step, plan.make_item), peeled=True,
                unroll_if_fused=self.unroll_if_fused)
        tx.push(me)  # FOR_ITER pops it and jumps past the loop, where capture left the translator
        return None


def _fuses_across_iterations(carried: dict[str, VariableTracker], body: Graph, trip: int) -> str | None:
    """Why a short loop of known length is better unrolled, for a backend that compiles loop nodes
    natively (None: keep it a loop node). There a loop node is compiled once: a C loop where the body
    works on elements and rows, else the body's kernels once, called per iteration; unrolling copies
    the body into the graph once per iteration (NPBench at S, backend c: symm's loop over j nested in
    the loop over i made a C function of 1600 lines, 12 s of gcc -O3; vadv's and jacobi_2d's time
    steps 37 s and 16 s of first call, 2.7 s and 3.4 s as loop nodes, as fast or faster per call).
    A loop that carries an array (`acc = acc * 0.5 + x * k`) is unrolled: its flat graph fuses the
    iterations' elementwise chain into one pass over memory, while the unrolled graph stays within
    config.loop_unroll_op_budget operations (decided once the body is traced: its calls inline)."""
    operations = sum(1 for node in body.nodes if node.op in ("call_function", "call_method"))
    if operations * trip > config.loop_unroll_op_budget:
        return None
    for name, value in carried.items():
        if isinstance(value, ArrayVariable) and len(value.meta.shape) > 0:
            return f"carries the array {name}: unrolled (a flat graph fuses across iterations)"
    return None


def peeled_loop_broken(tx: "Tx", error: Unsupported) -> RetraceWithoutLoop | None:
    """When `error` stopped the trace inside the unrolled first iteration of a loop being peeled
    (its iterator cannot be rebuilt at a graph break), that loop's rejection with the error's reason."""
    for value in reversed(tx.stack):
        if isinstance(value, _PeelingIterator):
            where = f" (line {error.location.lineno})" if error.location is not None else ""
            rejected = RejectedLoop(value.location, value.variable, f"{error.category}: {error.explanation}{where}")
            return RetraceWithoutLoop(value.key, rejected)
    return None


# the most short loops one frame captures because unrolling them ran past the trace budget
MOST_FORCED = 4


def unrolled_past_budget(records: LoopRecords) -> Any:
    """The trace ran past config.trace_instruction_budget while short loops were unrolled (a loop of
    25 time steps whose body calls a function with loops of its own: NPBench cavity_flow): the key of
    the outermost of them still running, which the retrace captures as a loop node; None if none is left,
    or when MOST_FORCED loops were already captured so (each retrace traced up to the budget again:
    many short loops one after another give up as before instead)."""
    if len(records.forced) >= MOST_FORCED:
        return None
    for key, iterator in records.unrolled:
        if key in records.forced or key in records.rejected:
            continue
        if not getattr(iterator, "exhausted", True):
            return key
    return None


def unrolled_past_op_limit(output: Any, records: LoopRecords) -> list[LoopKey]:
    """The short loops this trace unrolled, when they made a graph larger than its backend's op limit
    (backends.graph_op_limit: a graph of backend tiered past config.tier_up_max_ops never moves to c):
    the retrace captures them as loop nodes, each body traced and compiled once (a Gray-Scott loop of
    40 time steps unrolled to 1,331 ops and stayed on numpy, 1.04x plain, where c's loop node made
    1.97x). [] when the graph fits, or every such loop was forced already or cannot be captured."""
    limit = graph_op_limit(output.backend)
    if limit is None or not records.unrolled or len(records.forced) >= MOST_FORCED:
        return []
    graphs = [output.root_graph, *(value.graph for module in output.submodules.values()  # loop bodies, cond arms
                                   for value in vars(module).values() if isinstance(value, GraphModule))]
    ops = sum(1 for graph in graphs for node in graph.nodes if node.op not in ("placeholder", "output", "get_attr"))
    if ops <= limit:
        return []
    return [key for key, _ in records.unrolled if key not in records.forced and key not in records.rejected]


def _has_inner_loop(tx: "Tx") -> bool:
    """Whether the loop whose FOR_ITER is at tx.ip contains another loop: unrolling a nest
    multiplies the trip counts (seidel_2d: 8 x 48 x 48 iterations ran past the trace budget)."""
    exit_ip = _exit_index(tx, tx.ip)
    return any(inst.name == "FOR_ITER" for inst in tx.instructions[tx.ip + 1:exit_ip])


def _exit_index(tx: "Tx", for_ip: int) -> int:
    """Where the FOR_ITER at `for_ip` jumps once its iterator is exhausted."""
    target = tx.instructions[for_ip].arg
    assert isinstance(target, Label)
    return tx.label_targets[target]


class _LoopCapture:
    def __init__(self, tx: "Tx", key: Any, for_ip: int, plan: ItemPlan, peeled: bool,
                 unroll_if_fused: bool = False) -> None:
        self.tx = tx
        self.key = key
        self.symbol: Any = None  # the loop variable's symbol, once the body uses it (_index_symbol)
        self.iterating = False
        self.trace: BodyTrace | None = None  # while the body is traced
        self.unroll_if_fused = unroll_if_fused
        self.plan = plan  # the range of the loop node, and the item each iteration gets
        self.output = tx.output
        self.start, self.stop, self.step = plan.start, plan.stop, plan.step
        self.peeled = peeled
        self.for_ip = for_ip
        self.exit_ip = _exit_index(tx, for_ip)
        self.location = tx.location()
        self.targets = loop_targets(tx, for_ip) or []
        self.variable = ", ".join(self.targets) or "?"
        # the index's name: the loop variable of a range or of rows, `t` (the iteration number) under unpacking
        self.index_name = self.targets[0] if len(self.targets) == 1 else "t"

    # ---- the steps -------------------------------------------------------------------------------------
    def run(self) -> None:
        tx, output = self.tx, self.output
        self._check_instructions()
        carried_names, temporaries = self._classify_locals()
        counters = find_counters(tx, carried_names, self.for_ip + 1, self.exit_ip)
        carried_names = [name for name in carried_names if name not in counters]
        trip = self.plan.length
        for counter in counters.values():
            check_fits_int64(counter, trip)
        initial = {name: self._carried_initial(name) for name in carried_names}
        self.carried_ints = [name for name, value in initial.items() if is_int(value)]
        self.int_bounds: dict[str, int] = {}

        body = Graph()
        # numbered by nesting depth, not by the loop symbols made so far: an enclosing loop's symbol
        # may be made after this loop's (when its body reads its variable only later)
        self.symbol_name = f"i{output.loops.depth}_{self.index_name}"
        index: LoopIndexVariable | None = None
        try:
            with BodyTrace(tx, body) as trace:
                self.trace = trace
                self.index_node = trace.placeholder(self.index_name, None)
                trace.carry(initial)
                self.proxies = trace.proxies
                trace.start()
                if counters:  # computed from the loop variable, not carried
                    done = iterations_before(self._index_symbol(), self.start, self.step)
                    for name, counter in counters.items():
                        tx.symbolic_locals[name] = value_of(tx, counter.at(done))
                tx.push(_IterationMarker())
                head_depth, bodies = len(tx.stack), len(output.loops.bodies)
                small = self._index_small if self._int_bounds() else None
                index = LoopIndexVariable(output, self._index_symbol, node=self.index_node, make_small=small)
                self.iterating = True
                output.loops.unmade_indices.append(small or self._index_symbol)
                try:
                    tx.push(self.plan.item(tx, index))
                    tx.ip = self.for_ip + 1
                    output.loops.bodies.append((tx, self.for_ip + 1, self.exit_ip, self.for_ip, self.symbol_name))
                    self._trace_one_iteration(head_depth)
                finally:
                    del output.loops.bodies[bodies:]
                    self.iterating = False
                    output.loops.unmade_indices.remove(small or self._index_symbol)
                    output.loops.capturing.pop(self.symbol_name, None)
                after = {name: tx.symbolic_locals.get(name) for name in carried_names}
                trace.check_side_effects()
                for name, counter in counters.items():
                    check_step(counter, counter.at(done), tx.symbolic_locals.get(name))
                next_values = [self._next_value(name, initial[name], after[name]) for name in carried_names]
        finally:
            # a symbol made from here on is bound to nothing (the body's bounds ended), and the
            # variable, which may outlive this trace, holds nothing of it
            self.trace = None
            if index is not None:
                index.loop_done(functools.partial(_loop_symbol, self.symbol_name))
        body.output(tuple(next_values))
        fuses = _fuses_across_iterations(initial, body, int(trip)) if self.unroll_if_fused else None
        if fuses is not None:
            raise UnrollInstead(fuses)
        output.keep_unused_work(body)  # a temporary nobody reads is still computed (and warns) every iteration
        captured = _lift_captures(body)
        self._emit(body, initial, captured, temporaries)
        for name, counter in counters.items():
            tx.symbolic_locals[name] = value_of(tx, counter.at(trip))
            output.loops.captured[-1].carried.append(f"{name} (int counter, {counter.step:+d} per iteration)")

    def _index_symbol(self) -> Any:
        """The loop variable's symbol, made (and bound to the loop's bounds while the body is traced)
        the first time it is needed; the index placeholder's value in the body graph."""
        if self.symbol is not None:
            return self.symbol
        output = self.output
        symbol = self.symbol = _loop_symbol(self.symbol_name)
        self.index_node.meta["val"] = symbol
        self.index_node.meta["loop_symbol"] = symbol
        if self.step > 0:
            lower, upper = self.start, sympy.sympify(self.stop) - 1
        else:
            lower, upper = sympy.sympify(self.stop) + 1, self.start
        if self.trace is None:
            return symbol
        hint = output.shape_env.hint(self.start) if sizes.is_symbolic(self.start) else int(self.start)
        self.trace.bind_symbol(LoopBounds(symbol, lower, upper, self.variable), hint, self.index_node)
        if self.iterating:
            output.loops.capturing[self.symbol_name] = (self.key, self.location, self.variable)
        return symbol

    def _int_bounds(self) -> bool:
        return all(type(v) is int for v in (self.start, self.stop, self.step))

    def _index_small(self) -> IntExpr:
        """The loop variable's small form (a loop over int bounds), registered with the bounds while
        the body is traced; its sympy symbol is made only when an expression of it needs sympy."""
        small = IntExpr.symbol(self.symbol_name)
        if self.trace is None or self.symbol_name in self.output.shape_env.small_loops:
            return small
        lower, upper = (self.start, self.stop - 1) if self.step > 0 else (self.stop + 1, self.start)
        self.trace.bind_small(self.symbol_name, SmallLoop(lower, upper, self.variable, self._index_symbol))
        if self.iterating:
            self.output.loops.capturing[self.symbol_name] = (self.key, self.location, self.variable)
        return small

    def _check_instructions(self) -> None:
        tx = self.tx
        if not self.targets:
            raise NotCaptured("the loop target is not a plain local variable")
        for index in range(self.for_ip + 1, self.exit_ip):
            inst = tx.instructions[index]
            if inst.name in _LEAVING:
                raise NotCaptured(f"the body leaves the loop ({inst.name}) at line {inst.lineno}")
            if inst.name in _STORES:
                raise NotCaptured(f"the body {_STORES[inst.name]} at line {inst.lineno}")
            if isinstance(inst.arg, Label):
                target = tx.label_targets[inst.arg]
                if not self.for_ip <= target < self.exit_ip:
                    raise NotCaptured(f"the body leaves the loop (break) at line {inst.lineno}")
            if index in tx.facts.in_user_region:
                raise NotCaptured(f"the body has a try/with block at line {inst.lineno}")

    def _classify_locals(self) -> tuple[list[str], list[str]]:
        """(carried, temporaries): locals the body assigns that are live at the loop head (read in
        the next iteration or after the loop), and those that are not."""
        tx = self.tx
        stored = stored_locals(tx, self.for_ip + 1, self.exit_ip)
        live = tx.facts.live_locals(self.for_ip)
        for target in self.targets:
            if target in live:
                raise NotCaptured(f"the loop variable {target} is read after the loop")
        if tx.facts.read_by_calls:
            raise NotCaptured("the code reads its locals by name (eval, locals)")
        carried = [n for n in stored if n in live and n not in self.targets]
        temporaries = [n for n in stored if n not in live]
        return carried, temporaries

    def _carried_initial(self, name: str) -> VariableTracker:
        value = self.tx.symbolic_locals.get(name)
        if value is None:
            raise NotCaptured(f"{name} is assigned in the body but has no value before the loop")
        value = self.tx.realize(value)
        self.tx.symbolic_locals[name] = value
        if is_int(value):
            return value  # a Python int carried as an int the graph computes (exact: no int64)
        if (not self.peeled and isinstance(value, ConstantVariable)
                and type(value.value) in (int, float, complex, bool)):
            raise NeedsPeeling(f"the carried value {name} is the Python number {value.value!r}")
        if type(value) is not ArrayVariable or value.node.meta.get("device") or value.node.meta.get("array_type"):
            raise NotCaptured(f"the carried value {name} is {value.describe()}, not a NumPy array or scalar "
                              "of the graph")
        if _has_loop_symbol(self.output.shape_env, value.meta.shape):
            raise NotCaptured(f"the carried value {name} has a shape that depends on an outer loop's variable")
        return value

    def _trace_one_iteration(self, head_depth: int) -> None:
        tx = self.tx
        try:
            while tx.ip != self.for_ip:
                if not self.for_ip < tx.ip < self.exit_ip:
                    raise NotCaptured("the body leaves the loop")
                tx.step()
        except Unsupported as error:
            outer: frozenset = getattr(error, "loop_symbols", frozenset())
            if outer and self.symbol_name not in outer and all(s in self.output.loops.capturing for s in outer):
                raise DependsOnOuterLoop(reason_of(error), outer) from None
            if not self.peeled and self.carried_ints:
                # a Python int carried may become a NumPy scalar in the first iteration (total = 0; total += a[i])
                raise NeedsPeeling(f"the carried ints {', '.join(self.carried_ints)} meet {reason_of(error)}") from None
            raise NotCaptured(reason_of(error)) from None
        if len(tx.stack) != head_depth or not isinstance(tx.stack[-1], _IterationMarker):
            raise NotCaptured("the body leaves values on the stack")

    def _trip_bound(self) -> int:
        """The most iterations the loop runs (its trip count when known)."""
        trip = self.plan.length
        return int(trip) if isinstance(trip, int) else LONGEST_LOOP

    def _next_value(self, name: str, initial: VariableTracker, value: VariableTracker | None) -> Any:
        env = self.output.shape_env
        if is_int(initial):
            if value is not None and is_int(value):
                placeholder = self.proxies[name].node  # type: ignore[attr-defined]
                self.int_bounds[name] = carried_int_bound(name, initial, value, placeholder, self._trip_bound())
                return carried_argument(value)
            if not self.peeled:
                raise NeedsPeeling(f"the carried int {name} becomes {_describe(value)} in the body")
            raise NotCaptured(f"the carried int {name} becomes {_describe(value)} in the body")
        assert isinstance(initial, ArrayVariable)
        if type(value) is not ArrayVariable:
            what = "nothing" if value is None else value.describe()
            raise NotCaptured(f"the carried value {name} becomes {what} in the body (was {initial.describe()})")
        same = (value.meta.dtype == initial.meta.dtype and value.meta.scalar == initial.meta.scalar
                and len(value.meta.shape) == len(initial.meta.shape)
                and all(_same_size(a, b) for a, b in zip(value.meta.shape, initial.meta.shape)))
        if not same or _has_loop_symbol(env, value.meta.shape):
            raise NotCaptured(f"the carried value {name} changes from {initial.describe()} to {value.describe()} "
                              "in the body")
        return value.node

    # ---- the loop node --------------------------------------------------------------------------------
    def _emit(self, body: Graph, initial: dict[str, VariableTracker], captured: list[Node],
              temporaries: list[str]) -> None:
        tx, output = self.tx, self.output
        name = f"loop_{len(output.submodules)}"
        where = f"{self.location.filename}:{self.location.lineno}" if self.location else ""
        loop = ForLoop(GraphModule(output.submodules, body), len(initial), description=where)
        loop.body.graph.lint()
        output.submodules[name] = loop
        args = (self._graph_int(self.start), self._graph_int(self.stop), self.step,
                *(carried_argument(v) for v in initial.values()), *captured)
        metas = tuple(carried_meta(v) for v in initial.values())
        node = output.create_node("call_module", name, args, {}, metas)
        node.meta["impure"] = True  # its reads of arrays written later must stay before those writes
        bases: frozenset = frozenset()
        for value in initial.values():
            bases |= value_bases(value)
        for n in captured:  # captured arrays that a carried value may have become a view of
            bases |= _bases_of(tx, n)
        for index, (local, value) in enumerate(initial.items()):
            item = output.create_node("call_function", operator.getitem, (node, index), {}, carried_meta(value))
            tx.symbolic_locals[local] = carried_value(output, item, value, bases, self.int_bounds.get(local))
        for local in [*temporaries, *self.targets]:
            tx.symbolic_locals.pop(local, None)
        tx.ip = self.exit_ip + compat.FOR_ITER_EXHAUSTED_SKIP
        body_ops = sum(1 for n in body.nodes if n.op not in ("placeholder", "output"))
        trip = self.plan.length
        output.loops.captured.append(CapturedLoop(self.location, self.variable, str(trip), body_ops,
                                                  list(initial), output.loops.depth))

    def _graph_int(self, value: Any) -> Any:
        if not sizes.is_symbolic(value):
            return int(value)
        return SymbolicIntVariable(self.output, value).as_graph_argument()


def _loop_symbol(name: str) -> Any:
    return sympy.Symbol(name, integer=True)


def _same_size(a: Any, b: Any) -> bool:
    """Whether two sizes are the same expression (ints compared without sympy)."""
    if not (sizes.is_symbolic(a) or sizes.is_symbolic(b)):
        return int(a) == int(b)
    return bool(sympy.sympify(a) == sympy.sympify(b))


def _describe(value: VariableTracker | None) -> str:
    return "nothing" if value is None else value.describe()


def _lift_captures(body: Graph) -> list[Node]:
    """Replace every argument of a body node that belongs to another graph by a new placeholder
    of the body (after the carried ones); the outer nodes, in placeholder order."""
    outer: dict[Node, Node] = {}
    last_placeholder = None
    for node in body.nodes:
        if node.op == "placeholder":
            last_placeholder = node

    def lift(value: Node) -> Node:
        nonlocal last_placeholder
        if value.graph is body:
            return value
        placeholder = outer.get(value)
        if placeholder is None:
            with body.inserting_after(last_placeholder):
                placeholder = body.placeholder(value.name)
            placeholder.meta["val"] = value.meta.get("val")
            last_placeholder = outer[value] = placeholder
        return placeholder

    for node in list(body.nodes):
        if node.op == "placeholder":
            continue
        if any(inp.graph is not body for inp in node.all_input_nodes):
            node.args = map_arg(node.args, lift)
            node.kwargs = map_arg(node.kwargs, lift)
    return list(outer)


def _bases_of(tx: "Tx", node: Node) -> frozenset:
    for graph_input in tx.output.inputs.values():
        variable = graph_input.variable
        if getattr(variable, "node", None) is node and isinstance(variable, ArrayVariable):
            return variable.bases
    return frozenset()


def _has_loop_symbol(env: Any, shape: Any) -> bool:
    from .shapes.loop_symbols import mentions_loop

    return any(sizes.is_symbolic(d) and mentions_loop(env, d) for d in shape)
