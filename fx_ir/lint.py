"""Graph invariants as code: lint_graph() checks them and GraphLintError says which node broke which and how to fix it.

Run it between passes in tests; every message names the node and the remedy.
"""
from __future__ import annotations

import keyword
from typing import TYPE_CHECKING, Any

from .naming import RESERVED_NAMES
from .node import Node, Opcode, _LinkedListEnd, iter_nodes

if TYPE_CHECKING:
    from .graph import Graph


class GraphLintError(Exception):
    """A graph breaks an invariant; `node` is the offending node when there is one."""

    def __init__(self, message: str, node: Node | None = None) -> None:
        super().__init__(message)
        self.node = node


def _fail(node: Node | None, problem: str, fix: str) -> GraphLintError:
    where = f"node {node.name} ({node.format_node()})" if node is not None else "graph"
    return GraphLintError(f"{where}: {problem}. Fix: {fix}", node)


def lint_graph(graph: Graph) -> None:
    """Raise GraphLintError for the first broken invariant found, in a fixed order of checks."""
    nodes = _check_links(graph)
    _check_names(nodes)
    _check_targets(graph, nodes)
    _check_order_and_ownership(graph, nodes)
    _check_users(nodes)
    _check_output(graph, nodes)


def _check_links(graph: Graph) -> list[Node]:
    nodes: list[Node] = []
    end = graph._end
    prev: Node | _LinkedListEnd = end
    cur = end._next
    while cur is not end:
        assert isinstance(cur, Node)
        if cur._prev is not prev:
            raise _fail(cur, "its prev link does not point to the node before it",
                        "edit node order only through Graph and Node methods (prepend, append, erase_node)")
        if cur._erased:
            raise _fail(cur, "it was erased but is still linked into the graph", "erase nodes with graph.erase_node")
        nodes.append(cur)
        prev, cur = cur, cur._next
        if len(nodes) > graph._len:
            raise _fail(cur if isinstance(cur, Node) else None, "the node list is longer than the graph's node count",
                        "insert nodes through Graph.create_node and its helpers")
    if len(nodes) != graph._len:
        raise _fail(None, f"the graph counts {graph._len} nodes but links {len(nodes)}",
                    "insert and erase nodes through Graph methods only")
    return nodes


def _check_names(nodes: list[Node]) -> None:
    seen: dict[str, Node] = {}
    for node in nodes:
        name = node.name
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED_NAMES:
            raise _fail(node, f"its name {name!r} is not a usable identifier (or shadows a keyword, builtin or np)",
                        "let the graph choose names (create_node(name=...) sanitizes and deduplicates them)")
        if name in seen:
            raise _fail(node, f"its name {name!r} is also the name of an earlier node",
                        "never assign node.name directly; create nodes with create_node(name=...)")
        seen[name] = node


def _check_targets(graph: Graph, nodes: list[Node]) -> None:
    from .cond import cond_of  # cond and loops import graph_module, which imports graph, which imports this lazily
    from .loops import loop_of

    owner = graph.owning_module
    seen_default = False
    for node in nodes:
        if not isinstance(node.op, Opcode):
            raise _fail(node, f"its opcode {node.op!r} is not one of the six Opcode values",
                        "use placeholder, get_attr, call_function, call_method, call_module or output")
        target = node.target
        if node.op == Opcode.CALL_FUNCTION:
            if not callable(target):
                raise _fail(node, f"its target {target!r} is not callable", "a call_function target must be a callable")
        elif node.op != Opcode.OUTPUT and not isinstance(target, str):
            raise _fail(node, f"a {node.op.value} node needs a string target, not {type(target).__name__}",
                        "use the attribute path or method name as the target")
        if node.op == Opcode.PLACEHOLDER:
            if len(node.args) > 1 or node.kwargs or any(True for _ in iter_nodes(node.args)):
                raise _fail(node, "a placeholder takes at most one constant default and no kwargs",
                            "create inputs with graph.placeholder(name, default=...)")
            if node.args:
                seen_default = True
            elif seen_default:
                raise _fail(node, "an input without default follows an input with a default",
                            "create inputs without defaults first")
        if node.op in (Opcode.GET_ATTR, Opcode.CALL_MODULE) and owner is not None and not _has_attribute(owner, target):
            raise _fail(node, f"the owning module has no attribute {target!r}",
                        f"add it first (gm.set_attribute({target!r}, value)) or fix the target path")
        if node.op == Opcode.CALL_MODULE and owner is not None:
            callee = loop_of(node) or cond_of(node)
            problem = callee.check_call(node) if callee is not None else None
            if problem is not None:
                raise _fail(node, problem, "build loop and cond nodes as fx_ir/README.md describes (Loops, Branches)")
        if node.op == Opcode.CALL_METHOD and (not node.args or not isinstance(node.target, str)):
            raise _fail(node, "a call_method node needs its receiver as args[0]", "pass (receiver, *args) as args")


