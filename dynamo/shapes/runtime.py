"""Symbolic sizes at run time: graph nodes that compute one from the input arrays' shapes
(`x.shape[0] // 2` as an argument of np.zeros), and bytecode that rebuilds one as a Python int.

Both are written from the sympy expression, not from the user's arithmetic: `s0` is
`x.shape[0]` of the array the symbol came from (or a dynamic int argument, a graph input of its
own), and the rest is exact integer arithmetic.
"""
from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING, Any

from ..fx_ir.lazy_sympy import sympy
from bytecode import BinaryOp, Instr

from ..fx_ir.size_source import python_source
from ..fx_ir.small_size import SizeExpr, sum_args

if TYPE_CHECKING:
    from ..codegen import PyCodegen
    from ..output_graph import OutputGraph
    from .env import ShapeEnv


def size_node(output: "OutputGraph", expr: Any) -> Any:
    """A graph node whose value is the size `expr` (an int stays a constant argument)."""
    if isinstance(expr, int):
        return expr
    if not isinstance(expr, SizeExpr):
        expr = sympy.sympify(expr)
    if expr.is_Integer:
        return int(expr)
    cache = output.shape_env.size_nodes
    node = cache.get(expr)
    if node is None:
        node = cache[expr] = _build(output, expr)
    return node


def _build(output: "OutputGraph", expr: sympy.Expr) -> Any:
    env = output.shape_env
    make = lambda target, *args: output.create_node("call_function", target, args, {}, expr)  # noqa: E731
    symbol = expr.is_Symbol if isinstance(expr, SizeExpr) else isinstance(expr, sympy.Symbol)
    if symbol and env.symbols[expr].dim is None:  # a dynamic int: a graph input
        return output.add_int_input(env.symbols[expr].source, expr)
    if symbol:
        info = env.symbols[expr]
        placeholder = output.inputs[info.source].variable.node
        shape = output.create_node("call_function", builtins.getattr, (placeholder, "shape"), {},
                                   env.arrays[info.source])
        return make(operator.getitem, shape, info.dim)
    go = lambda e: size_node(output, e)  # noqa: E731
    if isinstance(expr, SizeExpr):  # the nodes of sympy's form: Add(const, Mul(k, s), s, ...)
        args = [a[0] * a[1] if isinstance(a, tuple) else a for a in sum_args(expr)]
        if len(args) == 1:  # k * s
            k, symbol = sum_args(expr)[0]
            return make(operator.mul, k, go(symbol))
        node, partial = go(args[0]), args[0]
        for arg in args[1:]:
            partial = partial + arg
            node = output.create_node("call_function", operator.add, (node, go(arg)), {}, partial)
        return node
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        fn = operator.add if isinstance(expr, sympy.Add) else operator.mul
        first, *rest = expr.args
        node, partial = go(first), first
        for arg in rest:
            partial = fn(partial, arg)
            node = output.create_node("call_function", fn, (node, go(arg)), {}, partial)
        return node
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        return make(operator.pow, go(expr.base), int(expr.exp))
    if isinstance(expr, sympy.Mod):
        return make(operator.mod, go(expr.args[0]), go(expr.args[1]))
    if isinstance(expr, sympy.floor):
        num, den = sympy.fraction(sympy.together(expr.args[0]))
        return make(operator.floordiv, go(num), go(den))
    if isinstance(expr, sympy.ceiling):  # -((-num) // den), as python_source writes it
        num, den = sympy.fraction(sympy.together(expr.args[0]))
        inner = output.create_node("call_function", operator.floordiv, (go(-num), go(den)), {},
                                   sympy.floor(-num / den))
        return make(operator.neg, inner)
    if isinstance(expr, (sympy.Min, sympy.Max, sympy.Abs)):
        builtin = {sympy.Min: builtins.min, sympy.Max: builtins.max, sympy.Abs: builtins.abs}[type(expr)]
        return make(builtin, *[go(a) for a in expr.args])
    raise NotImplementedError(f"no graph node for the size {expr}")


