"""Loop nodes as C loops under backend "c" (backends/c_cpu/loop_codegen.py): a corpus of loop programs
compared bitwise with plain NumPy over three calls, and exact counts of loops that ran as C."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import c_helpers
import dynamo
from dynamo.backends.c_cpu.loops import NativeLoop
from dynamo.fx_ir import ForLoop, WhileLoop

pytestmark = c_helpers.needs_compiler


class Recorder(c_helpers.Recorder):
    """backend "c", keeping what it returned for each graph, and the C loops it made."""

    compiles_loops = True  # as backend "c": the frontend keeps short loops as loop nodes

    def native_loops(self):
        """The NativeLoop of every loop node (nested ones in compiled bodies included)."""
        found = []

        def walk(run):
            for candidate in getattr(run, "candidates", ()):  # FasterOf: c and numpy timed in turn
                walk(candidate)
            for value in getattr(run, "__globals__", {}).values():
                if isinstance(value, (ForLoop, WhileLoop)) and isinstance(value.run_loop, NativeLoop):
                    found.append(value.run_loop)
                    for program in getattr(value.run_body, "programs", {}).values():
                        walk(program)
        for run in self.graphs:
            walk(run)
        return found


def nested_counts(loop):
    """Per compiled C loop of a NativeLoop: how many loop nodes of its body it nests as C loops."""
    return [entry[0].nested for entry in loop.compiled.values() if entry is not None]


def native_runs(rec):
    """Each captured loop's native run count, every loop having lowered to C (none refused)."""
    loops = rec.native_loops()
    assert not any(loop.refused for loop in loops), [loop.refused for loop in loops]
    return [loop.native_runs for loop in loops]


def bits(value):
    if isinstance(value, (np.ndarray, np.generic)):
        return (type(value), np.asarray(value).dtype, np.asarray(value).shape, np.asarray(value).tobytes())
    if isinstance(value, tuple):
        return tuple(bits(v) for v in value)
    return (type(value), value)


def run_both(fn, make_args):
    """fn compiled by backend "c" and plain, on fresh copies of the same inputs: results and every
    argument array compared bitwise (in-place writes included)."""
    rec = Recorder()
    compiled = dynamo.compile(fn, backend=rec)
    for args in make_args:
        plain_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        expected = fn(*plain_args)
        got = compiled(*ours)
        assert bits(got) == bits(expected)
        for p, o in zip(plain_args, ours):
            assert bits(o) == bits(p)
    return rec


def accumulate(A, n):
    s = 0.0
    for i in range(n):
        s = s + A[i] * 2.0 - A[n - 1 - i] / 3.0
    return s


def trisolv(L, x, b):
    N = x.shape[0]
    for i in range(N):
        s = b[i]
        for j in range(i):
            s = s - L[i, j] * x[j]
        x[i] = s / L[i, i]


def seidel(steps, N, A):
    for t in range(steps):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1] + A[i, j - 1] + A[i, j]
                           + A[i, j + 1] + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


def prefix_in_place(a, n):
    for i in range(1, n):
        a[i] += a[i - 1]
    return a


