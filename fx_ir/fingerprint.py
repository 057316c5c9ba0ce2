"""Stable structural fingerprints of graphs: the same program gives the same key in every process.

Compile caches key on fingerprint(); canonical_form() is the readable text it hashes, for debugging misses.
"""
from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .graph_module import GraphModule
from .cond import Cond
from .loops import ForLoop, WhileLoop
from .node import Node
from .printing import to_dot
from .targets import qualified_name
from .tensor_meta import TensorMeta

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["canonical_form", "fingerprint", "to_dot"]


def fingerprint(graph: Graph | GraphModule, *, include_meta: bool = True) -> str:
    """A hex SHA-256 of the graph's structure: ops, targets, constants, wiring, and recorded shapes/dtypes.

    Node and input names do not matter (nodes are numbered by position); get_attr values count when the
    graph has an owning module. Objects without a stable encoding fall back to their repr, which
    may vary between processes: that costs a cache miss, never a wrong hit.
    """
    return hashlib.sha256(canonical_form(graph, include_meta=include_meta).encode()).hexdigest()


def canonical_form(graph: Graph | GraphModule, *, include_meta: bool = True) -> str:
    """The text fingerprint() hashes: one line per node, inputs referenced by position."""
    if isinstance(graph, GraphModule):
        graph = graph.graph
    encoder = _Encoder()
    owner = graph.owning_module
    lines = []
    for index, node in enumerate(graph.nodes):
        encoder.positions[node] = index
        if node.op == "placeholder":
            target = "input"  # inputs are passed by position; their names are not part of the program
        else:
            target = node.target if isinstance(node.target, str) else encoder.callable(node.target)
        line = f"{index} {node.op.value} {target} {encoder.value(node.args)}"
        if node.kwargs:
            line += " " + encoder.value(dict(sorted(node.kwargs.items())))  # order of keywords is irrelevant
        if node.op == "get_attr" and owner is not None:
            line += " = " + encoder.value(_attribute(owner, node.target))
        elif node.op == "call_module" and owner is not None:
            line += " = " + _callee(encoder, _attribute(owner, node.target), include_meta)
        if include_meta and "val" in node.meta:
            line += " : " + encoder.value(node.meta["val"])
        lines.append(line)
    return "\n".join(lines)


def _attribute(owner: Any, qualname: str) -> Any:
    getter = getattr(owner, "get_attribute", None)
    try:
        return getter(qualname) if getter is not None else None
    except AttributeError:
        return None


def _callee(encoder: _Encoder, callee: Any, include_meta: bool) -> str:
    """A nested GraphModule counts by its own fingerprint, any other callable as a call target."""
    if isinstance(callee, GraphModule):
        return "module:" + fingerprint(callee, include_meta=include_meta)
    if isinstance(callee, ForLoop):  # the body's program, not the description or the body a backend installed
        return f"for_loop({callee.num_carried}):" + fingerprint(callee.body, include_meta=include_meta)
    if isinstance(callee, Cond):
        return (f"cond({callee.num_results}):" + fingerprint(callee.if_true, include_meta=include_meta) + "|"
                + fingerprint(callee.if_false, include_meta=include_meta))
    if isinstance(callee, WhileLoop):
        return f"while_loop({callee.num_carried}):" + fingerprint(callee.body, include_meta=include_meta)
    return encoder.value(callee)


class _Encoder:
    """Turns argument values into deterministic text, tagged by type so that 1, 1.0 and True differ."""

    def __init__(self) -> None:
        self.positions: dict[Node, int] = {}
        self._open_callables: set[int] = set()  # breaks cycles of closures referring to themselves

    def value(self, v: Any) -> str:
        if isinstance(v, Node):
            return f"%{self.positions.get(v, '?' + v.name)}"
        kind = type(v)
        if kind in (bool, int, str, bytes, type(None)) or v is Ellipsis:
            return f"{kind.__name__}:{v!r}"
        if kind is float:
            return f"float:{v.hex() if math.isfinite(v) else repr(v)}"
        if kind is complex:
            return f"complex:{self.value(v.real)},{self.value(v.imag)}"
        if kind in (tuple, list):
            return f"{kind.__name__}(" + ",".join(self.value(x) for x in v) + ")"
        if kind is dict:
            return "dict(" + ",".join(f"{self.value(k)}:{self.value(x)}" for k, x in v.items()) + ")"
        if kind is slice:
            return f"slice({self.value(v.start)},{self.value(v.stop)},{self.value(v.step)})"
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return f"{self.callable(type(v))}(" + ",".join(self.value(x) for x in v) + ")"
        if isinstance(v, np.ndarray):
            return self._array(v)
        if isinstance(v, np.generic):
            return f"np.{v.dtype.str}:{v.tobytes().hex()}" if v.dtype.kind != "O" else f"np.object:{v!r}"
        if isinstance(v, np.dtype):
            return f"dtype:{v.descr!r}" if v.fields else f"dtype:{v.str}"
        if isinstance(v, TensorMeta):
            shape = ",".join(str(d) for d in v.shape)  # sympy prints expressions deterministically
            return f"meta({v.dtype.str},({shape}),{'scalar' if v.scalar else 'array'})"
        if callable(v):
            return self.callable(v)
        return f"{qualified_name(type(v))}:{v!r}"

    def _array(self, a: np.ndarray) -> str:
        if a.dtype.hasobject:
            return f"ndarray(object,{a.shape},{self.value(a.tolist())})"
        digest = hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
        return f"ndarray({a.dtype.str},{a.shape},{digest})"

    def callable(self, target: Any) -> str:
        name = qualified_name(target)
        code = getattr(target, "__code__", None)
        if code is not None and id(target) not in self._open_callables:
            self._open_callables.add(id(target))
            # Two lambdas share a qualified name; their bytecode and constants tell them apart.
            name += "#" + self._code_digest(code)
            closure = getattr(target, "__closure__", None) or ()
            cells = []
            for cell in closure:
                try:
                    cells.append(self.value(cell.cell_contents))
                except ValueError:  # an empty cell
                    cells.append("<empty>")
            if cells:
                name += "[" + ",".join(cells) + "]"
            self._open_callables.discard(id(target))
        return name

    def _code_digest(self, code: Any) -> str:
        h = hashlib.sha256(code.co_code)
        for const in code.co_consts:
            h.update((self._code_digest(const) if hasattr(const, "co_code") else self.value(const)).encode())
        h.update(repr(code.co_names).encode())
        return h.hexdigest()[:16]
