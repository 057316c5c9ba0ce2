"""Structured loops in the six-opcode IR: a `call_module` node whose callee is a ForLoop (or a
WhileLoop) holding the body as a GraphModule (loop-carried values in, next carried values out).

A ForLoop node's arguments are (start, stop, step, *carried_initial, *captured), a WhileLoop node's
(condition, *carried_initial, *captured); the value of both is the tuple of the carried values
after the last iteration. See fx_ir/README.md, "Loops".
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from .graph_module import GraphModule, module_callee
from .node import Opcode

if TYPE_CHECKING:
    from .node import Node

# Leading arguments of a loop node before the carried values: range(start, stop, step).
RANGE_ARGUMENTS = 3


class LoopTarget:
    """What ForLoop and WhileLoop share: a body GraphModule with `num_carried` carried inputs, the
    callable one iteration runs (`run_body`), and a backend's whole loop (`run_loop`) if it has one."""

    index_inputs = 0  # placeholders before the carried values (ForLoop: the induction variable)

    def __init__(self, body: GraphModule, num_carried: int, run_body: Callable[..., Any] | None = None,
                 description: str = "", run_loop: Callable[..., Any] | None = None) -> None:
        self.body = body
        self.num_carried = num_carried
        self.run_body = run_body if run_body is not None else body.forward
        self.description = description  # where the loop came from (the frontend's `file:line`), for printing
        # a backend's whole loop (ForLoop: `(start, stop, step, *values)`, WhileLoop: `(condition,
        # *values)`) -> carried, the for/while statement included
        self.run_loop = run_loop

    @property
    def graph(self) -> Any:
        """The body's graph: effects.py decides a loop node's impurity from the nodes in it."""
        return self.body.graph

    @property
    def num_inputs(self) -> int:
        return sum(1 for n in self.body.graph.nodes if n.op == Opcode.PLACEHOLDER)

    @property
    def num_captured(self) -> int:
        return self.num_inputs - self.index_inputs - self.num_carried

    def with_body(self, run_body: Callable[..., Any], run_loop: Callable[..., Any] | None = None) -> Self:
        """The same loop running `run_body` per iteration (a backend's compiled body), or `run_loop`
        for the whole loop (a backend's for/while statement around the body's code)."""
        return type(self)(self.body, self.num_carried, run_body, self.description, run_loop)

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        import copy

        return type(self)(copy.deepcopy(self.body, memo), self.num_carried, None, self.description)


class ForLoop(LoopTarget):
    """`for i in range(start, stop, step): carried = body(i, *carried, *captured)`, then `carried`.

    The body's placeholders are, in order: the induction variable, the `num_carried` carried values,
    then the captured (read-only bindings) values; its output is a tuple of `num_carried` values.
    Arrays among the inputs are the caller's arrays themselves: an in-place op of the body (setitem,
    `+=`, `out=`) writes them, and the next iteration and the code after the loop see the write,
    exactly as the Python loop would. `run_body` is what one iteration calls: the body's generated
    forward, unless a backend installs its own compiled body (`with_body`).

    >>> loop = ForLoop(body_module, num_carried=1)
    >>> loop(0, 10, 1, x0, A)          # -> (x_final,)
    """

    index_inputs = 1

    def __call__(self, start: int, stop: int, step: int, *values: Any) -> tuple[Any, ...]:
        if self.run_loop is not None:
            return tuple(self.run_loop(start, stop, step, *values))
        return self.iterate(self.run_body, start, stop, step, *values)

    def iterate(self, run_body: Callable[..., Any], start: int, stop: int, step: int, *values: Any) -> tuple[Any, ...]:
        """Run the loop with `run_body` as the body (the Interpreter passes one that interprets it)."""
        split = self.num_carried
        carried, captured = tuple(values[:split]), tuple(values[split:])
        for i in range(start, stop, step):
            carried = run_body(i, *carried, *captured)
        return tuple(carried)

    def check_call(self, node: Node) -> str | None:
        """Why `node` cannot call this loop (lint), or None."""
        expected = RANGE_ARGUMENTS + self.num_inputs - 1
        if node.kwargs or len(node.args) != expected:
            return (f"a loop node takes (start, stop, step, {self.num_carried} carried, {self.num_captured} captured)"
                    f" = {expected} positional arguments, not {len(node.args)} (and no kwargs)")
        output = self.body.graph.output_node
        result = output.args[0] if output is not None and output.args else None
        if not isinstance(result, tuple) or len(result) != self.num_carried:
            return f"the loop body must return a tuple of its {self.num_carried} carried values"
        try:
            self.body.graph.lint()
        except Exception as error:  # the body's own lint error, reported at the loop node
            return f"its body does not lint: {error}"
        return None

    def __repr__(self) -> str:
        where = f" from {self.description}" if self.description else ""
        return f"ForLoop(carried={self.num_carried}, captured={self.num_captured}{where})"


