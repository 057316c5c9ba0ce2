"""The test of a captured `while` loop: where it is in the bytecode, and the one condition the graph
computes from its terms (`while r > tol and it < maxit:`, `while not done and it < maxit:`).

Python compiles `while t1 and not t2: body` as the test before the loop and a copy of it at the
loop's bottom: a chain of conditional jumps to the loop's exit (3.11 closes the loop with a
conditional jump back to the body, 3.12+ with a last jump to the exit and a jump back). `or` jumps
into the body: such a test is not captured. A term known while tracing is decided at once (a False
one ends the test, as Python's short-circuit does); the terms the graph computes are and-ed in one
node. The graph evaluates every term, so the code of a term after the first computed one must be
safe to run whatever the earlier terms say: comparisons and logical operators only.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from bytecode import Label

from .loop_body import NotCaptured, carried_argument
from .variables.arrays import ArrayVariable
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.graph_int import GraphIntVariable, graph_int_meta

if TYPE_CHECKING:
    from .translator.core import InstructionTranslatorBase as Tx

# conditional jumps and the truth of the popped value they jump on
_JUMPS_WHEN = {"POP_JUMP_IF_FALSE": False, "POP_JUMP_IF_TRUE": True,
               "POP_JUMP_FORWARD_IF_FALSE": False, "POP_JUMP_FORWARD_IF_TRUE": True,
               "POP_JUMP_BACKWARD_IF_FALSE": False, "POP_JUMP_BACKWARD_IF_TRUE": True}
_BACK = frozenset({"JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP"})
# what a later term may compute: it runs in the graph even when an earlier term ends the loop
_SAFE_TERM_OPS = frozenset({operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
                            operator.not_, operator.truth, operator.and_, np.less, np.less_equal, np.greater,
                            np.greater_equal, np.equal, np.not_equal, np.logical_not})


@dataclass
class WhileShape:
    entry_start: int  # the test before the loop: [entry_start, head)
    head: int  # the body's first instruction
    bottom_start: int  # the test at the bottom: [bottom_start, test_end)
    test_end: int
    exit_ip: int  # where the loop leaves to
    at_bottom: bool = False  # the jump asked about is in the bottom test (the first iteration ran unrolled)

    @property
    def test_stop(self) -> int:
        """Where the test holding the jump asked about ends."""
        return self.test_end if self.at_bottom else self.head


def is_graph_condition(value: VariableTracker) -> bool:
    """A loop test the graph computes: a NumPy scalar or 0-d array of the host, or a Python int or
    bool computed from data (`it < maxit` of a carried int)."""
    if isinstance(value, GraphIntVariable):
        return True
    if type(value) is not ArrayVariable or not (value.meta.scalar or value.meta.ndim == 0):
        return False
    return not (value.node.meta.get("device") or value.node.meta.get("array_type"))


def while_shape(tx: "Tx", jump_index: int) -> WhileShape | None:
    """The `while` loop whose entry test (or bottom test, after a first iteration traced unrolled:
    `udiff = 1; while udiff > tol:` where udiff becomes a NumPy float) holds the conditional jump at
    `jump_index`, or None when that jump is no such test (an `if`, an `or` in the test, a loop
    written on one line)."""
    instructions, targets = tx.instructions, tx.label_targets
    jump = instructions[jump_index]
    if jump.name not in _JUMPS_WHEN or not isinstance(jump.arg, Label):
        return None
    exit_ip = targets[jump.arg]
    if exit_ip <= jump_index:  # 3.11's closing jump back: the loop leaves after it
        exit_ip = jump_index + 1
    if exit_ip < 2:
        return None
    closing = instructions[exit_ip - 1]
    if not isinstance(closing.arg, Label):
        return None
    head = targets[closing.arg]
    if closing.name in _JUMPS_WHEN:
        test_end, extra = exit_ip, 0  # 3.11: the last term jumps back to the body
    elif closing.name in _BACK:
        test_end, extra = exit_ip - 1, 1  # 3.12+: the last term jumps to the exit, then a jump back
    else:
        return None
    if not head < exit_ip - 1:
        return None
    line = jump.lineno
    entry_start = head
    while entry_start > 0 and instructions[entry_start - 1].lineno == line:
        entry_start -= 1
    bottom_start = exit_ip - (head - entry_start) - extra
    if bottom_start < head:
        return None
    at_bottom = bottom_start <= jump_index < test_end
    if not (entry_start <= jump_index < head or at_bottom):
        return None
    for offset in range(head - entry_start):
        first, second = instructions[entry_start + offset], instructions[bottom_start + offset]
        if first.name in _JUMPS_WHEN:
            if second.name not in _JUMPS_WHEN or targets[first.arg] != exit_ip:
                return None  # an `or` (a jump into the body), or not the same test
            if second is not closing and targets[second.arg] != exit_ip:
                return None
        elif first.name != second.name or isinstance(first.arg, Label) or first.arg != second.arg:
            return None
    return WhileShape(entry_start, head, bottom_start, test_end, exit_ip, at_bottom)


def trace_test(tx: "Tx", shape: WhileShape, end: int, terms: list[tuple[VariableTracker, bool]]) -> VariableTracker:
    """Trace the test from tx.ip to `end` into the current graph, after the `terms` already taken
    ((value, whether the loop goes on when the value is true)): the loop's condition, a constant
    False when a term known while tracing ends the loop."""
    graph = tx.output.graph
    before: set[Any] | None = set(graph.nodes) if terms else None
    while tx.ip < end:
        inst = tx.instructions[tx.ip]
        if inst.name in _JUMPS_WHEN:
            value = tx.pop()
            tx.ip += 1
            jumps_when = _JUMPS_WHEN[inst.name]
            goes_on_when = jumps_when if tx.label_targets[inst.arg] == shape.head else not jumps_when
            if is_graph_condition(value):
                if before is None:
                    before = set(graph.nodes)
                terms.append((value, goes_on_when))
            elif value.truth_value(tx) != goes_on_when:
                return ConstantVariable(False)  # short-circuit: the rest of the test does not run
            continue
        if isinstance(inst.arg, Label):
            raise NotCaptured(f"the loop test jumps ({inst.name}) at line {inst.lineno}")
        tx.step()
    if before is not None:
        _check_safe(graph, before)
    if not terms:
        return ConstantVariable(True)
    return _combined(tx, terms)


def _check_safe(graph: Any, before: set[Any]) -> None:
    for node in graph.nodes:
        if node not in before and node.op == "call_function" and node.target not in _SAFE_TERM_OPS:
            name = getattr(node.target, "__name__", str(node.target))
            raise NotCaptured(f"a later term of the loop test computes {name}, which the graph would run even "
                              "when an earlier term ends the loop")


def _combined(tx: "Tx", terms: list[tuple[VariableTracker, bool]]) -> VariableTracker:
    """The and of the terms, each tested for truth (or its negation): one Python bool of the graph."""
    if len(terms) == 1 and terms[0][1]:
        return terms[0][0]
    output = tx.output
    node = None
    for value, goes_on_when in terms:
        test = output.create_node("call_function", operator.truth if goes_on_when else operator.not_,
                                  (carried_argument(value),), {}, graph_int_meta())
        node = test if node is None else output.create_node("call_function", operator.and_, (node, test), {},
                                                            graph_int_meta())
    return GraphIntVariable(output, node, kind=bool, bound=1)
