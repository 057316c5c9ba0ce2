"""SymbolicIntVariable: a Python int computed from dynamic sizes (`n = x.shape[0]`, `len(x) // 2`),
held as a sympy expression over the trace's size symbols until a concrete value is really needed.

- Integer arithmetic (+ - * // % ** neg abs, min/max) gives another symbolic int; a comparison
  (`n > 100`, `n == m`) is decided at once and only the relation becomes a guard (`s0 >= 101`),
  not the size itself.
- Passed to a NumPy call (np.zeros(n), x.reshape(n, -1), x[:n // 2]) it is the sympy expression
  for the op registry and, in the graph, a node computing it from the input shapes.
- Wherever a plain Python value is required (range() driving an unrolled loop, a list index,
  str(), a dict key, any operation not listed above) `as_python_constant()` specializes: every
  symbol in it is fixed to its traced value with an `Eq(s, n)` guard noting the line.
- Returned, stored, or live at a graph break, it is rebuilt from the input arrays' shapes by the
  generated code, so it is the right int for every size that passes the guards.

UnspecializedFloatVariable is the same idea for a float argument whose value changes between
calls (a time step, a learning rate): a graph input, used by elementwise array work and by + - *
and negation with other floats, and specialized (guarded on its exact value) wherever its value
is needed while tracing.
"""
from __future__ import annotations

import builtins
import copy
import operator
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..fx_ir.lazy_sympy import forbidden, is_sympy, sympy

from ..fx_ir import int_expr
from ..fx_ir.int_expr import IntExpr
from ..fx_ir.ops import symbolic as sizes
from ..shapes import loop_symbols
from ..exc import Unsupported
from ..fx_ir.tensor_meta import TensorMeta
from .base import VariableTracker
from .constant import ConstantVariable

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..output_graph import OutputGraph
    from ..translator.core import InstructionTranslatorBase as Tx

# the value needed by code that is not size-aware: the generic reason noted in the guard
_AS_PYTHON_VALUE = "used as a Python value"


def _floordiv(a: Any, b: Any) -> Any:
    return sympy.floor(sympy.sympify(a) / b)


def _mod(a: Any, b: Any) -> Any:
    return sympy.Mod(a, b)


def _pow(a: Any, b: Any) -> Any:
    return sympy.sympify(a) ** b


# integer operators that keep a size an integer: fn -> (sympy builder, whether the right operand
# must be nonzero)
_ARITHMETIC: dict[Any, tuple[Callable[..., Any], bool]] = {
    operator.add: (operator.add, False), operator.sub: (operator.sub, False), operator.mul: (operator.mul, False),
    operator.floordiv: (_floordiv, True), operator.mod: (_mod, True), operator.pow: (_pow, False),
}
_UNARY: dict[Any, Callable[[Any], Any]] = {
    operator.neg: operator.neg, operator.pos: lambda a: a, operator.abs: builtins.abs, builtins.abs: builtins.abs,
}
_COMPARISONS: dict[Any, str] = {  # the sympy relation each builds (by name: sympy loads on first use)
    operator.lt: "Lt", operator.le: "Le", operator.gt: "Gt", operator.ge: "Ge", operator.eq: "Eq", operator.ne: "Ne",
}


