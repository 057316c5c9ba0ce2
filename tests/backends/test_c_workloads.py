"""backend="c" on the shapes of the benchmark workloads: short float rows added in C in NumPy's order
(kmeans' (N, 2) norms), and a costly value that NumPy steps split stored once (n-body's r ** -1.5)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dynamo
from c_helpers import Recorder, bits, needs_compiler
from dynamo import config
from dynamo.backends.c_cpu.pairwise import layout_ok

pytestmark = needs_compiler


def outcome(f, args, errstate):
    with warnings.catch_warnings(record=True) as caught, np.errstate(**errstate):
        warnings.simplefilter("always")
        try:
            result = bits(f(*args))
        except FloatingPointError as error:
            result = ("raised", str(error))
    return result, [str(w.message) for w in caught]


def check(fn, *calls, dynamic=None, errstate=None):
    """Compiled and plain give the same bits, warnings and errors on each call's arguments."""
    recorder = Recorder()
    compiled = dynamo.compile(fn, backend=recorder, dynamic=dynamic)
    for args in calls:
        assert outcome(compiled, args, errstate or {}) == outcome(fn, args, errstate or {})
    return recorder.graphs


def unit_rows(graph):
    """The C source of the kernels' copies for unit inner strides (the ones contiguous inputs run)."""
    return "\n".join(part[:part.index("\n}\n")] for part in graph.c_source.split("_rows_unit(")[1:])


@pytest.fixture(autouse=True)
def keep_c():
    with config.patch(c_choose_faster=False):
        yield


def specials(x):
    """Rows of -0.0, a NaN, infinities of both signs, values whose sum overflows, cancelling values."""
    x = x.copy()
    x[0, :] = -0.0
    x[1, 0] = np.nan
    x[2, :2] = [np.inf, -np.inf]
    x[3, :] = np.finfo(x.dtype).max
    x[4, :2] = [1.5, -1.5]
    x[5, -1] = -0.0
    return x


@pytest.mark.parametrize("dtype", ["f8", "f4"])
@pytest.mark.parametrize("m", [1, 2, 3, 7])
def test_short_row_sums_add_in_order(dtype, m):
    """Rows shorter than NumPy's pairwise block: one C add per value, no call of NumPy's add loop."""
    x = specials(np.random.default_rng(m).standard_normal((40, m)).astype(dtype) * 1e3) if m > 1 else \
        np.random.default_rng(m).standard_normal((40, m)).astype(dtype)
    assert layout_ok(x) and layout_ok(x[::2])  # the C kernel runs, not the numpy backend's code
    # one sum per graph: where two kernels raise one flag in ops inside their sums, the second
    # kernel's warning is dropped (a known fault of the flag reports, with any row length)
    for sums in (lambda v: v.sum(axis=1), lambda v: np.sqrt(np.sum(v * v, axis=-1)),
                 lambda v: np.mean(v * 3.0, axis=1, keepdims=True)):
        graphs = check(sums, (x,), (x[::2],), (x[:0],))
        assert graphs[0].fallback_nodes == []
        assert "np.add.reduce" not in graphs[0].c_source and "_row = -" in graphs[0].c_source


@pytest.mark.parametrize("errstate", [{}, {"over": "raise"}, {"invalid": "ignore", "over": "warn"}])
def test_short_row_sums_warn_as_numpy(errstate):
    x = specials(np.random.default_rng(1).standard_normal((8, 3)))
    check(lambda v: (v * 2.0).sum(axis=1), (x,), errstate=errstate)


def test_kmeans_assignment_bitwise():
    """The README's kmeans: norms of (k, N, 2) differences, argmin over the means; symbolic sizes too."""
    def assign(X, means):
        return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)

    rng = np.random.default_rng(0)
    X, means = rng.standard_normal((1000, 2)), rng.standard_normal((8, 2))
    X[3] = means[5]          # a distance of 0.0
    X[4] = [np.nan, 0.0]     # NaN: the first mean
    assert layout_ok(X) and layout_ok(X[::3]) and layout_ok(means[:, None])
    graphs = check(assign, (X, means), (X[::3], means[:3]))
    assert all(g.fallback_nodes == [] for g in graphs) and "np.add.reduce" not in graphs[0].c_source
    check(assign, (X, means), (X[:10], means[:3]), dynamic=True)
    for X3, m3 in [(rng.standard_normal((300, 3)).astype("f4"), rng.standard_normal((5, 3)).astype("f4"))]:
        check(assign, (X3, m3))


