"""Tests of loop nodes (fx_ir/loops.py): a call_module of a ForLoop (or a WhileLoop) runs like the Python loop it
stands for, in the generated code and the Interpreter, and every tool of the IR understands it."""
from __future__ import annotations

import copy
import operator

import numpy as np
import pytest

from dynamo.fx_ir import ForLoop, Graph, GraphLintError, GraphModule, Interpreter, WhileLoop, count_loops, fingerprint
from dynamo.fx_ir.passes import run_passes


def stencil_body() -> GraphModule:
    """One time step: B[1:-1] = (A[:-2] + A[2:]) / 2 written in place; carried total += B[1]."""
    g = Graph()
    i, total, A, B = (g.placeholder(n) for n in ("i", "total", "A", "B"))
    left = g.call_function(operator.getitem, (A, slice(None, -2)))
    right = g.call_function(operator.getitem, (A, slice(2, None)))
    mean = g.call_function(operator.truediv, (g.call_function(operator.add, (left, right)), 2.0))
    g.call_function(operator.setitem, (B, slice(1, -1), mean))
    g.call_function(operator.setitem, (A, slice(1, -1), g.call_function(operator.getitem, (B, slice(1, -1)))))
    picked = g.call_function(operator.getitem, (B, i))
    g.output((g.call_function(operator.add, (total, picked)),))
    return GraphModule({}, g)


def stencil_parent(body: GraphModule) -> GraphModule:
    g = Graph()
    n, A, B = g.placeholder("n"), g.placeholder("A"), g.placeholder("B")
    loop = g.call_module("loop_0", (1, n, 1, 0.0, A, B))
    g.output((g.call_function(operator.getitem, (loop, 0)),))
    return GraphModule({"loop_0": ForLoop(body, num_carried=1)}, g)


def stencil_plain(n: int, A: np.ndarray, B: np.ndarray) -> float:
    total = 0.0
    for i in range(1, n):
        B[1:-1] = (A[:-2] + A[2:]) / 2.0
        A[1:-1] = B[1:-1]
        total = total + B[i]
    return total


def inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random(12), rng.random(12)


@pytest.mark.parametrize("n", [0, 1, 5, 9])
def test_loop_node_runs_like_the_python_loop_and_writes_arrays_in_place(n: int) -> None:
    gm = stencil_parent(stencil_body())
    A0, B0 = inputs()
    A1, B1 = A0.copy(), B0.copy()
    expected = stencil_plain(n, A0, B0)
    (got,) = gm(n, A1, B1)
    assert got == expected and type(got) is type(expected)
    assert np.array_equal(A0, A1) and np.array_equal(B0, B1)


def test_interpreter_interprets_the_body() -> None:
    gm = stencil_parent(stencil_body())
    A0, B0 = inputs(1)
    A1, B1 = A0.copy(), B0.copy()
    seen = []

    class Recording(Interpreter):
        def call_function(self, target, args, kwargs):  # type: ignore[no-untyped-def]
            seen.append(target)
            return super().call_function(target, args, kwargs)

    (got,) = Recording(gm).run(6, A1, B1)
    assert got == stencil_plain(6, A0, B0)
    assert np.array_equal(A0, A1) and np.array_equal(B0, B1)
    assert seen.count(operator.setitem) == 2 * 5  # the body's two writes, per iteration


def test_printing_and_code_show_the_loop_and_its_body() -> None:
    gm = stencil_parent(stencil_body())
    text = str(gm.graph)
    assert "call_module[target=loop_0](args = (1, %n, 1, 0.0, %A, %B))" in text
    assert "%loop_0 body:" in text and "%setitem" in text
    assert "loop_0 = self.loop_0(1, n, 1, 0.0, A, B)" in gm.code
    assert count_loops(gm.graph) == 1


def test_lint_checks_the_loop_arity_and_body() -> None:
    gm = stencil_parent(stencil_body())
    gm.graph.lint()
    node = next(n for n in gm.graph.nodes if n.op == "call_module")
    node.args = node.args[:-1]
    with pytest.raises(GraphLintError, match="positional arguments"):
        gm.graph.lint()


def test_fingerprint_sees_the_body() -> None:
    a = stencil_parent(stencil_body())
    b = stencil_parent(stencil_body())
    assert fingerprint(a) == fingerprint(b)
    other = stencil_body()
    setitem = next(n for n in other.graph.nodes if n.target is operator.truediv)
    setitem.args = (setitem.args[0], 3.0)
    assert fingerprint(stencil_parent(other)) != fingerprint(a)


