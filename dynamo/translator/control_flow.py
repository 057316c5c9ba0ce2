"""Jumps and loops: conditional jumps on values known while tracing, GET_ITER/FOR_ITER over
iterables known while tracing (how loops unroll). A condition known only at run time is
`unsupported` here; the graph-break machinery takes over at exactly this point."""
from __future__ import annotations

import operator

from bytecode import Instr

from .. import bytecode_compat as compat
from .. import branch_capture, loop_capture, python_loops, while_capture
from ..exc import Category, unsupported
from ..variables.base import VariableTracker
from ..variables.builtins import BuiltinVariable
from ..variables.constant import ConstantVariable
from .core import InstructionTranslatorBase, YieldSignal


class ControlFlowMixin(InstructionTranslatorBase):
    # ---- unconditional -------------------------------------------------------------------------------------
    def JUMP_FORWARD(self, inst: Instr) -> None:
        self.jump(inst.arg)

    JUMP_BACKWARD = JUMP_FORWARD
    JUMP_BACKWARD_NO_INTERRUPT = JUMP_FORWARD
    JUMP = JUMP_FORWARD
    JUMP_NO_INTERRUPT = JUMP_FORWARD

    # ---- conditional -------------------------------------------------------------------------------------
    def branch_condition(self, value: VariableTracker) -> bool:
        return value.truth_value(self)

    def jump_if(self, inst: Instr, jump_when: bool) -> None:
        condition = self.pop()
        if while_capture.capture_while(self, inst, condition, jump_when):
            return  # the whole `while` loop is one loop node, and the translator after it
        if branch_capture.capture_branch(self, inst, condition, jump_when):
            return  # both arms are one cond node of the loop body, and the translator where they meet
        if self.branch_condition(condition) == jump_when:
            self.jump(inst.arg)

    def POP_JUMP_IF_TRUE(self, inst: Instr) -> None:
        self.jump_if(inst, True)

    def POP_JUMP_IF_FALSE(self, inst: Instr) -> None:
        self.jump_if(inst, False)

    def jump_if_none(self, inst: Instr, jump_when_none: bool) -> None:
        value = self.pop()
        is_none = BuiltinVariable(operator.is_).call_function(self, [value, ConstantVariable(None)], {})
        if is_none.as_python_constant() == jump_when_none:
            self.jump(inst.arg)

    def POP_JUMP_IF_NONE(self, inst: Instr) -> None:
        self.jump_if_none(inst, True)

    def POP_JUMP_IF_NOT_NONE(self, inst: Instr) -> None:
        self.jump_if_none(inst, False)

    # 3.11 spells the direction into the name
    POP_JUMP_FORWARD_IF_TRUE = POP_JUMP_BACKWARD_IF_TRUE = POP_JUMP_IF_TRUE
    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_BACKWARD_IF_FALSE = POP_JUMP_IF_FALSE
    POP_JUMP_FORWARD_IF_NONE = POP_JUMP_BACKWARD_IF_NONE = POP_JUMP_IF_NONE
    POP_JUMP_FORWARD_IF_NOT_NONE = POP_JUMP_BACKWARD_IF_NOT_NONE = POP_JUMP_IF_NOT_NONE

    def jump_or_pop(self, inst: Instr, jump_when: bool) -> None:
        if self.branch_condition(self.peek()) == jump_when:
            self.jump(inst.arg)
        else:
            self.pop()

    def JUMP_IF_TRUE_OR_POP(self, inst: Instr) -> None:
        self.jump_or_pop(inst, True)

    def JUMP_IF_FALSE_OR_POP(self, inst: Instr) -> None:
        self.jump_or_pop(inst, False)

    # ---- loops -----------------------------------------------------------------------------------------------
    def GET_ITER(self, inst: Instr) -> None:
        python_loops.refuse_known(self)
        iterator = loop_capture.iterate(self, self.pop())
        if iterator is not None:  # None: the whole loop is one loop node, and the translator after it
            self.push(iterator)

    def FOR_ITER(self, inst: Instr) -> None:
        iterator = self.peek()
        item = iterator.next_item(self)
        if item is not None:
            self.push(item)
            python_loops.watch(self, iterator)
            return
        self.pop()
        self.jump(inst.arg)
        self.ip += compat.FOR_ITER_EXHAUSTED_SKIP

    def END_FOR(self, inst: Instr) -> None:
        self.popn(compat.END_FOR_POPS)

    # ---- generators (run inlined, one yield at a time, by GeneratorVariable) -----------------------------
    def RETURN_GENERATOR(self, inst: Instr) -> None:
        # the code runs when first resumed, which delivers None (popped by the next POP_TOP)
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst: Instr) -> None:
        value = self.pop()
        self.push(ConstantVariable(None))  # what the yield expression is worth when next() resumes it
        raise YieldSignal(value)

    # ---- exceptions and blocks: not captured yet ---------------------------------------------------------------
    def RAISE_VARARGS(self, inst: Instr) -> None:
        unsupported(Category.EXCEPTION, "the code raises an exception here", "the original code runs and raises it")

    def LOAD_ASSERTION_ERROR(self, inst: Instr) -> None:
        unsupported(Category.EXCEPTION, "an assert fails here", "the original code runs and raises AssertionError")
