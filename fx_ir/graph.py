"""Graph: an ordered list of Nodes with unique names, insertion points, editing, and dead code elimination.

Printing, code generation and lint live in their own modules; Graph exposes them as methods.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .naming import Namespace, target_base_name
from .node import Node, Opcode, _LinkedListEnd, map_arg, to_opcode

if TYPE_CHECKING:
    from .codegen import PythonCode


class _NoDefault:
    """Marks a placeholder without a default value (None is a valid default)."""

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


class NodeList:
    """A live, ordered view of a graph's nodes. Iteration survives erasing the current node."""

    def __init__(self, end: _LinkedListEnd, graph: Graph, reverse: bool = False) -> None:
        self._end, self._graph, self._reverse = end, graph, reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        step = "_prev" if self._reverse else "_next"
        cur = getattr(self._end, step)
        while cur is not self._end:
            # An erased node keeps its old links, so the walk continues from where it was.
            if not cur._erased:
                yield cur
            cur = getattr(cur, step)

    def __reversed__(self) -> Iterator[Node]:
        return iter(NodeList(self._end, self._graph, not self._reverse))

    def __contains__(self, node: object) -> bool:
        return isinstance(node, Node) and node.graph is self._graph and not node._erased

    def __repr__(self) -> str:
        return f"[{', '.join(n.name for n in self)}]"


