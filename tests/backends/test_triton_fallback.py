"""The triton backend's edges: per-node NumPy fallback with reasons, the error without GPU or
interpreter, the output_code log, the compile cache, and the host-array adapter."""
import logging
import os

import numpy as np
import pytest

from triton_helpers import INTERPRET  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
pytest.importorskip("triton")

import dynamo  # noqa: E402
from dynamo.backends import list_backends  # noqa: E402
from dynamo.backends.triton_gpu import TritonBackend, TritonUnavailable  # noqa: E402
from dynamo.backends.triton_gpu.device import HostArray, select_device  # noqa: E402
from triton_helpers import Recorder  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", INTERPRET)


rng = np.random.default_rng(1)


def test_registered_as_triton():
    assert "triton" in list_backends()


def test_unsupported_nodes_run_as_numpy_between_kernels():
    def f(x, idx):
        y = np.exp(x) * 2          # kernel
        g = y[idx]                 # a gather: NumPy
        s = np.sort(g, axis=0)     # no lowering: NumPy
        return (s + 1).sum(axis=1)  # kernel again
    x, idx = rng.standard_normal((6, 5)), np.array([4, 0, 2])
    recorder = Recorder()
    got = dynamo.compile(f, backend=recorder)(x, idx)
    np.testing.assert_allclose(got, f(x, idx), rtol=1e-12)
    (compiled,) = recorder.compiled
    reasons = dict(compiled.fallback_nodes)
    assert set(reasons) == {"getitem", "sort"}
    assert "gather" in reasons["getitem"] and "sort" in reasons["sort"]
    assert compiled.kernel_count == 2


def test_a_numpy_step_that_mutates_sees_and_publishes_the_right_values():
    def f(x):
        y = x + 1.0
        z = y * 2          # read before y is sorted in place: must keep the unsorted values
        y.sort()
        return y + 0, z
    x = rng.standard_normal(9)
    recorder = Recorder()
    got = dynamo.compile(f, backend=recorder)(x)
    for g, e in zip(got, f(x)):
        np.testing.assert_allclose(g, e)
    assert [n for n, _ in recorder.compiled[0].fallback_nodes] == ["sort"]


def test_assignment_through_a_view_read_later_falls_back_and_stays_exact():
    def f(x):
        y = x * 1.0
        row = y[0]
        y[0, 1] = 5.0       # row is a view of y and is read below: NumPy must do this write
        return row + 1
    x = rng.standard_normal((3, 4))
    recorder = Recorder()
    got = dynamo.compile(f, backend=recorder)(x)
    np.testing.assert_allclose(got, f(x))
    assert [n for n, _ in recorder.compiled[0].fallback_nodes] == ["setitem"]


def test_fallback_reasons_are_logged(caplog):
    with caplog.at_level(logging.INFO, logger="dynamo.output_code"):
        dynamo.compile(lambda x: np.cumsum(x) * 2, backend="triton")(rng.random(5))
    assert any("cumsum" in r.getMessage() and "NumPy" in r.getMessage() for r in caplog.records)


def test_output_code_log_shows_each_stage(caplog):
    with caplog.at_level(logging.DEBUG, logger="dynamo.output_code"):
        dynamo.compile(lambda x: np.exp(x).sum(axis=0), backend="triton")(rng.random((4, 3)))
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "[kernels]" in text and "[triton_src]" in text
    assert "@triton.jit" in text and "tl.sum(" in text


def test_compiled_graphs_are_cached_by_fingerprint():
    backend = TritonBackend()
    first = []

    def recording(gm, example_inputs):
        compiled = backend(gm, example_inputs)
        first.append(compiled)
        return compiled
    f = lambda x: np.sqrt(x) + 1  # noqa: E731
    x = rng.random(7)
    dynamo.compile(f, backend=recording)(x)
    dynamo.reset()
    dynamo.compile(f, backend=recording)(x)
    assert len(first) == 2 and first[0].program is first[1].program
    assert first[0].source == first[1].source


def test_clear_error_without_gpu_or_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setattr("dynamo.backends.triton_gpu.device._gpu_problem", lambda: "no CUDA device was found")
    with pytest.raises(TritonUnavailable, match="needs a CUDA GPU.*TRITON_INTERPRET=1"):
        select_device()
    with pytest.raises(dynamo.exc.BackendCompilerFailed, match="TRITON_INTERPRET=1"):
        dynamo.compile(lambda x: x * 2, backend="triton")(np.ones(3))


def test_host_array_adapter_has_what_the_interpreter_calls():
    a = np.arange(12.0).reshape(3, 4)[:, ::-2]
    h = HostArray(a)
    assert h.data_ptr() == a.__array_interface__["data"][0]
    assert h.stride() == (4, -2)
    assert h.untyped_storage().cpu().data_ptr() == h.data_ptr()
    assert HostArray(np.zeros(3, bool)).dtype == np.int8


def test_non_contiguous_and_bool_inputs_and_outputs():
    mask = rng.random((5, 6)) > 0.5
    x = rng.standard_normal((6, 5)).T
    f = lambda m, x: (np.where(m, x, -x), m & (x > 0), ~m)  # noqa: E731
    got = dynamo.compile(f, backend="triton")(mask, x)
    for g, e in zip(got, f(mask, x)):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)


def test_other_input_shapes_get_kernels_of_their_own():
    backend = TritonBackend()
    from dynamo.fx_ir import Graph, GraphModule, ShapeProp
    g = Graph()
    x = g.placeholder("x")
    g.output(g.call_method("sum", (g.call_function(np.exp, (x,)),), {"axis": 0}))
    gm = GraphModule({}, g)
    small, big = rng.random((3, 4)), rng.random((9, 5))
    ShapeProp(gm).propagate(small)
    compiled = backend(gm, [small])
    np.testing.assert_allclose(compiled(small), np.exp(small).sum(axis=0))
    np.testing.assert_allclose(compiled(big), np.exp(big).sum(axis=0))
    np.testing.assert_allclose(compiled(big.astype(np.float32)), np.exp(big.astype(np.float32)).sum(axis=0),
                               rtol=1e-6)


def test_explain_and_the_graph_log_say_which_nodes_fell_back_and_why(caplog):
    def f(x):
        return np.cumsum(np.exp(x)) * 2
    x = rng.random(5)
    with caplog.at_level(logging.INFO, logger="dynamo.graph"):
        report = dynamo.explain(f, backend="triton")(x)
    (notes,) = report.notes_per_graph
    assert len(notes) == 1 and notes[0].startswith("cumsum runs as NumPy code: no kernel lowering for")
    assert f"  backend: {notes[0]}" in str(report).splitlines()
    assert any(notes[0] in r.getMessage() for r in caplog.records if r.name == "dynamo.graph")
