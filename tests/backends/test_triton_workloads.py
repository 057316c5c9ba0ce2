"""The triton backend on every benchmark workload (small sizes, Triton's interpreter): results equal
NumPy's and each graph needs at most one kernel more than it has reductions."""
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from triton_helpers import INTERPRET  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
pytest.importorskip("triton")

import dynamo  # noqa: E402
from dynamo.backends.triton_gpu import TritonBackend  # noqa: E402
from dynamo.fx_ir.ops import OpKind  # noqa: E402
from dynamo.backends.kernel_ir.lowering import registry_row  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.workloads import ORDER, load_all  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", INTERPRET)


def small_inputs(name, rng):
    """Inputs shaped like each workload's, small enough for the interpreter."""
    n = 37
    return {
        "elementwise_chain": lambda: [rng.random(1000) for _ in range(5)],
        "kmeans": lambda: [rng.standard_normal((300, 2)), rng.standard_normal((8, 2))],
        "softmax": lambda: [rng.standard_normal((n, 50)).astype(np.float32)],
        "layernorm": lambda: [rng.standard_normal((n, 48)).astype(np.float32),
                              rng.random(48).astype(np.float32), rng.random(48).astype(np.float32)],
        "jacobi": lambda: [rng.random((n, 41))],
        "gemm": lambda: [rng.standard_normal((n, 24)), rng.standard_normal((24, 29)), rng.standard_normal(29)],
        "black_scholes": lambda: [rng.uniform(50, 150, 999), rng.uniform(50, 150, 999), rng.uniform(0.1, 2.0, 999)],
        "nbody": lambda: [rng.standard_normal((n, 3)), rng.random((n, 1))],
        "unrolled_loop": lambda: [rng.random(500), rng.random(500)],
        "branch": lambda: [rng.random(300), rng.random(300)],
        "trivial": lambda: [np.ones(8)],
        "small_hot_loop": lambda: [rng.random(8), rng.random(8)],
    }[name]()


class Recorder:
    """A triton backend that keeps every compiled graph with its reduction count."""

    def __init__(self):
        self.backend = TritonBackend()
        self.compiled = []

    def __call__(self, gm, example_inputs):
        reductions = sum(1 for n in gm.graph.nodes
                         if (row := registry_row(n)) is not None and row.kind in (OpKind.REDUCTION, OpKind.LINALG))
        compiled = self.backend(gm, example_inputs)
        self.compiled.append((compiled, reductions))
        return compiled


EXPECTED_KERNELS = {  # kernels per graph: a fused program is one kernel
    "elementwise_chain": [1], "kmeans": [1], "softmax": [1], "layernorm": [1], "jacobi": [1], "gemm": [1],
    "black_scholes": [1], "nbody": [1], "unrolled_loop": [1], "small_hot_loop": [1], "trivial": [],
}


@pytest.mark.parametrize("name", ORDER)
def test_workload_matches_numpy_within_kernel_budget(name):
    module = dict(zip(ORDER, load_all()))[name]
    rng = np.random.default_rng(7)
    args = small_inputs(name, rng)
    expected = module.fn(*[a.copy() for a in args])
    recorder = Recorder()
    got = dynamo.compile(module.fn, backend=recorder)(*args)
    tol = dict(rtol=2e-5, atol=1e-5) if np.asarray(expected).dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, **tol)
    for compiled, reductions in recorder.compiled:
        assert compiled.kernel_count <= reductions + 1, compiled.program.describe()
        assert compiled.fallback_nodes == []
    if name in EXPECTED_KERNELS:
        assert [c.kernel_count for c, _ in recorder.compiled] == EXPECTED_KERNELS[name]


def test_softmax_and_layernorm_are_one_kernel_per_row_block():
    modules = dict(zip(ORDER, load_all()))
    for name in ("softmax", "layernorm"):
        recorder = Recorder()
        dynamo.reset()
        dynamo.compile(modules[name].fn, backend=recorder)(*small_inputs(name, np.random.default_rng(1)))
        (compiled, _), = recorder.compiled
        (kernel,) = compiled.program.kernels
        roles = [axis.role for axis in kernel.axes]
        assert roles == ["grid", "full"]  # rows split across programs, each row whole in one tile
        assert "tl.sum(" in compiled.source


def test_matmul_epilogue_uses_tl_dot():
    recorder = Recorder()
    gemm = dict(zip(ORDER, load_all()))["gemm"]
    dynamo.compile(gemm.fn, backend=recorder)(*small_inputs("gemm", np.random.default_rng(2)))
    (compiled, _), = recorder.compiled
    assert "tl.dot(" in compiled.source and "tl.maximum(" in compiled.source
    assert compiled.kernel_count == 1


def test_kmeans_argmin_over_fused_distances():
    recorder = Recorder()
    kmeans = dict(zip(ORDER, load_all()))["kmeans"]
    dynamo.compile(kmeans.fn, backend=recorder)(*small_inputs("kmeans", np.random.default_rng(3)))
    (compiled, _), = recorder.compiled
    assert "tl.argmin(" in compiled.source and "tl.sum(" in compiled.source
    assert compiled.kernel_count == 1
