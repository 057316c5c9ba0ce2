"""backend="c" on graphs that NumPy steps split: the first calls alternate between the C kernels and the
numpy backend's code and the faster is kept (results and warnings NumPy's on every call); temporaries
are freed after their last use."""
from __future__ import annotations

import shutil
import tracemalloc
import warnings

import numpy as np
import pytest

import dynamo
from dynamo import config
from dynamo.backends import lookup_backend
from dynamo.backends.c_cpu.choose import TRIALS, FasterOf

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler")


def black_scholes(S, K, T):
    d1 = (np.log(S / K) + 0.065 * T) / (0.3 * np.sqrt(T))
    d2 = d1 - 0.3 * T
    return S * (0.5 * (1.0 + np.tanh(d1))) - K * np.exp(-0.02 * T) * (0.5 * (1.0 + np.tanh(d2)))


def split_by_sorts(S, K, T):
    """Kernels between NumPy steps (sorts do not lower): a graph the choice is made for."""
    d1 = np.sort(np.log(S / K) + 0.065 * T) / (0.3 * np.sqrt(T))
    d2 = np.sort(d1 - 0.3 * T) * K
    return S * (0.5 * (1.0 + np.tanh(d1))) - np.sort(K * np.exp(-0.02 * T)) * (0.5 * (1.0 + np.tanh(d2)))


def test_faster_of_alternates_then_keeps_one():
    calls = []
    chooser = FasterOf(lambda x: calls.append("a") or x + 1, lambda x: calls.append("b") or x + 1, ("a", "b"))
    results = [chooser(i) for i in range(2 * TRIALS + 3)]
    assert results == [i + 1 for i in range(2 * TRIALS + 3)]
    assert calls[:2 * TRIALS] == ["a", "b"] * TRIALS
    assert chooser.chosen in ("a", "b")
    assert calls[2 * TRIALS:] == [chooser.chosen] * 3


def test_split_graph_chooses_and_stays_exact():
    graphs = []

    def backend(gm, inputs):
        graphs.append(lookup_backend("c")(gm, inputs))
        return graphs[-1]

    rng = np.random.default_rng(0)
    S, K, T = rng.uniform(50, 150, 3000), rng.uniform(50, 150, 3000), rng.uniform(0.1, 2.0, 3000)
    T[5] = -1.0  # sqrt and log of a negative: 'invalid' on every call, compiled as plain
    compiled = dynamo.compile(split_by_sorts, backend=backend)
    for _ in range(2 * TRIALS + 2):
        for f in (compiled, split_by_sorts):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = f(S, K, T)
            if f is compiled:
                got, got_warnings = result, [str(w.message) for w in caught]
        assert got.tobytes() == result.tobytes()
        assert got_warnings == [str(w.message) for w in caught]
    assert len(graphs) == 1 and isinstance(graphs[0], FasterOf)
    assert graphs[0].chosen in ("c", "numpy")
    assert graphs[0].kernel_count >= 2 and any("numpy backend" in note for note in graphs[0].notes)


def test_choice_off_runs_c_kernels():
    with config.patch(c_choose_faster=False):
        graph = lookup_backend("c")
        compiled = dynamo.compile(split_by_sorts, backend=lambda gm, inputs: graph(gm, inputs))
        x = np.linspace(1.0, 2.0, 100)
        assert compiled(x, x + 1, x).tobytes() == split_by_sorts(x, x + 1, x).tobytes()


def test_graph_without_numpy_steps_is_not_timed():
    """Transcendentals call NumPy's loops inside the kernel: Black-Scholes is one kernel, nothing to choose."""
    graphs = []
    compiled = dynamo.compile(black_scholes, backend=lambda gm, inputs: graphs.append(
        lookup_backend("c")(gm, inputs)) or graphs[-1])
    x = np.linspace(1.0, 2.0, 100)
    assert compiled(x, x + 1, x).tobytes() == black_scholes(x, x + 1, x).tobytes()
    assert len(graphs) == 1 and not isinstance(graphs[0], FasterOf)
    assert graphs[0].kernel_count == 1 and graphs[0].fallback_nodes == []


def test_temporaries_freed_after_last_use():
    n = 1 << 18
    rng = np.random.default_rng(1)
    S, K, T = rng.uniform(50, 150, n), rng.uniform(50, 150, n), rng.uniform(0.1, 2.0, n)
    with config.patch(c_choose_faster=False):
        compiled = dynamo.compile(split_by_sorts, backend="c")
        compiled(S, K, T)
        tracemalloc.start()
        try:
            compiled(S, K, T)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    # kernels and NumPy steps between them; kept to the end, ten full-size arrays would be alive
    assert peak < 7 * S.nbytes, peak / S.nbytes
