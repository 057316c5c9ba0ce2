"""While loops that stay loops: a `while` whose condition is computed in the graph from the data (a
convergence test) is traced once, the body and the next test, into a WhileLoop node.

Python compiles `while c: body` as a test before the loop and the same test again at its bottom:
the first test becomes the loop node's condition argument, the body graph ends with the second.
A body that cannot be captured whole raises RetraceWithoutLoop (loop_capture), and the frame is
traced again with the test at the top breaking the graph, as before.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from bytecode import Instr, Label

from .exc import Unsupported
from .fx_ir.graph import Graph
from .fx_ir.graph_module import GraphModule
from .fx_ir.loops import WhileLoop
from .fx_ir.node import Node
from .loop_body import (LONGEST_LOOP, BodyTrace, NotCaptured, carried_argument, carried_meta, carried_value, reason_of,
                        stored_locals, value_bases)
from .loop_capture import _LEAVING, NeedsPeeling, _lift_captures, _LoopCapture
from .loop_records import CapturedLoop, RejectedLoop, RetraceWithoutLoop
from .variables.arrays import ArrayVariable
from .variables.base import VariableTracker
from .variables.graph_int import GraphIntVariable

if TYPE_CHECKING:
    from .translator.core import InstructionTranslatorBase as Tx

# The conditional jumps of a `while` test that leave the loop when the condition is false
# (3.11 spells the direction into the name), and the backward jumps that close it.
_EXIT_WHEN_FALSE = frozenset({"POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE"})
_BACK_WHEN_TRUE = frozenset({"POP_JUMP_BACKWARD_IF_TRUE"})
_BACK = frozenset({"JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP"})


def capture_while(tx: "Tx", inst: Instr, condition: Any) -> bool:
    """At a conditional jump on `condition` (popped), a value of the graph: when the jump is the
    entry test of a `while` loop, make the loop one node and leave the translator after it (True);
    False when this is not such a loop (the jump is handled as before)."""
    if not is_graph_condition(condition):
        return False
    shape = _while_shape(tx, inst)
    if shape is None:
        return False
    head, bottom, exit_ip = shape
    records = tx.output.loops
    key = records.key(tx.code, tx.ip - 1)
    if key in records.rejected:
        return False
    loop = _WhileCapture(tx, head, bottom, exit_ip)
    try:
        loop.run_while(condition)
    except NotCaptured as why:
        raise RetraceWithoutLoop(key, RejectedLoop(loop.location, "while", str(why))) from None
    return True


def is_graph_condition(value: VariableTracker) -> bool:
    """A loop test the graph computes: a NumPy scalar or 0-d array of the host, or a Python int or
    bool computed from data (`it < maxit` of a carried int)."""
    if isinstance(value, GraphIntVariable):
        return True
    if type(value) is not ArrayVariable or not (value.meta.scalar or value.meta.ndim == 0):
        return False
    return not (value.node.meta.get("device") or value.node.meta.get("array_type"))


def _while_shape(tx: "Tx", inst: Instr) -> tuple[int, int, int] | None:
    """(head, bottom test, exit) of the `while` loop whose entry test is `inst` (just executed at
    tx.ip - 1), or None when the jump is not one."""
    if inst.name not in _EXIT_WHEN_FALSE or not isinstance(inst.arg, Label):
        return None
    head, exit_ip = tx.ip, tx.label_targets[inst.arg]
    if exit_ip <= head + 1:
        return None
    last = tx.instructions[exit_ip - 1]
    if last.name in _BACK_WHEN_TRUE and isinstance(last.arg, Label) and tx.label_targets[last.arg] == head:
        return head, exit_ip - 1, exit_ip  # 3.11: test; POP_JUMP_BACKWARD_IF_TRUE head
    if last.name in _BACK and isinstance(last.arg, Label) and tx.label_targets[last.arg] == head:
        test = tx.instructions[exit_ip - 2]  # 3.12+: test; POP_JUMP_IF_FALSE exit; JUMP_BACKWARD head
        if test.name in _EXIT_WHEN_FALSE and isinstance(test.arg, Label) and tx.label_targets[test.arg] == exit_ip:
            return head, exit_ip - 2, exit_ip
    return None


class _WhileCapture(_LoopCapture):
    """Traces [head, bottom): one iteration and the next test; carried values as for a `for` loop."""

    def __init__(self, tx: "Tx", head: int, bottom: int, exit_ip: int) -> None:
        self.tx = tx
        self.output = tx.output
        self.head, self.bottom, self.exit_ip = head, bottom, exit_ip
        self.peeled = True  # no first iteration to peel: a Python number carried is refused below
        self.rows = None
        self.location = tx.location()
        self.variable = "while"

    def run_while(self, condition: ArrayVariable) -> None:
        tx, output = self.tx, self.output
        self._check_body()
        carried_names = self._carried_names()
        initial = {name: self._initial(name) for name in carried_names}
        body = Graph()
        with BodyTrace(tx, body) as trace:
            trace.carry(initial)
            self.proxies = trace.proxies
            self.int_bounds: dict[str, int] = {}
            trace.start()
            depth = len(tx.stack)
            tx.ip = self.head
            self._trace_to_bottom()
            if len(tx.stack) != depth + 1:
                raise NotCaptured("the body leaves values on the stack")
            test = tx.pop()
            if not is_graph_condition(test):
                raise NotCaptured(f"the loop condition becomes {test.describe()} in the body, not a NumPy scalar "
                                  "of the graph")
            after = {name: tx.symbolic_locals.get(name) for name in carried_names}
            trace.check_side_effects()
            next_values = [self._next_value(name, initial[name], after[name]) for name in carried_names]
        body.output((carried_argument(test), *next_values))
        output.keep_unused_work(body)
        captured = _lift_captures(body)
        self._emit_while(body, condition, initial, captured)

    def _trip_bound(self) -> int:
        return LONGEST_LOOP

    def _check_body(self) -> None:
        tx = self.tx
        for index in range(self.head, self.bottom):
            inst = tx.instructions[index]
            if inst.name in _LEAVING:
                raise NotCaptured(f"the body leaves the loop ({inst.name}) at line {inst.lineno}")
            if isinstance(inst.arg, Label):
                target = tx.label_targets[inst.arg]
                if target == self.head:
                    raise NotCaptured(f"the body jumps back to the test (continue) at line {inst.lineno}")
                if not self.head <= target <= self.bottom:
                    raise NotCaptured(f"the body leaves the loop (break) at line {inst.lineno}")
            if index in tx.facts.in_user_region:
                raise NotCaptured(f"the body has a try/with block at line {inst.lineno}")

    def _carried_names(self) -> list[str]:
        tx = self.tx
        stored = stored_locals(tx, self.head, self.bottom)
        if tx.facts.read_by_calls:
            raise NotCaptured("the code reads its locals by name (eval, locals)")
        live = tx.facts.live_locals(self.head) | tx.facts.live_locals(self.exit_ip)
        return [n for n in stored if n in live]

    def _initial(self, name: str) -> VariableTracker:
        try:
            return self._carried_initial(name)
        except NeedsPeeling as why:  # not reached (peeled is set); kept for a clear message
            raise NotCaptured(str(why)) from None

    def _trace_to_bottom(self) -> None:
        tx = self.tx
        try:
            while tx.ip != self.bottom:
                if not self.head <= tx.ip < self.bottom:
                    raise NotCaptured("the body leaves the loop")
                tx.step()
        except Unsupported as error:
            raise NotCaptured(reason_of(error)) from None

    def _emit_while(self, body: Graph, condition: VariableTracker, initial: dict[str, VariableTracker],
                    captured: list[Node]) -> None:
        tx, output = self.tx, self.output
        name = f"loop_{len(output.submodules)}"
        where = f"{self.location.filename}:{self.location.lineno}" if self.location else ""
        loop = WhileLoop(GraphModule(output.submodules, body), len(initial), description=where)
        loop.body.graph.lint()
        output.submodules[name] = loop
        args = (carried_argument(condition), *(carried_argument(v) for v in initial.values()), *captured)
        metas = tuple(carried_meta(v) for v in initial.values())
        node = output.create_node("call_module", name, args, {}, metas)
        node.meta["impure"] = True  # its reads of arrays written later must stay before those writes
        bases: frozenset = frozenset()
        for value in initial.values():
            bases |= value_bases(value)
        for index, (local, value) in enumerate(initial.items()):
            item = output.create_node("call_function", operator.getitem, (node, index), {}, carried_meta(value))
            tx.symbolic_locals[local] = carried_value(output, item, value, bases | _captured_bases(tx, captured),
                                                      self.int_bounds.get(local))
        tx.ip = self.exit_ip
        body_ops = sum(1 for n in body.nodes if n.op not in ("placeholder", "output"))
        output.loops.captured.append(CapturedLoop(self.location, "while", "while the condition holds", body_ops,
                                                  list(initial), output.loops.depth))


def _captured_bases(tx: "Tx", captured: list[Node]) -> frozenset:
    from .loop_capture import _bases_of

    bases: frozenset = frozenset()
    for n in captured:  # captured arrays that a carried value may have become a view of
        bases |= _bases_of(tx, n)
    return bases