class RuntimeValueVariable(VariableTracker):
    """A Python value the trace knows only as computed at run time (a symbolic int, a run-time
    float): wherever code needs the value itself (an attribute, a method, folding), `specialize`
    fixes it with a guard that says why."""

    def specialize(self, why: str) -> Any:
        raise NotImplementedError

    def is_python_constant(self) -> bool:
        # any code that needs the value may have it: as_python_constant() specializes
        return True

    def as_python_constant(self) -> Any:
        return self.specialize(_AS_PYTHON_VALUE)

    def var_getattr(self, tx: "Tx", name: str) -> VariableTracker:
        # n.bit_length(), x.real: what a plain number does, on its value
        return ConstantVariable(self.specialize(f"its attribute {name} is read")).var_getattr(tx, name)

    def call_method(self, tx: "Tx", name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return ConstantVariable(self.specialize(f"its method {name} is called")).call_method(tx, name, args, kwargs)

    def has_attribute(self, tx: "Tx", name: str) -> bool:
        return hasattr(self.python_type(), name)


_ORDERINGS = frozenset({operator.lt, operator.le, operator.gt, operator.ge})


class SymbolicIntVariable(RuntimeValueVariable):
    """A Python int whose value is the sympy expression `expr` of the trace's size symbols."""

    def __init__(self, output: "OutputGraph", expr: sympy.Expr | None, node: Any = None,
                 small: IntExpr | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output = output
        self._expr = expr
        self._small = small  # its small form (fx_ir/int_expr.py), where it has one
        self.node = node

    @property
    def expr(self) -> Any:
        """The sympy expression; made from the small form when first needed (sympy imported)."""
        if self._expr is None:
            self._expr = self.output.shape_env.small_to_sympy(self.small_form(), "used outside loop decisions")
        return self._expr

    @expr.setter
    def expr(self, value: Any) -> None:
        self._expr = value

    def small_form(self) -> IntExpr | None:
        """The value as an IntExpr of loop variables, or None (a sympy expression of sizes)."""
        return self._small

    @staticmethod
    def create(output: "OutputGraph", value: Any, node: Any = None) -> VariableTracker:
        """A symbolic int for `value`, or a plain constant when sympy reduced it to a number."""
        value = sizes.normalize(value) if is_sympy(value) else value
        if isinstance(value, int):
            return ConstantVariable(value)
        return SymbolicIntVariable(output, value, node)

    def _result(self, expr: Any) -> VariableTracker | None:
        """The symbolic int `expr`, or None (the value is specialized instead) when no exact
        integer code computes it at run time."""
        from ..shapes.runtime import supported

        return SymbolicIntVariable.create(self.output, expr) if supported(expr) else None

    # ---- what it is --------------------------------------------------------------------------------
    def python_type(self) -> type:
        return int

    def specialize(self, why: str) -> int:
        """The traced value, every symbol in it fixed by a guard that notes `why` and the line."""
        small = self.small_form()
        env = self.output.shape_env
        if small is not None and small.symbols() <= env.small_loops.keys():  # as ShapeEnv.specialize
            raise loop_symbols.iteration_dependent(env, f"the value of {small} ({why})")
        return int(env.specialize(self.expr, why))

    def describe(self) -> str:
        small = self.small_form()
        if small is not None and self._expr is None:
            return f"the size {small} ()"
        origins = ", ".join(f"{s} = {self.output.shape_env.symbols[s].origin}"
                            for s in sorted(self.expr.free_symbols, key=str) if s in self.output.shape_env.symbols)
        return f"the size {self.expr} ({origins})"

    def truth_value(self, tx: "Tx") -> bool:
        small = self.small_form()
        if small is not None:
            decided = loop_symbols.decide_small(self.output.shape_env, "Eq", small, 0)
            if decided is not None:
                return not decided
        return not self.output.shape_env.decide_relation(sympy.Eq(self.expr, 0))

    # ---- arithmetic and comparisons ----------------------------------------------------------------
    def apply_operator(self, tx: "Tx", fn: Any, args: list[VariableTracker], position: int) -> VariableTracker | None:
        """Integer operators stay symbolic; None (the generic rules: folding, which specializes,
        or the graph for an array operand) for everything else. A comparison whose answer changes
        with the variable of the innermost loop being captured (`if j - 1 >= 0` in the loop over j,
        `if i > j`) is a bool the body computes, which a branch of the body tests (branch_capture.py)."""
        if fn not in _ORDERINGS or not self.output.loops.bodies or forbidden():
            # orderings only: `if i % 50 == 0` (print every 50 steps) stays a question the small forms
            # answer without sympy, the bool node needing the sizes as sympy expressions
            return self._apply_operator(tx, fn, args, position)
        try:
            return self._apply_operator(tx, fn, args, position)
        except Unsupported as error:
            # the innermost loop's variable among them: a question of outer loops' variables only
            # makes the outermost of those run as before instead (loop_capture.DependsOnOuterLoop)
            symbols: frozenset = getattr(error, "loop_symbols", frozenset())
            capturing = self.output.loops.capturing
            if not all(s in capturing for s in symbols) or self.output.loops.bodies[-1][4] not in symbols:
                raise
        from .graph_int import GraphIntVariable, graph_argument, graph_int_meta

        node = self.output.create_node("call_function", fn, tuple(graph_argument(a) for a in args), {},
                                       graph_int_meta())
        result = GraphIntVariable(self.output, node, kind=bool, bound=1)
        operands = [_size_of(a) for a in args]
        if all(o is not None for o in operands):  # what each arm of a branch on it may assume
            result.relation = (fn, sympy.expand(sympy.sympify(operands[0]) - operands[1]))
        return result

    def _apply_operator(self, tx: "Tx", fn: Any, args: list[VariableTracker], position: int) -> VariableTracker | None:
        if fn in (operator.eq, operator.ne) and len(args) == 2 and _never_equal(*args):
            return ConstantVariable(fn is operator.ne)  # n == None, n != "a": no value needed
        small = self._small_operator(fn, args)
        if small is not _LEAVES:
            return small  # type: ignore[return-value]
        operands = [_size_of(a) for a in args]
        if any(o is None for o in operands):
            return None
        env = self.output.shape_env
        if fn in _UNARY and len(operands) == 1:
            return self._result(_UNARY[fn](operands[0]))
        if len(operands) != 2:
            return None
        a, b = operands
        if fn in _COMPARISONS:
            return ConstantVariable(env.decide_relation(getattr(sympy, _COMPARISONS[fn])(a, b)))
        if fn not in _ARITHMETIC:
            return None  # true division, bit operations: a concrete int (specialized) does them
        build, nonzero_divisor = _ARITHMETIC[fn]
        if nonzero_divisor and env.decide_relation(sympy.Eq(b, 0)):
            return None  # folds, and raises ZeroDivisionError where Python does
        if fn is operator.pow and not (isinstance(b, int) and b >= 0):
            return None  # a negative or symbolic exponent: a float, or too unusual to keep
        return self._result(build(a, b))

    def _small_operator(self, fn: Any, args: list[VariableTracker]) -> VariableTracker | None | object:
        """apply_operator on small forms, as the sympy path answers it; _LEAVES when an operand or
        the result is outside the fragment (the sympy path runs)."""
        operands = [_small_of(a) for a in args]
        if any(o is None for o in operands):
            return _LEAVES
        if fn in (operator.neg, operator.pos) and len(operands) == 1:
            return self._small_result(operands[0] if fn is operator.pos else int_expr.lift(operands[0]).neg())
        if len(operands) != 2:
            return _LEAVES
        a, b = operands
        if fn in _COMPARISONS:
            decided = loop_symbols.decide_small(self.output.shape_env, _COMPARISONS[fn], a, b)
            return _LEAVES if decided is None else ConstantVariable(decided)
        small = _SMALL_ARITHMETIC.get(fn)
        result = small(int_expr.lift(a), b) if small is not None else None
        return _LEAVES if result is None else self._small_result(result)

    def _small_result(self, small: IntExpr) -> VariableTracker:
        if small.is_constant():
            return ConstantVariable(small.const)
        return SymbolicIntVariable(self.output, None, small=small)

    # ---- as an argument of NumPy operations -------------------------------------------------------------
    def as_meta_argument(self) -> Any:
        return self.expr

    def as_graph_argument(self) -> Any:
        from ..shapes.runtime import size_node

        if self.node is None:
            try:
                self.node = size_node(self.output, self.expr)
            except NotImplementedError:  # an expression with no exact integer code: its value
                self.node = self.specialize("a size passed to a NumPy operation")
        return self.node

    # ---- leaving the graph --------------------------------------------------------------------------
    def reconstruct(self, codegen: "PyCodegen") -> None:
        from ..shapes.runtime import emit_size

        emit_size(codegen, self.output.shape_env, self.expr)


class LoopIndexVariable(SymbolicIntVariable):
    """The variable of a loop being captured: its symbol is made by `make_symbol` when the body
    first uses the value, so that a body that never reads it (`for _ in range(steps)`) makes no
    symbol and imports no sympy."""

    _expr: Any

    def __init__(self, output: "OutputGraph", make_symbol: Callable[[], Any], node: Any = None,
                 make_small: Callable[[], IntExpr] | None = None, **kwargs: Any) -> None:
        self._make_symbol = make_symbol
        self._make_small = make_small  # a loop over int bounds: the small form, made on first use
        super().__init__(output, None, node, **kwargs)

    def small_form(self) -> IntExpr | None:
        if self._small is None and self._make_small is not None and self._expr is None:
            self._small = self._make_small()
        return self._small

    @property
    def expr(self) -> Any:
        if self._expr is None:
            self._expr = self._make_symbol()
        return self._expr

    @expr.setter
    def expr(self, value: Any) -> None:
        self._expr = value

    def loop_done(self, make_symbol: Callable[[], Any]) -> None:
        """The loop's body is traced: a symbol made from now on comes from `make_symbol` (which must
        not hold the loop's trace, which this variable may outlive)."""
        self._make_symbol = make_symbol
        self._make_small = None


_LEAVES = object()  # an operation outside the small fragment


# the small fragment's integer operators (None: the result leaves it); // and % by positive constants
_SMALL_ARITHMETIC: dict[Any, Callable[[IntExpr, Any], IntExpr | None]] = {
    operator.add: lambda a, b: a.add(b), operator.sub: lambda a, b: a.add(b, -1), operator.mul: IntExpr.mul,
    operator.floordiv: IntExpr.floordiv, operator.mod: IntExpr.mod,
}


def _small_of(value: VariableTracker) -> Any:
    """The operand as an int or IntExpr, or None (not a plain int, or a sympy expression)."""
    if isinstance(value, SymbolicIntVariable):
        return value.small_form()
    if isinstance(value, ConstantVariable) and type(value.value) in (int, bool):
        return int(value.value)
    return None


def _size_of(value: VariableTracker) -> Any:
    """The operand as an int or sympy expression, or None if it is not a plain Python int."""
    if isinstance(value, SymbolicIntVariable):
        return value.expr
    if isinstance(value, ConstantVariable) and type(value.value) in (int, bool):
        return int(value.value)
    return None


def _not_an_int(value: VariableTracker) -> bool:
    """A constant that is no int (None, a str, a float, True): never equal to or the same object
    as an int whose value is not known, whatever that value is (floats excepted for ==)."""
    return (isinstance(value, ConstantVariable) and type(value.value) is not int
            and not isinstance(value.value, (float, complex)) and type(value.value).__eq__ is not int.__eq__)


# constants that compare unequal to every int; a NumPy integer (n != np.int64(3)) or a
# Fraction compares by value, so the value is needed for those
_NEVER_EQUAL_TO_AN_INT = (type(None), str, bytes)


def _never_equal(a: VariableTracker, b: VariableTracker) -> bool:
    """`a == b` is False for a symbolic int and a None, str or bytes constant (`n == None`)."""
    def plain(value: VariableTracker) -> bool:
        return isinstance(value, ConstantVariable) and type(value.value) in _NEVER_EQUAL_TO_AN_INT

    return (isinstance(a, SymbolicIntVariable) and plain(b)) or (isinstance(b, SymbolicIntVariable) and plain(a))


def not_the_same_object(a: VariableTracker, b: VariableTracker) -> bool:
    """`a is b` is False for a symbolic int and a constant of another type (`n is None`)."""
    return (isinstance(a, SymbolicIntVariable) and _not_an_int(b)) or (isinstance(b, SymbolicIntVariable) and _not_an_int(a))


def holds_symbolic(value: VariableTracker) -> bool:
    """A symbolic int in the value, or in the items of a tuple, list or slice made while tracing."""
    if isinstance(value, RuntimeValueVariable):
        return True
    parts = getattr(value, "items", None)
    if not isinstance(parts, list):
        parts = getattr(value, "parts", None)
    return isinstance(parts, (list, tuple)) and any(holds_symbolic(p) for p in parts if isinstance(p, VariableTracker))


def symbolic_extremum(tx: "Tx", fn: Any, items: list[VariableTracker]) -> VariableTracker | None:
    """min()/max() of ints some of which are symbolic: Min/Max expressions; None otherwise."""
    if len(items) < 2 or not any(isinstance(i, SymbolicIntVariable) for i in items):
        return None
    first = next(i for i in items if isinstance(i, SymbolicIntVariable))
    small = [_small_of(i) for i in items]
    if all(o is not None for o in small) and len(small) <= _EXTREMUM_WIDTH:
        result = int_expr.extremum("Min" if fn is min else "Max", small)
        if result is not None:
            return first._small_result(result)
    operands = [_size_of(i) for i in items]
    if any(o is None for o in operands):
        return None
    kind = sympy.Min if fn is min else sympy.Max
    if sum(len(o.args) if isinstance(o, kind) else 1 for o in operands) > _EXTREMUM_WIDTH:
        # a running max over many ints (`m = max(m, d)` in a loop) would build Max(s0, ..., s99),
        # and sympy compares every pair of its arguments on each step: the ints are specialized
        return None
    return first._result(kind(*operands))


_EXTREMUM_WIDTH = 4  # the most arguments a symbolic Min/Max gets (min(n, 4), max(a, b, 1))


def concrete(value: VariableTracker, why: str) -> VariableTracker:
    """`value`, specialized with the reason `why` if it is a symbolic int or run-time float."""
    if isinstance(value, RuntimeValueVariable):
        return ConstantVariable(value.specialize(why))
    return value


def concrete_deep(value: VariableTracker, why: str) -> VariableTracker:
    """`value` with every symbolic int in it (inside tuples, lists, slices made while tracing)
    specialized with the reason `why`."""
    from .sequences import BaseSequenceVariable, SliceVariable

    if isinstance(value, RuntimeValueVariable):
        return ConstantVariable(value.specialize(why))
    if not holds_symbolic(value) or value.source is not None:
        return value
    if isinstance(value, SliceVariable):
        return SliceVariable(*(concrete_deep(p, why) for p in value.parts))
    if isinstance(value, BaseSequenceVariable):
        return type(value)([concrete_deep(i, why) for i in value.items])
    return value


# float operators whose result is a float for every operand value, raising nothing (overflow
# gives inf): the graph computes them; / // % ** may raise, so they take the value (specialize)
_FLOAT_ARITHMETIC = {operator.add, operator.sub, operator.mul, operator.neg, operator.pos, operator.abs, builtins.abs}


class UnspecializedFloatVariable(RuntimeValueVariable):
    """A float known only at run time, a Python float or a NumPy floating scalar (what a reduction
    before a graph break hands to the resume function): an argument (a graph input) or + - * of
    such floats. `value` is the traced call's, an example for the op registry: under NEP 50 a
    float's value never changes the dtype of array work (a NumPy scalar's type decides it, a Python
    float is weak), and elementwise work never its shape."""

    def __init__(self, output: "OutputGraph", value: Any, node: Any = None, either: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output = output
        self.value = value
        self.node = node
        # a Python float or an np.float64 at run time, whichever its arguments are (`value` has
        # the traced call's type): the trace has not depended on which, and pins it when it does
        self.either = either

    @property
    def meta(self) -> Any:
        """What the graph records: a Python float as itself, a NumPy scalar as the scalar meta that
        NumPy scalars computed in graphs have (the traced call's type)."""
        if type(self.value) is float:
            return self.value
        return TensorMeta((), self.value.dtype, scalar=True)

    def python_type(self) -> type:
        self.pin_type()
        return type(self.value)

    def pin_type(self) -> None:
        """The trace depends on the value's type (isinstance, NumPy's promotion with an array, a
        value read): every float argument it comes from is guarded on its traced type."""
        from ..guards import GuardKind

        if self.either:
            for source, value in self._arguments():
                self.output.guard(source, GuardKind.TYPE_IS, type(value))

    def specialize(self, why: str) -> float:
        """The traced value, guarded exactly on every argument it comes from; those arguments are
        compiled per value from now on (a trace that needs the value would need it again)."""
        from ..guards import FloatIs, GuardKind, needs_exact_float_guard

        self.pin_type()
        for source, value in self._arguments():
            self.output.guard(source, *((GuardKind.CALL, FloatIs(value)) if needs_exact_float_guard(value)
                                        else (GuardKind.EQUALS, value)))
            self.output.shape_policy.pin_float(source.name())
        return self.value

    def _arguments(self) -> list[tuple[Any, float]]:
        """(source, value) of the float arguments this value is computed from."""
        if self.source is not None:
            return [(self.source, self.value)]
        found: list[tuple[Any, float]] = []
        for node in self.node.all_input_nodes if self.node is not None else ():
            if "runtime_float" not in node.meta:
                continue
            source = next((s for s, i in self.output.inputs.items() if i.variable.node is node), None)
            if source is not None:
                found.append((source, node.meta["runtime_float"]))
            else:  # computed from other run-time floats
                found.extend(UnspecializedFloatVariable(self.output, node.meta["runtime_float"], node)._arguments())
        return found

    def describe(self) -> str:
        origin = self.source.name() if self.source is not None else "computed from float arguments"
        return f"a float known at run time ({origin}; {self.value!r} in this call)"

    def truth_value(self, tx: "Tx") -> bool:
        return bool(self.specialize("a branch tests it"))

    def apply_operator(self, tx: "Tx", fn: Any, args: list[VariableTracker], position: int) -> VariableTracker | None:
        """+ - * and negation with floats and ints: another run-time float, computed by the graph.
        None for the rest: with an array operand the graph records the operation (this value a
        graph input), otherwise the value is needed (folding specializes it)."""
        if fn not in _FLOAT_ARITHMETIC or not all(_is_float_operand(a) for a in args):
            return None
        examples = [a.value if isinstance(a, UnspecializedFloatVariable) else a.as_python_constant() for a in args]
        with np.errstate(all="ignore"):  # an example: what warns at run time warns there
            result = fn(*examples)
        if not (type(result) is float or isinstance(result, np.floating)):
            return None
        either = _result_either(args)
        node = self.output.create_node("call_function", fn, tuple(
            a.as_graph_argument() if isinstance(a, UnspecializedFloatVariable) else e
            for a, e in zip(args, examples)), {}, None)
        variable = UnspecializedFloatVariable(self.output, result, node, either=either)
        node.meta.update(val=variable.meta, runtime_float=result)
        return variable

    def as_meta_argument(self) -> Any:
        if not self.loose:
            self.pin_type()  # an array op: a Python float is weak under NEP 50, an np.float64 is not
        return self.meta

    loose = False  # an operand of elementwise work that gives the same result with either type

    def as_graph_argument(self) -> Any:
        if self.node is None:
            assert self.source is not None
            self.node = self.output.add_float_input(self.source, self, self.value)
        return self.node

    def reconstruct(self, codegen: "PyCodegen") -> None:
        if self.source is not None:  # the argument itself
            codegen.load_source(self.source)
        else:
            codegen.load_graph_output(self)  # type: ignore[arg-type]


# dtypes that promote with a Python float (weak under NEP 50) as with an np.float64
_ALIKE_FLOATS = frozenset(np.dtype(t) for t in (np.float64, np.complex128, np.longdouble, np.clongdouble))


def _promotes_alike(value: VariableTracker) -> bool:
    from .arrays import ArrayVariable

    if isinstance(value, UnspecializedFloatVariable):
        return value.either or type(value.value) in (float, np.float64)
    if isinstance(value, ArrayVariable):
        dtype = value.meta.dtype
        return dtype.kind in "biu" or dtype in _ALIKE_FLOATS
    if isinstance(value, ConstantVariable):
        constant = value.value
        if type(constant) in (bool, int, float):
            return True
        return isinstance(constant, np.generic) and (constant.dtype.kind in "biu" or constant.dtype in _ALIKE_FLOATS)
    return False


def promotes_alike(args: list[VariableTracker]) -> bool:
    """Whether elementwise work over these operands gives the same dtype and the same values
    whichever type (float or np.float64) its either-type floats have: every other operand is a
    Python number or has a bool, integer, float64 or complex128 dtype (a float32 array or an
    np.float32 would keep its precision with a Python float, not with an np.float64)."""
    return any(isinstance(a, UnspecializedFloatVariable) and a.either for a in args) and \
        all(_promotes_alike(a) for a in args)


def loose_double(value: VariableTracker) -> VariableTracker:
    """`value`, an operand of elementwise work that promotes alike: an either-type float reads
    its meta without pinning its type."""
    if isinstance(value, UnspecializedFloatVariable) and value.either and not value.loose:
        value = copy.copy(value)
        value.loose = True
    return value


def _result_either(args: list[VariableTracker]) -> bool:
    """Whether + - * of these operands may be a float or an np.float64 at run time (the graph
    computes it with Python's operators, so it gets the type plain Python gives): operands of
    either type with Python floats and ints. An np.float64 among them makes it one for sure; any
    other NumPy type would promote differently with a float than with an np.float64, so the
    operands' types are pinned."""
    either = [a for a in args if isinstance(a, UnspecializedFloatVariable) and a.either]
    if not either:
        return False
    kinds = {type(a.value) if isinstance(a, UnspecializedFloatVariable) else type(a.as_python_constant())
             for a in args if not (isinstance(a, UnspecializedFloatVariable) and a.either)}
    if np.float64 in kinds:
        return False
    if kinds <= {float, int, bool}:
        return True
    for operand in either:
        operand.pin_type()
    return False


def _is_float_operand(value: VariableTracker) -> bool:
    if isinstance(value, UnspecializedFloatVariable):
        return True
    return isinstance(value, ConstantVariable) and (type(value.value) in (float, int, bool)
                                                    or isinstance(value.value, np.floating))


def concrete_floats(value: VariableTracker, why: str) -> VariableTracker:
    """`value` with its run-time floats (itself, or items of containers made while tracing) specialized."""
    from .sequences import BaseSequenceVariable

    if isinstance(value, UnspecializedFloatVariable):
        return ConstantVariable(value.specialize(why))
    if isinstance(value, BaseSequenceVariable) and value.source is None and holds_symbolic(value):
        return type(value)([concrete_floats(i, why) for i in value.items])
    return value
