"""Loops over enumerate() and zip() of ranges and arrays (dynamo/loop_items.py) become one loop
node over the iteration number, the unpacked items made from it in the body; every program runs
compiled and plain on copies of the same inputs, with exact graph, loop and break counts."""
from __future__ import annotations

import numpy as np
import pytest

import dynamo
from tests.dynamo.test_loops_capture import check_calls, counted, loops_in, rng
from tests.support import fallbacks, graph_breaks


@pytest.fixture(autouse=True)
def short_loops_stay_loops():
    with dynamo.config.patch(loop_unroll_threshold=16):
        yield


def row_sums_by_enumerate(A):
    out = np.zeros(A.shape[0])
    for i, row in enumerate(A):
        out[i] = row.sum() * i
    return out


def dot_by_zip(X, Y):
    total = X[0] * 0
    for a, b in zip(X, Y):
        total = total + a * b
    return total


def enumerate_a_range(A):
    total = A[0] * 0
    for i, x in enumerate(range(3, A.shape[0] + 3), start=2):
        total = total + A[x - 3] * i
    return total


def enumerate_a_zip(A, B):
    for j, (a, b) in enumerate(zip(A, B)):
        B[j] = a + b * j
    return B


def scale_rows_in_place(A):
    for i, row in zip(range(A.shape[0]), A):
        row[:] = row * i  # a view of the argument, written in place
    return A


def matrix(n):
    return (rng(n).random((n, 3)),)


def two_vectors(n):
    return rng(n).random(n), rng(n + 1).random(n)


@pytest.mark.parametrize("program,make", [
    (row_sums_by_enumerate, matrix), (dot_by_zip, two_vectors), (enumerate_a_range, lambda n: (rng(n).random(n),)),
    (enumerate_a_zip, two_vectors), (scale_rows_in_place, matrix),
])
def test_enumerate_and_zip_loops_are_one_loop_node(program, make):
    compiled, counter = counted(program, make, [40, 51, 60])
    assert len(counter.graphs) <= 2 and loops_in(counter) == [1] * len(counter.graphs)
    assert graph_breaks(compiled) == [] and fallbacks(compiled) == []
    check_calls(program, make, [40, 51], backend="eager")
    report = dynamo.explain(program, backend="numpy")(*make(40))
    assert report.loop_count == 1 and "too long to unroll" not in str(report)


def zip_of_different_lengths(X, Y):
    total = X[0] * 0
    for a, b in zip(X, Y[:30]):
        total = total + a * b
    return total


def test_zip_stops_at_the_shortest():
    make = lambda n: (rng(n).random(n), rng(n + 1).random(n))  # noqa: E731
    _, counter = counted(zip_of_different_lengths, make, [40, 40])
    assert loops_in(counter) == [1]


def zip_strict(X, Y):
    total = X[0] * 0
    for a, b in zip(X, Y, strict=True):
        total = total + a * b
    return total


def target_read_after_the_loop(X, Y):
    total = X[0] * 0
    for a, b in zip(X, Y):
        total = total + a * b
    return total, a


def zip_kept_across_a_graph_break(X, Y):
    pairs = zip(X, Y)
    print(end="")
    total = X[0] * 0
    for a, b in pairs:
        total = total + a * b
    return total


@pytest.mark.parametrize("program", [zip_strict, target_read_after_the_loop, zip_kept_across_a_graph_break])
def test_zip_loops_that_are_not_captured_run_as_before(program):
    check_calls(program, two_vectors, [20, 20, 24])
    check_calls(program, two_vectors, [20, 24], backend="eager")


def test_short_enumerate_loops_still_unroll():
    _, counter = counted(row_sums_by_enumerate, matrix, [8, 8])
    assert loops_in(counter) == [0]
