"""Tracing one iteration of a loop into a body graph of its own, shared by for and while capture:
the translator's state saved and restored around it, the carried values as body placeholders.

`BodyTrace` is the context manager: inside it new nodes go to the body graph, the carried locals
are the body's placeholders, and whatever the trace changes (locals, stack, size nodes, loop
symbols) is put back on exit, captured or not; `check_side_effects` refuses a body that changed
Python state which outlives the iteration.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bytecode import Instr

from .exc import Unsupported
from .fx_ir.graph import Graph
from .fx_ir.node import Node
from .variables.arrays import ArrayVariable
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.graph_int import GraphIntVariable, graph_argument, graph_int_meta, parts_of
from .variables.symbolic import SymbolicIntVariable

if TYPE_CHECKING:
    from .shapes.loop_symbols import LoopBounds, SmallLoop
    from .translator.core import InstructionTranslatorBase as Tx

LOCAL_STORES = frozenset({"STORE_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST"})


class NotCaptured(Exception):
    """Why this loop's body cannot be one loop node (internal to loop capture)."""


def stored_locals(tx: "Tx", start: int, end: int) -> list[str]:
    """The locals that instructions [start, end) assign, in order of first store."""
    stored: dict[str, None] = {}
    for index in range(start, end):
        inst: Instr = tx.instructions[index]
        if inst.name in LOCAL_STORES:
            arg: Any = inst.arg
            names = arg if inst.name == "STORE_FAST_STORE_FAST" else (
                arg[0] if inst.name == "STORE_FAST_LOAD_FAST" else arg)
            for name in (names if isinstance(names, tuple) else (names,)):
                stored.setdefault(str(name), None)
    return list(stored)


def reason_of(error: Unsupported) -> str:
    """An Unsupported raised inside the body, as the reason the loop is not captured."""
    where = f" (line {error.location.lineno})" if error.location is not None else ""
    return f"{error.category}: {error.explanation}{where}"


class BodyTrace:
    """`with BodyTrace(tx, body, carried) as trace:` traces into `body` with each carried local
    bound to a new placeholder of it (`trace.proxies`); on exit the graph, locals, stack, size
    nodes and loop symbols the trace started with are back."""

    def __init__(self, tx: "Tx", body: Graph) -> None:
        self.tx = tx
        self.output = tx.output
        self.body = body
        self.proxies: dict[str, VariableTracker] = {}
        self._symbols: list[Any] = []
        self._small: list[str] = []

    def placeholder(self, name: str, val: Any) -> Node:
        """A new input of the body (the loop's induction variable, a carried value)."""
        node = self.body.placeholder(name)
        node.meta["val"] = val
        return node

    def carry(self, initial: dict[str, VariableTracker]) -> None:
        """Bind each carried local to a placeholder standing for its value at the iteration's start."""
        for name, value in initial.items():
            node = self.placeholder(name, carried_meta(value))
            if is_int(value):  # stepped from itself: its bound counts from the iteration's start
                self.proxies[name] = GraphIntVariable(self.output, node, bound=0, carried=node)
            else:
                self.proxies[name] = carried_value(self.output, node, value, value_bases(value))

    def bind_symbol(self, bounds: "LoopBounds", hint: int, node: Node) -> None:
        """Make `bounds.symbol` a loop symbol of the body (decisions about it must hold for all of
        its values, its value in the graph is `node`) until the trace ends."""
        env = self.output.shape_env
        env.loop_bounds[bounds.symbol] = bounds
        env.hints[bounds.symbol] = hint
        env.size_nodes[bounds.symbol] = env.loop_nodes[bounds.symbol] = node
        self._symbols.append(bounds.symbol)

    def bind_small(self, name: str, loop: "SmallLoop") -> None:
        """Make `name` the small form of a loop variable of the body until the trace ends."""
        self.output.shape_env.small_loops[name] = loop
        self._small.append(name)

    def __enter__(self) -> BodyTrace:
        tx, output = self.tx, self.output
        for make_symbol in list(output.loops.unmade_indices):  # enclosing loops' variables, before saving the sizes
            make_symbol()
        self._graph, self._locals, self._stack = output.graph, dict(tx.symbolic_locals), list(tx.stack)
        self._sizes = dict(output.shape_env.size_nodes)
        self._log_start, self._stores = len(output.side_effects.mutation_log), output.side_effects.stores
        self._before = reachable(list(self._locals.values()) + self._stack)
        output.graph = self.body
        output.loops.depth += 1
        return self

    def start(self) -> None:
        """Bind the carried locals to their placeholders (after the placeholders are made)."""
        self.tx.symbolic_locals.update(self.proxies)

    def __exit__(self, *exc: Any) -> None:
        tx, output = self.tx, self.output
        env = output.shape_env
        output.graph = self._graph
        output.loops.depth -= 1
        for symbol in self._symbols:
            env.loop_bounds.pop(symbol, None)
            env.hints.pop(symbol, None)
            env.loop_nodes.pop(symbol, None)
        for name in self._small:
            env.small_loops.pop(name, None)
        env.size_nodes.clear()
        env.size_nodes.update(self._sizes)
        # an enclosing loop's symbol made while this body was traced keeps its value node
        env.size_nodes.update(env.loop_nodes)
        tx.symbolic_locals.clear()
        tx.symbolic_locals.update(self._locals)
        tx.stack[:] = self._stack

    def check_side_effects(self) -> None:
        """Refuse a body that assigned an attribute, global or closure variable, or mutated a Python
        container the frame holds (the next iteration would see it)."""
        effects = self.output.side_effects
        if effects.stores != self._stores:
            raise NotCaptured("the body assigns an attribute, global or closure variable")
        for container in effects.mutation_log[self._log_start:]:
            if container.source is not None or id(container) in self._before:
                raise NotCaptured(f"the body mutates {container.describe()}, a Python container that outlives "
                                  "the iteration")


