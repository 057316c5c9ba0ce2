"""Graph code run inline: a backend's straight-line function spliced into the transformed code, so
that a cached call of a small graph runs its NumPy calls in the user's own frame (no call, no frame).

A backend opts in per graph by setting `inlinable = True` on the plain Python function it returns,
promising three things: its code is straight-line (no loops, no try), the globals it reads never
change after compilation, and it calls no Python code of its own that the frame hook must not see
(its generated kernels; NumPy's own Python functions are skipped by skipfiles anyway). The splice
itself checks the code's shape and gives up (the graph is then called as before) on anything else.

The spliced instructions are those of the function the backend logged with DYNAMO_LOGS=output_code,
with its locals renamed (`___inline_<name>`), its global reads turned into constants and its
`return (a, b)` into stores of the graph outputs. Each statement carries the user's line of the op
it computes, so that an error or a warning points where plain Python would (not at generated code).
"""
from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any, Callable

from bytecode import Bytecode, Instr, SetLineno

from . import bytecode_compat as compat

if TYPE_CHECKING:
    from .output_graph import CompiledGraph

PREFIX = "___inline_"
_LOCAL_OPS = frozenset({"LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_FAST_CHECK"})
# What only a function with control flow, scopes of its own or generators contains: never spliced.
_REFUSED_OPS = frozenset({
    "MAKE_FUNCTION", "LOAD_CLOSURE", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "MAKE_CELL", "COPY_FREE_VARS",
    "STORE_GLOBAL", "DELETE_GLOBAL", "IMPORT_NAME", "IMPORT_FROM", "YIELD_VALUE", "RETURN_GENERATOR", "SEND",
    "RERAISE", "PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "CHECK_EG_MATCH", "BEFORE_WITH",
    "LOAD_FAST_AND_CLEAR", "LOAD_BUILD_CLASS", "LOAD_LOCALS", "SETUP_ANNOTATIONS",
})
_RETURNS = frozenset({"RETURN_VALUE", "RETURN_CONST"})


def function_of(compiled: "CompiledGraph") -> Any:
    """The backend's own callable (compiled_fn wraps it to run with the hook off)."""
    return getattr(compiled.compiled_fn, "_dynamo_fn", compiled.compiled_fn)


def graph_instructions(compiled: "CompiledGraph", load_input: Callable[[Any], list[Instr]],
                       outputs: list[str], line_of: Callable[[Any], int | None],
                       user_filename: str | None = None) -> list[Instr] | None:
    """Instructions that compute the graph in place and store its outputs in `outputs`, or None
    when its function cannot be spliced (then the caller emits a call).

    `load_input(graph_input)` gives the instructions that push one input; `line_of(node)` the
    user's line for a node of the graph (its op), or for None the line of the graph as a whole.
    A function the backend compiled at the lines of `user_filename` (fx_ir.user_lines) keeps them."""
    function = function_of(compiled)
    code = _spliceable_code(function, len(compiled.inputs))
    if code is None:
        return None
    body = _body(code)
    if body is None:
        return None
    rename = {name: PREFIX + name for name in code.co_varnames}
    at_user_lines = user_filename is not None and code.co_filename == user_filename
    lines = {} if at_user_lines else _user_lines(body, compiled, line_of)
    spliced: list[Instr] = []
    for graph_input, param in zip(compiled.inputs, code.co_varnames):
        spliced += load_input(graph_input)
        spliced.append(Instr("STORE_FAST", rename[param]))
    line = line_of(None)
    for instr in body[:-1]:
        if isinstance(instr, SetLineno):
            continue
        if compat.has_line(instr):
            line = instr.lineno if at_user_lines else lines.get(instr.lineno, line)
        new = _translate(instr, rename, function.__globals__)
        if new is None:
            return None
        for part in new:
            part.lineno = line
        spliced += new
    spliced += _store_outputs(body[-1], spliced, outputs, line)
    # free what the function's own frame would have freed on return (its inputs among them)
    spliced += [Instr("DELETE_FAST", name, lineno=line) for name in _bound_at_end(code, spliced)]
    for instr in spliced:
        if not compat.has_line(instr):
            instr.lineno = line_of(None)
    return spliced


def _spliceable_code(function: Any, inputs: int) -> types.CodeType | None:
    if not (isinstance(function, types.FunctionType) and getattr(function, "inlinable", False)):
        return None
    code = function.__code__
    if (function.__closure__ or code.co_cellvars or code.co_freevars or code.co_argcount != inputs
            or code.co_kwonlyargcount or code.co_flags & _NOT_PLAIN or len(code.co_code) > _MAX_CODE_BYTES):
        return None
    return code