class WhileLoop(LoopTarget):
    """`while condition: condition, *carried = body(*carried, *captured)`, then `carried`.

    Python's `while c: ...` tests its condition before each iteration; the body here ends with the
    next test (the loop node's first argument is the first test, computed by the parent), so one
    graph holds an iteration and the condition after it. The body's placeholders are the
    `num_carried` carried values, then the captured ones; its output is the tuple
    `(next_condition, *next_carried)`. The condition is tested with Python's truth (`bool()` of a
    NumPy scalar or 0-d array), as the `while` statement does. Arrays are the caller's arrays
    (in-place writes are seen by the next iteration and after the loop), as for ForLoop.

    >>> loop = WhileLoop(body_module, num_carried=1)
    >>> loop(norm0 > tol, x0, A)          # -> (x_final,)
    """

    def __call__(self, condition: Any, *values: Any) -> tuple[Any, ...]:
        if self.run_loop is not None:
            return tuple(self.run_loop(condition, *values))
        return self.iterate(self.run_body, condition, *values)

    def iterate(self, run_body: Callable[..., Any], condition: Any, *values: Any) -> tuple[Any, ...]:
        """Run the loop with `run_body` as the body (the Interpreter passes one that interprets it)."""
        split = self.num_carried
        carried, captured = tuple(values[:split]), tuple(values[split:])
        while condition:
            condition, *carried = run_body(*carried, *captured)
        return tuple(carried)

    def check_call(self, node: Node) -> str | None:
        """Why `node` cannot call this loop (lint), or None."""
        expected = 1 + self.num_inputs
        if node.kwargs or len(node.args) != expected:
            return (f"a while loop node takes (condition, {self.num_carried} carried, {self.num_captured} captured)"
                    f" = {expected} positional arguments, not {len(node.args)} (and no kwargs)")
        output = self.body.graph.output_node
        result = output.args[0] if output is not None and output.args else None
        if not isinstance(result, tuple) or len(result) != 1 + self.num_carried:
            return f"the while loop body must return (condition, *its {self.num_carried} carried values)"
        try:
            self.body.graph.lint()
        except Exception as error:
            return f"its body does not lint: {error}"
        return None

    def __repr__(self) -> str:
        where = f" from {self.description}" if self.description else ""
        return f"WhileLoop(carried={self.num_carried}, captured={self.num_captured}{where})"


def loop_of(node: Node) -> ForLoop | WhileLoop | None:
    """The ForLoop or WhileLoop a call_module node calls, or None for any other node."""
    callee = module_callee(node)
    return callee if isinstance(callee, (ForLoop, WhileLoop)) else None


def loop_nodes(graph: Any) -> list[Node]:
    """The loop nodes of a graph (not those nested in their bodies)."""
    return [n for n in graph.nodes if loop_of(n) is not None]


def count_loops(graph: Any) -> int:
    """Loop nodes of a graph, nested ones included."""
    total = 0
    for node in graph.nodes:
        loop = loop_of(node)
        if loop is not None:
            total += 1 + count_loops(loop.body.graph)
    return total