def _has_attribute(owner: Any, qualname: str) -> bool:
    getter = getattr(owner, "get_attribute", None)
    try:
        if getter is not None:
            getter(qualname)
        else:
            value = owner
            for part in qualname.split("."):
                value = getattr(value, part)
    except AttributeError:
        return False
    return True


def _check_order_and_ownership(graph: Graph, nodes: list[Node]) -> None:
    defined: set[Node] = set()
    for node in nodes:
        if node.graph is not graph:
            raise _fail(node, "it is linked into this graph but its .graph is another graph",
                        "copy nodes between graphs with graph.node_copy(node, arg_transform)")
        for inp in (*iter_nodes(node.args), *iter_nodes(node.kwargs)):
            if inp.graph is not graph:
                raise _fail(node, f"its argument {inp.name} belongs to another graph",
                            "copy nodes with graph.node_copy(node, arg_transform) and map arguments "
                            "to this graph's nodes in arg_transform")
            if inp._erased:
                raise _fail(node, f"its argument {inp.name} was erased", "replace the use before erasing the node")
            if inp not in defined:
                raise _fail(node, f"its argument {inp.name} is used before it is defined (nodes must be in "
                            "topological order)", f"move {node.name} after {inp.name} (e.g. {inp.name}.append("
                            f"{node.name})) or create it inside graph.inserting_after({inp.name})")
        defined.add(node)


def _check_users(nodes: list[Node]) -> None:
    expected_users: dict[Node, dict[Node, None]] = {n: {} for n in nodes}
    for node in nodes:
        inputs: dict[Node, None] = {}
        for inp in (*iter_nodes(node.args), *iter_nodes(node.kwargs)):
            inputs.setdefault(inp, None)
            expected_users[inp].setdefault(node, None)
        if inputs.keys() != node._input_nodes.keys():
            raise _fail(node, "its recorded inputs do not match its args/kwargs (a nested list or dict was "
                        "mutated in place)", "assign a new value to node.args / node.kwargs instead")
    for node in nodes:
        if node.users.keys() != expected_users[node].keys():
            recorded = sorted(u.name for u in node.users)
            actual = sorted(u.name for u in expected_users[node])
            raise _fail(node, f"its users {recorded} disagree with the nodes that read it {actual}",
                        "change arguments only through node.args/kwargs, replace_input_with or replace_all_uses_with")


def _check_output(graph: Graph, nodes: list[Node]) -> None:
    outputs = [n for n in nodes if n.op == Opcode.OUTPUT]
    if len(outputs) != 1:
        raise _fail(outputs[1] if outputs else None, f"the graph has {len(outputs)} output nodes, not exactly one",
                    "create one output node with graph.output(value) (return a tuple for several values)")
    if nodes[-1] is not outputs[0]:
        raise _fail(outputs[0], f"the output node is not the last node ({nodes[-1].name} follows it)",
                    "move nodes before the output (output_node.prepend(node))")
    if len(outputs[0].args) != 1 or outputs[0].kwargs:
        raise _fail(outputs[0], "the output node takes exactly one argument (the returned value)",
                    "return several values as a tuple: graph.output((a, b))")
