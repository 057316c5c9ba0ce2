"""Every lowering of the triton backend (Triton's interpreter on the CPU) against plain NumPy:
pointwise chains with broadcasting, dtypes, reductions along each axis, views, joins, mutation."""
import operator
import os

import numpy as np
import pytest

from triton_helpers import INTERPRET  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
pytest.importorskip("triton")

import dynamo  # noqa: E402
from dynamo.backends.triton_gpu import TritonBackend  # noqa: E402
from dynamo.fx_ir import Graph, GraphModule, ShapeProp  # noqa: E402
from triton_helpers import Recorder  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", INTERPRET)


def check(fn, *args, kernels=None, fallbacks=(), rtol=1e-6, atol=1e-9):
    """Compile fn with the triton backend, compare with NumPy (values and dtypes); return the recorder."""
    expected = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    recorder = Recorder()
    got = dynamo.compile(fn, backend=recorder)(*args)
    expected_t = expected if isinstance(expected, tuple) else (expected,)
    got_t = got if isinstance(got, tuple) else (got,)
    assert len(got_t) == len(expected_t)
    for g, e in zip(got_t, expected_t):
        assert type(g) is type(e), (type(g), type(e))
        assert np.asarray(g).dtype == np.asarray(e).dtype
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    if kernels is not None:
        assert recorder.kernels == kernels, [c.program.describe() for c in recorder.compiled]
    assert [name for name, _ in recorder.fallbacks] == list(fallbacks), recorder.fallbacks
    return recorder


rng = np.random.default_rng(0)
X = rng.standard_normal((6, 7))
Y = rng.standard_normal((7,))
C = rng.standard_normal((6, 1))
I32 = rng.integers(-50, 50, (5, 4)).astype(np.int32)
I8 = rng.integers(-100, 100, (5, 4)).astype(np.int8)


# ---------------------------------------------------------------- pointwise

def test_pointwise_chain_with_broadcasting_is_one_kernel():
    check(lambda x, y, c: np.exp(x * y + c) - np.sqrt(np.abs(x)) / 3.0, X, Y, C, kernels=1)


def test_float32_stays_float32_and_python_scalars_are_weak():
    x = X.astype(np.float32)
    check(lambda x: x * 0.5 + 2, x, kernels=1, rtol=1e-6)


