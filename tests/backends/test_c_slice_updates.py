"""In-place operators on slices stored back (`ey[1:, :] -= x`) under backend "c": rewritten to a store of
the out-of-place result (backends/c_cpu/rewrites.py) so that the kernel IR lowers them into C kernels;
compared bitwise with plain NumPy over several shapes and calls (sizes symbolic after the first), with
the rewrite's limits: views read elsewhere, array indices and casts keep the in-place op."""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from c_helpers import bits, needs_compiler

import dynamo
from dynamo.backends.c_cpu.rewrites import slice_updates_as_stores
from tests.support import CompileCounter

pytestmark = needs_compiler

rng = np.random.default_rng(8)


class Programs:
    """backend c, keeping each graph's program (its NumPy steps)."""

    def __init__(self):
        self.runs = []

    def __call__(self, gm, inputs):
        from dynamo.backends import lookup_backend

        self.runs.append(lookup_backend("c")(gm, inputs))
        return self.runs[-1]

    def numpy_steps(self, run):
        return [str(node) for node, _ in getattr(run, "fallback_nodes", [])]


def fdtd_step(ex, ey, hz):
    ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
    ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
    hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    hz[1:, 1:] *= 1.5
    ex[2:-2, ::2] /= hz[2:-2, ::2] + 3.0
    ey[1:-1, 1:] += ey[:-2, :-1]  # reads what it writes, shifted: NumPy's overlap copy
    return ex, ey, hz


def run(fn, backend, make_args, calls=3):
    compiled = dynamo.compile(fn, backend=backend)
    for k in range(calls):
        args = make_args(k)
        plain = [a.copy() for a in args]
        ours = [a.copy() for a in args]
        assert bits(compiled(*ours)) == bits(fn(*plain))
        for p, o in zip(plain, ours):
            assert bits(o) == bits(p)
    return compiled


def test_slice_updates_lower_into_c_kernels_bitwise():
    sizes = [(12, 15), (20, 9), (7, 31)]
    programs = Programs()
    run(fdtd_step, programs, lambda k: [rng.standard_normal(sizes[k]) for _ in range(3)])
    # the first call's sizes are constants: every update is a C kernel (later calls' symbolic slices
    # with negative stops are gathers the kernel IR does not lower yet: NumPy steps, as before)
    assert programs.numpy_steps(programs.runs[0]) == []