def emit_size(codegen: "PyCodegen", env: "ShapeEnv", expr: Any) -> None:
    """Bytecode leaving the int `expr` on the stack, computed with Python's own integer operators
    from its symbols (`x.shape[d]`, or a dynamic int argument), each read once at entry."""
    go = lambda e: emit_size(codegen, env, e)  # noqa: E731
    if isinstance(expr, int):
        codegen.load_const(expr)
        return
    if isinstance(expr, SizeExpr):
        if expr.is_Symbol:
            codegen.append(Instr("LOAD_FAST", _symbol_local(codegen, env, expr)))
            return
        for n, arg in enumerate(sum_args(expr)):
            if isinstance(arg, tuple):
                go(arg[0])
                go(arg[1])
                codegen.append(Instr("BINARY_OP", BinaryOp.MULTIPLY))
            else:
                go(arg)
            if n:
                codegen.append(Instr("BINARY_OP", BinaryOp.ADD))
        return
    expr = sympy.sympify(expr)
    if expr.is_Integer:
        codegen.load_const(int(expr))
    elif isinstance(expr, sympy.Symbol):
        codegen.append(Instr("LOAD_FAST", _symbol_local(codegen, env, expr)))
    elif isinstance(expr, (sympy.Add, sympy.Mul)):
        first, *rest = expr.args
        go(first)
        for arg in rest:
            go(arg)
            codegen.append(Instr("BINARY_OP", BinaryOp.ADD if isinstance(expr, sympy.Add) else BinaryOp.MULTIPLY))
    elif isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        go(expr.base)
        codegen.load_const(int(expr.exp))
        codegen.append(Instr("BINARY_OP", BinaryOp.POWER))
    elif isinstance(expr, sympy.Mod):
        go(expr.args[0])
        go(expr.args[1])
        codegen.append(Instr("BINARY_OP", BinaryOp.REMAINDER))
    elif isinstance(expr, (sympy.floor, sympy.ceiling)):
        num, den = sympy.fraction(sympy.together(expr.args[0]))
        go(num if isinstance(expr, sympy.floor) else -num)
        go(den)
        codegen.append(Instr("BINARY_OP", BinaryOp.FLOOR_DIVIDE))
        if isinstance(expr, sympy.ceiling):
            codegen.append(Instr("UNARY_NEGATIVE"))
    elif isinstance(expr, (sympy.Min, sympy.Max, sympy.Abs)):
        fn = {sympy.Min: builtins.min, sympy.Max: builtins.max, sympy.Abs: builtins.abs}[type(expr)]
        codegen.begin_call(fn)
        for arg in expr.args:
            go(arg)
        codegen.end_call(len(expr.args))
    else:
        raise NotImplementedError(f"no code for the size {expr}")


def _symbol_local(codegen: "PyCodegen", env: "ShapeEnv", symbol: sympy.Symbol) -> str:
    """A local holding the symbol's value, read at the very start of the code being generated:
    later, the side effects being replayed may have rebound what its source names (a global
    incremented, an attribute replaced), and the int must be the one the program read."""
    from ..codegen import PyCodegen

    # kept on the body being generated, so that a dry run of it (PyCodegen.load_first) forgets them
    names = codegen.__dict__.setdefault("symbol_locals", {})
    if symbol not in names:
        names[symbol] = f"___size_{symbol}"
        info = env.symbols[symbol]
        read = PyCodegen(codegen.code)
        read.load_source(info.source)
        if info.dim is not None:  # an array's size, else a dynamic int itself
            read.load_attr("shape")
            read.load_const(info.dim)
            read.binary_subscr()
        read.append(Instr("STORE_FAST", names[symbol]))
        codegen.instructions[0:0] = read.instructions
    return names[symbol]


def supported(expr: Any) -> bool:
    """Whether a size can be computed at run time (graph node, generated code, size guard)."""
    try:
        python_source(expr if isinstance(expr, SizeExpr | int) else sympy.sympify(expr), _AnyName())
    except NotImplementedError:
        return False
    return True


class _AnyName(dict):
    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: Any) -> str:
        return str(key)