def test_tall_arrays_sum_their_rows_in_c():
    """NumPy adds each row of a C-ordered array in one loop call, whatever the number of rows: a tall
    array runs the C kernel (it ran the numpy backend's code); rows that interleave or run backwards
    do not."""
    x = np.random.default_rng(2).standard_normal((5000, 130))
    assert layout_ok(x) and layout_ok(x[::7, 1:]) and layout_ok(x[:, ::2])
    assert not layout_ok(np.asfortranarray(x)) and not layout_ok(x[:, ::-1])
    assert not layout_ok(np.lib.stride_tricks.as_strided(x, (4000, 130), (16, 8)))
    check(lambda v: (v * 0.5).sum(axis=1), (x,), (x[::7, 1:],))


def test_costly_value_split_by_numpy_steps_is_computed_once():
    """n-body: inv_r3 = r2 ** -1.5 is read by three products that three matmuls (NumPy steps) split into
    three kernels; it is stored by the first, loaded by the others: NumPy's power runs once per pair,
    and its warnings come once (a body on top of another: 0 ** -1.5)."""
    def forces(pos, mass):
        dx = pos[:, 0:1].T - pos[:, 0:1]
        dy = pos[:, 1:2].T - pos[:, 1:2]
        dz = pos[:, 2:3].T - pos[:, 2:3]
        inv_r3 = (dx**2 + dy**2 + dz**2) ** (-1.5)
        return np.hstack(((dx * inv_r3) @ mass, (dy * inv_r3) @ mass, (dz * inv_r3) @ mass))

    rng = np.random.default_rng(0)
    pos, mass = rng.standard_normal((64, 3)), rng.random((64, 1))
    graphs = check(forces, (pos, mass), (pos[:9], mass[:9]), errstate={"divide": "warn", "invalid": "warn"})
    check(forces, (pos, mass), errstate={"divide": "raise"})
    g = graphs[0]
    assert unit_rows(g).count("np.power on the tile") == 1
    assert sum("matmul" in node for node, _ in g.fallback_nodes) == 3 and g.kernel_count == 4


def test_costly_value_not_read_later_is_not_stored():
    """exp(x) read by one product only: nothing more is stored than before."""
    def f(x, w):
        y = np.exp(x) * 2.0
        return y @ w, x + 1.0

    rng = np.random.default_rng(1)
    g = check(f, (rng.standard_normal((30, 20)), rng.standard_normal((20, 4))))[0]
    assert [b for b in g.program.buffers.values() if b.kind == "temp" and b.shape == (30, 20)
            and b.name.startswith("exp")] == []


@pytest.mark.parametrize("dtype", ["f8", "f4"])
def test_argmin_argmax_compare_order_keys(dtype):
    """Float argmin/argmax compare integer order keys (no float compare: the loop vectorizes, no flag):
    the first extreme, ties of 0.0 and -0.0 equal, the first NaN winning, infinities, denormals."""
    def extremes(x):
        return (np.argmin(x * 1.0, axis=1), np.argmax(x + 0.0, axis=-1), np.argmin(x - 1.0, axis=0),
                np.argmax(np.sqrt(np.abs(x)), axis=0))

    rng = np.random.default_rng(3)
    x = rng.standard_normal((12, 9)).astype(dtype)
    x[0, :] = 0.0
    x[0, 3] = -0.0
    x[1, :] = -0.0
    x[1, 5] = 0.0
    x[2, 4], x[2, 6] = np.nan, np.nan
    x[3, 0] = np.nan
    x[4, -1] = np.nan
    x[5, 2], x[5, 7] = -np.inf, np.inf
    x[6, :] = np.finfo(dtype).smallest_subnormal * np.arange(-4, 5)
    x[7, :] = 3.0
    graphs = check(extremes, (x,), (x[::-1, ::2],), errstate={"invalid": "raise"})
    assert graphs[0].fallback_nodes == [] and "dyn_key_f" in graphs[0].c_source
    check(lambda v: np.argmin(np.linalg.norm(v[:, None] - v[:4], axis=2), axis=1),
          (rng.standard_normal((50, 2)).astype(dtype),), dynamic=True)
