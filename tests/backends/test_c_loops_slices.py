"""Loop bodies with 1-d slices bounded by the induction variable, dot / `@` on them and elementwise
updates of them, as one C function under backend "c" (backends/c_cpu/loop_vectors.py): NPBench-style
factorizations and solves compared bitwise with plain NumPy over three calls, with exact counts of
loops run as C and of compiles (one per loop, never one per iteration or layout)."""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from test_c_loops import bits, nested_counts, run_both

import dynamo
from dynamo.backends.c_cpu.blas import numpy_ddot
from dynamo.backends.c_cpu.loops import CompiledBody

pytestmark = [pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler"),
              pytest.mark.skipif(numpy_ddot() is None, reason="NumPy's BLAS ddot not found in this process")]

rng = np.random.default_rng(11)


def spd(N):
    A = rng.random((N, N))
    return A @ A.T + N * np.eye(N)


def trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def cholesky(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def lu(A):
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]


def syrk(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])  # reads y[:k] reversed while writing it: NumPy's copy semantics
        y[k] = alpha
    return y


def symm(alpha, beta, C, A, B):
    temp2 = np.empty((C.shape[1], ), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


def loops_of(rec):
    return [(loop.native_runs, nested_counts(loop)) for loop in rec.native_loops()]


def assert_compiled_once(rec):
    """Each loop node compiled one C function (one entry, no refusal) whatever the sizes and iterations."""
    for loop in rec.native_loops():
        assert not loop.refused, loop.refused
        assert len(loop.compiled) == 1


def test_triangular_solve_with_matmul_on_slices_is_one_c_loop():
    def make(N):
        return (np.tril(spd(N)), np.zeros(N), rng.random(N))
    rec = run_both(trisolv, [make(40), make(57), make(3)])
    # N constant on the first call (40 iterations: a loop node all the same for backend c), then symbolic
    assert loops_of(rec) == [(1, [0]), (2, [0])]
    assert_compiled_once(rec)


def test_cholesky_dot_and_sqrt_nest_as_c_loops():
    rec = run_both(cholesky, [(spd(30),), (spd(45),), (spd(8),)])
    assert loops_of(rec) == [(1, [1]), (2, [1])]
    assert_compiled_once(rec)


def test_lu_column_slices_and_two_inner_loops():
    rec = run_both(lu, [(spd(25),), (spd(31),), (spd(2),)])
    assert loops_of(rec) == [(1, [2]), (2, [2])]
    assert_compiled_once(rec)


def test_syrk_in_place_updates_of_growing_row_slices():
    def make(N, M):
        return (1.5, 1.2, rng.random((N, N)), rng.random((N, M)))
    rec = run_both(syrk, [make(20, 14), make(33, 9), make(5, 30)])
    # sizes constant on the first call (the loop over k's 14 iterations a nested C loop too), then symbolic
    assert loops_of(rec) == [(1, [1]), (2, [1])]
    assert_compiled_once(rec)


def test_durbin_flipped_slices_and_an_overlapping_update():
    rec = run_both(durbin, [(rng.random(60) * 0.1,), (rng.random(80) * 0.1,), (rng.random(5) * 0.1,)])
    assert loops_of(rec) == [(1, [0]), (2, [0])]  # the first call's 59 iterations: a C loop too
    assert_compiled_once(rec)


def test_symm_broadcasts_a_whole_vector_against_a_row():
    def make(M, N):
        return (1.5, 1.2, rng.random((M, N)), rng.random((M, M)), rng.random((M, N)))
    rec = run_both(symm, [make(12, 15), make(20, 17), make(9, 9)])
    assert [runs for runs, _ in loops_of(rec)] == [1, 2]
    assert_compiled_once(rec)


def test_dot_of_length_zero_and_one_and_negative_zero():
    def dots(a, b, out, n):
        for i in range(n):  # np.dot of one element is a product, `@` adds BLAS's result to 0.0
            out[i, 0] = np.dot(a[:i], b[:i])
            out[i, 1] = a[:i] @ b[:i]
            out[i, 2] = np.dot(a[i:i + 1], b[i:i + 1])
            out[i, 3] = a[i:i + 1] @ b[i:i + 1]
        return out
    a = np.array([-0.0, 2.0, -3.0, 1.0, -0.0])
    b = np.array([5.0, -0.0, 7.0, 1.0, 3.0])
    rec = run_both(dots, [(a, b, np.zeros((5, 4)), 5), (b, a, np.zeros((5, 4)), 4), (a, a, np.zeros((5, 4)), 5)])
    assert loops_of(rec)[-1] == (2, [0])


def test_dot_and_matmul_of_reversed_slices_sum_in_numpys_order():
    def reversed_dots(a, b, out, n):
        for i in range(n):  # np.dot copies a reversed vector for BLAS, `@` sums it in a plain loop
            out[i, 0] = np.dot(np.flip(a[:i]), b[:i])
            out[i, 1] = np.flip(a[:i]) @ b[:i]
            out[i, 2] = a[::-1][:i] @ np.flip(b[i:])[:i]
        return out
    a, b = rng.standard_normal(300), rng.standard_normal(300)
    rec = run_both(reversed_dots, [(a, b, np.zeros((150, 3)), 150), (b, a, np.zeros((150, 3)), 149),
                                   (a, a, np.zeros((150, 3)), 150)])
    assert loops_of(rec)[-1] == (2, [0])


def test_a_one_element_slice_broadcasts_into_a_growing_one():
    def spread(a, y, n):
        for i in range(n):
            a[:i] += y[i:i + 1] * 2.0  # NumPy broadcasts the length-1 product over a[:i]
            a[i + 1:] -= a[i:i + 1]  # reads an element of a itself, once, before the update
        return a
    rec = run_both(spread, [(rng.random(40), rng.random(40), 40), (rng.random(40), rng.random(40), 37),
                            (rng.random(40), rng.random(40), 30)])
    assert loops_of(rec) == [(1, [0]), (2, [0])]  # the first call's 40 iterations: a C loop too


def test_slice_of_a_view_argument_with_strides_and_an_out_of_range_stop():
    def scaled(A, x, n):
        for i in range(n):
            x[i] = A[i, :i + 100] @ A[i, :i + 100]  # the stop passes the row: Python's slice clamps
        return x
    base = rng.random((9, 24))
    run_both(lambda A, x, n: scaled(A[::2, ::3], x, n), [(base, np.zeros(5), 5), (base, np.zeros(5), 4),
                                                         (base, np.zeros(5), 3)])


def test_overflow_in_a_dot_warns_as_numpy_does():
    def norms(A, out):
        for i in range(A.shape[0]):
            out[i] = A[i, :] @ A[i, :]
        return out
    A = np.full((4, 3), 1e200)
    compiled = dynamo.compile(norms, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = norms(A, np.zeros(4))
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(A, np.zeros(4))
    assert bits(got) == bits(expected)
    assert sorted({str(w.message) for w in our_w}) == sorted({str(w.message) for w in plain_w})


def test_a_body_whose_arguments_change_shape_every_iteration_compiles_a_bounded_number_of_times():
    def nest(A, x, n, m):
        for i in range(n):
            row = A[i, :i + 1]
            for j in range(m):
                x[j] += np.exp(row).sum()  # exp keeps the inner loop a Python loop over its compiled body
        return x
    # the second call's trip counts are symbolic: loop nodes, the inner one capturing `row`
    rec = run_both(nest, [(rng.random((30, 30)), np.zeros(4), 3, 2), (rng.random((30, 30)), np.zeros(4), 25, 3)])
    layouts = [len(body.programs) for body in _compiled_bodies(rec)]
    # the inner loop's body sees 30 shapes of `row`: two are compiled, the rest run its NumPy code
    assert CompiledBody.MAX_LAYOUTS in layouts and max(layouts) == CompiledBody.MAX_LAYOUTS


def _compiled_bodies(rec):
    found = []

    def walk(run):
        for candidate in getattr(run, "candidates", ()):
            walk(candidate)
        for value in getattr(run, "__globals__", {}).values():
            body = getattr(value, "run_body", None)
            if isinstance(body, CompiledBody):
                found.append(body)
                for program in body.programs.values():
                    walk(program)
    for run in rec.graphs:
        walk(run)
    return found