def test_integer_and_bool_ops_follow_numpy():
    check(lambda a, b: (a // 7, a % 7, a * b + 3, -a, a ** 2, a // b), I32, I32 + 100 * (I32 == 0), kernels=1)
    check(lambda a: (a + a, a > 0, (a > 0) & (a < 50), ~(a > 3), np.logical_not(a)), I8, kernels=1)
    check(lambda a: a / 2, I32, kernels=1)  # true division of ints is float64


def test_mixed_dtypes_promote_like_numpy():
    check(lambda a, x: a + x[:5, :4], I32, X.astype(np.float32), kernels=1)
    check(lambda a, x: (a * 2.5).astype(np.int16), I8, X, kernels=1)


def test_math_functions_and_powers():
    x = np.abs(X) + 0.5
    check(lambda x: (np.tanh(x), np.log1p(x), x ** 3, x ** 0.5, x ** -1, np.power(x, 2.5), np.arctan2(x, x + 1),
                     np.floor(x * 3), np.sign(x - 1), np.maximum(x, 1.0), np.minimum(x, 1.0), np.expm1(x)),
          x, kernels=1)


def test_where_clip_and_comparisons():
    check(lambda x: np.where(x > 0, x, 0.1 * x) + np.clip(x, -0.5, 0.5), X, kernels=1)
    check(lambda x: (x.clip(0, None), np.isnan(x), np.isfinite(x)), X, kernels=1)


def test_nan_propagates_through_maximum():
    x = X.copy()
    x[1, 2] = np.nan
    check(lambda x: np.maximum(x, 0), x, kernels=1)


# ---------------------------------------------------------------- reductions

@pytest.mark.parametrize("axis", [0, 1, -1, None, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_max_mean_along_each_axis(axis, keepdims):
    check(lambda x: (x.sum(axis=axis, keepdims=keepdims), np.max(x, axis=axis, keepdims=keepdims),
                     x.mean(axis=axis, keepdims=keepdims)), X, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reductions_of_three_dimensional_arrays(axis):
    x = rng.standard_normal((3, 4, 5))
    check(lambda x: (x.min(axis=axis), np.argmax(x, axis=axis), x.std(axis=axis), x.var(axis=axis, ddof=1),
                     np.prod(x, axis=axis), (x > 0).any(axis=axis), (x > -2).all(axis=axis)), x, rtol=1e-10,
          fallbacks=("prod",))   # a float prod multiplies in NumPy's order as NumPy code


def test_argmin_and_argmax_over_everything_give_flat_positions():
    check(lambda x: (np.argmin(x), x.argmax()), X)


def test_integer_sums_widen_like_numpy():
    check(lambda a, b: (a.sum(axis=0), b.sum(), np.sum(b, axis=1, dtype=np.int16), (a > 0).sum(axis=1)), I32, I8)


def test_reduction_of_everything_returns_a_numpy_scalar():
    check(lambda x: (x * 2).sum(), X)
    check(lambda x: np.linalg.norm(x), X)


def test_row_softmax_is_one_kernel():
    x = rng.standard_normal((9, 33)).astype(np.float32)
    rec = check(lambda x: np.exp(x - x.max(axis=1, keepdims=True)) / np.exp(x - x.max(axis=1, keepdims=True)).sum(
        axis=1, keepdims=True), x, kernels=1, rtol=1e-5)
    assert "_nan_max, keep_dims=True)" in rec.compiled[0].source  # a max that propagates NaN


def test_column_softmax_reduces_along_axis_0():
    def softmax0(x):
        e = np.exp(x - x.max(axis=0))
        return e / e.sum(axis=0)
    check(softmax0, X, kernels=1, rtol=1e-12)


def test_layer_norm_is_one_kernel():
    def layer_norm(x, g, b):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * g + b
    check(layer_norm, X, Y, Y[::-1].copy(), kernels=1, rtol=1e-10)


def test_column_means_share_the_row_axis_in_one_kernel():
    x = rng.standard_normal((40, 300))
    rec = check(lambda x: x - x.mean(axis=0), x, kernels=1, rtol=1e-10)
    (kernel,) = rec.compiled[0].program.kernels
    assert [a.role for a in kernel.axes] == ["full", "grid"]  # columns split, every row in the tile


def test_a_reduction_used_across_a_split_axis_gets_its_own_kernel():
    x, y = rng.standard_normal((40, 300)), rng.standard_normal((50, 300))
    # the column means would be recomputed by every block of y's rows: they are stored once instead
    check(lambda x, y: y - x.mean(axis=0), x, y, kernels=2, rtol=1e-10)


def test_kmeans_distances_and_argmin():
    points, means = rng.standard_normal((50, 3)), rng.standard_normal((4, 3))
    check(lambda X, m: np.argmin(np.linalg.norm(X - m[:, None], axis=2), axis=0), points, means, kernels=1)
    check(lambda X, m: np.argmin(((X[:, None, :] - m[None]) ** 2).sum(-1), axis=1), points, means, kernels=1)


# ---------------------------------------------------------------- matmul

def test_matmul_bias_relu_is_one_kernel_with_tl_dot():
    a, b, bias = rng.standard_normal((20, 18)), rng.standard_normal((18, 9)), rng.standard_normal(9)
    rec = check(lambda a, b, bias: np.maximum(a @ b + bias, 0), a, b, bias, kernels=1, rtol=1e-10)
    assert "tl.dot(" in rec.compiled[0].source


def test_matmul_shapes_and_dtypes():
    a, v = rng.standard_normal((5, 4)), rng.standard_normal(4)
    check(lambda a, v: (a @ v, v @ a.T, v @ v, np.dot(a, a.T), a.T.dot(a)), a, v, rtol=1e-10)
    check(lambda a: a @ a.T, I32)
    check(lambda a, b: np.matmul(a, b), rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 2)), rtol=1e-10)


def test_large_float_matrix_products_run_as_the_library_matmul_and_the_epilogue_stays_a_kernel(monkeypatch):
    from dynamo.backends.triton_gpu import library_calls
    # small thresholds: the interpreter runs big integer products slowly
    monkeypatch.setattr(library_calls, "LIBRARY_MATMUL_WORK", 4000)
    monkeypatch.setattr(library_calls, "MIN_LIBRARY_SIDE", 8)
    a, b, bias = rng.standard_normal((20, 18)), rng.standard_normal((18, 12)), rng.standard_normal(12)
    rec = check(lambda a, b, bias: np.maximum(a @ b + bias, 0), a, b, bias, kernels=1,
                fallbacks=["matmul"], rtol=1e-10)
    assert "cuBLAS" in rec.fallbacks[0][1] and "tl.dot(" not in rec.compiled[0].source
    # float32 too; integers, float16 and matrix-vector products stay in kernels
    check(lambda a, b: a @ b, a.astype(np.float32), b.astype(np.float32), kernels=0, fallbacks=["matmul"], rtol=1e-5)
    check(lambda a, v: np.tanh(a @ v), a, rng.standard_normal(18), kernels=1, rtol=1e-10)
    check(lambda a, b: a @ b, (a * 4).astype(np.int64), (b * 4).astype(np.int64), kernels=1)


def test_small_integer_powers_of_floats_are_products():
    x = rng.random((7, 9)) + 0.5
    rec = check(lambda x: (x ** 2, x ** 3, x ** 4, x ** 2.5, x.astype(np.float32) ** 3), x, kernels=1, rtol=1e-6)
    source = rec.compiled[0].source
    assert source.count("libdevice.pow(") == 1  # only x ** 2.5


# ---------------------------------------------------------------- views

def test_transposes_slices_offsets_and_negative_strides():
    check(lambda x: x.T * 2 + x[::-1, ::2].sum(axis=1)[:, None].T[:, :4].sum(), X, rtol=1e-10)
    check(lambda x: x[1:-1, 2:5] + x[:-2, ::-1][:, 3:6] + x[2:, -3:], X, kernels=1)
    check(lambda x: x[3] + x[:, 2][1] + x[..., 1:2].ravel()[:7].sum(), X)


def test_reshape_expand_squeeze_swapaxes_and_broadcast_to():
    x = rng.standard_normal((4, 6))
    check(lambda x: (x.reshape(3, 8) * 2, x.reshape(-1)[5:11] + 1, np.expand_dims(x, 1).squeeze() - x,
                     np.swapaxes(x.reshape(2, 2, 6), 0, 2) + 0, np.broadcast_to(x[0], (3, 6)) * 1), x)


def test_inputs_with_strides_and_offsets():
    base = rng.standard_normal((10, 12))
    check(lambda a, b: a * 2 + b, base[1::3, ::-2], base[2:5, 1:7].T.T)


def test_returned_views_of_inputs_alias_them():
    def f(x):
        return x.T, x[1:3]
    recorder = Recorder()
    x = X.copy()
    t, s = dynamo.compile(f, backend=recorder)(x)
    assert np.shares_memory(t, x) and np.shares_memory(s, x)
    np.testing.assert_array_equal(t, x.T)


def test_joins_and_creation():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    check(lambda a, b: (np.concatenate([a, b]) * 2, np.vstack((a, b)) + 1, np.hstack((a[:, :1], b[:1, :3].T, a)),
                        np.stack([a[0], b[1]], axis=1), np.zeros_like(a) + a, np.ones((3, 4)) * a,
                        np.arange(4) * a, np.eye(4) + a[0]), a, b)


# ---------------------------------------------------------------- mutation

def test_jacobi_copy_then_assign_is_one_kernel():
    def jacobi(u):
        v = u.copy()
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return v
    check(jacobi, rng.random((9, 11)), kernels=1)


def test_in_place_operators_on_inputs_write_back():
    def f(x, y):
        x += y
        x *= 2
        return x
    x, y = X.copy(), Y.copy()
    expected = f(X.copy(), Y)
    got = dynamo.compile(f, backend=Recorder())(x, y)
    assert got is x
    np.testing.assert_allclose(x, expected)


def test_assignment_with_steps_and_negative_indices():
    def f(x):
        y = x * 1.0
        y[::2, -1] = 7.0
        y[1] = y[0] + 1
        return y
    check(f, X)


def test_assignment_into_an_input_that_reads_its_neighbours():
    def shift(x):
        x[1:] = x[:-1] * 2
        return x
    x = Y.copy()
    expected = shift(Y.copy())
    dynamo.compile(shift, backend=Recorder())(x)
    np.testing.assert_allclose(x, expected)


# ---------------------------------------------------------------- hand-built graphs

def _compile_graph(build, *inputs):
    g = Graph()
    out = build(g, *[g.placeholder(f"in{k}") for k in range(len(inputs))])
    g.output(out)
    gm = GraphModule({}, g)
    ShapeProp(gm).propagate(*inputs)
    return gm, TritonBackend()(gm, list(inputs))


def test_hand_built_graph_with_methods_and_attributes():
    def build(g, x, y):
        t = g.call_function(getattr, (x, "T"))
        s = g.call_method("sum", (t,), {"axis": 1, "keepdims": True})
        d = g.call_function(operator.sub, (t, s))
        return (g.call_function(np.exp, (d,)), g.call_function(operator.matmul, (x, y)))
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((3, 2))
    gm, compiled = _compile_graph(build, x, y)
    for got, want in zip(compiled(x, y), gm(x, y)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert compiled.fallback_nodes == []


def test_an_input_nothing_reads_does_not_decide_where_the_graph_runs():
    # a CuPy array loaded before a graph break is a graph input the graph does not use: with a NumPy
    # array beside it, the graph runs on the host (as plain NumPy would for its own work)
    x, y = rng.standard_normal(6), rng.standard_normal(6)
    gm, compiled = _compile_graph(lambda g, a, b: g.call_function(np.exp, (a,)), x, y)
    assert compiled.program.names_used() >= {"in0"} and "in1" not in compiled.program.names_used()
    assert compiled.launcher.used_inputs == [0]
    np.testing.assert_allclose(compiled(x, y), np.exp(x), rtol=1e-12)


def test_hand_built_graph_reductions_along_each_axis():
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    for axis in range(3):
        def build(g, a):
            m = g.call_function(np.amax, (a,), {"axis": axis, "keepdims": True})
            e = g.call_function(np.exp, (g.call_function(operator.sub, (a, m)),))
            return g.call_function(np.argmin, (e,), {"axis": axis})
        gm, compiled = _compile_graph(build, x)
        np.testing.assert_array_equal(compiled(x), gm(x))
        assert compiled.kernel_count == 1


def test_registry_corpus_regressions():
    h = np.array([0.5, 1.5, 3.0], np.float16)
    check(lambda h: (np.exp(h), np.sqrt(h), np.floor(h * 3), np.arctan(h)), h, rtol=1e-3)
    b = np.array([True, False, True])
    check(lambda b: (np.ceil(b), np.rint(b), np.round(b)), b)           # bool -> bool, float16, float16
    i, u = np.array([-1, 0, 5]), np.array([2, 0, 3], np.uint64)
    check(lambda i, u: (i < u, u >= i, i == u, np.logical_xor(i, u), np.logical_and(i, 2)), i, u)
    check(lambda u: (u < -1, u == 300), np.array([1, 2, 3], np.uint8), fallbacks=("lt", "eq"))
    a = np.array([np.inf, -np.inf, 5.0, -5.0, 0.0, np.nan, 7.5, -0.0])
    d = np.array([1.0, 0.0, np.inf, np.inf, 0.0, 1.0, -2.0, 3.0])
    got = dynamo.compile(lambda a, d: (a // d, a % d), backend="triton")(a, d)
    with np.errstate(all="ignore"):
        for g, e in zip(got, (a // d, a % d)):
            np.testing.assert_array_equal(g, e)
            np.testing.assert_array_equal(np.signbit(g), np.signbit(e))
    x = rng.standard_normal((3, 9))
    x[1, 4] = np.nan
    check(lambda x: (x.max(1), x.min(axis=0), x.argmax(1), x.argmin(axis=0)), x)


def test_setitem_of_a_one_element_array_and_empty_reshapes():
    def f(x, e):
        x[()] = 2.0
        return e.reshape(0, 3, 0), e.reshape(-1)
    x = np.array([1.5])
    check(f, x, np.zeros((0, 0)))


def test_gpu_tiles_are_chosen_per_kernel_and_a_given_config_wins():
    from types import SimpleNamespace

    from dynamo.backends.triton_gpu import GPU_TILES
    from dynamo.backends.triton_gpu.codegen import TileConfig
    recorder = Recorder()
    dynamo.compile(lambda x: (np.exp(x) + 1, (x * 2).sum(axis=1)), backend=recorder)(X)
    kernels = sorted(recorder.compiled[0].program.kernels, key=lambda k: len(k.reductions()))
    assert [bool(k.reductions()) for k in kernels] == [False, True]
    gpu = SimpleNamespace(interpreted=False)
    backend = TritonBackend()
    assert [backend.tile_config(gpu, k) for k in kernels] == [GPU_TILES["elementwise"], GPU_TILES["reduction"]]
    assert backend.tile_config(SimpleNamespace(interpreted=True), kernels[0]).max_tile == 1 << 16
    given = TileConfig(max_tile=512, num_warps=2)
    assert TritonBackend(given).tile_config(gpu, kernels[1]) is given


def test_long_reductions_to_one_value_are_split_across_programs(monkeypatch):
    from dynamo.backends.triton_gpu import split_reductions
    # small thresholds: the interpreter runs Triton's reductions slowly
    monkeypatch.setattr(split_reductions, "SPLIT_FROM", 512)
    monkeypatch.setattr(split_reductions, "CHUNK", 128)
    n = 1000 + 3  # past SPLIT_FROM, not a multiple of the chunk
    x = rng.standard_normal(n)
    ints = rng.integers(-1000, 1000, n)

    def stats(x, i):
        return ((x * 2 + 1).sum() > 0, x.max(), np.linalg.norm(x), (x > 3.5).any(), (x < 9).all(),
                i.sum(), i.min(), np.mean(x))
    rec = check(stats, x, ints, kernels=2, rtol=1e-10)
    partial, final = rec.compiled[0].program.kernels
    assert partial.axes[0].role == "grid" and partial.axes[0].extent == -(-n // 128)
    assert [a.role for a in final.axes] == ["full"]
    with_nan = x.copy()
    with_nan[n - 2] = np.nan
    check(lambda x: (x.max(), x.min(), x.sum()), with_nan, kernels=2)
    # not split: a reduction that reads another (one kernel, looped), and reductions along an axis
    check(lambda x: np.exp(x - x.max()).sum(), x, kernels=1, rtol=1e-10)
    check(lambda m: m.sum(axis=1), rng.standard_normal((4, n)), kernels=1, rtol=1e-10)


def test_values_read_before_a_write_through_a_view_keep_the_old_contents():
    def two_steps(U, V):
        u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]
        for _ in range(2):
            uvv = u * v * v
            u += 0.16 * (U[:-2, 1:-1] - 4 * u) - uvv
            v += 0.08 * (V[:-2, 1:-1] - 4 * v) + uvv

    U, V = rng.random((6, 6)), rng.random((6, 6))
    plain_U, plain_V = U.copy(), V.copy()
    two_steps(plain_U, plain_V)
    dynamo.compile(two_steps, backend=Recorder())(U, V)
    # a GPU contracts a * b + c into one fused multiply-add (an ulp or so); reading the new contents
    # where the old are due differs by far more
    np.testing.assert_allclose(U, plain_U, rtol=1e-12)
    np.testing.assert_allclose(V, plain_V, rtol=1e-12)
