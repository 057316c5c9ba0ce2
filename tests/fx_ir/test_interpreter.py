"""Tests of fx_ir/interpreter.py: per-opcode dispatch, overrides, error notes, value lifetime, ShapeProp.

The Interpreter is the reference semantics, so it is compared with plain NumPy directly.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest

from dynamo.fx_ir import Graph, GraphModule, Interpreter, Node, ShapeProp, TensorMeta, meta_of


def test_programs_match_numpy(program, rng, same, fresh_inputs) -> None:  # type: ignore[no-untyped-def]
    graph = program.build()
    inputs = program.inputs(rng)
    same(Interpreter(graph).run(*fresh_inputs(inputs)), program.reference(*fresh_inputs(inputs)))


def test_one_method_per_opcode_is_called() -> None:
    seen: list[tuple[str, Any]] = []

    class Recording(Interpreter):
        def placeholder(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            seen.append(("placeholder", target))
            return super().placeholder(target, args, kwargs)

        def get_attr(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            seen.append(("get_attr", target))
            return super().get_attr(target, args, kwargs)

        def call_function(self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            seen.append(("call_function", target))
            return super().call_function(target, args, kwargs)

        def call_method(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            seen.append(("call_method", target))
            return super().call_method(target, args, kwargs)

        def call_module(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            seen.append(("call_module", target))
            return super().call_module(target, args, kwargs)

        def output(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            seen.append(("output", target))
            return super().output(target, args, kwargs)

    g = Graph()
    x = g.placeholder("x")
    w = g.get_attr("w")
    y = g.call_function(operator.mul, (x, w))
    z = g.call_method("sum", (y,), {"axis": 0})
    g.output(g.call_module("double", (z,)))
    gm = GraphModule({"w": np.array([1.0, 2.0]), "double": lambda v: 2 * v}, g)
    assert Recording(gm).run(np.array([3.0, 4.0])) == 22.0
    assert seen == [("placeholder", "x"), ("get_attr", "w"), ("call_function", operator.mul),
                    ("call_method", "sum"), ("call_module", "double"), ("output", "output")]


def test_run_node_override_can_replace_operations() -> None:
    class AddIsSub(Interpreter):
        def run_node(self, node: Node) -> Any:
            if node.target is operator.add:
                args, _ = self.fetch_args_kwargs_from_env(node)
                return args[0] - args[1]
            return super().run_node(node)

    g = Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.add, (x, 1)))
    assert AddIsSub(g).run(5) == 4


def test_errors_get_a_note_naming_the_node() -> None:
    g = Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    total = g.call_function(np.add, (a, b))
    total.meta["source"] = "model.py:7 total = np.add(a, b)"
    g.output(total)
    with pytest.raises(TypeError) as info:
        Interpreter(g).run(np.ones(2), "x")
    assert info.value.__notes__ == [
        "While executing %add : call_function[target=np.add](args = (%a, %b))\n  from: model.py:7 total = np.add(a, b)"
    ]


def test_missing_inputs_and_defaults() -> None:
    g = Graph()
    x = g.placeholder("x")
    k = g.placeholder("k", default=3)
    g.output(g.call_function(operator.mul, (x, k)))
    assert Interpreter(g).run(2) == 6
    assert Interpreter(g).run(2, 5) == 10
    with pytest.raises(TypeError, match="missing value for graph input 'x'"):
        Interpreter(g).run()


def test_get_attr_without_module_is_a_clear_error() -> None:
    g = Graph()
    g.output(g.get_attr("table"))
    with pytest.raises(RuntimeError, match="cannot fetch attribute 'table': the graph has no owning module"):
        Interpreter(g).run()


def test_initial_env_skips_nodes() -> None:
    g = Graph()
    x = g.placeholder("x")
    slow = g.call_function(np.exp, (x,))
    g.output(g.call_function(operator.add, (slow, 1)))
    assert Interpreter(g).run(0.0, initial_env={slow: 41}) == 42


def test_values_are_dropped_after_last_use() -> None:
    live_sizes: list[int] = []

    class Watching(Interpreter):
        def run_node(self, node: Node) -> Any:
            live_sizes.append(len(self.env))
            return super().run_node(node)

    g = Graph()
    value: Node = g.placeholder("x")
    for _ in range(5):
        value = g.call_function(np.negative, (value,))
    g.output(value)
    assert Watching(g).run(1) == -1
    assert live_sizes == [0, 1, 1, 1, 1, 1, 1]
    live_sizes.clear()
    Watching(g, garbage_collect_values=False).run(1)
    assert live_sizes == [0, 1, 2, 3, 4, 5, 6]


def test_reading_an_uncomputed_node_is_reported() -> None:
    g = Graph()
    x = g.placeholder("x")
    y = g.call_function(np.exp, (x,))
    g.output(y)
    y.prepend(g.output_node)  # corrupt the order: output before its input
    with pytest.raises(RuntimeError, match="node exp is read before it was computed"):
        Interpreter(g).run(1.0)


def test_shape_prop_records_meta(programs, rng) -> None:  # type: ignore[no-untyped-def]
    program = programs["kmeans"]
    graph = program.build()
    X, means = rng.random((50, 3)), rng.random((4, 3)).astype(np.float32)
    result = ShapeProp(graph).propagate(X, means)
    np.testing.assert_array_equal(result, program.reference(X, means))
    assert {n.name: n.meta["val"] for n in graph.nodes} == {
        "X": TensorMeta((50, 3), np.float64),
        "means": TensorMeta((4, 3), np.float32),
        "getitem": TensorMeta((4, 1, 3), np.float32),
        "sub": TensorMeta((4, 50, 3), np.float64),
        "norm": TensorMeta((4, 50), np.float64),
        "argmin": TensorMeta((50,), np.int64),
        "output": TensorMeta((50,), np.int64),
    }


def test_shape_prop_scalars_python_values_and_tuples() -> None:
    g = Graph()
    x, n = g.placeholder("x"), g.placeholder("n")
    total = g.call_method("sum", (x,))
    shape = g.call_function(getattr, (x, "shape"))
    g.output((total, shape, n))
    ShapeProp(g).propagate(np.ones((2, 2), np.int32), 7)
    vals = {node.name: node.meta["val"] for node in g.nodes}
    assert vals["sum_1"] == TensorMeta((), np.int64, scalar=True)
    assert vals["getattr_1"] == (2, 2) and vals["n"] == 7
    assert vals["output"] == (TensorMeta((), np.int64, scalar=True), (2, 2), 7)
    assert meta_of([np.float32(1), "s"]) == [TensorMeta((), np.float32, scalar=True), "s"]
