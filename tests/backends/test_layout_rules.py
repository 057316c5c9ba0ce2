"""NumPy's layouts of a graph's values found by rules (backends/kernel_ir/layout_rules.py): views of
phantom arrays, allocations on shrunk stand-ins. Each case compares the rules' strides with those of
NumPy's own results (the graph run as NumPy, and the plain function) over many input layouts, and
checks that the backends' first call computes no element to learn them (issue #17, class 11)."""
import importlib.util
import os

import numpy as np
import pytest

if importlib.util.find_spec("triton") is not None and os.environ.get("DYNAMO_TEST_GPU") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: it decides at import

import dynamo
from dynamo.backends.kernel_ir import result_layout
from dynamo.backends.kernel_ir.layout_rules import GiveUp, PhantomRun, size_bindings
from dynamo.backends.kernel_ir.result_layout import _layouts, _Witness

PROGRAMS = {
    "chain": lambda x, y: np.sin(x * 2 + 1) * y - 0.5,
    "of_transposes": lambda x, y: np.exp(x.T) + y.T,
    "mixed_orders": lambda x, y: x * np.asfortranarray(y) + np.ascontiguousarray(x),
    "sum_axis0": lambda x, y: (np.sum(x, axis=0) + y.sum(axis=0, keepdims=True), y.sum(axis=-1, keepdims=True).T * 2),
    "keepdims_broadcast": lambda x, y: x.mean(axis=0, keepdims=True) - y,
    "max_min": lambda x, y: (x.max(axis=-1), np.min(y.T, axis=0), x.argmax(axis=0)),
    "scan": lambda x, y: np.cumsum(x, axis=0) + np.cumprod(y.T, axis=1).T,
    "copies": lambda x, y: (x.copy(), np.copy(x), x.astype(np.float32), np.empty_like(y), np.ones_like(x) * y),
    "where_clip_round": lambda x, y: (np.where(x > 3, x, -y), np.clip(x, 1, 5), np.round(y.T, 1)),
    "slices": lambda x, y: (x[1:, ::2] * 3, x[::-1] + y[::-1], x[:, None] + y[None, :], x[None, 0] * 2),
    "transposes": lambda x, y: (np.transpose(x) * y.T, np.sin(x).swapaxes(0, 1) + 0, np.moveaxis(y, 0, -1) * 2),
    "ufunc_methods": lambda x, y: (np.add.reduce(x, axis=1), np.multiply.outer(x[0], y[:, 0]),
                                   np.maximum.accumulate(y, axis=1)),
    "two_outputs": lambda x, y: np.divmod(x.T, 3),
    "comparisons": lambda x, y: (x > y) & (x < 10) | ~(y.T == 2).T,
    "var_std": lambda x, y: (x.var(axis=0), np.std(y.T, axis=1, keepdims=True)),
    "reshapes": lambda x, y: ((x.T * 2).reshape(-1), (x + 1).reshape(x.shape[1], -1) + x.shape[0],
                              (y.T * 1).reshape(-1, 1) + 1, np.reshape(y[::-1], (1, -1)) * 2),
    "views": lambda x, y: (np.flip(x * 2, 0) + np.diagonal(y)[:1], np.broadcast_to(x[:1], x.shape) * 2,
                           np.squeeze(x[:, :1] * 2), np.expand_dims(y, 1) + 1),
    "int_and_float32": lambda x, y: ((x.astype(np.int32).T * 3) // 2, y.astype(np.float32).T + np.float32(1)),
    "products": lambda x, y: (x @ y.T, np.matmul(x.T, y), np.dot(x, y.T), np.linalg.norm(x, axis=0),
                              np.linalg.norm(y.T, axis=1, keepdims=True), np.outer(x[0], y[:, 0]),
                              x[None] @ y.T[None]),
    "joins": lambda x, y: (np.concatenate([x, y]), np.concatenate([x.T, y.T], axis=1), np.stack([x, y]),
                           np.stack([x, y.T.T], axis=2), np.hstack((x, y)), np.vstack((x[0], y[1:])),
                           np.column_stack((x[:, 0], y[:, ::-1]))),
    "creations": lambda x, y: (np.zeros((x.shape[0], 3)) + x[:, :1], np.ones(x.shape, order="F") * y,
                               np.empty((2, 3), dtype=np.float32), np.full((3, 2), 7.0, order="F") + 1,
                               np.eye(4) * 2, np.arange(5.0) + y[0, 0], np.linspace(0, 1, 5) * 3,
                               np.array([1.0, 2.0]) * x[0, 0]),
    "scalar_results": lambda x, y: (np.sum(x), y.mean(), x.T * x.sum()),
}


def _square_layouts(n, m):
    """Arrays of shape (n, m) in many layouts: C, F, transposed, sliced, reversed, broadcast, overlapping."""
    a = np.arange(1.0, n * m + 1).reshape(n, m)
    big = np.arange(1.0, 4 * n * m + 1).reshape(2 * n, 2 * m)
    return {
        "C": a, "F": np.asfortranarray(a), "sliced": big[::2, ::2], "reversed": big[::-2, ::2],
        "sliced_T": big.T[1::2, ::2].T, "F_sliced": np.asfortranarray(big)[::2, 1::2],
        "broadcast": np.broadcast_to(a[:1], (n, m)),
        "overlapping": np.lib.stride_tricks.as_strided(a, (n, m), (8, 8 * n)),
    }


INPUTS = [(f"{n}x{m}-{kind}-{other}", n, m, kind, other)
          for n, m in [(4, 6), (5, 5), (1, 6), (6, 1), (1, 1), (2, 3)]
          for kind in _square_layouts(2, 2) for other in ("K", "C", "F")]


def _inputs(n, m, kind, other):
    x = _square_layouts(n, m)[kind]
    y = {"K": x * 2, "C": np.ascontiguousarray(x) + 1, "F": np.asfortranarray(x) + 1}[other]
    return x, y


def _graph_of(fn, x, y):
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    dynamo.reset()
    dynamo.compile(fn, backend=capture)(x, y)
    assert len(graphs) == 1, "the program must be one graph"
    return graphs[0]


def strides_of(value):
    if isinstance(value, (tuple, list)):
        return [strides_of(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.shape, value.strides, value.flags.c_contiguous, value.flags.f_contiguous
    return None


@pytest.mark.parametrize("name", PROGRAMS)
def test_rules_give_numpys_layouts(name):
    fn = PROGRAMS[name]
    graphs = {}
    for case, n, m, kind, other in INPUTS:
        if (n, m) not in graphs:  # one graph per shape (static sizes)
            graphs[n, m] = _graph_of(fn, *_inputs(n, m, "C", "C"))
        gm, args = graphs[n, m], _inputs(n, m, kind, other)
        with np.errstate(all="ignore"):
            witness = _Witness(gm).run(*args)
            plain = fn(*args)
            try:
                ruled = PhantomRun(gm, size_bindings(gm, args)).run(*args)
            except GiveUp:  # only where an array is empty (the witness is cheap there)
                assert name in ("slices", "joins") and n == 1, case
                continue
        assert _layouts(ruled, False) == _layouts(witness, False), case
        assert strides_of(ruled) == strides_of(plain if isinstance(plain, tuple) else (plain,)), case


def test_rules_give_up_where_they_have_none():
    # np.tile's layout: no rule here covers it, the witness decides
    gm = _graph_of(lambda x, y: np.tile(x, 2) * 2, *_inputs(4, 4, "C", "F"))
    with pytest.raises(GiveUp):
        PhantomRun(gm, {}).run(*_inputs(4, 4, "C", "F"))
    gm = _graph_of(lambda x, y: x[:0] + y[:0], *_inputs(4, 4, "C", "F"))  # empty arrays
    with pytest.raises(GiveUp):
        PhantomRun(gm, {}).run(*_inputs(4, 4, "C", "F"))


def with_views_and_creations(x, y):
    z = np.exp(x.T) + y.T
    return z, z[1:], z.sum(axis=0, keepdims=True), np.zeros((x.shape[0], 2)) + x[:, :1]


@pytest.mark.parametrize("backend", ["c", "triton"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_first_calls_compute_no_element_to_learn_layouts(backend, dynamic, monkeypatch):
    if backend not in dynamo.list_backends() or importlib.util.find_spec(backend) is None and backend == "triton":
        pytest.skip(f"backend {backend} is not available")

    def no_witness(self, *args, **kwargs):
        raise AssertionError("the graph ran as NumPy to learn its layouts")
    monkeypatch.setattr(_Witness, "run", no_witness)
    fn = with_views_and_creations
    compiled = dynamo.compile(fn, backend=backend, dynamic=dynamic)
    for n in (6, 7):
        for kind in ("C", "F", "sliced", "reversed"):
            x, y = _inputs(n, 8, kind, "F")
            got, expected = compiled(x, y), fn(x, y)
            assert strides_of(got) == strides_of(expected)
            for g, e in zip(got, expected):  # triton sums in its own order (a documented tolerance)
                np.testing.assert_allclose(g, e, rtol=0 if backend == "c" else 1e-12)


def test_the_witness_still_decides_for_ops_without_rules(monkeypatch):
    if "c" not in dynamo.list_backends():
        pytest.skip("backend c is not available")
    runs = []
    run = _Witness.run

    def counted(self, *args, **kwargs):
        runs.append(1)
        return run(self, *args, **kwargs)
    monkeypatch.setattr(_Witness, "run", counted)
    assert result_layout._Witness is _Witness

    def joined(x, y):
        return np.tile(x.T, 2) * y[0, 0]
    compiled = dynamo.compile(joined, backend="c")
    x, y = _inputs(4, 6, "F", "F")
    assert strides_of(compiled(x, y)) == strides_of(joined(x, y))
    assert runs == [1]