def test_warnings_of_a_rewritten_update_name_numpys_ufunc():
    def halve(a, b):
        a[1:] /= b[1:]
        return a
    a, b = np.ones(40), np.zeros(40)
    compiled = dynamo.compile(halve, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = halve(a.copy(), b)
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(a.copy(), b)
    assert bits(got) == bits(expected)
    assert [str(w.message) for w in our_w] == [str(w.message) for w in plain_w] == ["divide by zero encountered in divide"]


def graph_of(fn, *args):
    counter = CompileCounter()
    dynamo.compile(fn, backend=counter)(*args)
    (gm,) = counter.graphs
    return gm


def in_place_targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function" and n.target in (operator.isub, operator.sub)]


def test_the_rewrite_keeps_updates_whose_view_or_cast_matters():
    def named_view(a, x):
        u = a[1:]
        u -= x
        return u  # the view itself is returned: not just stored back

    def fancy(a, x):
        a[[0, 0, 2]] -= x
        return a

    def narrowing(a, x):
        a[1:] -= x  # float32 view, float64 operand: the in-place op casts
        return a

    def simple(a, x):
        a[1:] -= x
        return a
    x3 = np.ones(3)
    assert in_place_targets(slice_updates_as_stores(graph_of(named_view, np.ones(4), x3))) == [operator.isub]
    assert in_place_targets(slice_updates_as_stores(graph_of(fancy, np.ones(4), x3))) == [operator.isub]
    assert in_place_targets(slice_updates_as_stores(graph_of(narrowing, np.ones(4, np.float32), x3))) == [operator.isub]
    gm = graph_of(simple, np.ones(4), x3)
    assert in_place_targets(slice_updates_as_stores(gm)) == [operator.sub]
    assert in_place_targets(gm) == [operator.isub]  # the graph given is not changed: a copy is


@pytest.mark.parametrize("fn_name", ["named_view", "fancy", "narrowing", "int_with_float"])
def test_updates_left_in_place_still_equal_numpy(fn_name):
    def named_view(a, x):
        u = a[1:]
        u -= x
        return u

    def fancy(a, x):
        a[[0, 0, 2]] -= x
        return a

    def narrowing(a, x):
        a[1:] -= x
        return a

    def int_with_float(a, x):
        a[1:] -= x  # NumPy refuses to cast float64 into int64 in place
        return a
    fn = {"named_view": named_view, "fancy": fancy, "narrowing": narrowing, "int_with_float": int_with_float}[fn_name]
    a = {"narrowing": np.arange(4, dtype=np.float32), "int_with_float": np.arange(4)}.get(fn_name, np.arange(4.0))
    x = np.array([0.5, 1.25, -2.0])
    compiled = dynamo.compile(fn, backend="c")
    if fn_name == "int_with_float":
        with pytest.raises(TypeError) as plain_error:
            fn(a.copy(), x)
        with pytest.raises(type(plain_error.value)):
            compiled(a.copy(), x)
        return
    assert bits(compiled(a.copy(), x)) == bits(fn(a.copy(), x))


def gray_scott_step(U, V, Du, Dv, F, k):
    u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]  # interior views read by the Laplacians, then updated in place
    Lu = U[:-2, 1:-1] + U[2:, 1:-1] + U[1:-1, :-2] + U[1:-1, 2:] - 4 * u
    Lv = V[:-2, 1:-1] + V[2:, 1:-1] + V[1:-1, :-2] + V[1:-1, 2:] - 4 * v
    uvv = u * v * v
    u += Du * Lu - uvv + F * (1 - u)
    v += Dv * Lv + uvv - (F + k) * v


def test_updates_of_named_views_read_before_lower_into_c_kernels_bitwise():
    # `u += ...` on a view read only before the update: a store of u + ... (it ran as a NumPy step
    # that split the kernels: 1.0x plain; 2.3x as kernels on 128 x 128)
    programs = Programs()
    compiled = dynamo.compile(gray_scott_step, backend=programs)
    sizes = [(16, 16), (16, 16), (9, 23)]
    for k in range(3):
        U, V = rng.random(sizes[k]), rng.random(sizes[k])
        plain, ours = [U.copy(), V.copy()], [U.copy(), V.copy()]
        assert gray_scott_step(*plain, 0.16, 0.08, 0.035, 0.065) is compiled(*ours, 0.16, 0.08, 0.035, 0.065) is None
        assert bits(ours) == bits(plain)
    assert programs.numpy_steps(programs.runs[0]) == []


def test_a_view_read_after_its_update_keeps_the_in_place_op():
    def read_after(a, x):
        u = a[1:]
        u -= x
        return a, u * 2.0  # reads the view after: the update must stay an update of the view

    x = np.array([0.5, 1.25, -2.0])
    assert in_place_targets(slice_updates_as_stores(graph_of(read_after, np.ones(4), x))) == [operator.isub]
    a = np.arange(4.0)
    assert bits(dynamo.compile(read_after, backend="c")(a.copy(), x)) == bits(read_after(a.copy(), x))


def test_an_overlapping_view_read_after_a_rewritten_update_sees_it():
    def shifted(a):
        u, w = a[1:-1], a[:-2]
        u += w  # overlapping operand: NumPy copies it first
        return w * 1.0  # w is a view of a: it shows the update

    gm = graph_of(shifted, np.ones(6))
    assert operator.add in [n.target for n in slice_updates_as_stores(gm).graph.nodes]
    a = rng.standard_normal(9)
    compiled = dynamo.compile(shifted, backend="c")
    ours, plain = a.copy(), a.copy()
    assert bits(compiled(ours)) == bits(shifted(plain)) and bits(ours) == bits(plain)
