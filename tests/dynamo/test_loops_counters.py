"""Python int counters in captured loops (dynamo/loop_counters.py): `k += c` in a `for` body is the
closed form k0 + c * (iterations before), so the loop stays one loop node, the counter can index
arrays, and after the loop it is the exact Python int plain Python computes. Programs run compiled
and plain on copies of the same inputs over several sizes."""
from __future__ import annotations

import numpy as np
import pytest

import dynamo
from tests.dynamo.test_loops_capture import check_calls, counted, loops_in, rng
from tests.support import fallbacks, graph_breaks, same_value


@pytest.fixture(autouse=True)
def short_loops_stay_loops():
    with dynamo.config.patch(loop_unroll_threshold=16):
        yield


def compact(A, B):
    k = 0
    for i in range(A.shape[0]):
        B[k] = A[i] * 2.0
        k += 1
    return k


def two_counters_and_a_step(A):
    k = 5
    m = A.shape[0]
    total = A[0] * 0
    for _i in range(3, A.shape[0], 2):
        total = total + A[k - 5] * m
        k = k + 1
        m -= 2
    return total, k, m


def flatten(A):
    out = np.zeros(A.shape[0] * A.shape[1])
    for i in range(A.shape[0]):
        k = i * A.shape[1]
        for j in range(A.shape[1]):
            out[k] = A[i, j] + j
            k = 1 + k
    return out


def doubled_index(A, B):
    for i in range(A.shape[0] // 2):
        j = i * 2
        B[i] = A[j] + A[j + 1]
    return B


def vector_inputs(n):
    return rng(n).random(n), np.zeros(n)


@pytest.mark.parametrize("program,make,loops", [
    (compact, vector_inputs, 1),
    (two_counters_and_a_step, lambda n: (rng(n).random(n),), 1),
    (flatten, lambda n: (rng(n).random((n, n + 3)),), 2),
    (doubled_index, vector_inputs, 1),
])
def test_counters_stay_in_one_loop_node_and_end_with_plain_pythons_int(program, make, loops):
    compiled, counter = counted(program, make, [40, 51, 60])
    assert loops_in(counter)[0] == loops
    assert graph_breaks(compiled) == [] and fallbacks(compiled) == []
    assert same_value(compiled(*make(25)), program(*make(25)))
    check_calls(program, make, [40, 51, 60], backend="numpy")
    check_calls(program, make, [40, 51], backend="eager")


def test_a_new_trip_count_reuses_the_graph_and_the_counter_follows_it():
    compiled, counter = counted(compact, vector_inputs, [20, 31, 40, 57])
    assert len(counter.graphs) <= 2  # the first size, then one graph for every size (dynamic)
    assert loops_in(counter) == [1] * len(counter.graphs)
    assert compiled(*vector_inputs(63)) == 63


def test_explain_lists_the_counter_and_no_loop_too_long_to_unroll():
    report = dynamo.explain(compact, backend="numpy")(*vector_inputs(200))
    text = str(report)
    assert report.loop_count == 1 and len(report.graphs) == 1 and report.break_reasons == []
    assert "k (int counter, +1 per iteration)" in text
    assert "too long to unroll" not in text


def counter_past_int64(x):
    k = 2 ** 62
    for i in range(x.shape[0]):
        x[i] = i
        k += 2 ** 60
    return k


def not_a_counter(x):
    k = 1
    for i in range(x.shape[0]):
        x[i] = i
        k = k * 3
    return k


@pytest.mark.parametrize("program,why", [(counter_past_int64, "might exceed 64 bits"), (not_a_counter, "no bound keeps it within 64 bits")])
def test_ints_that_are_not_int64_counters_are_not_captured_and_stay_exact(program, why):
    make = lambda n: (np.zeros(n),)  # noqa: E731
    check_calls(program, make, [20, 20, 24])
    report = dynamo.explain(program, backend="numpy")(*make(40))
    assert report.loop_count == 0
    assert why in str(report)


# ---- ints computed from data: carried as Python ints the graph computes ---------------------------------

def count_above(A):
    count = 0
    for i in range(A.shape[0]):
        count += int(A[i] > 0.5)
    return count


def signed_count_and_sum(A):
    count = 0
    total = A[0] * 0
    for x in A:
        count = count + int(x > 0.5) * 2 - 1
        total = total + x
    return count, total


def halvings(x, tol):
    it = 0
    r = np.abs(x).sum()
    while r > tol:
        x = x * 0.5
        r = np.abs(x).sum()
        it += 1
    return x, it


def python_sum_of_floats(A):
    total = 0  # becomes a NumPy float in the first iteration: that iteration is peeled
    for i in range(A.shape[0]):
        total += A[i]
    return total


@pytest.mark.parametrize("program,make", [
    (count_above, lambda n: (rng(n).random(n),)),
    (signed_count_and_sum, lambda n: (rng(n).random(n),)),
    (halvings, lambda n: (rng(n).random(n) * n, 1e-3)),
    (python_sum_of_floats, lambda n: (rng(n).random(n),)),
])
def test_ints_computed_from_data_are_carried_exactly(program, make):
    compiled, counter = counted(program, make, [40, 51, 60])
    assert loops_in(counter)[0] == 1
    assert graph_breaks(compiled) == [] and fallbacks(compiled) == []
    result = compiled(*make(45))
    assert same_value(result, program(*make(45)))
    check_calls(program, make, [40, 51], backend="eager")
    report = dynamo.explain(program, backend="numpy")(*make(40))
    assert report.loop_count == 1 and "too long to unroll" not in str(report)


def data_int_as_an_index(A, B):
    k = 0
    for i in range(A.shape[0]):
        B[k] = A[i]
        k += int(A[i] > 0.5)
    return k


def int_of_a_float(A):
    count = 0
    for i in range(A.shape[0]):
        count += int(A[i] * 3)
    return count


@pytest.mark.parametrize("program,why", [(data_int_as_an_index, "data"), (int_of_a_float, "int()")])
def test_data_ints_whose_value_is_needed_are_not_captured(program, why):
    make = lambda n: (rng(n).random(n), np.zeros(n))  # noqa: E731
    if program is int_of_a_float:
        make = lambda n: (rng(n).random(n),)  # noqa: E731
    check_calls(program, make, [40, 40, 44])
    report = dynamo.explain(program, backend="numpy")(*make(40))
    assert report.loop_count == 0
    assert why in str(report), str(report)


def count_then_break(A):
    count = 0
    for i in range(A.shape[0]):
        count += int(A[i] > 0.5)
    print(end="")  # a graph break: the count computed by the first graph reaches the rest
    return count + 1


def count_as_a_size(A):
    count = 0
    for i in range(A.shape[0]):
        count += int(A[i] > 0.5)
    return np.zeros(count).shape, count  # a size from data: the graph breaks there


@pytest.mark.parametrize("program", [count_then_break, count_as_a_size])
def test_a_data_int_after_its_loop_reaches_plain_python_code_exactly(program):
    make = lambda n: (rng(n).random(n),)  # noqa: E731
    compiled, counter = counted(program, make, [40, 51, 40])
    assert loops_in(counter)[0] == 1
    assert len(graph_breaks(compiled)) >= 1
