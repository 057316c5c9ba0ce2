"""`a[mask] op= v` in the graph: the in-place op of a boolean-mask selection, stored back, is the ufunc
computing the selected elements in place (`out=`, `where=`): NumPy's values, casting and warnings.

Python runs it as `t = a[mask]; t op= v; a[mask] = t`; the selection alone has a data-dependent size
(a graph break). Recognized from the bytecode at the subscript: the selection becomes a
MaskedSelection, the operator on it a MaskedUpdate, and the store records one ufunc call. Where the
operand breaks the graph or writes memory, the frame is traced again with that selection read where
Python reads it (LoopRecords.eager_selections), so nothing is read later than Python reads it.
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exc import Category, unsupported
from .arrays import ArrayVariable
from .base import VariableTracker
from .constant import ConstantVariable
from .sequences import SliceVariable, TupleVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx

# the in-place operators whose ndarray method is the ufunc with out= (not **=: NumPy's in-place power
# takes square/sqrt/reciprocal shortcuts for some exponents, whose bits differ from np.power's)
INPLACE_UFUNCS = {
    operator.iadd: np.add, operator.isub: np.subtract, operator.imul: np.multiply,
    operator.itruediv: np.true_divide, operator.ifloordiv: np.floor_divide, operator.imod: np.remainder,
    operator.iand: np.bitwise_and, operator.ior: np.bitwise_or, operator.ixor: np.bitwise_xor,
    operator.ilshift: np.left_shift, operator.irshift: np.right_shift,
}


def augmented_update_follows(tx: "Tx") -> bool:
    """The BINARY_SUBSCR being run reads `container[key]` for an augmented assignment (COPY 2, COPY 2
    before it), and no earlier trace of this frame found its operand breaking the graph or writing."""
    code, here = tx.instructions, tx.ip - 1
    if here < 2 or any(getattr(code[here - k], "name", None) != "COPY" or code[here - k].arg != 2 for k in (1, 2)):
        return False
    return (tx.code, here) not in tx.output.loops.eager_selections


def _written(tx: "Tx") -> tuple:
    """What the trace has written so far: memory of arrays, Python objects."""
    return len(tx.output.numpy.memory.writes), tx.output.side_effects.extent()


def mask_selection(tx: "Tx", container: VariableTracker, key: VariableTracker) -> "MaskedSelection | None":
    """`container[key]` as a MaskedSelection when key holds one boolean mask (with ints and slices)
    whose shape is the shape of the axes it selects; else None (the getitem is traced as usual)."""
    if not isinstance(container, ArrayVariable) or container.meta.scalar:
        return None
    parts = key.unpack(tx) if isinstance(key, TupleVariable) and type(key) is TupleVariable else [key]
    masks = [i for i, p in enumerate(parts) if isinstance(p, ArrayVariable)]
    if len(masks) != 1:
        return None
    mask = parts[masks[0]]
    assert isinstance(mask, ArrayVariable)
    if mask.meta.dtype != np.bool_ or mask.meta.scalar or mask.meta.ndim == 0:
        return None
    if not all(isinstance(p, SliceVariable) or (isinstance(p, ConstantVariable) and type(p.value) is int)
               for i, p in enumerate(parts) if i != masks[0]):
        return None
    axis = masks[0]  # every other part takes one axis
    if len(parts) - 1 + mask.meta.ndim > container.meta.ndim:
        return None
    selected = container.meta.shape[axis:axis + mask.meta.ndim]
    env = tx.output.shape_env
    if not all(a == b if isinstance(a, int) and isinstance(b, int) else env.decide_equal(a, b)
               for a, b in zip(mask.meta.shape, selected)):
        return None  # NumPy raises IndexError: the getitem says so as usual
    site = (tx.code, tx.ip - 1)
    tx.output.loops.pending_selections[site] = _written(tx)
    return MaskedSelection(container, key, parts, axis, mask, site)


class MaskedSelection(VariableTracker):
    """`a[mask]` read by an augmented assignment, before its operator runs (augmented_update_follows
    checked that the operator comes next); anything else rebuilds it in Python."""

    def __init__(self, base: ArrayVariable, key: VariableTracker, parts: list[VariableTracker], axis: int,
                 mask: ArrayVariable, site: tuple, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base, self.key, self.parts, self.axis, self.mask, self.site = base, key, parts, axis, mask, site

    def describe(self) -> str:
        return f"a boolean-mask selection of {self.base.describe()}"

    def kind_is_known(self) -> bool:
        return False

    def update(self, tx: "Tx", op: Any, operand: VariableTracker) -> VariableTracker:
        """`selection op= operand` when the operand is one number (the same for every element, so the
        order of the selected elements does not matter) and computing it wrote nothing that the
        selection reads. Otherwise the frame is traced again with the selection read where Python
        reads it (a graph break: its size depends on the data)."""
        scalar = isinstance(operand, ConstantVariable) and type(operand.value) in (int, float, bool, complex)
        array = isinstance(operand, ArrayVariable) and (operand.meta.scalar or operand.meta.ndim == 0)
        if op not in INPLACE_UFUNCS or not (scalar or array) \
                or tx.output.loops.pending_selections.get(self.site) != _written(tx):
            unsupported(Category.DATA_DEPENDENT_SHAPE, f"{self.describe()} updated by {operand.describe()}")
        return MaskedUpdate(self, op, operand)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.begin_call(operator.getitem)
        self.base.reconstruct(codegen)
        self.key.reconstruct(codegen)
        codegen.end_call(2)


class MaskedUpdate(VariableTracker):
    """`a[mask] op v`'s result before the store back (the SWAPs move it under the container)."""

    def __init__(self, selection: MaskedSelection, op: Any, operand: VariableTracker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.selection, self.op, self.operand = selection, op, operand

    def describe(self) -> str:
        return f"an in-place update of {self.selection.describe()}"

    def kind_is_known(self) -> bool:
        return False

    def store(self, tx: "Tx", container: VariableTracker, key: VariableTracker) -> bool:
        """The store back into the same array with the same key: one ufunc call in place."""
        selection = self.selection
        if container is not selection.base or key is not selection.key:
            return False
        mask = selection.mask
        view_parts = [*selection.parts[:selection.axis], *[_whole()] * mask.meta.ndim,
                      *selection.parts[selection.axis + 1:]]
        numpy = tx.output.numpy
        view = numpy.call_function(tx, operator.getitem, [selection.base, TupleVariable(view_parts)], {})
        assert isinstance(view, ArrayVariable)
        # the mask's axes among the view's: ints before it took theirs away; broadcast over the rest
        leading = sum(1 for p in selection.parts[:selection.axis] if isinstance(p, SliceVariable))
        trailing = view.meta.ndim - leading - mask.meta.ndim
        where: VariableTracker = mask
        if trailing:
            where = numpy.call_function(tx, operator.getitem, [mask, TupleVariable(
                [*[_whole()] * mask.meta.ndim, *[ConstantVariable(None)] * trailing])], {})
        numpy.call_function(tx, INPLACE_UFUNCS[self.op], [view, self.operand], {"out": view, "where": where})
        del tx.output.loops.pending_selections[selection.site]
        return True

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.begin_call(self.op)
        self.selection.reconstruct(codegen)
        self.operand.reconstruct(codegen)
        codegen.end_call(2)


def _whole() -> SliceVariable:
    """`:` (an axis taken whole)."""
    return SliceVariable(ConstantVariable(None), ConstantVariable(None), ConstantVariable(None))