# Splicing saves a call (a few hundred ns) per cached call: worth it for small graphs only. A big one
# (a recursion inlined into thousands of ops) would cost seconds of bytecode assembly for nothing.
_MAX_CODE_BYTES = 2048


_NOT_PLAIN = (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR | inspect.CO_COROUTINE
              | inspect.CO_ITERABLE_COROUTINE | inspect.CO_ASYNC_GENERATOR)


def _body(code: types.CodeType) -> list[Any] | None:
    """The instructions after RESUME, ending with the one return; None if anything else jumps."""
    body: list[Any] = []
    started = False
    for instr in Bytecode.from_code(code):
        if not isinstance(instr, (Instr, SetLineno)):
            return None  # a label or a try block: control flow
        if isinstance(instr, Instr) and instr.name == "RESUME":
            started = True
            continue
        if started:
            body.append(instr)
    if not body or not isinstance(body[-1], Instr) or body[-1].name not in _RETURNS:
        return None
    for instr in body[:-1]:
        if isinstance(instr, Instr) and (instr.name in _REFUSED_OPS or instr.name in _RETURNS or instr.has_jump()):
            return None
    return body


def _user_lines(body: list[Any], compiled: "CompiledGraph", line_of: Callable[[Any], int | None]) -> dict[int, int | None]:
    """Generated line -> user's line, through the node each statement assigns (its local's name)."""
    nodes = {node.name: node for node in compiled.graph_module.graph.nodes}
    lines: dict[int, int | None] = {}
    for instr in body:
        if isinstance(instr, Instr) and instr.name.startswith("STORE_FAST") and compat.has_line(instr):
            names = instr.arg if isinstance(instr.arg, tuple) else (instr.arg,)
            node = nodes.get(names[0])
            if node is not None and instr.lineno not in lines:
                lines[instr.lineno] = line_of(node)
    return lines


# 3.13's pairs of local accesses in one instruction hold two variable numbers of 4 bits each: in
# the transformed code, with more locals, they are written as the two instructions they stand for
def _translate(instr: Instr, rename: dict[str, str], namespace: dict) -> list[Instr] | None:
    if instr.name in compat.LOCAL_PAIRS:
        return [Instr(op, rename[name]) for op, name in zip(compat.LOCAL_PAIRS[instr.name], instr.arg)]
    if instr.name in _LOCAL_OPS:
        return [Instr(instr.name, rename[instr.arg])]
    if instr.name == "LOAD_GLOBAL":
        null, name = compat.global_arg(instr)
        value = _global_value(namespace, name)
        if value is _MISSING:
            return None
        load = [Instr("LOAD_CONST", value)]
        return compat.callable_with_null(load) if null else load
    return [Instr(instr.name, instr.arg)]


_MISSING = object()


def _global_value(namespace: dict, name: str) -> Any:
    """What LOAD_GLOBAL reads; it must be hashable, as a code object hashes its constants."""
    if name in namespace:
        value = namespace[name]
    else:
        builtins = namespace.get("__builtins__", {})
        builtins = builtins if isinstance(builtins, dict) else vars(builtins)
        value = builtins.get(name, _MISSING)
    try:
        hash(value)
    except TypeError:
        return _MISSING
    return value


def _store_outputs(ret: Instr, spliced: list[Instr], outputs: list[str], line: int | None) -> list[Instr]:
    """The function's return value (a tuple of the outputs) into the output locals; a tuple built
    just to be returned is not built (its items, last on top, are stored last first)."""
    if ret.name == "RETURN_CONST":
        return [Instr("LOAD_CONST", ret.arg, lineno=line), Instr("UNPACK_SEQUENCE", len(outputs), lineno=line),
                *(Instr("STORE_FAST", name, lineno=line) for name in outputs)]
    last = spliced[-1] if spliced else None
    if last is not None and last.name == "BUILD_TUPLE" and last.arg == len(outputs):
        spliced.pop()
        return [Instr("STORE_FAST", name, lineno=line) for name in reversed(outputs)]
    return [Instr("UNPACK_SEQUENCE", len(outputs), lineno=line),
            *(Instr("STORE_FAST", name, lineno=line) for name in outputs)]


def _bound_at_end(code: types.CodeType, spliced: list[Instr]) -> list[str]:
    bound: dict[str, None] = {}
    for instr in spliced:
        if instr.name == "STORE_FAST" and instr.arg.startswith(PREFIX):
            bound[instr.arg] = None
        elif instr.name == "DELETE_FAST":
            bound.pop(instr.arg, None)
    return list(bound)
