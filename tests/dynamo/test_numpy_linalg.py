"""Corpus: linear algebra from traced code (matmul/@, dot, outer, einsum, norms, solvers, gufuncs),
and the exact graphs of key programs: the kmeans step, and an unrolled loop of array updates."""
import operator

import numpy as np
import pytest

from numpy_samples import C128, F32, F64, I64, check, sample
from support import compile_with_counter, fallbacks

SQUARE = sample((3, 3)) + 3 * np.eye(3)  # well conditioned, positive definite after a @ a.T
SPD = SQUARE @ SQUARE.T


def test_matmul_dot_inner_outer_vdot():
    def f(a, b):
        return (a @ b, np.matmul(a, b), np.dot(a, b), a.dot(b), np.inner(a, b.T), np.outer(a[0], b[:, 0]),
                np.vdot(a, a), np.dot(a[0], b[:, 1]), np.dot(2.0, a), a @ b[:, 0])

    check(f, (F64, F64.T.copy()), (F32, sample((4, 2), np.float32)), (I64, sample((4, 3), np.int64)),
          (C128, C128.T.copy()))


def test_matmul_broadcasting_and_shape_errors():
    check(lambda a, b: a @ b, (sample((2, 3, 4)), sample((4, 5))), (sample((5, 1, 3, 4)), sample((2, 4, 2))))
    check(lambda a, b: a @ b, (F64, F64), graph=False)  # ValueError: shapes do not align
    check(lambda a: a @ 2.0, (F64,), graph=False)  # matmul of a scalar raises


def test_vecdot_matvec_vecmat_and_matrix_ops():
    def f(a, v):
        return np.vecdot(a, a), np.matvec(a, v), np.vecmat(v[:3], a), np.tensordot(a, a.T, axes=1), np.kron(a[:2, :2], a[:1])

    check(f, (F64, sample((4,))), (F32, sample((4,), np.float32)))


def test_einsum_with_constant_subscripts():
    def f(a, b, v):
        return (np.einsum("ij,jk->ik", a, b), np.einsum("ij->ji", a), np.einsum("ii", SQUARE), np.einsum("ij,j", a, v),
                np.einsum("i,i->", v, v), np.einsum("ij,ij->i", a, a), np.einsum("...j,j->...", a, v),
                np.einsum("ij,kj->ik", a, a, optimize=True))

    check(f, (F64, F64.T.copy(), sample((4,))), (I64, I64.T.copy(), sample((4,), np.int64)))


def test_norms():
    def f(a):
        return (np.linalg.norm(a), np.linalg.norm(a, axis=0), np.linalg.norm(a, axis=1, keepdims=True),
                np.linalg.norm(a, ord=1, axis=1), np.linalg.norm(a, ord=np.inf, axis=0), np.linalg.norm(a, "fro"),
                np.linalg.norm(a[0]), np.linalg.norm(a, ord=1), np.linalg.vector_norm(a, ord=3),
                np.linalg.matrix_norm(a), np.linalg.norm(a, axis=(0, 1)))

    check(f, (F64,), (F32,), (I64,), (C128,))


def test_solvers_and_decompositions():
    def f(a, b):
        return np.linalg.inv(a), np.linalg.solve(a, b), np.linalg.det(a), np.linalg.cholesky(a @ a.T), np.trace(a)

    check(f, (SQUARE, sample((3,))), (SQUARE.astype(np.float32), sample((3, 2), np.float32)))
    check(lambda a: np.linalg.inv(a), (np.zeros((3, 3)),), graph=False)  # LinAlgError at run time


def test_unsupported_linalg_runs_in_python():
    check(lambda a: np.linalg.eig(a), (SQUARE,), graph=False)
    check(lambda a: np.linalg.svd(a, compute_uv=False), (SQUARE,), graph=False)


# ---- exact graphs of key programs --------------------------------------------------------------------

def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def test_kmeans_step_is_exactly_one_graph():
    X, means = sample((50, 2)), sample((3, 2))
    compiled, counter = compile_with_counter(kmeans_step)
    np.testing.assert_array_equal(compiled(X, means), kmeans_step(X, means))
    assert counter.frame_count == 1 and fallbacks(compiled) == []
    graph = counter.graphs[0].graph
    calls = [(n.op, n.target) for n in graph.nodes]
    assert calls == [("placeholder", "L_X"), ("placeholder", "L_means"),
                     ("call_function", operator.getitem), ("call_function", operator.sub),
                     ("call_function", np.linalg.norm), ("call_function", np.argmin), ("output", "output")]
    getitem, norm, argmin = (n for n in graph.nodes if n.target in (operator.getitem, np.linalg.norm, np.argmin))
    assert getitem.args[1] == (slice(None), None)
    assert norm.kwargs == {"axis": 2} and argmin.kwargs == {"axis": 0}
    # the same shapes reuse the graph; float32 data is a new entry, as is a new number of points
    compiled(sample((50, 2)), sample((3, 2)))
    compiled(X.astype(np.float32), means.astype(np.float32))
    compiled(sample((60, 2)), means)
    assert counter.frame_count == 3
    check(kmeans_step, (X, means), (X.astype(np.float32), means), (sample((1, 2)), sample((1, 2))))


def test_ten_iteration_loop_unrolls_into_one_graph():
    def step(x, v, dt):
        for _ in range(10):
            v = v - dt * x
            x = x + dt * v
        return x, v

    compiled, counter = compile_with_counter(step)
    x, v = sample((100,)), sample((100,))
    result = compiled(x, v, 0.01)
    expected = step(x, v, 0.01)
    np.testing.assert_allclose(result[0], expected[0])
    assert counter.frame_count == 1 and fallbacks(compiled) == []
    # per iteration: dt * x, v - ..., dt * v, x + ...: 4 ops, 40 in all
    assert counter.op_counts() == [40]
    targets = [n.target for n in counter.graphs[0].graph.nodes if n.op == "call_function"]
    assert targets == [operator.mul, operator.sub, operator.mul, operator.add] * 10


def test_loop_of_in_place_updates_unrolls():
    def relax(u):
        for _ in range(10):
            u[1:-1] = 0.5 * (u[:-2] + u[2:])
        return u

    compiled, counter = compile_with_counter(relax)
    u = sample((20,))
    np.testing.assert_array_equal(compiled(u.copy()), relax(u.copy()))
    assert counter.frame_count == 1 and fallbacks(compiled) == []
    # per iteration: two slices read, add, mul, and the slice assignment
    assert counter.op_counts() == [50]
    check(relax, (u,), (sample((5,), np.float32),))


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_key_programs_on_every_backend(backend):
    check(kmeans_step, (sample((40, 3)), sample((4, 3))), (sample((40, 3), np.float32), sample((4, 3), np.float32)),
          backend=backend)

    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    check(softmax, (F64,), (F32,), (sample((0, 3)),), backend=backend)
