"""backend="c": float sums along an input's last axis added by NumPy's own add loop (its pairwise sum)
inside the kernel, bitwise np.sum / ndarray.sum / np.mean; other layouts run the numpy backend's code."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dynamo
from c_helpers import Recorder, bits, needs_compiler
from dynamo import config
from dynamo.backends.c_cpu.pairwise import layout_ok

pytestmark = needs_compiler


def check(fn, *args, calls=None):
    """Compiled and plain give the same bits and warnings, on `args` and on each of `calls`."""
    recorder = Recorder()
    compiled = dynamo.compile(fn, backend=recorder)
    for call in [args, *(calls or [])]:
        out = []
        for f in (compiled, fn):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = f(*call)
            out.append((bits(result), [str(w.message) for w in caught]))
        assert out[0] == out[1]
    return recorder.graphs


def fused(graphs, kernels=1):
    """One graph, C kernels only (no NumPy steps between them)."""
    assert len(graphs) == 1 and graphs[0].fallback_nodes == [], graphs[0].notes
    assert kernels is None or graphs[0].kernel_count == kernels
    return graphs[0]


@pytest.fixture(autouse=True)
def keep_c():
    with config.patch(c_choose_faster=False):
        yield


def rows(n, m, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, m)) * rng.uniform(1, 1e4, (n, 1))).astype(dtype)


@pytest.mark.parametrize("dtype", ["f8", "f4"])
def test_row_sums_every_length(dtype):
    """Lengths around the pairwise sum's blocks (8 accumulators, 128 per leaf) and the stack buffer."""
    def sums(x):
        return x.sum(axis=1), np.sum(x * 2.0, axis=-1, keepdims=True), np.mean(x, axis=1)

    for m in (1, 7, 8, 9, 127, 128, 129, 1000, 2049, 10000):
        fused(check(sums, rows(3, m, dtype, seed=m)), kernels=3)


def test_full_sum_of_a_vector_and_3d_rows():
    x = rows(1, 3001, "f8")[0]
    fused(check(lambda v: (v.sum(), np.mean(v)), x), kernels=None)
    fused(check(lambda v: np.exp(v / 1e4).sum(axis=-1), rows(6, 500, "f4").reshape(2, 3, 500)))


def test_softmax_and_layer_norm_are_one_kernel():
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layer_norm(x, gamma, beta):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta

    x = rows(40, 300, "f4")
    fused(check(softmax, x))
    g = fused(check(layer_norm, x, x[0] / 1e4, x[1] / 1e4))
    assert "np.add.reduce" in g.c_source


def test_softmax_computes_exp_once_and_warns_once():
    """The row max is found once, the numerator read from the sum's gathered values: one subtraction and
    one exp per element, so 'invalid value encountered in subtract' comes once, as in NumPy."""
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    x = rows(5, 50, "f4")
    x[1, 3], x[2, 5], x[3, :], x[4, :] = np.inf, -np.inf, 1e38, np.nan
    g = fused(check(softmax, x))
    unit = g.c_source[g.c_source.index("_rows_unit("):]
    assert unit[:unit.index("\n}\n")].count("np.exp on the tile") == 1


def test_other_layouts_run_the_numpy_backend():
    """Transposed, reversed: NumPy sums those rows in another order; strided rows keep the C kernel."""
    def f(x):
        return np.tanh(x).sum(axis=1)

    x = rows(50, 260, "f8")
    graphs = check(f, x, calls=[(np.asfortranarray(x),), (x[:, ::-1],), (x[:, ::2],), (x[::3],)])
    assert all(g.fallback_nodes == [] for g in graphs)
    assert not layout_ok(np.asfortranarray(x)) and not layout_ok(x[:, ::-1])
    assert layout_ok(x[:, ::2]) and layout_ok(x[::3]) and layout_ok(x[:, :1].T)


def test_sums_along_other_axes_stay_numpy_steps():
    graphs = check(lambda x: (x * 2.0).sum(axis=0), rows(30, 40, "f8"))
    assert any("float sum" in reason for _, reason in graphs[0].fallback_nodes)


def test_nan_inf_and_overflow_warnings():
    x = rows(6, 300, "f8")
    x[0, 5] = np.nan
    x[1, :2] = [np.inf, -np.inf]
    x[2, :] = 1e306  # the sum overflows: 'overflow encountered in reduce'
    x[3, 7] = -0.0
    x[4, :] = -0.0
    fused(check(lambda v: np.sum(v * 1.5, axis=1), x))


def test_empty_rows():
    fused(check(lambda v: (v + 1.0).sum(axis=1), np.ones((4, 0))))


@pytest.mark.parametrize("dtype", ["f8", "f4"])
def test_max_min_run_numpys_loop(dtype):
    """Float max/min along the last axis: NumPy's loop from the first value over the rest, its NaN and
    signed-zero choices included (rows of ties between 0.0 and -0.0, NaN first, last, alone)."""
    def extremes(x):
        return x.max(axis=1), np.min(x, axis=-1), (x * 2.0).max(axis=0)

    for m in (1, 2, 7, 16, 33, 300, 2050):
        x = rows(8, m, dtype, seed=m)
        x[0, :] = 0.0
        x[0, ::2] = -0.0
        x[1, :] = -0.0
        x[1, -1] = 0.0
        x[2, 0] = np.nan
        x[3, -1] = np.nan
        x[4, m // 2] = -np.inf
        g = fused(check(extremes, x), kernels=None)
        assert "np.maximum.reduce" in g.c_source and "np.minimum.reduce" in g.c_source
