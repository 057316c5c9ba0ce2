"""Loops whose body branches on a value known only at run time stay one loop node (a cond node of
the body, dynamo/branch_capture.py): results and in-place writes equal plain NumPy bitwise on the
numpy and c backends, with NaN inputs and branches the first call never takes."""
from __future__ import annotations

import numpy as np
import pytest

import dynamo
from dynamo.fx_ir import cond_of, count_loops, loop_of
from tests.support import CompileCounter, same_value


def signed_sum(a):
    s = a[0] * 0.0
    for i in range(a.shape[0]):
        if a[i] > 0.5:
            s += a[i]
        else:
            s -= 1.0
    return s


def conditional_expression(a, out):
    for i in range(a.shape[0]):
        x = a[i]
        out[i] = x * 2 if x > 0 else -x
    return out


def elif_chain(a, out):
    for i in range(a.shape[0]):
        x = a[i]
        if x < 0.2:
            out[i] = x * 3.0
        elif x < 0.6:
            out[i] = x - 1.0
        else:
            out[i] = x / 2.0
    return out


def and_or_not(a, b):
    s = a[0] * 0.0
    for i in range(a.shape[0]):
        if a[i] > 0.2 and b[i] < 0.7 or not a[i] < 0.9:
            s += a[i] * b[i]
    return s


def counting(a):
    n = 0
    s = a[0] * 0.0
    for i in range(a.shape[0]):
        if a[i] > 0.5:
            n += 1
            continue
        s += a[i]
    return n, s


def neighbour_extremes(a, out):
    for i in range(1, a.shape[0] - 1):
        out[i] = max(a[i - 1], a[i + 1]) - min(a[i], a[i - 1], a[i + 1])
    return out


def extremes_at_top_level(a):
    return max(a[0], a[1]), min(a[1], a[0])


def mixed_types(a):
    s = a[0] * 0.0
    for i in range(a.shape[0]):
        if a[i] > 0.5:
            s = 1
        else:
            s += a[i]
    return s


class NativeLoopsCounter(CompileCounter):
    """Runs graphs as traced, and says it compiles loop nodes natively (short loops stay loops)."""

    compiles_loops = True


def inputs(seed, n=300):
    rng = np.random.default_rng(seed)
    return rng.random(n)


def bits(value):
    """Type and bytes: -0.0 and 0.0, and NaN payloads, differ."""
    if isinstance(value, tuple):
        return tuple(bits(v) for v in value)
    if isinstance(value, (np.ndarray, np.generic)):
        return type(value), np.asarray(value).tobytes()
    return type(value), value


def check(fn, backend, calls):
    compiled = dynamo.compile(fn, backend=backend)
    for args in calls:
        plain = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        got, expected = compiled(*ours), fn(*plain)
        assert same_value(got, expected) and bits(got) == bits(expected)
        for p, o in zip(plain, ours):
            assert same_value(o, p) and bits(o) == bits(p)
    return compiled


