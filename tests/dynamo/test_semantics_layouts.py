"""Layout of results (issue #17, class 11): strides and contiguity flags of the arrays a compiled
function returns are NumPy's on every backend, for Fortran-ordered, transposed, sliced and reversed
inputs and for results NumPy lays out like a transpose; views among the results stay views."""
import numpy as np
import pytest

import dynamo
from semantics_helpers import BACKENDS


def scaled(x):
    return x * 2 + 1


def of_transposes(x):
    return np.exp(x.T) + x.T


def reshaped_and_like(x):
    y = np.empty_like(x)
    y[...] = x * 2
    return (x + 1).reshape(-1), y, np.ones_like(x) * x


def copies(x):
    return x.copy(), np.copy(x), x.astype(np.float32), np.ascontiguousarray(x), np.where(x > 3, x, -x)


def mixed(a, b):
    return a + b, a * b.T, np.maximum(a, 2.0)


def joined(a, b):
    return np.concatenate([a, b], axis=1), np.stack([a, b])


def written_then_returned(x):
    x += 1
    y = x * 3
    return x, y


def a_result_and_its_view(x):
    y = x.T * 2
    return y, y[1:]


def layouts(value):
    if isinstance(value, (tuple, list)):
        return [layouts(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.shape, value.strides, value.flags.c_contiguous, value.flags.f_contiguous
    return None


def grid(n=4, m=6):
    return np.arange(float(n * m)).reshape(n, m)


INPUTS = {
    "C": lambda: (grid(),),
    "F": lambda: (np.asfortranarray(grid()),),
    "T": lambda: (grid(6, 4).T,),
    "sliced": lambda: (grid(8, 12)[::2, ::2],),
    "reversed": lambda: (grid()[::-1],),
    "3-d": lambda: (np.arange(60.0).reshape(3, 4, 5).transpose(2, 0, 1),),
}
CASES = [(fn, inputs) for fn in (scaled, of_transposes, reshaped_and_like, copies, written_then_returned)
         for inputs in INPUTS]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, inputs", CASES, ids=[f"{fn.__name__}-{inputs}" for fn, inputs in CASES])
def test_results_are_laid_out_as_numpys(fn, inputs, backend):
    make = INPUTS[inputs]
    expected = fn(*make())
    compiled = dynamo.compile(fn, backend=backend)
    for _ in range(2):  # the first call learns what the layouts are, the second knows
        got = compiled(*make())
        assert layouts(got) == layouts(expected)
        np.testing.assert_array_equal(np.asarray(got[0] if isinstance(got, tuple) else got),
                                      np.asarray(expected[0] if isinstance(expected, tuple) else expected))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [mixed, joined])
def test_two_inputs_in_other_orders(fn, backend):
    compiled = dynamo.compile(fn, backend=backend)
    square = np.arange(16.0).reshape(4, 4)
    for a, b in [(np.asfortranarray(square), square + 1), (square, (square + 1).T), (square.T, square[:, ::-1])]:
        assert layouts(compiled(a, b)) == layouts(fn(a, b))


def views_of_a_result(x):
    y = x.T * 2
    return y, y[1:], y.T, y[:, ::-1][None], y.reshape(-1)


def views_of_an_f_result(x):
    y = np.exp(x) + 1
    return y[1:], y, y.T[::2]


def base_of(value, results):
    """Which result (position) an array's .base is, None for an array owning its memory, "other" else."""
    if value.base is None:
        return None
    return next((k for k, r in enumerate(results) if value.base is r), "other")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [a_result_and_its_view, views_of_a_result, views_of_an_f_result])
@pytest.mark.parametrize("inputs", ["C", "F", "T", "reversed"])
def test_views_among_the_results_are_numpys(fn, inputs, backend):
    # NumPy's y is laid out like its operands (a transpose's order for x.T * 2 of a C-ordered x) and
    # y[1:], y.T ... are views of it; c and triton compute y C-ordered: y is copied into NumPy's
    # layout and its views taken again of the copy
    compiled = dynamo.compile(fn, backend=backend)
    for _ in range(2):
        x, = INPUTS[inputs]()
        got, expected = compiled(x), fn(x)
        assert layouts(got) == layouts(expected)
        for k, (g, e) in enumerate(zip(got, expected)):
            np.testing.assert_array_equal(g, e)
            assert base_of(g, got) == base_of(e, expected), k
            for m in range(len(got)):
                assert np.shares_memory(g, got[m]) == np.shares_memory(e, expected[m]), (k, m)


@pytest.mark.parametrize("backend", BACKENDS)
def test_views_of_results_with_sizes_that_vary(backend):
    compiled = dynamo.compile(views_of_a_result, backend=backend, dynamic=True)
    for n in (3, 5, 7):
        for x in (grid(n, n + 2), np.asfortranarray(grid(n, n + 3))):
            got, expected = compiled(x), views_of_a_result(x)
            assert layouts(got) == layouts(expected)
            assert [np.shares_memory(g, got[0]) for g in got] == [np.shares_memory(e, expected[0]) for e in expected]


def size_one_axes(x):
    return x * 2, np.exp(x[:, None]) + 1, (x[None] * 3).T, x.sum(axis=1, keepdims=True) + 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dynamic", [False, True])
def test_strides_of_axes_of_length_one(backend, dynamic):
    # an axis of length 1 has the stride NumPy's allocation gives it (the flags do not tell)
    compiled = dynamo.compile(size_one_axes, backend=backend, dynamic=dynamic)
    for x in (grid(1, 5), grid(5, 1), np.asfortranarray(grid(4, 5)), grid(4, 1)[::-1], grid(3, 4)):
        assert layouts(compiled(x)) == layouts(size_one_axes(x))


def kept_axes(x):
    return x.sum(axis=0, keepdims=True) * 2, np.max(x, axis=2, keepdims=True) + 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dynamic", [False, True])
def test_strides_of_kept_axes(backend, dynamic):
    # NumPy's keepdims result of a transposed input strides its axes of length 1 neither as a C- nor
    # as an F-ordered array of its shape ((1, 1, 4) with strides (8, 32, 8))
    compiled = dynamo.compile(kept_axes, backend=backend, dynamic=dynamic)
    for shape, axes in [((4, 1, 5), (2, 1, 0)), ((4, 1, 5), (1, 2, 0)), ((3, 2, 5), (2, 0, 1)), ((3, 6, 5), (0, 1, 2))]:
        x = np.arange(float(np.prod(shape))).reshape(shape).transpose(axes)
        got, expected = compiled(x), kept_axes(x)
        assert layouts(got) == layouts(expected)
        np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_sizes_that_vary_per_call(backend):
    compiled = dynamo.compile(of_transposes, backend=backend, dynamic=True)
    for n in (3, 5, 7, 9):
        for x in (grid(n, n + 2), np.asfortranarray(grid(n, n + 3)), grid(2 * n, n)[::2]):
            assert layouts(compiled(x)) == layouts(of_transposes(x))
            np.testing.assert_array_equal(compiled(x), of_transposes(x))
