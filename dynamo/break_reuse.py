"""A frame's first trace kept at a graph break: the state before each instruction of the frame's own
code that may break, and the proof that the instruction that broke left the trace as it was.

Without it a frame that breaks is traced to the break, then traced again from its start to stop
before the instruction (convert_frame._trace_frame), and most breaks are calls refused before they
did anything (`assert_array_equal(...)`, `a.choose(...)`): the second trace rebuilds the state the
first one had. The state before such an instruction is kept (its stack, the locals, and the extent of
what the trace recorded: graph nodes, inputs, guards, side effects, sizes, wrapped objects, loops);
when the instruction raises Unsupported having traced nothing of its own (no inlined call), recorded
nothing, and could not have advanced an iterator (none reachable from the stack, the locals or the
closure: iterators change in place, unrecorded), and the trace made no decision of the shape policy
that a retrace would read (a float pinned: a retrace starts with it pinned), the translator is put
back where the retrace would have stopped. config.check_break_reuse retraces anyway and compares the
two states (on in dynamo's test suite).
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .variables.base import VariableTracker
from .variables.constant import ConstantVariable
from .variables.iterators import IteratorVariable

if TYPE_CHECKING:
    from .exc import Unsupported
    from .symbolic_convert import InstructionTranslator

# Instructions whose handlers read their operands from the stack and write no local and no with-block
# or loop state: what they may change in the trace is in OutputGraph.extent() or an iterator.
KEPT = frozenset({
    "CALL", "CALL_KW", "CALL_FUNCTION_EX", "LOAD_ATTR", "LOAD_METHOD", "BINARY_SUBSCR", "BINARY_OP",
    "COMPARE_OP", "IS_OP", "CONTAINS_OP", "UNARY_NOT", "TO_BOOL", "STORE_ATTR", "STORE_SUBSCR", "FORMAT_VALUE",
    "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE",
})


class BeforeStep:
    """The frame's translator and its trace as they were before the instruction at step `steps`."""

    __slots__ = ("steps", "ip", "current", "kw_names", "stack", "locals", "traced", "location", "globals",
                 "computes", "extent")

    def __init__(self, tx: "InstructionTranslator") -> None:
        output = tx.output
        self.steps, self.ip, self.current, self.kw_names = tx.steps, tx.ip, tx.current, tx.kw_names
        self.stack, self.locals = list(tx.stack), dict(tx.symbolic_locals)
        self.traced, self.location, self.globals = output.instructions_traced, output.current_location, output.current_globals
        self.computes = output.computes_on_inputs  # (a refused call may note work on inputs: put back)
        self.extent = output.extent()

    def unchanged_by(self, tx: "InstructionTranslator", error: "Unsupported") -> bool:
        """Whether the instruction at step `steps`, which raised `error`, left everything but the
        stack as it found it."""
        output = tx.output
        return (getattr(error, "break_step", None) == self.steps
                and output.instructions_traced == self.traced + 1  # nothing inlined
                and _same_locals(tx.symbolic_locals, self.locals)
                and output.extent() == self.extent
                and output.shape_policy.changes() == output.policy_changes  # a retrace decides as this trace did
                and not _holds_iterator([*self.stack, *self.locals.values(), *tx.closure]))

    def restore(self, tx: "InstructionTranslator") -> None:
        """Put the translator where a retrace with break_at == steps stops (translator.core.BreakHere)."""
        output = tx.output
        tx.steps, tx.ip, tx.current, tx.kw_names = self.steps, self.ip, self.current, self.kw_names
        tx.stack[:] = self.stack
        tx.break_at = self.steps
        output.instructions_traced, output.current_location, output.current_globals = self.traced, self.location, self.globals
        output.computes_on_inputs = self.computes


def kept_before_break(tx: "InstructionTranslator", error: "Unsupported") -> bool:
    """Restore the state before the instruction that raised `error` when the first trace holds it."""
    before = tx.before
    if before is None or not before.unchanged_by(tx, error):
        return False
    before.restore(tx)
    return True


def _same_locals(now: dict[str, Any], before: dict[str, Any]) -> bool:
    return len(now) == len(before) and all(before.get(name, now) is value for name, value in now.items())


def _holds_iterator(values: list[Any]) -> bool:
    """An iterator among `values` or anything they hold (trackers' attributes, lists, tuples, sets, dicts)."""
    seen: set[int] = set()
    todo = list(values)
    while todo:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, IteratorVariable):
            return True
        if isinstance(value, VariableTracker):  # (not `value`: the real object a tracker stands for)
            todo.extend(held for name, held in vars(value).items() if name != "value")
        elif isinstance(value, (list, tuple, set, frozenset)):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value)
            todo.extend(value.values())
    return False


def state_of(tx: "InstructionTranslator") -> tuple:
    """What the break's code generation reads, comparable across two traces of the same frame
    (without running the program's code: no repr() or == of its objects)."""
    output = tx.output
    return (tx.ip, tx.steps, tx.kw_names, [_described(v) for v in tx.stack],
            {name: _described(v) for name, v in tx.symbolic_locals.items()},
            [(guard.source.name(), guard.kind, _Value(guard.value)) for guard in output.guards],
            output.graph.python_code().src, output.extent(), output.instructions_traced, output.current_location,
            output.computes_on_inputs)


class _Value:
    """A guard's value compared as the same object, or equal where == is Python's, NumPy's or ours."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return _equal(self.value, getattr(other, "value", None))

    def __repr__(self) -> str:
        return f"<{type(self.value).__name__} at {id(self.value):#x}>"


def _equal(a: Any, b: Any) -> bool:
    """The same object, or equal values of one type whose == is Python's, NumPy's or ours (a NaN equal
    to a NaN: FloatIs(nan) guards of two traces hold two NaN objects on 3.13)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    module = type(a).__module__.split(".")[0]
    if module == "dynamo" and dataclasses.is_dataclass(a):
        return all(_equal(getattr(a, field.name), getattr(b, field.name)) for field in dataclasses.fields(a))
    return module in ("builtins", "dynamo", "numpy") and bool(a == b)


def _described(value: Any) -> tuple:
    source = getattr(value, "source", None)
    node = getattr(value, "node", None)
    constant = repr(value.value) if isinstance(value, ConstantVariable) else None
    return (type(value).__name__, source.name() if source is not None else None,
            getattr(node, "name", None), constant)


__all__ = ["BeforeStep", "KEPT", "kept_before_break", "state_of"]
