"""Tests of fx_ir/node.py: opcodes, naming, users bookkeeping, replacement, links, impurity, map_arg.

Each test builds a tiny graph and checks one rule of Node.
"""
from __future__ import annotations

import collections
import operator

import numpy as np
import pytest

from dynamo.fx_ir import Graph, Node, Opcode, map_aggregate, map_arg, mark_impure


def test_exactly_six_opcodes() -> None:
    assert [o.value for o in Opcode] == [
        "placeholder", "get_attr", "call_function", "call_method", "call_module", "output",
    ]
    assert Opcode.CALL_FUNCTION == "call_function"


def test_unknown_opcode_is_rejected_with_the_valid_list() -> None:
    g = Graph()
    with pytest.raises(ValueError, match="valid opcodes are: placeholder, get_attr"):
        g.create_node("call_lambda", np.add)


@pytest.mark.parametrize(
    ("op", "target"),
    [("call_function", "np.add"), ("call_method", np.add), ("placeholder", ""), ("get_attr", 3), ("call_module", None)],
)
def test_targets_are_validated(op: str, target: object) -> None:
    with pytest.raises(TypeError, match=op):
        Graph().create_node(op, target)


def test_op_is_an_opcode_member() -> None:
    g = Graph()
    node = g.create_node("call_function", np.add, (1, 2))
    assert node.op is Opcode.CALL_FUNCTION


def test_names_come_from_targets_and_are_unique() -> None:
    g = Graph()
    x = g.placeholder("x")
    names = [
        g.call_function(np.add, (x, 1)).name,
        g.call_function(operator.add, (x, 1)).name,
        g.call_function(np.add, (x, 2)).name,
        g.call_function(np.linalg.norm, (x,)).name,
        g.call_method("sum", (x,)).name,
        g.call_function(np.sum, (x,)).name,
        g.call_method("__getitem__", (x, 0)).name,
        g.call_function(np.add.reduce, (x,)).name,
        g.call_function(lambda t: t, (x,)).name,
        g.get_attr("consts.table").name,
        g.call_module("kernels.fused", (x,)).name,
    ]
    assert names == [
        "add", "add_1", "add_2", "norm", "sum_1", "sum_2", "getitem", "add_reduce", "lambda_1",
        "consts_table", "kernels_fused",
    ]


@pytest.mark.parametrize(
    ("requested", "given"),
    [("np", "np_1"), ("input", "input_1"), ("lambda", "lambda_1"), ("self", "self_1"), ("class", "class_1"),
     ("2d", "_2d"), ("a b", "a_b"), ("x", "x")],
)
def test_placeholder_names_never_shadow_keywords_builtins_or_np(requested: str, given: str) -> None:
    node = Graph().placeholder(requested)
    assert node.name == given
    assert node.target == requested  # the input keeps its real name as target


def test_explicit_names_are_kept_when_free_and_deduplicated_otherwise() -> None:
    g = Graph()
    x = g.placeholder("x")
    assert g.create_node("call_function", np.add, (x, 1), name="add_1").name == "add_1"
    assert g.call_function(np.add, (x, 1)).name == "add"
    assert g.create_node("call_function", np.add, (x, 1), name="add_1").name == "add_2"
    assert g.create_node("call_function", np.add, (x, 1), name="x").name == "x_1"


def test_users_follow_args_and_kwargs() -> None:
    g = Graph()
    x, y, z = g.placeholder("x"), g.placeholder("y"), g.placeholder("z")
    node = g.call_function(np.add, (x, y), {"out": None})
    assert list(x.users) == [node] and list(y.users) == [node] and not z.users
    node.args = (z, z)
    assert not x.users and not y.users and list(z.users) == [node]
    assert node.all_input_nodes == [z]
    node.kwargs = {"where": x}
    assert list(x.users) == [node]
    assert node.all_input_nodes == [z, x]


def test_nested_arguments_including_slices_register_users() -> None:
    g = Graph()
    a, lo, hi = g.placeholder("a"), g.placeholder("lo"), g.placeholder("hi")
    item = g.call_function(operator.getitem, (a, (slice(lo, hi, None), [Ellipsis, {"k": hi}])))
    assert item.all_input_nodes == [a, lo, hi]
    assert item in lo.users and item in hi.users
    item.args = (a, 0)
    assert not lo.users and not hi.users


def test_all_input_nodes_is_ordered_and_distinct() -> None:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    node = g.call_function(np.where, (y, x, y), {"extra": [x]})
    assert node.all_input_nodes == [y, x]


def test_update_arg_and_kwarg() -> None:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    node = g.call_function(np.sum, (x,), {"axis": 0})
    node.update_arg(0, y)
    node.update_kwarg("axis", 1)
    assert node.args == (y,) and node.kwargs == {"axis": 1}
    assert not x.users and node in y.users


def test_args_and_kwargs_types_are_checked() -> None:
    g = Graph()
    node = g.call_function(np.add, (1, 2))
    with pytest.raises(TypeError, match="tuple"):
        node.args = 3  # type: ignore[assignment]
    with pytest.raises(TypeError, match="string keys"):
        node.kwargs = {1: 2}  # type: ignore[dict-item]


def test_list_args_become_tuples() -> None:
    node = Graph().call_function(np.add, [1, 2])  # type: ignore[arg-type]
    assert node.args == (1, 2)


def test_replace_all_uses_with() -> None:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(np.exp, (x,))
    b = g.call_function(np.add, (a, a))
    c = g.call_function(operator.getitem, (y, slice(a, None)))
    changed = a.replace_all_uses_with(y)
    assert set(changed) == {b, c}
    assert b.args == (y, y) and c.args == (y, slice(y, None, None))
    assert not a.users and set(y.users) == {b, c}