def counters(A, n):
    k = 0
    total = A[0]
    for i in range(n):
        k = k + 3
        total = total + A[i - k // 3 + i] * k - A[-1 - i]
    return k, total


def python_floats(n):
    x = 1.5
    for i in range(n):
        x = x * 0.5 + i
    return x


rng = np.random.default_rng(7)


def test_scalar_accumulation_runs_as_one_c_loop_and_a_new_trip_count_does_not_recompile():
    A = rng.random(300)
    rec = run_both(accumulate, [(A, 300), (A, 120), (A, 77)])
    # n is a constant on the first call, then symbolic: the third call reuses the second graph
    assert len(rec.graphs) == 2
    loops = rec.native_loops()
    assert [loop.native_runs for loop in loops] == [1, 2] and not any(loop.refused for loop in loops)
    run_both(accumulate, [(A, 1), (A, 0), (A, 2)])  # empty and one-iteration ranges


def wrapped_and_clamped(z, ring, n):
    total = z[0] * 0.0
    for i in range(n):
        ring[i % 8] += z[(i - 25) % 7] * z[(i - 25) // 4 + 7]  # negative dividends round down
        total = total + z[max(i - 30, 0)] - z[min(i + 1, 11, n)] + ring[(i + 1) % 8]
    return total


def test_remainders_quotients_and_extrema_of_the_loop_variable_index_a_c_loop():
    z, ring = rng.random(12), rng.random(8)
    rec = run_both(wrapped_and_clamped, [(z, ring, 40), (z, ring, 40), (z, ring, 33)])
    assert sum(native_runs(rec)) == 3


def test_triangular_solve_inner_loop_is_c():
    def make(N):
        return (rng.random((N, N)) + 3 * np.eye(N), np.zeros(N), rng.random(N))
    rec = run_both(trisolv, [make(40), make(55), make(62)])
    # N is a constant, then symbolic: two graphs, each one C loop over i with the loop over j inside
    assert [(loop.native_runs, nested_counts(loop)) for loop in rec.native_loops()] == [(1, [1]), (2, [1])]


def test_stencil_in_place_sweep():
    rec = run_both(seidel, [(2, 30, rng.random((30, 30))), (3, 30, rng.random((30, 30))),
                            (4, 30, rng.random((30, 30)))])
    # steps constant, then symbolic: the loop over t is one C function, the loop over i nested in it
    # and the loop over j (28 iterations of a constant range: a loop node for backend c, not unrolled)
    assert [(loop.native_runs, nested_counts(loop)) for loop in rec.native_loops()] == [(1, [2]), (2, [2])]


def test_loop_writing_a_view_of_an_argument():
    base = rng.random((6, 80))

    def on_view(b, n):
        return prefix_in_place(b[2, ::3], n)
    rec = run_both(on_view, [(base, 20), (base, 26), (base, 5)])
    assert any(loop.native_runs for loop in rec.native_loops())


def test_index_out_of_bounds_raises_where_numpy_does_with_earlier_writes_done():
    def sweep(a, n):
        for i in range(n):
            a[i] = a[i] * 2.0
        return a
    compiled = dynamo.compile(sweep, backend="c")
    plain_a, ours = rng.random(10), None
    ours = plain_a.copy()
    with pytest.raises(IndexError) as plain_error:
        sweep(plain_a, 300)
    with pytest.raises(IndexError) as our_error:
        compiled(ours, 300)
    assert str(our_error.value) == str(plain_error.value)
    assert ours.tobytes() == plain_a.tobytes()


def test_int_counter_and_float_carried():
    A = rng.random(50)
    run_both(counters, [(A, 40), (A, 41), (A, 1)])


def test_python_float_arithmetic_stays_a_python_loop():
    rec = run_both(python_floats, [(30,), (31,), (2,)])
    assert all(loop.native_runs == 0 and "Python float arithmetic" in " ".join(loop.refused.values())
               for loop in rec.native_loops())


def test_division_by_zero_warns_and_raise_mode_runs_the_python_loop():
    def divide(a, n):
        s = 1.0
        for i in range(n):
            s = s / a[i]
        return s
    a = np.zeros(8)
    compiled = dynamo.compile(divide, backend="c")
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("default")
        expected = divide(a, 8)
    with warnings.catch_warnings(record=True) as our_w:
        warnings.simplefilter("default")
        got = compiled(a, 8)
    assert bits(got) == bits(expected)
    assert [str(w.message) for w in our_w] == [str(w.message) for w in plain_w]
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as plain_error:
            divide(a, 8)
        with pytest.raises(FloatingPointError) as our_error:
            compiled(a, 8)
    assert str(our_error.value) == str(plain_error.value)
