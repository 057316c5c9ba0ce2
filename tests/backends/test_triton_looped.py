"""Looped reductions in the triton backend: a reduced axis longer than the longest row a program
holds (TileConfig.max_row) is walked in chunks with accumulators; results must equal NumPy's."""
import os

import numpy as np
import pytest

from triton_helpers import INTERPRET  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
pytest.importorskip("triton")

import dynamo  # noqa: E402
from dynamo.backends.triton_gpu import TritonBackend  # noqa: E402
from dynamo.backends.triton_gpu.codegen import TileConfig  # noqa: E402
from triton_helpers import close  # noqa: E402

ROW = 16  # chunks of 16: rows of 100 take 7 chunks, the last one partly padding


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", INTERPRET)


def run_looped(fn, *args, kernels=1):
    backend = TritonBackend(TileConfig(max_tile=1 << 16, max_row=ROW))
    compiled = []

    def recording(gm, example_inputs):
        compiled.append(backend(gm, example_inputs))
        return compiled[-1]
    got = dynamo.compile(fn, backend=recording)(*args)
    problem = close(got, fn(*args))
    assert problem is None, problem + "\n" + "\n".join(c.source for c in compiled)
    assert sum(c.kernel_count for c in compiled) == kernels
    assert all(c.fallback_nodes == [] for c in compiled)
    assert any("for start" in c.source for c in compiled), "no loop over chunks was generated"
    return compiled


rng = np.random.default_rng(7)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, w, b):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * w + b


@pytest.mark.parametrize("n", [100, 96, 17])
def test_row_softmax_longer_than_a_row_block_is_one_looped_kernel(n):
    (compiled,) = run_looped(softmax, rng.standard_normal((6, n)))
    # the max and the sum need each other: two accumulating loops, then the loop that stores
    assert compiled.source.count("for start") == 3


def test_layer_norm_over_long_rows():
    n = 70
    run_looped(layer_norm, rng.standard_normal((5, n)), rng.standard_normal(n), rng.standard_normal(n))


def test_every_reduction_kind_over_long_rows_with_nan_and_ties():
    x = rng.standard_normal((4, 90))
    x[1, 50] = np.nan                 # max/min propagate it, argmax/argmin find the first one
    x[1, 70] = np.nan
    x[2, :] = 1.0                     # ties across chunks: the first position wins
    x[3, 80] = x[3].max() + 1         # the extreme in the last, partial chunk

    def stats(x):
        return (x.sum(1), x.min(1), x.max(1), x.argmax(1), x.argmin(1), (x > 0.5).any(1),
                (x > -5).all(1), x.mean(1), x.std(1), np.prod((x > 0) + 1, axis=1))
    # a product of integers (a float prod runs as NumPy code: NumPy's order of multiplication)
    (compiled,) = run_looped(stats, x)
    # independent reductions share one loop; the std needs the mean first
    assert compiled.source.count("for start") == 2


def test_integer_and_column_reductions_loop_too():
    a = rng.integers(-50, 50, size=(80, 3)).astype(np.int32)
    run_looped(lambda a: (a.sum(axis=0), a.max(axis=0), np.argmin(a, axis=0), a.astype(np.float64).var(axis=0)), a)


def test_a_whole_array_reduction_and_a_broadcast_consumer():
    x = rng.standard_normal(200).astype(np.float32)
    run_looped(lambda x: x - x.mean(), x)
