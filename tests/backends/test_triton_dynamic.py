"""Symbolic sizes in the triton backend: a graph with dynamic sizes gets kernels that take them as
arguments, so one compiled module serves every length; graphs that need a size fall back to
kernels per shape (still exact)."""
import logging
import os
import re

import numpy as np
import pytest

from triton_helpers import INTERPRET  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
pytest.importorskip("triton")

import dynamo  # noqa: E402
from dynamo.backends.triton_gpu.codegen import TileConfig  # noqa: E402
from triton_helpers import Recorder, close  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", INTERPRET)


def small_tile_recorder(config=None):
    """The recording triton backend, with small tiles so that rows loop."""
    return Recorder(config or TileConfig(max_tile=1 << 12, max_row=64))


rng = np.random.default_rng(3)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def kmeans_step(points, means):
    d = ((points[:, None, :] - means[None, :, :]) ** 2).sum(axis=2)
    return np.argmin(d, axis=1)


def centred(x, y):
    return np.sqrt(x * 2 + 1.5) - y.mean(), (x[:, None] * y).sum(axis=0), x.std()


CASES = {
    "softmax rows of every length": (softmax, lambda n: (rng.standard_normal((3, n)),)),
    "softmax with a varying row count": (softmax, lambda n: (rng.standard_normal((n, 70)),)),
    "kmeans step with a varying point count": (kmeans_step, lambda n: (rng.standard_normal((n, 2)),
                                                                        rng.standard_normal((3, 2)))),
    "pointwise, broadcast and whole-array reductions": (centred, lambda n: (rng.random(n), rng.random(n))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_module_serves_every_length(case):
    fn, make = CASES[case]
    recorder = small_tile_recorder()
    compiled = dynamo.compile(fn, backend=recorder)
    for n in range(5, 13):
        args = make(n)
        problem = close(compiled(*args), fn(*args))
        assert problem is None, f"length {n}: {problem}\n{recorder.compiled[-1].source}"
    # the first length is compiled static; the first change makes the size dynamic: two graphs
    assert len(recorder.compiled) == 2
    dynamic = recorder.compiled[-1]
    assert dynamic.symbolic and dynamic.fallback_nodes == [] and not dynamic._others
    assert recorder.backend.modules_made == 2
    params = dynamic.source.split("def kernel0(")[1].split(")")[0].split(", ")
    assert any(re.fullmatch(r"s\d+", p) for p in params), params  # a size argument


def test_a_looped_run_time_row_matches_numpy_for_long_rows():
    recorder = small_tile_recorder(TileConfig(max_tile=1 << 12, max_row=16))
    compiled = dynamo.compile(softmax, backend=recorder)
    for n in (20, 37, 64, 65):
        x = rng.standard_normal((2, n))
        assert close(compiled(x), softmax(x)) is None
    assert recorder.backend.modules_made == 2


def test_a_graph_that_needs_its_sizes_gets_kernels_per_shape(caplog):
    def trimmed(x):
        return x[1:-1] * 2 + x[:-2]      # slices with run-time bounds: not lowered for every size
    recorder = small_tile_recorder()
    compiled = dynamo.compile(trimmed, backend=recorder)
    with caplog.at_level(logging.INFO, logger="dynamo.output_code"):
        for n in (5, 6, 7, 8):
            x = rng.random(n)
            assert close(compiled(x), trimmed(x)) is None
    assert any("per shape" in r.getMessage() for r in caplog.records)
    assert len(recorder.compiled) == 2  # dynamo still compiles twice: the backend specializes
