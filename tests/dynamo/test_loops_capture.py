"""Loops that stay loops (dynamo/loop_capture.py): `for i in range(...)` past the unroll threshold or
with a symbolic trip count becomes one loop node, traced once. Every program runs compiled and plain
on copies of the same inputs, three calls each, and must give the same results and leave the same
arrays; key programs have exact graph, loop and compile counts; bodies that cannot be captured run
as before, and explain says which loop and why."""
from __future__ import annotations

import numpy as np
import pytest

import dynamo
from dynamo.fx_ir import count_loops
from tests.support import compile_with_counter, fallbacks, graph_breaks, same_value


@pytest.fixture(autouse=True)
def short_loops_stay_loops():
    """The corpus runs small sizes: loops past 16 iterations become loop nodes (default: 64)."""
    with dynamo.config.patch(loop_unroll_threshold=16):
        yield


def check_calls(fn, make_inputs, sizes, backend="numpy", **options):
    """Call fn compiled and plain on fresh inputs for each size: same results, same arrays after."""
    compiled = dynamo.compile(fn, backend=backend, **options)
    for size in sizes:
        plain_args, compiled_args = make_inputs(size), make_inputs(size)
        want = fn(*plain_args)
        got = compiled(*compiled_args)
        assert same_value(got, want), (size, got, want)
        for p, c in zip(plain_args, compiled_args):
            assert same_value(c, p), size
    return compiled


def counted(fn, make_inputs, sizes, **options):
    """Like check_calls with a recording backend: (compiled function, its counter)."""
    compiled, counter = compile_with_counter(fn, **options)
    for size in sizes:
        plain_args, compiled_args = make_inputs(size), make_inputs(size)
        assert same_value(compiled(*compiled_args), fn(*plain_args))
        for p, c in zip(plain_args, compiled_args):
            assert same_value(c, p)
    return compiled, counter


def loops_in(counter):
    return [count_loops(g.graph) for g in counter.graphs]


def rng(seed):
    return np.random.default_rng(seed)


# ---- programs -------------------------------------------------------------------------------------

def jacobi_1d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def jacobi_inputs(steps):
    return steps, rng(0).random(30), rng(1).random(30)


def trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def trisolv_inputs(n):
    return np.tril(rng(n).random((n, n))) + np.eye(n), np.zeros(n), rng(n + 1).random(n)


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


def spd_inputs(n):
    r = rng(n).random((n, n))
    return (r @ r.T + n * np.eye(n),)


def scalar_sum(x):
    total = x[0] * 0
    for i in range(x.shape[0]):
        total = total + np.tanh(x[i]) * 2.0
    return total


