"""Graph -> readable Python source: `def forward(self, x, y):` with one statement per node.

NumPy callables print as `np.add(x, y)`, operator functions as Python operators; other objects become named globals.
"""
from __future__ import annotations

import builtins
import keyword
import math
import operator
import re
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .naming import RESERVED_NAMES, Namespace, target_base_name
from .node import Node, Opcode
from .printing import source_of
from .targets import module_path, numpy_path

if TYPE_CHECKING:
    from .graph import Graph

BINARY_OPERATORS: dict[Any, str] = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.lt: "<", operator.le: "<=", operator.eq: "==", operator.ne: "!=",
    operator.gt: ">", operator.ge: ">=", operator.is_: "is", operator.is_not: "is not",
}
UNARY_OPERATORS: dict[Any, str] = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not "}
INPLACE_OPERATORS: dict[Any, str] = {
    operator.iadd: "+=", operator.isub: "-=", operator.imul: "*=", operator.itruediv: "/=",
    operator.ifloordiv: "//=", operator.imod: "%=", operator.ipow: "**=", operator.imatmul: "@=",
    operator.ilshift: "<<=", operator.irshift: ">>=", operator.iand: "&=", operator.ior: "|=",
    operator.ixor: "^=",
}

# Texts that expr() produces and that need no parentheses as a `**` base or unary operand: names,
# unsigned numbers, strings, calls like np.float32(0.5), bracketed literals. Only a leading minus
# sign (and, for method receivers, a bare number) needs parentheses.
_ATOM = re.compile(r"^(?:[A-Za-z_][\w.]*|\d[\w.]*(?:[eE][+-]\d+)?|'[^']*'|\"[^\"]*\"|\.\.\.)$"
                   r"|^[A-Za-z_][\w.]*\(.*\)$|^[\[\(\{].*[\]\)\}]$")


@dataclass
class PythonCode:
    """Generated source of `forward`, the globals it must run with, and which line runs which node."""

    src: str
    globals: dict[str, Any]
    lineno_map: dict[int, str] = field(default_factory=dict)


# A NaN's sign is data (np.signbit, np.copysign see it): -np.nan must not print as float('nan').
_NAN_SOURCES = {struct.pack("<d", math.nan): "float('nan')", struct.pack("<d", -math.nan): "-float('nan')"}


def _float_source(value: float) -> str | None:
    """Text that evaluates to exactly `value`; None for a NaN of another payload (kept as a global)."""
    if math.isnan(value):
        return _NAN_SOURCES.get(struct.pack("<d", value))
    if math.isinf(value):
        return "float('inf')" if value > 0 else "float('-inf')"
    return repr(value)


def _complex_source(value: complex) -> str | None:
    """repr() where it evaluates back to the value: not when a part is a zero, whose sign it loses
    (repr(0.0-1e300j) is '-1e+300j', which is -(1e300j): a real part of -0.0; fuzz seed 1051711)."""
    if math.isfinite(value.real) and math.isfinite(value.imag) and value.real != 0 and value.imag != 0:
        return repr(value)
    real, imag = _float_source(value.real), _float_source(value.imag)
    return None if real is None or imag is None else f"complex({real}, {imag})"


# Exact types only: np.float64 subclasses float, and bool subclasses int, but they print differently.
_INLINE_CONSTANTS: dict[type, Callable[[Any], str | None]] = {
    bool: repr, int: repr, str: repr, bytes: repr, type(None): repr, range: repr,
    float: _float_source, complex: _complex_source, type(...): lambda _: "...",
}


