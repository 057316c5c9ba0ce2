"""Readable dumps of graphs: one line per node, an aligned table, and Graphviz DOT text.

Used by Graph.__str__, format_tabular/print_tabular, explain output and logs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .node import Node, Opcode
from .small_size import SizeExpr
from .targets import qualified_name
from .tensor_meta import TensorMeta

if TYPE_CHECKING:
    from .graph import Graph

_MAX_CONST_REPR = 60


def format_arg(value: Any, node_prefix: str = "%") -> str:
    """A compact display form of an argument: nodes as `%name`, arrays by dtype and shape."""
    def fmt(v: Any) -> str:
        return format_arg(v, node_prefix)

    if isinstance(value, Node):
        return node_prefix + value.name
    if isinstance(value, tuple):
        inner = ", ".join(fmt(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {fmt(v)}" for k, v in value.items()) + "}"
    if isinstance(value, slice):  # written as in a subscript: 1:-1, :, ::2
        bounds = ["" if v is None else fmt(v) for v in (value.start, value.stop)]
        return ":".join(bounds) + ("" if value.step is None else f":{fmt(value.step)}")
    if isinstance(value, np.ndarray):
        return f"array({value.dtype}, {value.shape})"
    if isinstance(value, (type, np.ufunc)) or callable(value):
        return qualified_name(value)
    text = repr(value)
    return text if len(text) <= _MAX_CONST_REPR else text[: _MAX_CONST_REPR - 3] + "..."


def format_kwargs(kwargs: dict[str, Any], node_prefix: str = "%") -> str:
    return "{" + ", ".join(f"{k}: {format_arg(v, node_prefix)}" for k, v in kwargs.items()) + "}"


def format_meta(node: Node) -> str:
    """The recorded value of a node (node.meta["val"]) in a few characters, or ''."""
    if "val" not in node.meta:
        return ""
    val = node.meta["val"]
    if isinstance(val, TensorMeta):
        return str(val)
    if isinstance(val, (tuple, list)):
        open_, close = ("(", ")") if isinstance(val, tuple) else ("[", "]")
        return open_ + ", ".join(_meta_text(v) for v in val) + close
    return _meta_text(val)


def _meta_text(val: Any) -> str:
    if isinstance(val, TensorMeta):
        return str(val)
    kind = val.sympy_class if isinstance(val, SizeExpr) else type(val).__name__  # printed as either form is
    text = f"{kind} {val!r}"
    return text if len(text) <= _MAX_CONST_REPR else text[: _MAX_CONST_REPR - 3] + "..."


def source_of(node: Node) -> str | None:
    """Where the node came from in the user's program, if the frontend recorded it.

    Read from node.meta["source_location"] (any object; its str() is used) or node.meta["source"] (a str).
    """
    location = node.meta.get("source_location")
    if location is not None:
        return str(location)
    source = node.meta.get("source")
    return source if isinstance(source, str) else None


def format_node(node: Node) -> str:
    """``%add : call_function[target=np.add](args = (%x, %y), kwargs = {axis: 1})`` plus `  # meta`."""
    if node.op == Opcode.OUTPUT:
        line = f"return {format_arg(node.args[0])}" if node.args else "return None"
    else:
        line = f"%{node.name} : {node.op}[target={_format_target(node)}]"
        if node.op == Opcode.PLACEHOLDER:
            if node.args:
                line += f"(default = {format_arg(node.args[0])})"
        elif node.op != Opcode.GET_ATTR or node.args or node.kwargs:
            parts = [f"args = {format_arg(node.args)}"]
            if node.kwargs:
                parts.append(f"kwargs = {format_kwargs(node.kwargs)}")
            line += "(" + ", ".join(parts) + ")"
    meta = format_meta(node)
    return f"{line}  # {meta}" if meta else line


def _format_target(node: Node) -> str:
    return node.target if isinstance(node.target, str) else qualified_name(node.target)


def format_graph(graph: Graph) -> str:
    """The whole graph, one node per line under a `graph(inputs):` header."""
    inputs = ", ".join(n.name for n in graph.nodes if n.op == Opcode.PLACEHOLDER)
    lines = [f"graph({inputs}):"]
    lines.extend("    " + format_node(n) for n in graph.nodes)
    for node in graph.nodes:  # each loop's body, indented under its header
        body = _loop_body(node)
        if body is not None:
            lines.append(f"  %{node.name} body:")
            lines.extend("    " + line for line in format_graph(body).splitlines())
    return "\n".join(lines)


def _loop_body(node: Node) -> Graph | None:
    from .loops import loop_of  # loops imports graph_module, which imports this module

    loop = loop_of(node)
    return None if loop is None else loop.body.graph


_TABLE_HEADER = ("opcode", "name", "target", "args", "kwargs")


def format_tabular(graph: Graph) -> str:
    """An aligned text table with columns opcode, name, target, args, kwargs."""
    rows = [
        (str(n.op), n.name, _format_target(n), format_arg(n.args, ""), format_kwargs(n.kwargs, ""))
        for n in graph.nodes
    ]
    widths = [max(len(r[i]) for r in (_TABLE_HEADER, *rows)) for i in range(len(_TABLE_HEADER))]
    def render(row: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([render(_TABLE_HEADER), rule, *(render(r) for r in rows)])


_DOT_SHAPES = {
    Opcode.PLACEHOLDER: "ellipse",
    Opcode.GET_ATTR: "note",
    Opcode.CALL_FUNCTION: "box",
    Opcode.CALL_METHOD: "box",
    Opcode.CALL_MODULE: "box3d",
    Opcode.OUTPUT: "doubleoctagon",
}


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_dot(graph: Graph, name: str = "graph") -> str:
    """Graphviz DOT text for the graph (render with `dot -Tsvg`): a box per node, an edge per use."""
    lines = [f'digraph "{_dot_escape(name)}" {{', "  rankdir=TB;", '  node [fontname="monospace"];']
    for node in graph.nodes:
        label_parts = [node.name] if node.op == Opcode.OUTPUT else [node.name, f"{node.op} {_format_target(node)}"]
        meta = format_meta(node)
        if meta:
            label_parts.append(meta)
        label = _dot_escape("\n".join(label_parts))
        lines.append(f'  "{node.name}" [label="{label}", shape={_DOT_SHAPES.get(node.op, "box")}];')
    for node in graph.nodes:
        for inp in node.all_input_nodes:
            lines.append(f'  "{inp.name}" -> "{node.name}";')
    lines.append("}")
    return "\n".join(lines)
