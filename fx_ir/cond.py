"""A branch on a value known only at run time, in the six-opcode IR: a `call_module` node whose
callee is a Cond holding the two arms as GraphModules (operands in, the arm's results out).

A Cond node's arguments are (predicate, *operands); its value is the tuple of the results of the
arm Python's truth of the predicate picks. See fx_ir/README.md, "Branches".
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .graph_module import GraphModule, module_callee
from .node import Opcode

if TYPE_CHECKING:
    from .node import Node


class Cond:
    """`results = if_true(*operands) if predicate else if_false(*operands)`: both arms take the same
    placeholders (the operands, in order) and return a tuple of `num_results` values of the same
    kinds. Only the chosen arm runs: its in-place writes (setitem on an operand array), warnings and
    errors are those of the Python `if` statement; the other arm's never happen.

    >>> branch = Cond(if_true, if_false, num_results=1)
    >>> branch(x > 0, x, out)          # -> (x * 2,) or (-x,)
    """

    def __init__(self, if_true: GraphModule, if_false: GraphModule, num_results: int, description: str = "") -> None:
        self.if_true = if_true
        self.if_false = if_false
        self.num_results = num_results
        self.description = description  # where the branch came from (the frontend's `file:line`)

    @property
    def arms(self) -> tuple[GraphModule, GraphModule]:
        return self.if_true, self.if_false

    def __call__(self, predicate: Any, *operands: Any) -> tuple[Any, ...]:
        arm = self.if_true if predicate else self.if_false
        return tuple(arm.forward(*operands))

    @property
    def num_operands(self) -> int:
        return sum(1 for n in self.if_true.graph.nodes if n.op == Opcode.PLACEHOLDER)

    def check_call(self, node: Node) -> str | None:
        """Why `node` cannot call this branch (lint), or None."""
        expected = 1 + self.num_operands
        if node.kwargs or len(node.args) != expected:
            return (f"a cond node takes (predicate, {self.num_operands} operands) = {expected} positional "
                    f"arguments, not {len(node.args)} (and no kwargs)")
        for arm in self.arms:
            if sum(1 for n in arm.graph.nodes if n.op == Opcode.PLACEHOLDER) != self.num_operands:
                return "both arms of a cond take the same operands"
            output = arm.graph.output_node
            result = output.args[0] if output is not None and output.args else None
            if not isinstance(result, tuple) or len(result) != self.num_results:
                return f"each arm of a cond must return a tuple of its {self.num_results} results"
            try:
                arm.graph.lint()
            except Exception as error:  # the arm's own lint error, reported at the cond node
                return f"its arm does not lint: {error}"
        return None

    def __deepcopy__(self, memo: dict[int, Any]) -> Cond:
        import copy

        return Cond(copy.deepcopy(self.if_true, memo), copy.deepcopy(self.if_false, memo), self.num_results,
                    self.description)

    def __repr__(self) -> str:
        where = f" from {self.description}" if self.description else ""
        return f"Cond(results={self.num_results}, operands={self.num_operands}{where})"


def cond_of(node: Node) -> Cond | None:
    """The Cond a call_module node calls, or None for any other node."""
    callee = module_callee(node)
    return callee if isinstance(callee, Cond) else None
