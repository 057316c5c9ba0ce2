"""Which loops stay loops for a backend that compiles loop nodes natively (`compiles_loops`, read by
backends.registry.loops_native): a short loop of known length nested in a captured loop is a loop
node of its own there, and unrolled for other backends; results equal plain NumPy either way."""
from __future__ import annotations

import numpy as np

import dynamo
from dynamo.backends import lookup_backend, loops_native
from dynamo.backends.registry import DeferredBackend
from dynamo.fx_ir import count_loops
from tests.support import CompileCounter, same_value


class NativeLoopsCounter(CompileCounter):
    """Runs graphs as the eager backend does, and says it compiles loop nodes natively."""

    compiles_loops = True


def symm(alpha, beta, C, A, B):
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):  # 7 iterations: short and known
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


def scaled_sum(x, n):
    acc = np.zeros_like(x)
    for k in range(n):  # short, known, not nested: unrolled for every backend (one fused chain)
        acc = acc * 0.5 + x * k
    return acc


def inputs(seed):
    rng = np.random.default_rng(seed)
    return (1.5, 1.2, rng.random((80, 7)), rng.random((80, 80)), rng.random((80, 7)))


def run(fn, backend, make_args):
    compiled = dynamo.compile(fn, backend=backend)
    for args in make_args:
        plain = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        assert same_value(compiled(*ours), fn(*plain))
        for p, o in zip(plain, ours):
            assert same_value(o, p)
    return compiled


def test_a_short_loop_nested_in_a_captured_loop_stays_a_loop_for_a_native_backend():
    native = NativeLoopsCounter()
    run(symm, native, [inputs(0), inputs(1)])
    assert native.frame_count == 1
    assert [count_loops(g.graph) for g in native.graphs] == [2]  # the loop over i, and over j inside it
    report = dynamo.explain(symm, backend=native)(*inputs(2))
    assert report.loop_count == 2


def test_the_same_nest_unrolls_its_short_inner_loop_for_other_backends():
    plain_backend = CompileCounter()
    run(symm, plain_backend, [inputs(0), inputs(1)])
    assert [count_loops(g.graph) for g in plain_backend.graphs] == [1]


def test_a_short_loop_outside_any_captured_loop_is_unrolled_for_every_backend():
    for backend in (NativeLoopsCounter(), CompileCounter()):
        x = np.random.default_rng(3).random(1000)
        run(scaled_sum, backend, [(x, 5), (x * 2, 5)])
        assert [count_loops(g.graph) for g in backend.graphs] == [0]


def accelerations(pos, mass):
    d = pos[None, :, :] - pos[:, None, :]
    inv = mass[None, :] / ((d ** 2).sum(-1) + 1e-3) ** 1.5
    np.fill_diagonal(inv, 0.0)
    return (d * inv[:, :, None]).sum(1)


def leapfrog(pos, vel, mass, dt, steps):
    a = accelerations(pos, mass)
    for _ in range(steps):  # short and known, carries arrays, but 19 operations per step
        vel += 0.5 * dt * a
        pos += dt * vel
        a = accelerations(pos, mass)
        vel += 0.5 * dt * a
    return pos, vel


def test_a_short_loop_carrying_arrays_stays_a_loop_where_unrolling_would_outgrow_the_budget():
    rng = np.random.default_rng(4)
    args = [(rng.standard_normal((16, 3)), np.zeros((16, 3)), rng.random(16), 1e-3, 50) for _ in range(2)]
    native = NativeLoopsCounter()
    run(leapfrog, native, args)
    assert [count_loops(g.graph) for g in native.graphs] == [1]  # 50 x 19 operations: a loop node
    assert all(len(g.graph.nodes) < 40 for g in native.graphs)
    # within the budget, the same loop unrolls (and fuses across iterations): 5 x 19 operations
    with dynamo.config.patch(loop_unroll_op_budget=5 * 19):
        dynamo.reset()
        few = NativeLoopsCounter()
        run(leapfrog, few, [(*a[:4], 5) for a in args])
        assert [count_loops(g.graph) for g in few.graphs] == [0]


def test_loops_native_reads_the_trait_without_importing_a_lazy_backend():
    assert loops_native("c") and loops_native(dynamo.backends.registry.lookup_backend_deferred("c"))
    assert isinstance(dynamo.backends.registry.lookup_backend_deferred("c"), DeferredBackend)
    assert not loops_native("numpy") and not loops_native("eager")
    assert not loops_native(lookup_backend("eager")) and loops_native(NativeLoopsCounter())