class CodeGen:
    """Writes one graph as Python source. One emit method per opcode; constants through a type table."""

    def __init__(self, graph: Graph, root_module: str = "self", *, free_dead_values: bool = True) -> None:
        self.graph = graph
        self.root = root_module
        self.free_dead_values = free_dead_values
        node_names = {n.name for n in graph.nodes}
        self._globals_ns = Namespace(RESERVED_NAMES | node_names | {root_module, "forward"})
        self.globals: dict[str, Any] = {"np": np}
        self._global_names: dict[int, str] = {}  # id(obj) -> name; the object is kept alive by self.globals
        self._params: list[str] = []
        self._body: list[str] = []
        self._lineno_map: dict[int, str] = {}
        self._last_use: dict[Node, Node] = {}
        self._bound: set[Node] = set()  # nodes whose name the code has assigned so far

    # -- driver -------------------------------------------------------------------------------

    def generate(self) -> PythonCode:
        for node in self.graph.nodes:
            for inp in node.all_input_nodes:
                self._last_use[inp] = node
        last_source = None
        for node in self.graph.nodes:
            source = source_of(node)
            if source is not None and source != last_source and node.op != Opcode.PLACEHOLDER:
                self._body.extend(f"# {line}" for line in source.splitlines())
                last_source = source
            first_line = len(self._body)
            getattr(self, f"emit_{node.op.value}")(node)
            if self.free_dead_values and len(self._body) > first_line:
                self._append_frees(node)
            for i in range(first_line, len(self._body)):
                self._lineno_map[i + 2] = node.name  # +1 for 1-based lines, +1 for the def line
        header = f"def forward({', '.join([self.root, *self._params])}):"
        body = self._body or ["pass"]
        src = "\n".join([header, *("    " + line for line in body)]) + "\n"
        return PythonCode(src, self.globals, self._lineno_map)

    def _append_frees(self, node: Node) -> None:
        if node.op == Opcode.OUTPUT:
            return
        dead = [inp.name for inp in node.all_input_nodes if self._last_use.get(inp) is node and self._freeable(inp)]
        if not node.users and self._freeable(node):
            dead.append(node.name)
        if dead:
            self._body[-1] += f";  del {', '.join(dead)}"

    def _freeable(self, node: Node) -> bool:
        # Inputs and attributes are kept alive by the caller and the module anyway.
        return node in self._bound and node.op not in (Opcode.PLACEHOLDER, Opcode.GET_ATTR)

    # -- one emitter per opcode ---------------------------------------------------------------

    def emit_placeholder(self, node: Node) -> None:
        self._params.append(f"{node.name}={self.expr(node.args[0])}" if node.args else node.name)

    def emit_get_attr(self, node: Node) -> None:
        self._assign(node, self._attribute_path(node.target))

    def emit_call_function(self, node: Node) -> None:
        target, args, kwargs = node.target, node.args, node.kwargs
        if not kwargs and _lookup(BINARY_OPERATORS, target) and len(args) == 2:
            left = self._operand(args[0]) if target is operator.pow else self.expr(args[0])
            self._assign(node, f"{left} {BINARY_OPERATORS[target]} {self.expr(args[1])}")
        elif not kwargs and _lookup(UNARY_OPERATORS, target) and len(args) == 1:
            self._assign(node, f"{UNARY_OPERATORS[target]}{self._operand(args[0])}")
        elif not kwargs and target is operator.getitem and len(args) == 2:
            self._assign(node, f"{self._operand(args[0])}[{self._subscript(args[1])}]")
        elif not kwargs and target is operator.setitem and len(args) == 3:
            self._body.append(f"{self._operand(args[0])}[{self._subscript(args[1])}] = {self.expr(args[2])}")
            self._bind_none_if_used(node)
        elif not kwargs and target is operator.delitem and len(args) == 2:
            self._body.append(f"del {self._operand(args[0])}[{self._subscript(args[1])}]")
            self._bind_none_if_used(node)
        elif not kwargs and _lookup(INPLACE_OPERATORS, target) and len(args) == 2:
            self._emit_inplace(node)
        elif not kwargs and target is operator.contains and len(args) == 2:
            self._assign(node, f"{self.expr(args[1])} in {self.expr(args[0])}")
        elif (not kwargs and target is builtins.getattr and len(args) == 2 and isinstance(args[1], str)
              and args[1].isidentifier() and not keyword.iskeyword(args[1])):
            self._assign(node, f"{self._operand(args[0], receiver=True)}.{args[1]}")
        else:
            self._assign(node, f"{self.callable_expr(target)}({self._call_args(args, kwargs)})")

    def emit_call_method(self, node: Node) -> None:
        receiver, *rest = node.args
        call = f"{node.target}({self._call_args(tuple(rest), node.kwargs)})"
        self._assign(node, f"{self._operand(receiver, receiver=True)}.{call}")

    def emit_call_module(self, node: Node) -> None:
        self._assign(node, f"{self._attribute_path(node.target)}({self._call_args(node.args, node.kwargs)})")

    def emit_output(self, node: Node) -> None:
        self._body.append(f"return {self.expr(node.args[0])}")

    # -- statement helpers --------------------------------------------------------------------

    def _assign(self, node: Node, expression: str) -> None:
        self._body.append(f"{node.name} = {expression}")
        self._bound.add(node)

    def _bind_none_if_used(self, node: Node) -> None:
        if node.users:  # the statement's value is None, as operator.setitem returns
            self._assign(node, "None")

    def _emit_inplace(self, node: Node) -> None:
        receiver, value = node.args
        symbol = INPLACE_OPERATORS[node.target]
        if isinstance(receiver, Node) and receiver.op != Opcode.GET_ATTR and self._last_use.get(receiver) is node:
            # `x += y` rebinds x; harmless here since x is not read again.
            self._body.append(f"{receiver.name} {symbol} {self.expr(value)}")
            if node.users:
                self._assign(node, receiver.name)
        else:
            # Alias first: arrays are still updated in place, immutable values leave the receiver alone.
            self._assign(node, self.expr(receiver))
            self._body.append(f"{node.name} {symbol} {self.expr(value)}")

    def _attribute_path(self, qualname: str) -> str:
        text = self.root
        for part in qualname.split("."):
            text = f"{text}.{part}" if part.isidentifier() else f"getattr({text}, {part!r})"
        return text

    def _call_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        parts = [self.expr(a) for a in args]
        odd: dict[str, Any] = {}
        for key, value in kwargs.items():
            if key.isidentifier() and not keyword.iskeyword(key):
                parts.append(f"{key}={self.expr(value)}")
            else:
                odd[key] = value
        if odd:
            parts.append("**" + self.expr(odd))
        return ", ".join(parts)

    # -- expressions --------------------------------------------------------------------------

    def expr(self, value: Any) -> str:
        """Source text evaluating to `value`: a node's name, an inline constant, or a global's name."""
        if isinstance(value, Node):
            return value.name
        render = _INLINE_CONSTANTS.get(type(value))
        text = render(value) if render is not None else None
        if text is not None:
            return text
        if render is not None:  # a value its type's literal cannot spell exactly
            return self._global(value, "constant")
        if type(value) is tuple:
            items = [self.expr(v) for v in value]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if type(value) is list:
            return f"[{', '.join(self.expr(v) for v in value)}]"
        if type(value) is dict:
            return "{" + ", ".join(f"{self.expr(k)}: {self.expr(v)}" for k, v in value.items()) + "}"
        if type(value) is slice:
            return f"slice({self.expr(value.start)}, {self.expr(value.stop)}, {self.expr(value.step)})"
        if isinstance(value, np.generic):
            return self._numpy_scalar(value)
        if isinstance(value, np.dtype):
            return self._dtype(value)
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return f"{self.callable_expr(type(value))}({', '.join(self.expr(v) for v in value)})"
        if callable(value):
            return self.callable_expr(value)
        return self._global(value, "const")

    def _operand(self, value: Any, receiver: bool = False) -> str:
        text = self.expr(value)
        needs_parens = not _ATOM.match(text) or (receiver and text[0].isdigit())
        return f"({text})" if needs_parens else text

    def _subscript(self, index: Any) -> str:
        if type(index) is tuple and index:
            parts = [self._index_item(i) for i in index]
            return ", ".join(parts) + ("," if len(parts) == 1 else "")
        return self._index_item(index)

    def _index_item(self, item: Any) -> str:
        if type(item) is not slice:
            return self.expr(item)
        start = "" if item.start is None else self.expr(item.start)
        stop = "" if item.stop is None else self.expr(item.stop)
        text = f"{start}:{stop}"
        return text if item.step is None else f"{text}:{self.expr(item.step)}"

    def _numpy_scalar(self, value: np.generic) -> str:
        scalar_type = numpy_path(type(value))
        if scalar_type is None:
            return self._global(value, "const")
        if isinstance(value, np.bool_):
            return "np.True_" if value else "np.False_"
        if isinstance(value, np.integer):
            return f"{scalar_type}({int(value)})"
        if isinstance(value, (np.float16, np.float32, np.float64)):
            text = self._exact_float(value)
            if text is not None:
                return f"{scalar_type}({text})"
        elif isinstance(value, (np.complex64, np.complex128)):
            re_, im = self._exact_float(value.real), self._exact_float(value.imag)
            if re_ is not None and im is not None:
                return f"{scalar_type}(complex({re_}, {im}))"
        # longdouble, datetime64, void, NaNs with a payload...: no exact literal
        return self._global(value, "const")

    @staticmethod
    def _exact_float(value: np.floating[Any]) -> str | None:
        # NumPy's str() is the shortest text that round-trips in the value's own precision; use it
        # if it also survives the trip through a Python float, else the exact double (converts back exactly).
        if isinstance(value, np.float64) or not np.isfinite(value):
            return _float_source(float(value))
        short = str(value)
        try:
            if type(value)(float(short)) == value:
                return short
        except ValueError:
            pass
        return _float_source(float(value))

    def _dtype(self, dtype: np.dtype[Any]) -> str:
        if dtype.fields is None and dtype.subdtype is None and _named_by_str(dtype):
            text = dtype.name if dtype.isnative and _names_itself(dtype) else dtype.str
            return f"np.dtype({text!r})"
        return self._global(dtype, "dtype")

    def callable_expr(self, target: Any) -> str:
        """How generated code names a callable or type: np path, builtin, module.attr, or a global."""
        path = numpy_path(target)
        if path is not None:
            return path
        name = getattr(target, "__name__", None)
        if isinstance(name, str) and getattr(builtins, name, None) is target:
            return name
        found = module_path(target)
        # Only the standard library is named through its module (`math.sqrt`): user modules can
        # rebind their attributes later, and the code must call the very object the graph holds.
        if found is not None and found[0].split(".")[0] in sys.stdlib_module_names:
            module, attr = found
            alias = self._global(sys.modules[module], module.rsplit(".", 1)[-1])
            return f"{alias}.{attr}"
        return self._global(target, target_base_name(target))

    def _global(self, obj: Any, base: str) -> str:
        known = self._global_names.get(id(obj))
        if known is not None:
            return known
        name = self._globals_ns.create_name(base)
        self._global_names[id(obj)] = name
        self.globals[name] = obj
        return name


def _lookup(table: dict[Any, str], target: Any) -> bool:
    try:
        return target in table
    except TypeError:
        return False


def _named_by_str(dtype: np.dtype[Any]) -> bool:
    """np.dtype(dtype.str) rebuilds it (not so for StringDType and other new-style dtypes, nor for
    a dtype with metadata)."""
    try:
        rebuilt = np.dtype(dtype.str)
        return rebuilt == dtype and rebuilt.type is dtype.type and dtype.metadata is None
    except TypeError:
        return False


def _names_itself(dtype: np.dtype[Any]) -> bool:
    """np.dtype(dtype.name) is this dtype: not for every one ('S4' is named 'bytes32', which
    np.dtype does not read)."""
    try:
        return bool(np.dtype(dtype.name) == dtype)
    except TypeError:
        return False