BACKENDS = ["numpy", "c", "tiered"]
CASES = [
    (signed_sum, lambda a: (a,)),
    (conditional_expression, lambda a: (a - 0.3, np.zeros_like(a))),
    (elif_chain, lambda a: (a, np.zeros_like(a))),
    (and_or_not, lambda a: (a, a[::-1].copy())),
    (counting, lambda a: (a,)),
    (neighbour_extremes, lambda a: (a, np.zeros_like(a))),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_branching_body_gives_plain_results(fn, make, backend):
    nan = inputs(3)
    nan[[5, 17, 100]] = np.nan
    check(fn, backend, [make(inputs(0)), make(inputs(1)), make(nan)])


@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_branching_body_is_one_loop_node_without_breaks(fn, make):
    counter = NativeLoopsCounter()
    check(fn, counter, [make(inputs(0))])
    assert counter.frame_count == 1
    assert [count_loops(g.graph) for g in counter.graphs] == [1]
    report = dynamo.explain(fn, backend="numpy")(*make(inputs(0, 2000)))
    assert (report.graph_count, report.graph_break_count, report.loop_count) == (1, 0, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_arm_the_first_call_never_takes_is_right_when_taken(backend):
    low = inputs(0) * 0.4  # never above 0.5: the first arm never runs in the first call
    compiled = check(signed_sum, backend, [(low,), (inputs(1),)])
    assert compiled(inputs(2)) == signed_sum(inputs(2))


def test_arms_giving_different_types_leave_the_loop_in_python_with_the_reason():
    check(mixed_types, "numpy", [(inputs(0),), (inputs(1) * 0.4,)])
    report = dynamo.explain(mixed_types, backend="numpy")(inputs(0, 2000))
    assert report.loop_count == 0
    assert any("after one arm of a branch" in line and "type would depend on the data" in line
               for line in str(report).splitlines())


def test_the_body_holds_a_cond_node_with_both_arms():
    counter = NativeLoopsCounter()
    check(elif_chain, counter, [(inputs(0), np.zeros(300))])
    (graph,) = counter.graphs
    (loop,) = [loop_of(n) for n in graph.graph.nodes if loop_of(n) is not None]
    (outer,) = [cond_of(n) for n in loop.body.graph.nodes if cond_of(n) is not None]
    # elif: a cond nested in the false arm of the first; each arm stores, so neither gives a result
    assert [cond_of(n) is not None for n in outer.if_false.graph.nodes].count(True) == 1
    assert outer.num_results == 0


def newton_with_damping(x, tol):
    it = 0
    r = x[0] * 0.0 + 1.0
    while r > tol:
        if r > 0.5:
            r = r * 0.25
        else:
            r = r * 0.75
        it += 1
    return it, r


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_branch_in_a_while_loop_body(backend):
    check(newton_with_damping, backend, [(inputs(0), 1e-9), (inputs(1) + 3.0, 1e-6), (inputs(2), 1e-12)])
    report = dynamo.explain(newton_with_damping, backend="numpy")(inputs(0), 1e-9)
    assert (report.graph_count, report.graph_break_count, report.loop_count) == (1, 0, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_builtin_max_and_min_keep_pythons_nan_order(backend):
    for first, second in ((np.nan, 1.0), (1.0, np.nan), (np.nan, np.nan), (-0.0, 0.0), (0.0, -0.0)):
        check(extremes_at_top_level, backend, [(np.array([first, second]),)])
    a = inputs(5)
    a[1::7] = np.nan
    check(neighbour_extremes, backend, [(a, np.zeros_like(a)), (a[::-1].copy(), np.ones_like(a))])


def lower_triangle(a, out):
    n = a.shape[0]
    for i in range(n):
        for j in range(n):
            if i > j:  # the variables of two captured loops
                out[i, j] = a[i, j] * 2.0
            else:
                out[i, j] = a[j, i]
    return out


def with_left_neighbour(a, out):
    for j in range(a.shape[0]):
        if j - 1 >= 0:  # the true arm may read a[j - 1]: j >= 1 there
            out[j] = a[j] + a[j - 1]
        else:
            out[j] = a[j]
    return out


INDEX_CASES = [(lower_triangle, lambda seed: (inputs(seed, 900).reshape(30, 30), np.zeros((30, 30)))),
               (with_left_neighbour, lambda seed: (inputs(seed), np.zeros(300)))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make", INDEX_CASES, ids=[c[0].__name__ for c in INDEX_CASES])
def test_a_branch_on_loop_variables_is_a_cond_of_the_body(fn, make, backend):
    check(fn, backend, [make(0), make(1)])
    counter = NativeLoopsCounter()
    check(fn, counter, [make(0)])
    (graph,) = counter.graphs
    (loop,) = [loop_of(n) for n in graph.graph.nodes if loop_of(n) is not None]
    inner = [loop_of(n) for n in loop.body.graph.nodes if loop_of(n) is not None]
    body = inner[0].body if inner else loop.body
    assert [cond_of(n) is not None for n in body.graph.nodes].count(True) == 1


def reads_one_argument_per_arm(a, b, unused):
    s = a[0] * 0.0
    for i in range(a.shape[0]):
        if a[i] > 0.5:
            s += b[i]  # b is first read in this arm
        else:
            s -= 1.0
    return s


def test_an_argument_first_read_in_one_arm_and_one_no_arm_reads():
    counter = NativeLoopsCounter()
    compiled = check(reads_one_argument_per_arm, counter, [(inputs(0), inputs(1), {"x": 1})])
    for unused in ({"y": 2}, [1, 2], 3.5):  # neither arm reads it: no guard on it, no recompile
        expected = reads_one_argument_per_arm(inputs(0), inputs(1), unused)
        assert same_value(compiled(inputs(0), inputs(1), unused), expected)
    assert counter.frame_count == 1
