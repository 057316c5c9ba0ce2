"""Overlap tests and broadcasts of the stores in C loop bodies (backends/c_cpu/loop_vectors.py): a store
into a temporary reading arguments, or into an argument reading temporaries, has no run-time overlap
test (a temporary is the loop function's own buffer); two arguments, views of one array among them,
keep it; rows and columns broadcast into 2-d stores. All compared bitwise with plain
NumPy, with exact counts of the loops that ran as C loops."""
from __future__ import annotations

import numpy as np
from test_c_loops import native_runs, run_both

import c_helpers

pytestmark = c_helpers.needs_compiler

rng = np.random.default_rng(23)


def loop_sources(rec):
    """The C source of every loop that compiled to C."""
    return [entry[0].source for loop in rec.native_loops() for entry in loop.compiled.values() if entry is not None]


def overlap_tests(source):
    """How many run-time overlap tests the loop function makes (the helper's definition not counted)."""
    return source.count("= dyn_hazard(")


def build_up(u, v, out, steps):
    """channel_flow's shape: temporaries built from the arguments, then stored back into an argument."""
    for t in range(steps):
        un = u.copy()
        b = np.zeros_like(u)
        b[1:-1, 1:-1] = (u[1:-1, 2:] - u[1:-1, :-2]) * 0.5 + (v[2:, 1:-1] - v[:-2, 1:-1]) ** 2
        b[1:-1, -1] = u[1:-1, 0] - u[1:-1, -2]
        u[1:-1, 1:-1] = un[1:-1, 1:-1] - 0.1 * (un[1:-1, 1:-1] - un[1:-1, :-2]) + b[1:-1, 1:-1]
        out[1:-1, 1:-1] += b[1:-1, 1:-1] * 0.25
    return out


def test_stores_between_temporaries_and_arguments_test_no_overlap_at_run_time():
    def make(n, m, steps):
        return (rng.random((n, m)), rng.random((n, m)), rng.random((n, m)), steps)
    rec = run_both(build_up, [make(9, 11, 6), make(5, 4, 3), make(12, 7, 2)])
    assert native_runs(rec)[-1] >= 1
    # the stores into b read u and v (arguments), u's store reads un and b (temporaries): none can
    # overlap; out's store reads b. Only u.copy() and zeros_like write into temporaries besides.
    assert {overlap_tests(s) for s in loop_sources(rec)} == {0}


def shift(a, b, steps):
    for t in range(steps):
        a[1:, :] = b[:-1, :] * 0.5 + a[1:, :]
    return a


def shifted_views(A, steps):
    a, b = A[1:, :], A[:-1, :]  # two views of A a row apart: the loop gets them as two arrays
    for t in range(steps):
        a[:, 1:] = b[:, :-1] * 0.5 + a[:, 1:]
    return A


def test_stores_between_two_arguments_keep_the_run_time_test():
    def make(n, m, steps):
        return (rng.random((n, m)), rng.random((n, m)), steps)
    rec = run_both(shift, [make(7, 5, 4), make(4, 9, 3)])
    assert native_runs(rec)[-1] >= 1
    assert {overlap_tests(s) for s in loop_sources(rec)} == {1}  # one per compiled loop
    # views of one array that overlap: NumPy reads b's old values, and so must the C loop
    rec = run_both(shifted_views, [(rng.random((7, 5)), 4), (rng.random((5, 8)), 6)])
    assert native_runs(rec)[-1] >= 1
    assert {overlap_tests(s) for s in loop_sources(rec)} == {1}  # one per compiled loop


def broadcasts(A, row, col, steps):
    for t in range(steps):
        A[1:, :] = A[1:, :] * 0.5 + row  # a (m,) row over every row
        A[:, 1:] -= col * 0.25  # a (n, 1) column over every column
        A[:-1, :] += A[-1:, :]  # a (1, m) slice of A itself, over the others
    return A


def test_rows_and_columns_broadcast_into_2d_stores():
    def make(n, m, steps):
        return (rng.random((n, m)), rng.random(m), rng.random((n, 1)), steps)
    rec = run_both(broadcasts, [make(6, 5, 3), make(4, 9, 5), make(7, 1, 2), make(1, 6, 4)])
    assert all(r >= 1 for r in native_runs(rec))
