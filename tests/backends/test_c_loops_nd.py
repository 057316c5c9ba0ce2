"""Loop bodies with slices of two and more axes under backend "c" (backends/c_cpu/loop_vectors.py):
NPBench-style time-stepped stencils, index-dependent 2-d slices, broadcasts, overlapping updates,
temporaries (an expression read twice or after a store, copy(), empty_like) and `** 2`, compared
bitwise with plain NumPy over several calls (sizes constant, then symbolic; empty ranges and empty
slices), with exact counts of the loops that ran as C loops."""
from __future__ import annotations

import warnings

import numpy as np
from test_c_loops import bits, native_runs, run_both

import c_helpers
import dynamo
from dynamo import config

pytestmark = c_helpers.needs_compiler

rng = np.random.default_rng(19)


def jacobi_2d(TSTEPS, A, B, t0=1):
    for t in range(t0, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def heat_3d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
                               + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
                               + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, 0:-2])


def fdtd_2d(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def test_jacobi_2d_time_loop_is_one_c_loop():
    def make(steps, n, t0=1):
        return (steps, rng.random((n, n)), rng.random((n, n)), t0)
    rec = run_both(jacobi_2d, [make(50, 20), make(7, 33, 2), make(5, 12, 9), make(9, 4, 3)])
    # 50 known steps: one graph; then the range and N symbolic (an empty range: a native run too)
    assert native_runs(rec) == [1, 3]


def test_heat_3d_three_axis_slices():
    def make(steps, n):
        return (steps, rng.random((n, n, n)), rng.random((n, n, n)))
    rec = run_both(heat_3d, [make(25, 8), make(4, 11), make(6, 5)])
    assert native_runs(rec) == [1, 2]


def test_fdtd_2d_in_place_updates_and_an_element_read_at_the_index():
    def make(tmax, nx, ny):
        return (tmax, rng.random((nx, ny)), rng.random((nx, ny)), rng.random((nx, ny)), rng.random(max(tmax, 1)))
    rec = run_both(fdtd_2d, [make(20, 10, 12), make(5, 13, 7), make(3, 4, 9)])
    assert native_runs(rec) == [1, 2]


def test_index_dependent_2d_slices_and_broadcast_rows():
    def blocks(A, B, x, n):
        for i in range(n):
            A[:i, 1:] *= 0.5  # grows with i: empty first
            A[i:, :] += B[i:, :] * 0.25
            A[:i, 1:] -= x[1:]  # a vector broadcast over rows
            B[i, :] = A[i, :] * x  # a row of a 2-d slice store
        return A
    def make(n, m):
        return (rng.random((n, m)), rng.random((n, m)), rng.random(m), n)
    rec = run_both(blocks, [make(9, 7) for _ in range(3)])
    assert native_runs(rec) == [3]


def test_overlapping_2d_updates_copy_as_numpy_does():
    def shifted(A, n):
        for i in range(n):
            A[1:, :] += A[:-1, :]  # reads rows the update writes: NumPy reads the old values
            A[:, 1:] = A[:, :-1] * 0.5
            A[:-1, :-1] -= A[1:, 1:]  # overlaps shifted by a row and a column
            A[::-1, :] = A + 1.0  # a reversed target over its own memory
        return A
    rec = run_both(shifted, [(rng.random((5, 6)), 4), (rng.random((7, 4)), 6), (rng.random((4, 5)), 3)])
    assert native_runs(rec)[-1] == 2


def test_temporaries_read_twice_and_after_a_store():
    def columns(w, c, d, u, K):
        for k in range(1, K - 1):
            g = 0.25 * (w[1:, :, k] + w[:-1, :, k])  # read by two stores and after the first
            c[:, :, k] = g * 0.5
            d[:, :, k] = (g - c[:, :, k - 1]) * u[:, :, k]
            old = u[:, :, k] * 2.0  # made before a store to what it reads: NumPy's values then
            u[:, :, k] = 0.0
            d[:, :, k] += old
        return d
    def make(i, j, k):
        return (rng.random((i + 1, j, k)), rng.random((i, j, k)), rng.random((i, j, k)), rng.random((i, j, k)), k)
    rec = run_both(columns, [make(4, 5, 6), make(5, 3, 9), make(6, 4, 3)])
    assert native_runs(rec)[-1] == 2  # the last call's range(1, 2): one iteration


def test_copy_empty_like_and_square_in_a_nested_time_loop():
    def poisson(p, b, nt, nit):
        for n in range(nt):
            un = p.copy()  # the values before the inner loop, read after it
            for q in range(nit):
                pn = np.empty_like(p)
                pn = p.copy()
                p[1:-1, 1:-1] = (pn[1:-1, 2:] + pn[1:-1, :-2]) * 0.25 - b[1:-1, 1:-1] ** 2
                p[:, -1] = p[:, -2]
                p[0, :] = p[1, :]
                p[-1, :] = 0
            b[1:-1, 1:-1] = ((un[1:-1, 2:] - p[1:-1, :-2]) * 0.5) ** 2
        return p
    def make(n, nt, nit):
        return (rng.random((n, n)), rng.random((n, n)), nt, nit)
    rec = run_both(poisson, [make(9, 3, 5), make(12, 4, 3), make(6, 5, 4)])
    runs = native_runs(rec)
    assert runs and all(r >= 1 for r in runs)


def test_flip_of_a_2d_slice():
    def mirrored(A, out, n):
        for i in range(1, n):
            out[:i, :i] = np.flip(A[:i, :i]) - out[:i, :i]
        return out
    rec = run_both(mirrored, [(rng.random((6, 6)), rng.random((6, 6)), 6), (rng.random((8, 8)), rng.random((8, 8)), 8),
                              (rng.random((5, 7)), rng.random((5, 7)), 5)])
    assert native_runs(rec)[-1] == 2


def test_overflow_in_a_2d_update_warns_as_numpy_does():
    def grow(A, n):
        for i in range(n):
            A[:, 1:] *= A[:, :-1]
        return A
    A = np.full((3, 4), 1e200)
    compiled = dynamo.compile(grow, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = grow(A.copy(), 3)
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(A.copy(), 3)
    assert bits(got) == bits(expected)
    assert sorted({str(w.message) for w in our_w}) == sorted({str(w.message) for w in plain_w})


def relax(u, tol):
    diff = 1.0
    steps = 0
    while diff > tol:  # data-dependent: a while loop node (its first iteration peeled before it)
        un = u.copy()
        b = np.zeros_like(u)  # a temporary the body slices and stores into
        b[1:-1, 1:-1] = 0.5 * (u[2:, 1:-1] - u[:-2, 1:-1])
        for q in range(3):
            u[1:-1, 1:-1] = 0.25 * (u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1]) + 1e-3 * b[1:-1, 1:-1]
        u[0, :] = u[1, :]
        diff = np.abs(np.sum(u) - np.sum(un)) / np.sum(u)
        steps += 1
    return steps, u


def test_while_loop_with_sums_is_one_c_loop():
    u = rng.random((12, 12))
    assert relax(u.copy(), 1e-4)[0] > 3
    rec = run_both(relax, [(u, 1e-4), (rng.random((12, 12)), 1e-4), (rng.random((12, 12)), 1e-4)])
    assert native_runs(rec) == [3, 3]  # the peeled iteration's for loop; the while loop, its for loop nested
    assert [len(loop.compiled) for loop in rec.native_loops()] == [1, 1]


def test_a_long_while_loop_pauses_and_goes_on(monkeypatch):
    from dynamo.backends.c_cpu import loop_codegen

    monkeypatch.setattr(loop_codegen, "PAUSE_AFTER_NS", 0)  # back to Python every 256 iterations
    def count(x, n):
        k = 0
        total = np.float64(0.0)
        while total < n:
            x[1:] += x[:-1] * 0.5
            total = total + x[0]
            k += 1
        return k, total, x
    run_both(count, [(np.ones(7), 2000.0)])


def test_vector_matrix_products_call_numpys_matmul_loop():
    def correlation(data, corr, M):
        for i in range(M):  # the last product has no columns (p = 0)
            corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
        return corr
    def covariance(data, cov, M, n):
        for i in range(M):
            cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (n - 1.0)
        return cov
    def rows(A, x, y, M):
        for i in range(M):
            y[i:] += A[i:, :] @ x  # a matrix and a vector: gemv the other way round
        return y
    def make(n, m, layout):
        data = rng.standard_normal((n, m)) if layout == "C" else np.asfortranarray(rng.standard_normal((n, m)))
        return data[::-1] if layout == "reversed" else data
    for layout in ("C", "F", "reversed"):
        rec = run_both(correlation, [(make(9, 6, layout), np.eye(6), 6) for _ in range(2)])
        assert native_runs(rec) == [2]
        rec = run_both(covariance, [(make(7, 5, layout), np.zeros((5, 5)), 5, np.float64(7.0)) for _ in range(2)])
        assert native_runs(rec) == [2]
        rec = run_both(rows, [(make(6, 4, layout), rng.standard_normal(4), np.zeros(6), 6) for _ in range(2)])
        assert native_runs(rec) == [2]
