"""Interpreter: runs a graph node by node, one method per opcode; the executable definition of the IR.

ShapeProp is an Interpreter that records each node's TensorMeta (or Python value) into node.meta["val"].
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .graph import Graph
from .graph_module import GraphModule
from .loops import ForLoop, WhileLoop
from .node import Node, Opcode, map_aggregate, map_arg
from .printing import source_of
from .tensor_meta import TensorMeta


class Interpreter:
    """Evaluates a GraphModule (or a bare Graph without get_attr/call_module) on concrete inputs.

    Subclass and override `run_node` or an opcode method (`call_function`...) to change how nodes run.
    Values are dropped from `env` after their last use, as the generated code does.

    >>> Interpreter(gm).run(x, y)
    """

    def __init__(self, module: GraphModule | Graph, garbage_collect_values: bool = True) -> None:
        if isinstance(module, Graph):
            self.graph, self.module = module, module.owning_module
        else:
            self.graph, self.module = module.graph, module
        self.garbage_collect_values = garbage_collect_values
        self.env: dict[Node, Any] = {}
        self._args_iter: Iterator[Any] = iter(())
        self._dying: dict[Node, list[Node]] = {}

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None) -> Any:
        """Run the graph on positional inputs; `initial_env` pre-sets values of some nodes."""
        self.env = dict(initial_env or {})
        self._args_iter = iter(args)
        self._dying = self._values_dying_at() if self.garbage_collect_values else {}
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as exc:
                exc.add_note(self._note(node))
                raise
            for dead in self._dying.get(node, ()):
                self.env.pop(dead, None)
            if node.op == Opcode.OUTPUT:
                return self.env[node]
        return None

    def _values_dying_at(self) -> dict[Node, list[Node]]:
        last_use: dict[Node, Node] = {}
        for node in self.graph.nodes:
            for inp in node.all_input_nodes:
                last_use[inp] = node
        dying: dict[Node, list[Node]] = {}
        for value, user in last_use.items():
            dying.setdefault(user, []).append(value)
        return dying

    @staticmethod
    def _note(node: Node) -> str:
        note = f"While executing {node.format_node()}"
        source = source_of(node)
        return f"{note}\n  from: {source}" if source is not None else note

    # -- per-node dispatch --------------------------------------------------------------------

    def run_node(self, node: Node) -> Any:
        """Run one node: fetch its argument values, then call the method named after its opcode."""
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        return getattr(self, node.op.value)(node.target, args, kwargs)

    def fetch_args_kwargs_from_env(self, node: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return map_arg(node.args, self._value_of), map_arg(node.kwargs, self._value_of)

    def _value_of(self, node: Node) -> Any:
        try:
            return self.env[node]
        except KeyError:
            raise RuntimeError(f"node {node.name} is read before it was computed (run graph.lint())") from None

    def fetch_attr(self, qualname: str) -> Any:
        if self.module is None:
            raise RuntimeError(f"cannot fetch attribute {qualname!r}: the graph has no owning module")
        getter = getattr(self.module, "get_attribute", None)
        if getter is not None:
            return getter(qualname)
        value = self.module
        for part in qualname.split("."):
            value = getattr(value, part)
        return value

    # -- one method per opcode ----------------------------------------------------------------

    def placeholder(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return next(self._args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise TypeError(f"missing value for graph input {target!r}") from None

    def get_attr(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        receiver, *rest = args
        return getattr(receiver, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        callee = self.fetch_attr(target)
        if isinstance(callee, (ForLoop, WhileLoop)):  # the body is interpreted too, one iteration at a time
            body = type(self)(callee.body, self.garbage_collect_values)
            return callee.iterate(body.run, *args)
        return callee(*args, **kwargs)

    def output(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[0]


def meta_of(value: Any) -> Any:
    """What ShapeProp records: TensorMeta for arrays and NumPy scalars (also inside tuples/lists), else the value."""
    def leaf(v: Any) -> Any:
        return TensorMeta.from_value(v) if isinstance(v, (np.ndarray, np.generic)) else v

    return map_aggregate(value, leaf)


class ShapeProp(Interpreter):
    """Runs the graph on example inputs and stores each node's meta_of(value) in node.meta["val"].

    >>> ShapeProp(gm).propagate(X, means)      # then str(gm.graph) shows shapes and dtypes
    """

    def run_node(self, node: Node) -> Any:
        result = super().run_node(node)
        node.meta["val"] = meta_of(result)
        return result

    def propagate(self, *args: Any) -> Any:
        return self.run(*args)