# ---- carried values: NumPy arrays and scalars of the graph, and Python ints -------------------------------

def is_int(value: VariableTracker | None) -> bool:
    """A Python int (not a bool): a constant, a symbolic int, or an int the graph computes."""
    if isinstance(value, ConstantVariable):
        return type(value.value) is int
    return isinstance(value, SymbolicIntVariable) or (isinstance(value, GraphIntVariable) and value.kind is int)


def carried_meta(value: VariableTracker) -> Any:
    return value.meta if isinstance(value, ArrayVariable) else graph_int_meta()


def value_bases(value: VariableTracker) -> frozenset:
    return value.bases if isinstance(value, ArrayVariable) else frozenset()


def carried_argument(value: VariableTracker) -> Any:
    """The carried value as an argument of the loop node (or an output of its body)."""
    if isinstance(value, ArrayVariable):
        return value.node
    return graph_argument(value)


def carried_value(output: Any, node: Node, like: VariableTracker, bases: frozenset,
                  int_bound: int | None = None) -> VariableTracker:
    """What the frame holds for `node`, a carried value of the same kind as `like` (an int: at most
    `int_bound` in magnitude)."""
    if isinstance(like, ArrayVariable):
        return ArrayVariable(node, like.meta, bases)
    return GraphIntVariable(output, node, bound=int_bound)


# A loop whose trip count is not known while tracing (a while loop, a symbolic range) is taken to run
# fewer than 2**40 iterations (18 minutes at one nanosecond each) when bounding its carried ints.
LONGEST_LOOP = 2 ** 40
_INT64 = 2 ** 63


def carried_int_bound(name: str, initial: VariableTracker, value: VariableTracker, placeholder: Node,
                      trip_bound: int) -> int:
    """A bound of |int| over every iteration of a loop carrying the int `name` (`initial` before the
    loop, `value` at the end of an iteration), or NotCaptured when it might leave int64: the graph
    computes Python ints, but a backend may compute loop ints in 64 bits."""
    start_bound, _ = parts_of(initial)
    step_bound, carried = parts_of(value)
    if start_bound is None or step_bound is None or carried not in (None, placeholder):
        raise NotCaptured(f"the carried int {name} becomes {value.describe()}: no bound keeps it within 64 bits")
    total = start_bound + trip_bound * step_bound if carried is not None else max(start_bound, step_bound)
    if total >= _INT64:
        raise NotCaptured(f"the carried int {name} might exceed 64 bits (up to {step_bound} per iteration)")
    return total


def reachable(values: list[Any]) -> set[int]:
    """Ids of the trackers reachable from `values` through containers (lists, tuples, dicts, sets)."""
    seen: set[int] = set()
    todo = list(values)
    while todo:
        value = todo.pop()
        if value is None or id(value) in seen:
            continue
        seen.add(id(value))
        items = getattr(value, "items", None)
        if isinstance(items, list):
            todo.extend(items)
        elif isinstance(items, dict):
            todo.extend(items.values())
            todo.extend(k for k in items if isinstance(k, VariableTracker))
        contents = getattr(value, "contents", None)
        if isinstance(contents, VariableTracker):
            todo.append(contents)
    return seen
