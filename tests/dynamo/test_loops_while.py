"""While loops that stay loops (dynamo/while_capture.py): a `while` whose test is computed in the graph
from the data becomes one WhileLoop node, traced once. Every program runs compiled and plain on copies
of the same inputs, three calls or more, and must give the same results and leave the same arrays;
exact graph and loop counts; bodies that cannot be captured run as before, and explain says why."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import dynamo
from dynamo.fx_ir import WhileLoop, count_loops, loop_nodes, loop_of
from tests.support import compile_with_counter, graph_breaks, same_value


def check_calls(fn, inputs, backend="numpy"):
    """fn compiled and plain on copies of each input tuple: same results, same arrays after."""
    compiled = dynamo.compile(fn, backend=backend)
    for args in inputs:
        plain_args, compiled_args = copy.deepcopy(args), copy.deepcopy(args)
        want = fn(*plain_args)
        got = compiled(*compiled_args)
        assert same_value(got, want), (got, want)
        for p, c in zip(plain_args, compiled_args):
            assert same_value(c, p)
    return compiled


def rng(seed):
    return np.random.default_rng(seed)


# ---- programs ---------------------------------------------------------------------------------------------

def halve_until_small(x, tol):
    while np.abs(x).max() > tol:
        x = x * 0.5
    return x


def jacobi_until_converged(A, b, tol):
    x = np.zeros_like(b)
    r = b - A @ x
    while np.linalg.norm(r) > tol:
        x = x + r / np.diag(A)
        r = b - A @ x
    return x, r


def shrink_in_place(x):
    while x.sum() > 1.0:
        x[:] = x * 0.75
    return x


def newton_sqrt_per_row(A):
    out = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        a = A[i].sum()
        y = a
        while abs(y * y - a) > 1e-9 * a:
            y = 0.5 * (y + a / y)
        out[i] = y
    return out


def diagonally_dominant(n, seed):
    g = rng(seed)
    return np.eye(n) * 4 + g.random((n, n)) * 0.1, g.random(n), 1e-10


# ---- captured -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["numpy", "eager"])
def test_convergence_loop_is_one_while_node_and_new_data_does_not_recompile(backend):
    inputs = [(rng(s).random(20) * 10 ** s, 1e-3) for s in (1, 2, 3, 0)]  # 13, 17, 20 and 10 iterations
    check_calls(halve_until_small, inputs, backend=backend)
    compiled, counter = compile_with_counter(halve_until_small)
    for args in inputs:
        assert same_value(compiled(*copy.deepcopy(args)), halve_until_small(*copy.deepcopy(args)))
    assert counter.frame_count == 1
    (graph,) = counter.graphs
    (node,) = loop_nodes(graph.graph)
    assert isinstance(loop_of(node), WhileLoop) and count_loops(graph.graph) == 1


def test_solver_carries_two_arrays():
    check_calls(jacobi_until_converged, [diagonally_dominant(n, n) for n in (8, 8, 8, 12)])
    compiled, counter = compile_with_counter(jacobi_until_converged)
    compiled(*diagonally_dominant(8, 0))
    assert counter.frame_count == 1 and [count_loops(g.graph) for g in counter.graphs] == [1]
    assert not graph_breaks(compiled)


def test_loop_that_writes_its_argument_in_place_and_one_that_never_runs():
    inputs = [(rng(1).random(30) * 4,), (rng(2).random(30) * 9,), (np.full(30, 0.01),)]
    check_calls(shrink_in_place, inputs)
    compiled, counter = compile_with_counter(shrink_in_place)
    for args in inputs:
        compiled(*copy.deepcopy(args))
    assert counter.frame_count == 1 and [count_loops(g.graph) for g in counter.graphs] == [1]


def test_while_nested_in_a_captured_for_loop():
    inputs = [(rng(n).random((n, 4)) * 100,) for n in (70, 70, 80)]
    check_calls(newton_sqrt_per_row, inputs)
    report = dynamo.explain(newton_sqrt_per_row, backend="numpy")(*inputs[0])
    assert report.graph_count == 1 and report.loop_count == 2, str(report)
    text = str(report)
    line = newton_sqrt_per_row.__code__.co_firstlineno + 5
    assert f"  while loop at {__file__}:{line}: as long as its condition holds," in text, text


def test_explain_lists_the_while_loop_with_its_carried_values():
    report = dynamo.explain(jacobi_until_converged, backend="numpy")(*diagonally_dominant(8, 0))
    text = str(report)
    line = jacobi_until_converged.__code__.co_firstlineno + 3
    assert f"while loop at {__file__}:{line}: as long as its condition holds, 7 ops per iteration" in text, text
    assert "carried: x, r" in text


# ---- loops that cannot be captured run as before -------------------------------------------------------

def python_counter(x):
    k = 0
    while x.max() > 1.0:
        x = x / 2
        k = k * 2 + 1  # an int carried that may pass 64 bits (a counter, k += 1, is captured)
    return x, k


def body_prints(x):
    while x.max() > 1.0:
        print(x.max())
        x = x / 2
    return x


def body_breaks(x):
    while x.max() > 1.0:
        x = x / 2
        if x.min() < 0.01:
            break
    return x


def body_continues(x):
    while x.max() > 1.0:
        x = x / 2
        if x.min() < 0.5:
            continue
        x = x - 0.1
    return x


@pytest.mark.parametrize("program,why", [
    (python_counter, "no bound keeps it within 64 bits"), (body_prints, "print"),
    (body_breaks, "not captured"), (body_continues, "not captured"),
])
def test_bodies_that_cannot_be_captured_fall_back_and_explain_says_why(program, why, capsys):
    inputs = [(rng(s).random(12) * 40,) for s in (1, 2, 3)]
    check_calls(program, inputs)
    capsys.readouterr()
    report = dynamo.explain(program, backend="numpy")(*inputs[0])
    text = str(report)
    capsys.readouterr()
    assert report.loop_count == 0
    assert why in text, text


def test_numpy_backend_runs_the_whole_loop_as_one_generated_while_statement():
    compiled = check_calls(jacobi_until_converged, [diagonally_dominant(8, s) for s in (0, 1, 2)])
    (frame,) = [frame for _, frame in compiled._dynamo_callback.compiled_frames]
    gm = frame.graphs[0].graph_module
    (node,) = loop_nodes(gm.graph)
    loop = gm.get_attribute(node.target)
    assert isinstance(loop, WhileLoop) and loop.run_loop is not None and "while ___test:" in loop.run_loop.source


# ---- tests of several terms: `and`, `not` (while_condition.py) ----------------------------------------------

def halve_with_a_budget(x, tol, maxit):
    it = 0
    r = np.abs(x).sum()
    while r > tol and it < maxit:
        x = x * 0.5
        r = np.abs(x).sum()
        it += 1
    return x, it


def until_done(x, tol, maxit):
    it = 0
    done = np.abs(x).sum() < tol
    while not done and it < maxit:
        x = x * 0.5
        done = np.abs(x).sum() < tol
        it += 1
    return x, it


def while_not(x, tol):
    done = x.max() < tol
    while not done:
        x = x * 0.5
        done = x.max() < tol
    return x


def three_terms(x, lo, hi):
    it = 0
    while x.sum() > lo and x.max() < hi and it < 1000:
        x = x * 0.9 + 0.01
        it = it + 1
    return x, it


@pytest.mark.parametrize("program,inputs", [
    (halve_with_a_budget, [(rng(s).random(10) * 10, 1e-3, budget) for s, budget in ((0, 5), (1, 1000), (2, 0))]),
    (until_done, [(rng(s).random(10) * 10, 1e-3, budget) for s, budget in ((0, 7), (1, 1000), (2, 0))]),
    (while_not, [(rng(s).random(10) * 10, 1e-3) for s in (0, 1, 2)]),
    (three_terms, [(rng(s).random(10), 0.5, hi) for s, hi in ((0, 5.0), (1, 0.5), (2, 50.0))]),
])
def test_short_circuit_tests_are_one_while_loop_node(program, inputs):
    check_calls(program, inputs)
    check_calls(program, inputs, backend="eager")
    dynamo.reset()
    compiled, counter = compile_with_counter(program)
    compiled(*copy.deepcopy(inputs[0]))
    assert [count_loops(g.graph) for g in counter.graphs] == [1]
    assert graph_breaks(compiled) == []
    report = dynamo.explain(program, backend="numpy")(*copy.deepcopy(inputs[0]))
    assert report.loop_count == 1 and "while loop at" in str(report)


def or_test(x, tol):
    it = 0
    while x.sum() > tol or it < 3:
        x = x * 0.5
        it += 1
    return x, it


def unsafe_later_term(x, tol):
    while x.sum() > tol and np.sqrt(x.sum()) > tol:
        x = x * 0.5
    return x


@pytest.mark.parametrize("program,why", [(or_test, None), (unsafe_later_term, "later term of the loop test computes sqrt")])
def test_tests_that_cannot_be_one_condition_run_as_before(program, why):
    inputs = [(rng(s).random(10) * 4, 0.01) for s in (0, 1, 2)]
    check_calls(program, inputs)
    report = dynamo.explain(program, backend="numpy")(*copy.deepcopy(inputs[0]))
    assert report.loop_count == 0
    assert why is None or why in str(report)


# ---- a test known for the first iteration: that iteration runs unrolled, the rest is the loop node ---------

def diffuse_until_steady(u, tol):
    change = 1  # a Python int: the test holds for the first iteration, then change is a NumPy float
    steps = 0
    while change > tol:
        old = u.copy()
        u[1:-1] = 0.5 * (old[2:] + old[:-2])
        change = np.abs(u - old).max()
        steps += 1
    return steps


def halve_from_a_python_float(x, tol, maxit):
    r = 1.0
    it = 0
    while r > tol and it < maxit:
        x = x * 0.5
        r = np.abs(x).sum()
        it += 1
    return x, it


@pytest.mark.parametrize("program,inputs", [
    (diffuse_until_steady, [(np.linspace(0, 1, n) ** 2, 1e-4) for n in (12, 16, 20)]),
    (halve_from_a_python_float, [(rng(s).random(8) * 9, 1e-2, budget) for s, budget in ((0, 100), (1, 3), (2, 1))]),
])
def test_a_loop_whose_first_test_is_known_is_captured_at_its_bottom_test(program, inputs):
    check_calls(program, inputs)
    check_calls(program, inputs, backend="eager")
    dynamo.reset()
    compiled, counter = compile_with_counter(program)
    compiled(*copy.deepcopy(inputs[0]))
    assert [count_loops(g.graph) for g in counter.graphs] == [1]
    assert graph_breaks(compiled) == []
