"""Tests of fx_ir/graph.py and fx_ir/lint.py: order, builders, insertion points, editing, copies, DCE, lint.

Lint tests corrupt a valid graph on purpose, one invariant at a time.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest

from dynamo.fx_ir import Graph, GraphLintError, GraphModule, Opcode, mark_impure


def names(g: Graph) -> list[str]:
    return [n.name for n in g.nodes]


def small_graph() -> Graph:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(np.add, (x, y))
    b = g.call_function(np.multiply, (a, 2))
    g.output(b)
    return g


def test_builders_make_the_right_nodes() -> None:
    g = Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default=None)
    attr = g.get_attr("consts.scale")
    fn = g.call_function(np.multiply, (x, attr), {"dtype": np.float32})
    meth = g.call_method("reshape", (fn, -1))
    mod = g.call_module("kernel", (meth, y))
    out = g.output((mod, fn))
    assert [(n.op, n.target) for n in g.nodes] == [
        (Opcode.PLACEHOLDER, "x"), (Opcode.PLACEHOLDER, "y"), (Opcode.GET_ATTR, "consts.scale"),
        (Opcode.CALL_FUNCTION, np.multiply), (Opcode.CALL_METHOD, "reshape"), (Opcode.CALL_MODULE, "kernel"),
        (Opcode.OUTPUT, "output"),
    ]
    assert x.args == () and y.args == (None,)
    assert fn.kwargs == {"dtype": np.float32}
    assert out.args == ((mod, fn),) and g.output_node is out


def test_nodes_iterate_in_order_forward_and_backward() -> None:
    g = small_graph()
    assert names(g) == ["x", "y", "add", "multiply", "output"]
    assert [n.name for n in reversed(g.nodes)] == ["output", "multiply", "add", "y", "x"]
    assert len(g) == len(g.nodes) == 5
    assert g.output_node in g.nodes
    assert repr(g.nodes) == "[x, y, add, multiply, output]"


def test_erasing_while_iterating_visits_every_remaining_node() -> None:
    g = Graph()
    x = g.placeholder("x")
    dead = [g.call_function(np.exp, (x,)) for _ in range(4)]
    g.output(x)
    seen = []
    for node in g.nodes:
        seen.append(node.name)
        if node in dead:
            g.erase_node(node)
            if node is dead[1]:
                g.erase_node(dead[2])  # erase the next node too
    assert seen == ["x", "exp", "exp_1", "exp_3", "output"]
    assert names(g) == ["x", "output"]


def test_find_nodes() -> None:
    g = small_graph()
    assert [n.name for n in g.find_nodes(op="placeholder")] == ["x", "y"]
    assert [n.name for n in g.find_nodes(target=np.add)] == ["add"]
    assert g.find_nodes(op="call_function", target=np.subtract) == []


def test_default_insertion_point_stays_before_the_output() -> None:
    g = Graph()
    x = g.placeholder("x")
    g.output(x)
    g.call_function(np.exp, (x,))
    assert names(g) == ["x", "exp", "output"]


def test_inserting_before_and_after_keep_creation_order() -> None:
    g = small_graph()
    add = g.find_nodes(target=np.add)[0]
    with g.inserting_before(add):
        g.call_function(np.sin, (1.0,))
        g.call_function(np.cos, (1.0,))
    with g.inserting_after(add):
        g.call_function(np.tan, (1.0,))
        g.call_function(np.exp, (1.0,))
    assert names(g) == ["x", "y", "sin", "cos", "add", "tan", "exp", "multiply", "output"]


def test_insertion_points_nest_and_restore() -> None:
    g = small_graph()
    mul = g.find_nodes(target=np.multiply)[0]
    with g.inserting_after(None):  # after nothing: at the start
        g.placeholder("first")
        with g.inserting_after(mul):
            g.call_function(np.sin, (1.0,))
        g.placeholder("second")
    with g.inserting_before(None):  # before nothing: at the end, but before the output
        g.call_function(np.cos, (1.0,))
        g.call_function(np.tan, (1.0,))
    assert names(g) == ["first", "second", "x", "y", "add", "multiply", "sin", "cos", "tan", "output"]
    with g.inserting_after(g.output_node):
        g.call_function(np.exp, (1.0,))  # really after the output: lint objects
    assert names(g)[-2:] == ["output", "exp"]


def test_inserting_before_none_appends_inputs_in_order() -> None:
    g = Graph()
    for name in ("a", "b", "c"):
        with g.inserting_before(None):
            g.placeholder(name)
    assert names(g) == ["a", "b", "c"]


def test_inserting_relative_to_a_foreign_node_is_refused() -> None:
    g, other = small_graph(), small_graph()
    with pytest.raises(ValueError, match="belongs to another graph"):
        with g.inserting_before(other.output_node):
            pass


def test_erase_node() -> None:
    g = small_graph()
    mul = g.find_nodes(target=np.multiply)[0]
    add = mul.args[0]
    g.output_node.args = (add,)
    g.erase_node(mul)
    assert names(g) == ["x", "y", "add", "output"]
    assert list(add.users) == [g.output_node]
    assert mul not in g.nodes
    with pytest.raises(ValueError, match="already erased"):
        g.erase_node(mul)
    with pytest.raises(ValueError, match="another graph"):
        g.erase_node(small_graph().output_node)
    g.lint()


def test_names_are_not_reused_after_erase() -> None:
    g = Graph()
    x = g.placeholder("x")
    g.erase_node(g.call_function(np.exp, (x,)))
    assert g.call_function(np.exp, (x,)).name == "exp_1"


def test_node_copy_maps_arguments_into_the_new_graph() -> None:
    src = small_graph()
    dst = Graph()
    env = {}
    for node in src.nodes:
        env[node] = dst.node_copy(node, lambda n: env[n])
    dst.lint()
    assert names(dst) == names(src)
    assert str(dst) == str(src)
    assert all(n.graph is dst for n in dst.nodes)


def test_graph_copy_with_premapped_inputs() -> None:
    inner = small_graph()
    outer = Graph()
    a = outer.placeholder("a")
    x, y = inner.find_nodes(op="placeholder")
    result = outer.graph_copy(inner, {x: a, y: a})
    outer.output(result)
    outer.lint()
    assert str(outer) == "\n".join([
        "graph(a):",
        "    %a : placeholder[target=a]",
        "    %add : call_function[target=np.add](args = (%a, %a))",
        "    %multiply : call_function[target=np.multiply](args = (%add, 2))",
        "    return %multiply",
    ])


def test_copy_is_independent_and_identical() -> None:
    g = small_graph()
    g.find_nodes(target=np.add)[0].meta["val"] = "marker"
    clone = g.copy()
    assert str(clone) == str(g)
    assert clone.find_nodes(target=np.add)[0].meta["val"] == "marker"
    clone.eliminate_dead_code()
    mul = clone.find_nodes(target=np.multiply)[0]
    mul.args = (mul.args[0], 3)
    assert g.find_nodes(target=np.multiply)[0].args[1] == 2
    clone.lint()
    g.lint()


def test_eliminate_dead_code_removes_unused_pure_chains() -> None:
    g = Graph()
    x = g.placeholder("x")
    g.placeholder("unused")
    dead = g.call_function(np.sin, (g.call_function(np.exp, (x,)),))
    g.call_method("sum", (dead,))
    live = g.call_function(np.cos, (x,))
    g.output(live)
    assert len(g) == 7
    assert g.eliminate_dead_code() is True
    assert names(g) == ["x", "unused", "cos", "output"]  # inputs stay: they are the signature
    assert g.eliminate_dead_code() is False


def test_eliminate_dead_code_keeps_side_effects() -> None:
    def write_log(value: object) -> None:
        return None

    mark_impure(write_log)
    g = Graph()
    x = g.placeholder("x")
    kept = [
        g.call_function(operator.setitem, (x, 0, 1.0)),
        g.call_function(operator.iadd, (x, 1)),
        g.call_function(np.multiply, (x, 2), {"out": x}),
        g.call_method("sort", (x,)),
        g.call_function(np.random.rand, (2,)),
        g.call_function(write_log, (x,)),
    ]
    flagged = g.call_function(np.exp, (x,))
    flagged.meta["impure"] = True
    custom = g.call_function(np.tan, (x,))
    g.call_function(np.sin, (x,))  # the only dead node
    g.output(None)
    assert g.eliminate_dead_code(is_impure_node=lambda n: n is custom) is True
    assert names(g) == ["x", *(n.name for n in kept), "exp", "tan", "output"]


def test_str_of_a_graph_is_stable() -> None:
    assert str(small_graph()) == "\n".join([
        "graph(x, y):",
        "    %x : placeholder[target=x]",
        "    %y : placeholder[target=y]",
        "    %add : call_function[target=np.add](args = (%x, %y))",
        "    %multiply : call_function[target=np.multiply](args = (%add, 2))",
        "    return %multiply",
    ])
    assert repr(small_graph()) == "<Graph with 5 nodes>"


# -- lint ------------------------------------------------------------------------------------

def test_lint_accepts_valid_graphs(program) -> None:  # type: ignore[no-untyped-def]
    program.build().lint()


def lint_message(g: Graph) -> str:
    with pytest.raises(GraphLintError) as info:
        g.lint()
    return str(info.value)


def test_lint_use_before_definition() -> None:
    g = small_graph()
    add = g.find_nodes(target=np.add)[0]
    g.find_nodes(op="placeholder")[0].prepend(add)
    message = lint_message(g)
    assert message.startswith("node add (%add : call_function[target=np.add](args = (%x, %y))):")
    assert "argument x is used before it is defined" in message and "inserting_after(x)" in message


def test_lint_argument_from_another_graph() -> None:
    g, other = small_graph(), small_graph()
    g.find_nodes(target=np.add)[0].args = (other.find_nodes(op="placeholder")[0], 1)
    message = lint_message(g)
    assert "node add" in message and "belongs to another graph" in message and "node_copy" in message


def test_lint_node_whose_graph_field_is_wrong() -> None:
    g, other = small_graph(), small_graph()
    g.find_nodes(target=np.add)[0].graph = other
    assert "its .graph is another graph" in lint_message(g)


def test_lint_users_out_of_sync() -> None:
    g = small_graph()
    x = g.find_nodes(op="placeholder")[0]
    x.users.clear()
    message = lint_message(g)
    assert "node x" in message and "disagree with the nodes that read it ['add']" in message


def test_lint_arguments_mutated_in_place() -> None:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    stack = g.call_function(np.stack, ([x],))
    g.output(stack)
    stack.args[0].append(y)  # bypasses the args setter
    assert "mutated in place" in lint_message(g)


def test_lint_duplicate_and_reserved_names() -> None:
    g = small_graph()
    g.find_nodes(target=np.multiply)[0].name = "add"
    assert "also the name of an earlier node" in lint_message(g)
    g = small_graph()
    g.find_nodes(target=np.multiply)[0].name = "np"
    assert "is not a usable identifier" in lint_message(g)


@pytest.mark.parametrize("count", [0, 2])
def test_lint_needs_exactly_one_output(count: int) -> None:
    g = Graph()
    x = g.placeholder("x")
    for _ in range(count):
        with g.inserting_after(g.output_node or x):
            g.output(x)
    assert f"the graph has {count} output nodes, not exactly one" in lint_message(g)


def test_lint_output_must_be_last() -> None:
    g = small_graph()
    with g.inserting_after(g.output_node):
        g.call_function(np.exp, (1.0,))
    message = lint_message(g)
    assert "the output node is not the last node (exp follows it)" in message and "prepend" in message


def test_lint_invalid_opcode_and_target() -> None:
    g = small_graph()
    g.find_nodes(target=np.add)[0].op = "call_lambda"  # type: ignore[assignment]
    assert "is not one of the six Opcode values" in lint_message(g)
    g = small_graph()
    g.find_nodes(target=np.add)[0].target = 3
    assert "is not callable" in lint_message(g)


def test_lint_placeholder_default_order() -> None:
    g = Graph()
    g.placeholder("a", default=1)
    g.placeholder("b")
    g.output(None)
    assert "an input without default follows an input with a default" in lint_message(g)


def test_lint_missing_attribute_of_the_owning_module() -> None:
    g = Graph()
    g.output(g.get_attr("table"))
    g.lint()  # without an owning module nothing can be checked
    gm = GraphModule({"table": np.ones(2)}, g)
    gm.delete_attribute("table")
    message = lint_message(g)
    assert "owning module has no attribute 'table'" in message and "set_attribute('table'" in message


def test_lint_broken_links_and_counts() -> None:
    g = small_graph()
    g._len += 1
    assert "counts 6 nodes but links 5" in lint_message(g)
    g = small_graph()
    add = g.find_nodes(target=np.add)[0]
    add._prev = add  # corrupt the list
    assert "prev link" in lint_message(g)


def test_lint_error_carries_the_node() -> None:
    g = small_graph()
    g.find_nodes(target=np.multiply)[0].name = "add"
    with pytest.raises(GraphLintError) as info:
        g.lint()
    assert info.value.node is g.find_nodes(target=np.multiply)[0]
