"""Operator opcodes: BINARY_OP, UNARY_*, COMPARE_OP, IS_OP, CONTAINS_OP, TO_BOOL, subscripts and
slices. Each maps to an `operator` function called through BuiltinVariable, which folds constants,
handles sequences and sends arrays to the graph."""
from __future__ import annotations

import operator

from bytecode import BinaryOp, Compare, Instr

from .. import bytecode_compat as compat
from ..while_condition import is_graph_condition
from ..exc import Category, unsupported
from ..variables.base import VariableTracker
from ..variables.builtins import BuiltinVariable
from ..variables.constant import ConstantVariable
from ..variables.masked_updates import MaskedSelection, MaskedUpdate, augmented_update_follows, mask_selection
from ..variables.sequences import SliceVariable
from .core import InstructionTranslatorBase

BINARY_OPERATORS = {
    BinaryOp.ADD: operator.add, BinaryOp.SUBTRACT: operator.sub, BinaryOp.MULTIPLY: operator.mul,
    BinaryOp.TRUE_DIVIDE: operator.truediv, BinaryOp.FLOOR_DIVIDE: operator.floordiv,
    BinaryOp.REMAINDER: operator.mod, BinaryOp.POWER: operator.pow, BinaryOp.MATRIX_MULTIPLY: operator.matmul,
    BinaryOp.LSHIFT: operator.lshift, BinaryOp.RSHIFT: operator.rshift, BinaryOp.AND: operator.and_,
    BinaryOp.OR: operator.or_, BinaryOp.XOR: operator.xor,
    BinaryOp.INPLACE_ADD: operator.iadd, BinaryOp.INPLACE_SUBTRACT: operator.isub,
    BinaryOp.INPLACE_MULTIPLY: operator.imul, BinaryOp.INPLACE_TRUE_DIVIDE: operator.itruediv,
    BinaryOp.INPLACE_FLOOR_DIVIDE: operator.ifloordiv, BinaryOp.INPLACE_REMAINDER: operator.imod,
    BinaryOp.INPLACE_POWER: operator.ipow, BinaryOp.INPLACE_MATRIX_MULTIPLY: operator.imatmul,
    BinaryOp.INPLACE_LSHIFT: operator.ilshift, BinaryOp.INPLACE_RSHIFT: operator.irshift,
    BinaryOp.INPLACE_AND: operator.iand, BinaryOp.INPLACE_OR: operator.ior, BinaryOp.INPLACE_XOR: operator.ixor,
}

COMPARE_OPERATORS = {
    Compare.LT: operator.lt, Compare.LE: operator.le, Compare.EQ: operator.eq,
    Compare.NE: operator.ne, Compare.GT: operator.gt, Compare.GE: operator.ge,
}


# The CALL_INTRINSIC_1 functions an ordinary function body runs: `+x`, and `(*a, *b)` (3.12+).
INTRINSICS_1 = {"INTRINSIC_UNARY_POSITIVE": operator.pos, "INTRINSIC_LIST_TO_TUPLE": tuple}


class OperatorsMixin(InstructionTranslatorBase):
    def apply(self, fn, *args: VariableTracker) -> VariableTracker:
        return BuiltinVariable(fn).call_function(self, list(args), {})

    def BINARY_OP(self, inst: Instr) -> None:
        right = self.pop()
        left = self.pop()
        op = BINARY_OPERATORS[inst.arg]
        if isinstance(left, MaskedSelection):  # `a[mask] op= v` (masked_updates.py)
            self.push(left.update(self, op, right))
            return
        self.push(self.apply(op, left, right))

    def COMPARE_OP(self, inst: Instr) -> None:
        right = self.pop()
        left = self.pop()
        compare, to_bool = compat.compare_arg(inst)
        result = self.apply(COMPARE_OPERATORS[compare], left, right)
        if to_bool and result.is_python_constant():
            result = ConstantVariable(bool(result.as_python_constant()))
        # otherwise (3.13 folding the TO_BOOL of a branch into the comparison) the only consumer
        # is a truth test (a jump or UNARY_NOT), which asks the value itself, as TO_BOOL would
        self.push(result)

    def IS_OP(self, inst: Instr) -> None:
        right = self.pop()
        left = self.pop()
        self.push(self.apply(operator.is_not if inst.arg else operator.is_, left, right))

    def CONTAINS_OP(self, inst: Instr) -> None:
        container = self.pop()
        item = self.pop()
        result = self.apply(operator.contains, container, item)
        self.push(self.apply(operator.not_, result) if inst.arg else result)

    def UNARY_NEGATIVE(self, inst: Instr) -> None:
        self.push(self.apply(operator.neg, self.pop()))

    def UNARY_POSITIVE(self, inst: Instr) -> None:
        self.push(self.apply(operator.pos, self.pop()))

    def UNARY_INVERT(self, inst: Instr) -> None:
        self.push(self.apply(operator.invert, self.pop()))

    def UNARY_NOT(self, inst: Instr) -> None:
        self.push(ConstantVariable(not self.pop().truth_value(self)))

    def TO_BOOL(self, inst: Instr) -> None:
        value = self.pop()
        following = self.instructions[self.ip] if self.ip < len(self.instructions) else None
        if following is not None and following.name.startswith("POP_JUMP_IF") and is_graph_condition(value):
            self.push(value)  # the jump tests its truth (a while loop's test is computed in the graph)
            return
        self.push(ConstantVariable(value.truth_value(self)))

    def CALL_INTRINSIC_1(self, inst: Instr) -> None:  # 3.12+
        name = getattr(inst.arg, "name", str(inst.arg))
        if name not in INTRINSICS_1:  # the others belong to modules, handlers and type parameters
            unsupported(Category.UNSUPPORTED_OPCODE, f"the intrinsic {name} is not captured yet (CALL_INTRINSIC_1)")
        self.push(self.apply(INTRINSICS_1[name], self.pop()))

    # ---- subscripts and slices ---------------------------------------------------------------------------
    def BINARY_SUBSCR(self, inst: Instr) -> None:
        key = self.pop()
        container = self.pop()
        selection = mask_selection(self, container, key) if augmented_update_follows(self) else None
        self.push(selection if selection is not None else self.apply(operator.getitem, container, key))

    def BINARY_SLICE(self, inst: Instr) -> None:
        stop = self.pop()
        start = self.pop()
        container = self.pop()
        self.push(self.apply(operator.getitem, container, SliceVariable(start, stop, ConstantVariable(None))))

    def STORE_SUBSCR(self, inst: Instr) -> None:
        key = self.pop()
        container = self.pop()
        value = self.pop()
        if isinstance(value, MaskedUpdate) and value.store(self, container, key):
            return
        if isinstance(value, (MaskedSelection, MaskedUpdate)):
            unsupported(Category.DATA_DEPENDENT_SHAPE, f"storing {value.describe()} elsewhere")
        container.setitem(self, key, value)

    def STORE_SLICE(self, inst: Instr) -> None:
        stop = self.pop()
        start = self.pop()
        container = self.pop()
        value = self.pop()
        container.setitem(self, SliceVariable(start, stop, ConstantVariable(None)), value)

    def DELETE_SUBSCR(self, inst: Instr) -> None:
        key = self.pop()
        container = self.pop()
        container.delitem(self, key)
