"""The triton backend on loop nodes: the loop runs on the host with its body as NumPy code, a
per-node fallback that explain shows; results equal plain NumPy's."""
import os

import numpy as np
import pytest

from triton_helpers import INTERPRET  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
pytest.importorskip("triton")

import dynamo  # noqa: E402
from triton_helpers import Recorder  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", INTERPRET)


def stencil(T, A, B):
    for t in range(1, T):
        B[1:-1] = 0.5 * (A[:-2] + A[2:])
        A[1:-1] = 0.5 * (B[:-2] + B[2:])
    return A.sum()


def test_loop_node_runs_on_the_host_and_says_so():
    rng = np.random.default_rng(3)
    A, B = rng.random(40), rng.random(40)
    want = stencil(70, A.copy(), B.copy())
    recorder = Recorder()
    A1, B1 = A.copy(), B.copy()
    got = dynamo.compile(stencil, backend=recorder)(70, A1, B1)
    A0, B0 = A.copy(), B.copy()
    stencil(70, A0, B0)
    assert np.array_equal(A1, A0) and np.array_equal(B1, B0)
    assert np.isclose(got, want, rtol=1e-12)
    assert [name for name, _ in recorder.fallbacks] == ["loop_0"]
    assert "loop node" in recorder.fallbacks[0][1]
