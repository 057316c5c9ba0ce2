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


@pytest.mark.parametrize("backend", BACKENDS)
def test_views_among_the_results_stay_views(backend):
    # NumPy's y is F-ordered (a transpose's order) and y[1:] a view of it; c and triton compute y
    # C-ordered: a copy of y in NumPy's order would leave y[1:] a view of the old one, so both keep
    # the backend's layout (a known difference of strides, not of values or aliasing)
    got = dynamo.compile(a_result_and_its_view, backend=backend)(grid())
    assert np.shares_memory(got[0], got[1])
    np.testing.assert_array_equal(got[1], a_result_and_its_view(grid())[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_sizes_that_vary_per_call(backend):
    compiled = dynamo.compile(of_transposes, backend=backend, dynamic=True)
    for n in (3, 5, 7, 9):
        for x in (grid(n, n + 2), np.asfortranarray(grid(n, n + 3)), grid(2 * n, n)[::2]):
            assert layouts(compiled(x)) == layouts(of_transposes(x))
            np.testing.assert_array_equal(compiled(x), of_transposes(x))
