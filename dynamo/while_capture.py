"""While loops that stay loops: a `while` whose condition is computed in the graph from the data (a
convergence test) is traced once, the body and the next test, into a WhileLoop node.

Python compiles `while c: body` as a test before the loop and the same test again at its bottom
(while_condition.py finds both, `and`/`not` chains included): the first test becomes the loop
node's condition argument, the body graph ends with the second.
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
from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .while_condition import WhileShape, is_graph_condition, trace_test, while_shape

if TYPE_CHECKING:
    from .translator.core import InstructionTranslatorBase as Tx

def capture_while(tx: "Tx", inst: Instr, condition: Any, jump_when: bool) -> bool:
    """At a conditional jump on `condition` (popped) that jumps when its truth is `jump_when`: when
    the jump is in the entry test of a `while` loop and the graph computes `condition`, make the loop
    one node and leave the translator after it (True); False when this is not such a loop (the jump
    is handled as before)."""
    if not is_graph_condition(condition):
        return False
    shape = while_shape(tx, tx.ip - 1)
    if shape is None:
        return False
    records = tx.output.loops
    key = records.key(tx.code, tx.ip - 1)
    if key in records.rejected:
        return False
    loop = _WhileCapture(tx, shape)
    try:
        goes_on = jump_when if shape.at_bottom and tx.label_targets[inst.arg] == shape.head else not jump_when
        entry = trace_test(tx, shape, shape.test_stop, [(condition, goes_on)])
        if isinstance(entry, ConstantVariable) and not entry.value:
            tx.ip = shape.exit_ip  # a later term known now ends the loop before its first iteration
            return True
        loop.run_while(entry)
    except NotCaptured as why:
        raise RetraceWithoutLoop(key, RejectedLoop(loop.location, "while", str(why))) from None
    return True


class _WhileCapture(_LoopCapture):
    """Traces [head, bottom): one iteration and the next test; carried values as for a `for` loop."""

    def __init__(self, tx: "Tx", shape: WhileShape) -> None:
        self.tx = tx
        self.output = tx.output
        self.shape = shape
        self.head, self.bottom, self.exit_ip = shape.head, shape.bottom_start, shape.exit_ip
        self.peeled = True  # no first iteration to peel: a Python number carried is refused below
        self.rows = None
        self.location = tx.location()
        self.variable = "while"

    def run_while(self, condition: VariableTracker) -> None:
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
            depth, bodies = len(tx.stack), len(output.loops.bodies)
            tx.ip = self.head
            output.loops.bodies.append((tx, self.head, self.bottom, self.bottom, None))
            try:
                self._trace_to_bottom()
            finally:
                del output.loops.bodies[bodies:]
            if len(tx.stack) != depth:
                raise NotCaptured("the body leaves values on the stack")
            try:
                test = trace_test(tx, self.shape, self.shape.test_end, [])
            except Unsupported as error:
                raise NotCaptured(reason_of(error)) from None
            if not (is_graph_condition(test) or isinstance(test, ConstantVariable)):
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