def test_replace_all_uses_with_a_filter_and_with_a_constant() -> None:
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.exp, (x,))
    b, c = g.call_function(np.sin, (a,)), g.call_function(np.cos, (a,))
    assert a.replace_all_uses_with(2.0, delete_user_cb=lambda user: user is b) == [b]
    assert b.args == (2.0,) and c.args == (a,)
    assert list(a.users) == [c]
    assert a.replace_all_uses_with(a) == []


def test_replace_input_with() -> None:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    node = g.call_function(np.add, (x, [x]), {"where": x})
    node.replace_input_with(x, y)
    assert node.args == (y, [y]) and node.kwargs == {"where": y}
    assert not x.users and list(y.users) == [node]


def test_prev_and_next() -> None:
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.exp, (x,))
    out = g.output(a)
    assert x.prev is None and x.next is a
    assert a.prev is x and a.next is out
    assert out.next is None


def test_prepend_and_append_move_nodes() -> None:
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.exp, (x,))
    b = g.call_function(np.sin, (x,))
    g.output((a, b))
    a.prepend(b)
    assert [n.name for n in g.nodes] == ["x", "sin", "exp", "output"]
    b.append(x)  # x moves after sin: order is now wrong, and lint must say so
    assert [n.name for n in g.nodes] == ["sin", "x", "exp", "output"]
    other = Graph().placeholder("z")
    with pytest.raises(ValueError, match="different graphs"):
        a.append(other)


def test_a_node_with_users_cannot_be_erased() -> None:
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.exp, (x,))
    g.output(a)
    with pytest.raises(RuntimeError, match=r"cannot erase node exp: it is still used by output.*replace_all_uses_with"):
        g.erase_node(a)


def _impurity(build) -> bool:  # type: ignore[no-untyped-def]
    g = Graph()
    x = g.placeholder("x")
    return build(g, x).is_impure()


@pytest.mark.parametrize(
    "build",
    [
        lambda g, x: x,
        lambda g, x: g.output(x),
        lambda g, x: g.call_function(operator.setitem, (x, 0, 1.0)),
        lambda g, x: g.call_function(operator.iadd, (x, 1)),
        lambda g, x: g.call_function(operator.imatmul, (x, x)),
        lambda g, x: g.call_function(np.add, (x, 1), {"out": x}),
        lambda g, x: g.call_function(np.add, (x, 1, x)),
        lambda g, x: g.call_function(np.add.at, (x, [0], 1)),
        lambda g, x: g.call_function(np.copyto, (x, 0)),
        lambda g, x: g.call_function(np.random.rand, (3,)),
        lambda g, x: g.call_function(np.random.default_rng(0).normal, ()),
        lambda g, x: g.call_method("fill", (x, 0)),
        lambda g, x: g.call_method("sort", (x,)),
        lambda g, x: g.call_method("__setitem__", (x, 0, 1)),
        lambda g, x: g.call_method("__iadd__", (x, 1)),
        lambda g, x: g.call_method("normal", (x,)),
        lambda g, x: g.call_method("sum", (x,), {"out": x}),
        lambda g, x: g.call_module("kernel", (x,)),  # no owning module: the callee is unknown
    ],
)
def test_impure_nodes(build) -> None:  # type: ignore[no-untyped-def]
    assert _impurity(build)


@pytest.mark.parametrize(
    "build",
    [
        lambda g, x: g.call_function(np.add, (x, 1)),
        lambda g, x: g.call_function(np.add, (x, 1), {"out": None}),
        lambda g, x: g.call_function(operator.add, (x, 1)),
        lambda g, x: g.call_function(operator.getitem, (x, 0)),
        lambda g, x: g.call_method("sum", (x,), {"axis": 0}),
        lambda g, x: g.get_attr("table"),
    ],
)
def test_pure_nodes(build) -> None:  # type: ignore[no-untyped-def]
    assert not _impurity(build)


def test_meta_impure_flag() -> None:
    g = Graph()
    node = g.call_function(np.add, (1, 2))
    assert not node.is_impure()
    node.meta["impure"] = True
    assert node.is_impure()


def test_mark_impure_registers_callables_and_method_names() -> None:
    def log_value(x: object) -> object:
        return x

    g = Graph()
    x = g.placeholder("x")
    call, method = g.call_function(log_value, (x,)), g.call_method("record_to_disk", (x,))
    assert not call.is_impure() and not method.is_impure()
    assert mark_impure(log_value) is log_value
    mark_impure("record_to_disk")
    assert call.is_impure() and method.is_impure()


def test_map_arg_rebuilds_nested_structures() -> None:
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    Pair = collections.namedtuple("Pair", "left right")
    value = (x, [1, {"k": y}], slice(x, None, 2), Pair(x, 3))
    mapped = map_arg(value, lambda n: n.name.upper())
    assert mapped == ("X", [1, {"k": "Y"}], slice("X", None, 2), Pair("X", 3))
    assert type(mapped[3]) is Pair
    assert map_aggregate((1, [2]), lambda v: v * 10) == (10, [20])


def test_format_node_and_repr() -> None:
    g = Graph()
    x = g.placeholder("x")
    node = g.call_function(np.sum, (x,), {"axis": 1})
    assert node.format_node() == "%sum_1 : call_function[target=np.sum](args = (%x,), kwargs = {axis: 1})"
    assert repr(node) == "sum_1"
    assert isinstance(node, Node)


@pytest.mark.parametrize("target", [print, setattr, next, np.ndarray.sort, np.ndarray.fill])
def test_effectful_builtins_and_unbound_mutating_methods_are_impure(target: object) -> None:
    g = Graph()
    x = g.placeholder("x")
    assert g.call_function(target, (x,)).is_impure()