def float32_trace(a):
    trace = a[0, 0] * np.float32(0)
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def rows_of_dynamic_axis(A):
    out = np.zeros_like(A)
    for i in range(A.shape[0]):
        out[i] = A[i] * i + A[i // 2]
    return out


def writes_a_view_of_its_argument(A):
    column = A[:, 1]
    for i in range(1, A.shape[0]):
        column[i] = column[i - 1] * 0.5 + A[i, 0]
    return column


def carried_array(x, steps):
    y = x.copy()
    for t in range(steps):
        y = y * 0.5 + x
    return y


def in_place_out(a, b):
    for t in range(40):
        np.add(a, b, out=a)
        np.multiply(a, 0.5, out=a)


def float_step_and_index_arithmetic(r, npt):
    out = np.empty(npt)
    rmax = r.max()
    for i in range(npt):
        r1 = rmax * i / npt
        out[i] = r1 * 2 + i
    return out


# ---- captured loops -----------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["numpy", "eager"])
def test_time_step_stencil_is_one_loop_and_a_new_step_count_does_not_recompile(backend):
    compiled = check_calls(jacobi_1d, jacobi_inputs, [20, 31, 44, 50], backend=backend)
    frames = compiled._dynamo_callback.compiled_frames
    assert len(frames) == 2  # the first count, then the count as a symbol (automatic dynamic)
    assert all(frame.loop_count == 1 for _, frame in frames)


def test_stencil_graph_and_loop_counts_exact():
    _, counter = counted(jacobi_1d, jacobi_inputs, [20, 31, 44])
    assert counter.frame_count == 2 and loops_in(counter) == [1, 1]
    assert counter.op_counts() == [1, 1]  # the loop node alone


@pytest.mark.parametrize("backend", ["numpy", "eager"])
def test_triangular_solve_with_slices_bounded_by_the_loop_variable(backend):
    compiled = check_calls(trisolv, trisolv_inputs, [20, 25, 33, 40], backend=backend)
    frames = compiled._dynamo_callback.compiled_frames
    assert len(frames) == 2 and fallbacks(compiled) == [] and graph_breaks(compiled) == []


@pytest.mark.parametrize("program,loops", [(cholesky, 2), (lu, 3)])
def test_factorizations_nest_loops(program, loops):
    _, counter = counted(program, spd_inputs, [20, 24, 28])
    assert counter.frame_count == 2 and loops_in(counter) == [loops, loops]
    check_calls(program, spd_inputs, [20, 24, 28])


def test_scalar_accumulation_keeps_numpy_scalar_types():
    compiled, counter = counted(scalar_sum, lambda n: (rng(n).random(n),), [20, 30, 40])
    assert loops_in(counter) == [1, 1]
    got = compiled(np.arange(25.0))
    assert type(got) is np.float64
    check_calls(float32_trace, lambda n: (rng(n).random((n, n)).astype(np.float32),), [20, 24, 30])


def test_loop_over_a_dynamic_first_axis():
    _, counter = counted(rows_of_dynamic_axis, lambda n: (rng(n).random((n, 3)),), [20, 26, 31])
    assert loops_in(counter) == [1, 1]
    check_calls(rows_of_dynamic_axis, lambda n: (rng(n).random((n, 3)),), [20, 26, 31])


def test_an_index_that_may_wrap_around_is_not_captured():
    def f(A):
        out = np.zeros_like(A)
        for i in range(A.shape[0]):
            out[i] = A[i - 1]  # A[-1] on the first iteration: the index is not one expression of i
        return out

    compiled = check_calls(f, lambda n: (rng(n).random((n, 3)),), [20, 20])
    assert compiled._dynamo_callback.compiled_frames[0][1].loop_count == 0


def periodic_indices(z, ring):
    """Remainders of the loop variable as indices (a ring buffer, periodic neighbours): each lies in
    [0, m - 1] whatever the iteration, so every index is in bounds for all of them."""
    total = z[0] * 0
    for i in range(40):
        ring[i % 8] += z[(i - 25) % 7] * z[(2 * i + 3) % 11]
        total = total + ring[(i + 1) % 8] + z[i % 7 - 7]
    return total


def remainder_that_changes_sign(z):
    total = z[0] * 0
    for i in range(40):
        total = total + z[-(i % 7)]  # z[0] once in 7 iterations, else from the end
    return total


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_remainders_of_the_loop_variable_index_a_captured_loop(backend):
    check_calls(periodic_indices, lambda n: (rng(n).random(n), rng(n + 1).random(8)), [12, 12, 15], backend)
    _, counter = counted(periodic_indices, lambda n: (rng(n).random(n), rng(n + 1).random(8)), [12, 12])
    assert loops_in(counter) == [1]
    check_calls(remainder_that_changes_sign, lambda n: (rng(n).random(n),), [12, 12], backend)
    _, counter = counted(remainder_that_changes_sign, lambda n: (rng(n).random(n),), [12, 12])
    assert loops_in(counter) == [0]  # unrolled: the index's sign depends on the iteration


def test_loop_writing_a_view_of_an_argument():
    _, counter = counted(writes_a_view_of_its_argument, lambda n: (rng(n).random((n, 3)),), [20, 26, 31])
    assert loops_in(counter) == [1, 1]
    check_calls(writes_a_view_of_its_argument, lambda n: (rng(n).random((n, 3)),), [20, 26, 31])


def test_carried_array_and_out_arguments():
    compiled, counter = counted(carried_array, lambda n: (rng(n).random(5), n), [20, 30, 40])
    assert loops_in(counter) == [1, 1]
    check_calls(in_place_out, lambda n: (rng(n).random(n), rng(n + 1).random(n)), [8, 9, 10])


def test_float_arithmetic_with_the_loop_variable():
    check_calls(float_step_and_index_arithmetic, lambda n: (rng(n).random(7), n), [20, 30, 40])


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


@pytest.mark.parametrize("program,make", [(go_fast, lambda n: (rng(n).random((n, n)),)),
                                          (durbin, lambda n: (rng(n).random(n) * 0.1,))])
def test_python_numbers_carried_through_numpy_scalars_peel_the_first_iteration(program, make):
    _, counter = counted(program, make, [20, 30, 40])
    assert loops_in(counter) == [1, 1]
    check_calls(program, make, [20, 30, 40], backend="numpy")


def test_short_known_loops_still_unroll():
    def f(a, n):
        for i in range(n):
            a = a * 0.5 + i
        return a

    with dynamo.config.patch(loop_unroll_threshold=64):
        _, counter = counted(f, lambda n: (np.arange(3.0), n), [50, 50])
        assert loops_in(counter) == [0]  # one fused chain of 100 ops
        dynamo.reset()
        _, counter = counted(f, lambda n: (np.arange(3.0), n), [65, 65])
        assert loops_in(counter) == [1]


def test_explain_lists_captured_loops():
    report = dynamo.explain(trisolv, backend="numpy")(*trisolv_inputs(30))
    assert report.loop_count == 1
    text = str(report)
    assert "Loops (1 captured as loop nodes):" in text
    assert "loop over i at" in text and "30 iterations" in text


# ---- loops that cannot be captured run as before -------------------------------------------------------

def body_prints(x):
    for i in range(20):
        print(i)
        x[i] = i
    return x


def body_mutates_a_list(x):
    seen = []
    for i in range(20):
        seen.append(x[i] * 2)
    return seen


def body_breaks_on_data(x):
    total = x[0] * 0
    for i in range(x.shape[0]):
        if x[i] > 0.9:
            break
        total = total + x[i]
    return total


def python_counter(x):
    k = 1
    for i in range(20):
        x[i] = k
        k = k * 2  # not a counter (a constant step): an int carried through the loop
    return k


@pytest.mark.parametrize("program,why", [
    (body_prints, "print"), (body_mutates_a_list, "mutates"), (body_breaks_on_data, "leaves the loop"),
    (python_counter, "k"),
])
def test_bodies_that_cannot_be_captured_fall_back_and_explain_says_why(program, why, capsys):
    def inputs(n):
        return (rng(n).random(n),)

    check_calls(program, inputs, [20, 20, 24])
    capsys.readouterr()
    report = dynamo.explain(program, backend="numpy")(*inputs(20))
    text = str(report)
    assert report.loop_count == 0
    assert "not captured" in text and why in text, text


def seidel(TSTEPS, N, A):
    for t in range(0, TSTEPS - 1):
        for i in range(1, N - 1):
            A[i, 1:-1] += A[i - 1, :-2] + A[i + 1, 2:]
            for j in range(1, N - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0


def test_short_loops_around_inner_loops_are_captured_not_unrolled():
    with dynamo.config.patch(loop_unroll_threshold=64):
        _, counter = counted(seidel, lambda n: (4, n, rng(n).random((n, n))), [30, 30])
    assert loops_in(counter) == [2]  # t and i; the innermost j (28 iterations) unrolls in i's body


def test_unused_work_in_the_body_still_runs_every_iteration():
    import warnings

    def f(a):
        for i in range(70):
            unused = np.full_like(a, 1j)  # warns (complex to real) every iteration
        return a

    def warned(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(np.ones(3))
        return [str(w.message) for w in caught]

    compiled = dynamo.compile(f, backend="numpy")
    assert warned(compiled) == warned(f) and len(warned(f)) == 70
    assert compiled._dynamo_callback.compiled_frames[0][1].loop_count == 1


def test_numpy_backend_runs_the_whole_loop_as_one_generated_for_statement():
    from dynamo.fx_ir import loop_nodes

    compiled = check_calls(carried_array, lambda n: (rng(n).random(5), n), [20, 30, 0, 1, 40])
    frames = [frame for _, frame in compiled._dynamo_callback.compiled_frames]
    assert [frame.loop_count for frame in frames[:2]] == [1, 1]  # n = 20, then n symbolic
    for frame in frames[:2]:
        gm = frame.graphs[0].graph_module
        (node,) = loop_nodes(gm.graph)
        loop = gm.get_attribute(node.target)
        assert loop.run_loop is not None and "for " in loop.run_loop.source


# ---- loops over an array's rows ---------------------------------------------------------------------------

def sum_of_scaled_rows(A):
    total = np.zeros(A.shape[1])
    for row in A:
        total += row * 2
    return total


def squares_of_elements(a):
    acc = a[0] * 0
    for v in a:
        acc = acc + v * v
    return acc


def rows_written_through_the_loop_variable(A):
    for row in A:
        row[0] = row[1] + row[2]
    return A


def rows_of(n):
    return (rng(n).random((n, 3)),)


@pytest.mark.parametrize("program,make", [
    (sum_of_scaled_rows, rows_of), (squares_of_elements, lambda n: (rng(n).random(n),)),
    (rows_written_through_the_loop_variable, rows_of),
])
def test_loops_over_an_array_first_axis_are_loop_nodes(program, make):
    _, counter = counted(program, make, [30, 30, 30])
    assert loops_in(counter) == [1]
    check_calls(program, make, [30, 40, 40, 17])


def bytes_checksum(data):
    crc = 0xFFFF
    for b in data:
        if (crc & 1) ^ (b & 1):
            crc = (crc >> 1) ^ 0x8408
        else:
            crc >>= 1
    return crc


def test_a_peeled_loop_whose_first_iteration_breaks_runs_as_before_and_explain_names_why():
    make = lambda n: (rng(n).integers(0, 256, n, dtype=np.uint8),)  # noqa: E731
    check_calls(bytes_checksum, make, [30, 30, 30])
    report = dynamo.explain(bytes_checksum, backend="numpy")(*make(30))
    text = str(report)
    assert report.loop_count == 0 and report.graph_count == 1
    line = bytes_checksum.__code__.co_firstlineno + 2
    assert f"loop over b at {__file__}:{line} not captured: data-dependent branch" in text, text


def test_explain_gives_each_captured_loop_its_line_trip_count_body_ops_and_carried_values():
    report = dynamo.explain(scalar_sum, backend="numpy")(rng(0).random(40))
    text = str(report)
    line = scalar_sum.__code__.co_firstlineno + 2
    assert f"loop over i at {__file__}:{line}: 40 iterations, 4 ops per iteration, carried: total" in text, text


def back_substitution(A, y, x):
    for i in range(A.shape[0] - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x


def test_a_size_relation_where_the_loop_variable_cancels_is_guarded_without_it():
    # A[i, i+1:] @ x[i+1:] needs n - 1 - i == m - 1 - i: with sizes dynamic from the second call on,
    # the guard is n == m (recording it with the loop symbol in it was an internal error, ludcmp)
    def inputs(n):
        r = rng(n)
        return r.random((n, n)) + n * np.eye(n), r.random(n), np.zeros(n)
    compiled, counter = counted(back_substitution, inputs, [20, 30, 40])
    assert loops_in(counter)[-1] == 1 and graph_breaks(compiled) == []