def test_passes_keep_a_mutating_loop_and_never_merge_loops() -> None:
    body = stencil_body()
    g = Graph()
    n, A, B = g.placeholder("n"), g.placeholder("A"), g.placeholder("B")
    g.call_module("loop_0", (1, n, 1, 0.0, A, B))  # result unused: kept for its writes
    second = g.call_module("loop_1", (1, n, 1, 0.0, A, B))  # the same loop again: runs again
    g.output((g.call_function(operator.getitem, (second, 0)),))
    gm = GraphModule({"loop_0": ForLoop(body, 1), "loop_1": ForLoop(body, 1)}, g)
    run_passes(gm)
    assert count_loops(gm.graph) == 2
    A0, B0 = inputs(2)
    A1, B1 = A0.copy(), B0.copy()
    stencil_plain(4, A0, B0)
    expected = stencil_plain(4, A0, B0)
    assert gm(4, A1, B1) == (expected,)
    assert np.array_equal(A0, A1)


def test_pure_unused_loop_is_dead_code_and_deepcopy_is_independent() -> None:
    g = Graph()
    i, x = g.placeholder("i"), g.placeholder("x")
    g.output((g.call_function(operator.mul, (x, 2)),))
    body = GraphModule({}, g)
    parent = Graph()
    n, x0 = parent.placeholder("n"), parent.placeholder("x0")
    parent.call_module("loop_0", (0, n, 1, x0))
    parent.output(x0)
    gm = GraphModule({"loop_0": ForLoop(body, 1)}, parent)
    run_passes(gm)
    assert count_loops(gm.graph) == 0
    parent2 = Graph()
    n2, x2 = parent2.placeholder("n"), parent2.placeholder("x0")
    parent2.output((parent2.call_function(operator.getitem, (parent2.call_module("loop_0", (0, n2, 1, x2)), 0)),))
    gm2 = GraphModule({"loop_0": ForLoop(body, 1)}, parent2)
    clone = copy.deepcopy(gm2)
    assert clone(10, 3) == gm2(10, 3) == (3 * 2**10,)
    assert clone.loop_0.body is not gm2.loop_0.body


# ---- while loops -------------------------------------------------------------------------------------------

def halving_while() -> GraphModule:
    """x = x * 0.5 while x.max() > tol: the body returns (next test, next x)."""
    body = Graph()
    x, tol = body.placeholder("x"), body.placeholder("tol")
    half = body.call_function(operator.mul, (x, 0.5))
    test = body.call_function(operator.gt, (body.call_method("max", (half,)), tol))
    body.output((test, half))
    g = Graph()
    x0, tol0 = g.placeholder("x"), g.placeholder("tol")
    first = g.call_function(operator.gt, (g.call_method("max", (x0,)), tol0))
    loop = g.call_module("loop_0", (first, x0, tol0))
    g.output((g.call_function(operator.getitem, (loop, 0)),))
    return GraphModule({"loop_0": WhileLoop(GraphModule({}, body), num_carried=1)}, g)


def halving_plain(x: np.ndarray, tol: float) -> np.ndarray:
    while x.max() > tol:
        x = x * 0.5
    return x


@pytest.mark.parametrize("scale", [0.001, 1.0, 1000.0])
def test_while_node_runs_like_the_python_loop_generated_and_interpreted(scale: float) -> None:
    gm = halving_while()
    gm.graph.lint()
    x = np.random.default_rng(1).random(6) * scale
    expected = halving_plain(x, 0.01)
    (got,) = gm(x, 0.01)
    (interpreted,) = Interpreter(gm).run(x, 0.01)
    assert np.array_equal(got, expected) and np.array_equal(interpreted, expected)
    assert count_loops(gm.graph) == 1
    assert "%loop_0 body:" in str(gm.graph)


def test_while_node_lint_fingerprint_and_copy() -> None:
    gm = halving_while()
    assert fingerprint(copy.deepcopy(gm)) == fingerprint(gm)
    as_for = stencil_parent(stencil_body())
    assert fingerprint(as_for) != fingerprint(gm)
    loop_node = next(n for n in gm.graph.nodes if n.op == "call_module")
    loop_node.args = loop_node.args[:-1]  # the captured tol dropped
    with pytest.raises(GraphLintError, match="while loop node takes"):
        gm.graph.lint()
