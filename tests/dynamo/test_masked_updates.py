"""`a[mask] op= v` in one graph (dynamo/variables/masked_updates.py): the selected elements updated in
place by the ufunc with out= and where=, equal to plain NumPy in values, dtypes, warnings and errors,
on every CPU backend; operands other than one number, and **=, still break and stay right."""
import warnings

import numpy as np
import pytest

import dynamo

rng = np.random.default_rng(5)
BACKENDS = ["eager", "numpy", "c"]


def bounce(vel, pos):
    vel[pos < 0] *= -1
    return vel


def column(a, m, v):
    a[m, 1] += v
    a[1, m[:a.shape[1]]] -= 2
    return a


def grid(a, k):
    a[a > 0.5] -= k
    a[a < -0.4] /= 3.0
    return a


def rows_of_3d(a):
    a[a.sum(axis=(1, 2)) > 0] *= 0.5  # a mask over the first axis of a 3-d array
    a[:, a[0, :, 0] > 0] += 1.0  # a mask over the second axis, after a slice
    return a


def with_graph_scalar(a):
    a[a > a.mean()] -= a.std()
    return a


def int_floor(a):
    a[a > 3] //= 0  # NumPy: 'divide by zero encountered in floor_divide', only for the selected
    return a


def nothing_selected(a):
    a[a > 10.0] *= 2
    return a


PROGRAMS = [
    (bounce, lambda: (rng.standard_normal((40, 2)), rng.standard_normal((40, 2)))),
    (column, lambda: (rng.standard_normal((6, 6)), rng.standard_normal(6) > 0, 1.5)),
    (grid, lambda: (rng.standard_normal((7, 9)), 2)),
    (rows_of_3d, lambda: (rng.standard_normal((5, 4, 3)),)),
    (with_graph_scalar, lambda: (rng.standard_normal(30),)),
    (int_floor, lambda: (rng.integers(-5, 9, 20),)),
    (nothing_selected, lambda: (rng.standard_normal(8),)),
]


def run_recorded(fn, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program, make", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_masked_updates_compile_in_one_graph_equal_to_numpy(program, make, backend):
    compiled = dynamo.compile(program, backend=backend)
    for _ in range(3):
        args = make()
        plain_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        expected, plain_warnings = run_recorded(program, plain_args)
        got, our_warnings = run_recorded(compiled, args)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
        assert our_warnings == plain_warnings
    report = dynamo.explain(program, backend=backend)(*make())
    assert (report.graph_count, report.break_reasons) == (1, [])


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_errors_of_masked_updates_are_numpys(backend):
    def cast(a):
        a[a > 2] += 1.5  # int array, float operand: same_kind casting refuses
        return a

    def mismatch(a, m):
        a[m] *= 2  # a mask of the wrong length
        return a

    def read_only(a):
        a[a > 0] *= 2
        return a

    frozen = np.ones(4)
    frozen.flags.writeable = False
    for fn, args in ((cast, (np.arange(5),)), (mismatch, (np.ones(4), np.ones(3, bool))), (read_only, (frozen,))):
        with pytest.raises(Exception) as plain:
            fn(*[a.copy() if a is not frozen else a for a in args])
        with pytest.raises(type(plain.value)):
            dynamo.compile(fn, backend=backend)(*[a.copy() if a is not frozen else a for a in args])


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_other_operands_and_power_are_right(backend):
    def by_array(a, b):
        a[a > 0] *= b[a > 0]  # an operand of data-dependent size
        return a

    def power(a):
        a[a > 0] **= 0.5  # NumPy's in-place power takes sqrt here: not np.power's bits
        return a

    def by_call(a):
        a[a > 0] += abs(-2.0)
        return a

    for fn, args in ((by_array, (rng.standard_normal(9), rng.standard_normal(9))), (power, (rng.standard_normal(9),)),
                     (by_call, (rng.standard_normal(9),))):
        expected = fn(*[a.copy() for a in args])
        assert np.array_equal(dynamo.compile(fn, backend=backend)(*[a.copy() for a in args]), expected)


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_an_operand_that_writes_or_breaks_reads_the_selection_where_python_does(backend):
    def writing_operand(a):
        a[a > 0] += np.add(a, 1.0, out=a).sum()  # the selection holds the values from before the write
        return a

    def breaking_operand(a):
        a[a > 0] -= float(a.sum())  # float() of a graph value breaks the graph
        return a

    for fn in (writing_operand, breaking_operand):
        a = rng.standard_normal(12)
        expected = fn(a.copy())
        assert np.array_equal(dynamo.compile(fn, backend=backend)(a.copy()), expected)
        assert dynamo.explain(fn, backend=backend)(a.copy()).break_reasons  # the selection: a break again