class Graph:
    """An ordered program of Nodes: inputs (placeholder), computations, one output.

    >>> g = Graph()
    >>> x = g.placeholder("x")
    >>> g.output(g.call_function(np.negative, (x,)))
    >>> print(g.python_code().src)        # def forward(self, x): negative = np.negative(x) ...
    """

    def __init__(self, owning_module: Any | None = None) -> None:
        self._end = _LinkedListEnd()
        self._len = 0
        self._namespace = Namespace()
        self.owning_module = owning_module
        # Where create_node puts the next node: just after `_anchor`; None means "at the end,
        # but before the output node", so building after output() still yields a valid graph.
        self._anchor: Node | _LinkedListEnd | None = None

    # -- iteration ----------------------------------------------------------------------------

    @property
    def nodes(self) -> NodeList:
        return NodeList(self._end, self)

    def __len__(self) -> int:
        return self._len

    def find_nodes(self, *, op: str | None = None, target: Any = None) -> list[Node]:
        """Nodes with the given opcode and/or target, in order."""
        return [
            n for n in self.nodes
            if (op is None or n.op == op) and (target is None or n.target is target or _same_str(n.target, target))
        ]

    @property
    def output_node(self) -> Node | None:
        for node in reversed(self.nodes):
            if node.op == Opcode.OUTPUT:
                return node
        return None

    # -- insertion points ---------------------------------------------------------------------

    @contextlib.contextmanager
    def inserting_before(self, node: Node | None = None) -> Iterator[None]:
        """New nodes go just before `node`, in creation order.

        With None: "before nothing", that is at the end, yet before the output node if there is one.
        """
        if node is not None:
            self._check_owned(node, "insert before")
        with self._inserting_at(None if node is None else node._prev):
            yield

    @contextlib.contextmanager
    def inserting_after(self, node: Node | None = None) -> Iterator[None]:
        """New nodes go just after `node`, in creation order. With None: "after nothing", at the start."""
        if node is not None:
            self._check_owned(node, "insert after")
        with self._inserting_at(self._end if node is None else node):
            yield

    @contextlib.contextmanager
    def _inserting_at(self, anchor: Node | _LinkedListEnd | None) -> Iterator[None]:
        saved, self._anchor = self._anchor, anchor
        try:
            yield
        finally:
            self._anchor = saved

    def _insert(self, node: Node) -> None:
        if self._anchor is None:
            last = self._end._prev
            after = last._prev if isinstance(last, Node) and last.op == Opcode.OUTPUT else last
        else:
            after = self._anchor
            self._anchor = node  # the next node follows this one, keeping creation order
        node._link_after(after)
        self._len += 1

    # -- building -----------------------------------------------------------------------------

    def create_node(
        self,
        op: str,
        target: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> Node:
        """Create a node at the current insertion point. Its name comes from `name` or the target."""
        opcode = to_opcode(op)
        candidate = name if name is not None else self._default_name(opcode, target)
        node = Node(self, self._namespace.create_name(candidate), opcode, target, tuple(args), dict(kwargs or {}))
        self._insert(node)
        return node

    @staticmethod
    def _default_name(op: Opcode, target: Any) -> str:
        if op == Opcode.OUTPUT:
            return "output"
        if op in (Opcode.GET_ATTR, Opcode.CALL_MODULE) and isinstance(target, str):
            return target.replace(".", "_")
        return target_base_name(target)

    def placeholder(self, name: str, default: Any = NO_DEFAULT) -> Node:
        """A function input called `name`; `default` makes it optional."""
        args = () if default is NO_DEFAULT else (default,)
        return self.create_node(Opcode.PLACEHOLDER, name, args)

    def get_attr(self, qualname: str) -> Node:
        """Read an attribute of the owning module by dotted path (a constant array, a submodule...)."""
        return self.create_node(Opcode.GET_ATTR, qualname)

    def call_function(self, target: Callable[..., Any], args: tuple[Any, ...] = (),
                      kwargs: dict[str, Any] | None = None) -> Node:
        return self.create_node(Opcode.CALL_FUNCTION, target, args, kwargs)

    def call_method(self, name: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Node:
        """Call method `name` on args[0] with the remaining arguments."""
        return self.create_node(Opcode.CALL_METHOD, name, args, kwargs)

    def call_module(self, qualname: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Node:
        """Call the owning module's attribute `qualname` (a nested GraphModule or any callable)."""
        return self.create_node(Opcode.CALL_MODULE, qualname, args, kwargs)

    def output(self, value: Any) -> Node:
        """The graph's result: a node, constant, or nested tuple/list/dict of them."""
        return self.create_node(Opcode.OUTPUT, "output", (value,))

    # -- editing ------------------------------------------------------------------------------

    def erase_node(self, node: Node) -> None:
        """Remove a node that nothing uses any more."""
        self._check_owned(node, "erase")
        if node.users:
            users = ", ".join(u.name for u in node.users)
            raise RuntimeError(
                f"cannot erase node {node.name}: it is still used by {users}; "
                f"call {node.name}.replace_all_uses_with(...) or erase those users first"
            )
        node._unlink()
        node._set_args_kwargs((), {})  # drop this node from its inputs' users
        node._erased = True
        self._len -= 1
        if self._anchor is node:
            self._anchor = node._prev

    def _check_owned(self, node: Node, action: str) -> None:
        if node.graph is not self:
            raise ValueError(f"cannot {action} node {node.name}: it belongs to another graph")
        if node._erased:
            raise ValueError(f"cannot {action} node {node.name}: it was already erased")

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda n: n) -> Node:
        """Copy `node` (from any graph) into this one; `arg_transform` maps its input nodes to ours."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copy = self.create_node(node.op, node.target, args, kwargs, name=node.name)
        copy.meta = dict(node.meta)
        return copy

    def graph_copy(self, other: Graph, val_map: dict[Node, Any]) -> Any:
        """Copy every node of `other` but its output into this graph; return the mapped output value.

        `val_map` may pre-map some of `other`'s nodes (say, placeholders to existing nodes); it is
        filled with the mapping of every copied node.
        """
        for node in other.nodes:
            if node in val_map:
                continue
            if node.op == Opcode.OUTPUT:
                return map_arg(node.args[0], lambda n: val_map[n])
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def copy(self) -> Graph:
        """An independent copy with the same names, meta and owning module."""
        new = Graph(owning_module=self.owning_module)
        val_map: dict[Node, Any] = {}
        result = new.graph_copy(self, val_map)
        out = self.output_node
        if out is not None:
            new.output(result).meta = dict(out.meta)
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Graph:
        return self.copy()

    # -- analysis and transformation ----------------------------------------------------------

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase nodes whose values nobody uses, keeping anything impure; True if something changed.

        A node is kept if it is impure by `Node.is_impure()` (placeholders, output, mutation,
        out=, random draws, meta["impure"], mark_impure() callables) or by `is_impure_node`.
        """
        changed = False
        for node in reversed(self.nodes):
            if node.users or node.is_impure() or (is_impure_node is not None and is_impure_node(node)):
                continue
            self.erase_node(node)
            changed = True
        return changed

    def lint(self) -> None:
        """Check the graph's invariants; raise GraphLintError naming the first broken node."""
        from .lint import lint_graph

        lint_graph(self)

    def python_code(self, root_module: str = "self", *, free_dead_values: bool = True) -> PythonCode:
        """Generate `def forward(self, ...)` source and the globals it needs (see codegen.py)."""
        from .codegen import CodeGen

        return CodeGen(self, root_module, free_dead_values=free_dead_values).generate()

    # -- printing -----------------------------------------------------------------------------

    def __str__(self) -> str:
        from .printing import format_graph

        return format_graph(self)

    def __repr__(self) -> str:
        return f"<Graph with {self._len} nodes>"

    def format_tabular(self) -> str:
        from .printing import format_tabular

        return format_tabular(self)

    def print_tabular(self) -> None:
        """Print one row per node: opcode, name, target, args, kwargs."""
        print(self.format_tabular())  # noqa: T201  (printing is what it is for)


def _same_str(a: Any, b: Any) -> bool:
    return isinstance(a, str) and isinstance(b, str) and a == b
