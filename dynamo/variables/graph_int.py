"""GraphIntVariable: a Python int (or bool) that only the graph knows, computed at run time from
data: int() of a NumPy scalar inside a loop body, an int carried through a loop node, a comparison of
such ints (a while loop's `it < maxit`).

It stays an exact Python int: + - * with other ints are graph nodes calling the same operators,
comparisons give a graph bool. Anything that needs its value while tracing (an index, a size, a
branch, a NumPy argument) is a data-dependent value: unsupported, so a loop body using it that way
is not captured, and code after a loop breaks the graph there.

Each one also carries a bound, so that a loop never carries an int that might leave int64 (a
backend may compute loop ints in 64 bits): `bound` limits |value - carried| where `carried` is the
body placeholder of the loop-carried int it was stepped from (None: |value| itself); None when no
bound is known (a product of a carried int, two carried ints added).
"""
from __future__ import annotations

import itertools
import operator
from typing import TYPE_CHECKING, Any

from ..exc import Category, unsupported
from ..fx_ir.lazy_sympy import forbidden, sympy
from ..fx_ir.small_size import data_symbol
from .base import VariableTracker
from .constant import ConstantVariable
from .symbolic import RuntimeValueVariable, SymbolicIntVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..output_graph import OutputGraph
    from ..translator.core import InstructionTranslatorBase as Tx

_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.iadd, operator.isub, operator.imul})
_IN_PLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul}
_COMPARISONS = frozenset({operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne})
_NAMES = itertools.count()


def graph_int_meta() -> Any:
    """The `val` of a graph int node: a fresh integer symbol no shape environment knows (its value
    is data, never a size the trace can decide about)."""
    name = f"data_int{next(_NAMES)}"
    if forbidden():  # a trace without sympy: the same symbol in the small form
        return data_symbol(name)
    return sympy.Symbol(name, integer=True)


class GraphIntVariable(RuntimeValueVariable):
    """A Python int (`kind` int) or bool (`kind` bool) whose value is the graph node `node`."""

    def __init__(self, output: "OutputGraph", node: Any, kind: type = int, bound: int | None = None,
                 carried: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output = output
        self.node = node
        self.kind = kind
        self.bound = bound
        self.carried = carried
        # a bool comparing loop variables: (operator, left - right as sympy), what a branch's arms assume
        self.relation: tuple[Any, Any] | None = None

    def python_type(self) -> type:
        return self.kind

    def describe(self) -> str:
        return f"a Python {self.kind.__name__} computed at run time from data"

    def specialize(self, why: str) -> Any:
        unsupported(Category.DATA_DEPENDENT_VALUE, f"{self.describe()} is {why}: its value is known only at run time",
                    "keep the count in a NumPy array, or accept a graph break here")

    def is_python_constant(self) -> bool:
        return False  # unlike a symbolic int, its value cannot be fixed by a guard

    def truth_value(self, tx: "Tx") -> bool:
        unsupported(Category.DATA_DEPENDENT_BRANCH, f"branching on {self.describe()} depends on its data",
                    "accept a graph break here")

    def apply_operator(self, tx: "Tx", fn: Any, args: list[VariableTracker], position: int) -> VariableTracker | None:
        """+ - * and comparisons with ints: graph nodes on Python ints. None (the generic rules, which
        need the value) for everything else."""
        if len(args) != 2 or not all(_is_int(a) for a in args):
            return None
        if fn in _ARITHMETIC:
            fn = _IN_PLACE.get(fn, fn)
            bound, carried = _arithmetic_bound(fn, args[0], args[1])
            node = self.output.create_node("call_function", fn, tuple(graph_argument(a) for a in args), {},
                                           graph_int_meta())
            return GraphIntVariable(self.output, node, bound=bound, carried=carried)
        if fn in _COMPARISONS:
            node = self.output.create_node("call_function", fn, tuple(graph_argument(a) for a in args), {},
                                           graph_int_meta())
            return GraphIntVariable(self.output, node, kind=bool, bound=1)
        return None

    def as_graph_argument(self) -> Any:
        return self.node

    def as_meta_argument(self) -> Any:
        return self.specialize("an argument of a NumPy operation")

    def reconstruct(self, codegen: "PyCodegen") -> None:
        codegen.load_graph_output(self)  # type: ignore[arg-type]


# a size (a symbolic int) is below this: arrays of more elements do not fit any memory
SIZE_BOUND = 2 ** 62


def parts_of(value: VariableTracker) -> tuple[int | None, Any]:
    """(bound, carried) of an int operand: see GraphIntVariable."""
    if isinstance(value, GraphIntVariable):
        return value.bound, value.carried
    if isinstance(value, ConstantVariable):
        return abs(int(value.value)), None
    return SIZE_BOUND, None


def _arithmetic_bound(fn: Any, a: VariableTracker, b: VariableTracker) -> tuple[int | None, Any]:
    (bound_a, carried_a), (bound_b, carried_b) = parts_of(a), parts_of(b)
    if bound_a is None or bound_b is None:
        return None, None
    if fn is operator.mul:
        return (None, None) if carried_a is not None or carried_b is not None else (bound_a * bound_b, None)
    if carried_a is not None and carried_b is not None:
        return None, None  # k + k: doubles every iteration
    if fn is operator.sub and carried_b is not None:
        return None, None  # c - k: the carried int changes sign each iteration (bounded, but not as a step)
    return bound_a + bound_b, carried_a if carried_a is not None else carried_b


def _is_int(value: VariableTracker) -> bool:
    if isinstance(value, (GraphIntVariable, SymbolicIntVariable)):
        return True
    return isinstance(value, ConstantVariable) and type(value.value) in (int, bool)


def graph_argument(value: VariableTracker) -> Any:
    """An int operand as a graph node's argument: a node, or the int itself."""
    if isinstance(value, ConstantVariable):
        return value.value
    return value.as_graph_argument()


def graph_int_of(tx: "Tx", value: VariableTracker) -> GraphIntVariable | None:
    """int() of a NumPy bool or integer scalar (or 0-d array) of the graph, computed by the graph
    (it cannot raise); None for anything else (a float may be NaN or inf: its value is needed)."""
    from .arrays import ArrayVariable

    if type(value) is not ArrayVariable or not (value.meta.scalar or value.meta.ndim == 0):
        return None
    if value.node.meta.get("device") or value.node.meta.get("array_type") or value.meta.dtype.kind not in "biu":
        return None
    node = tx.output.create_node("call_function", int, (value.node,), {}, graph_int_meta())
    dtype = value.meta.dtype
    bound = 1 if dtype.kind == "b" else 2 ** (8 * dtype.itemsize - (1 if dtype.kind == "i" else 0))
    return GraphIntVariable(tx.output, node, bound=bound)
