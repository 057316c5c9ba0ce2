"""SymbolicRangeVariable: `range(...)` of a symbolic int (`range(A.shape[0])` with a dynamic size,
`range(T)` of a dynamic int argument), kept symbolic so that a `for` loop over it can become a loop node.

Any other use (len, indexing, an unrolled loop when capture fails) specializes its bounds, as before.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import VariableTracker
from .iterators import RangeVariable
from .symbolic import SymbolicIntVariable, concrete

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..translator.core import InstructionTranslatorBase as Tx

_WHY = "range() of a size (a loop over it is unrolled)"


class SymbolicRangeVariable(VariableTracker):
    """`parts`: the range's start, stop, step trackers (constants or SymbolicIntVariables)."""

    def __init__(self, parts: list[VariableTracker], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.parts = parts
        self._concrete: RangeVariable | None = None

    def bounds(self) -> tuple[VariableTracker, VariableTracker, VariableTracker]:
        """(start, stop, step) as range(*parts) reads them."""
        from .constant import ConstantVariable

        if len(self.parts) == 1:
            return ConstantVariable(0), self.parts[0], ConstantVariable(1)
        if len(self.parts) == 2:
            return self.parts[0], self.parts[1], ConstantVariable(1)
        return self.parts[0], self.parts[1], self.parts[2]

    def concrete(self) -> RangeVariable:
        """The range with its bounds specialized (guarded), for every use but a captured loop."""
        if self._concrete is None:
            values = [concrete(p, _WHY).as_python_constant() for p in self.parts]
            self._concrete = RangeVariable(range(*values))
        return self._concrete

    def python_type(self) -> type:
        return range

    def describe(self) -> str:
        texts = [str(p.expr) if isinstance(p, SymbolicIntVariable) else repr(p.as_python_constant()) for p in self.parts]
        return f"range({', '.join(texts)})"

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.concrete().as_python_constant()

    def truth_value(self, tx: "Tx") -> bool:
        return self.concrete().truth_value(tx)

    def unpack(self, tx: "Tx") -> list[VariableTracker]:
        return self.concrete().unpack(tx)

    def iterator(self, tx: "Tx") -> VariableTracker:
        return self.concrete().iterator(tx)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        return self.concrete().var_getattr(tx, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.concrete().call_method(tx, name, args, kwargs)

    def reconstruct(self, codegen: "PyCodegen") -> None:
        self.concrete().reconstruct(codegen)
