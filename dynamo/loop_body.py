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

if TYPE_CHECKING:
    from .shapes.loop_symbols import LoopBounds
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

    def placeholder(self, name: str, val: Any) -> Node:
        """A new input of the body (the loop's induction variable, a carried value)."""
        node = self.body.placeholder(name)
        node.meta["val"] = val
        return node

    def carry(self, initial: dict[str, ArrayVariable]) -> None:
        """Bind each carried local to a placeholder standing for its value at the iteration's start."""
        for name, value in initial.items():
            node = self.placeholder(name, value.meta)
            self.proxies[name] = ArrayVariable(node, value.meta, value.bases)

    def bind_symbol(self, bounds: "LoopBounds", hint: int, node: Node) -> None:
        """Make `bounds.symbol` a loop symbol of the body (decisions about it must hold for all of
        its values, its value in the graph is `node`) until the trace ends."""
        env = self.output.shape_env
        env.loop_bounds[bounds.symbol] = bounds
        env.hints[bounds.symbol] = hint
        env.size_nodes[bounds.symbol] = node
        self._symbols.append(bounds.symbol)

    def __enter__(self) -> BodyTrace:
        tx, output = self.tx, self.output
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
        env.size_nodes.clear()
        env.size_nodes.update(self._sizes)
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
