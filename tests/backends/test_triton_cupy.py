"""The triton backend on a real CUDA GPU (DYNAMO_TEST_GPU=1, CuPy installed): CuPy inputs used in
place, NumPy inputs copied in and out, mixed devices rejected, a device change recompiling."""
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from triton_helpers import INTERPRET, ON_GPU, Recorder  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
if not ON_GPU:
    pytest.skip("needs a CUDA GPU: run with DYNAMO_TEST_GPU=1 on a machine with one", allow_module_level=True)
cupy = pytest.importorskip("cupy")
pytest.importorskip("triton")

import dynamo  # noqa: E402
from dynamo.backends.triton_gpu import DeviceMismatch, TritonBackend  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.workloads import ORDER, load_all  # noqa: E402
from support import graph_breaks  # noqa: E402
from test_triton_workloads import small_inputs  # noqa: E402

pytestmark = pytest.mark.gpu


def chain(x, y):
    return np.exp(x) * y + np.sqrt(x) - 1.0


def test_cupy_inputs_are_used_in_place_and_results_stay_on_the_gpu():
    rng = np.random.default_rng(0)
    x, y = rng.random(10_000), rng.random(10_000)
    recorder = Recorder()
    compiled = dynamo.compile(chain, backend=recorder)
    gx, gy = cupy.asarray(x), cupy.asarray(y)
    got = compiled(gx, gy)
    assert isinstance(got, cupy.ndarray) and recorder.kernels == 1
    np.testing.assert_allclose(got.get(), chain(x, y), rtol=1e-12)


def add_in_place(x, y):
    x += y * 2.0
    return x[3:]


def test_writes_into_cupy_inputs_happen_in_their_memory_and_views_alias_them():
    rng = np.random.default_rng(1)
    x, y = rng.random(1000), rng.random(1000)
    gx, gy = cupy.asarray(x), cupy.asarray(y)
    pointer = gx.data.ptr
    view = dynamo.compile(add_in_place, backend=Recorder())(gx, gy)
    expected_view = add_in_place(x, y)
    assert gx.data.ptr == pointer  # no copy: the kernel wrote the input itself
    np.testing.assert_allclose(gx.get(), x, rtol=1e-15)
    assert isinstance(view, cupy.ndarray) and view.data.ptr == pointer + 3 * x.itemsize
    np.testing.assert_allclose(view.get(), expected_view, rtol=1e-15)


def test_numpy_inputs_are_copied_in_and_results_copied_out():
    rng = np.random.default_rng(2)
    x, y = rng.random(1000), rng.random(1000)
    plain_x = x.copy()
    view = dynamo.compile(add_in_place, backend=Recorder())(x, y)
    add_in_place(plain_x, y)
    assert isinstance(view, np.ndarray) and np.shares_memory(view, x)
    np.testing.assert_allclose(x, plain_x, rtol=1e-15)


def test_a_reduction_to_one_value_is_a_0d_cupy_array_as_cupy_returns_it():
    x = cupy.asarray(np.random.default_rng(3).random((64, 33)))
    got = dynamo.compile(lambda a: (a * 2).sum(), backend=Recorder())(x)
    want = (x * 2).sum()
    assert type(got) is type(want) and got.shape == want.shape == ()
    assert float(got) == pytest.approx(float(want), rel=1e-12)


def test_mixed_devices_raise_as_cupy_does_and_the_backend_names_them():
    x, y = np.ones(100), cupy.ones(100)
    with pytest.raises(TypeError) as plain:
        chain(x, y)
    compiled_chain = dynamo.compile(chain, backend=Recorder())
    with pytest.raises(TypeError) as compiled:
        compiled_chain(x, y)
    assert type(compiled.value) is type(plain.value) and str(compiled.value) == str(plain.value)
    assert any("mixes a CuPy array" in reason for reason in graph_breaks(compiled_chain))

    captured = []
    dynamo.compile(chain, backend=lambda gm, ex: captured.append(gm) or gm.forward)(np.ones(100), np.ones(100))
    launcher = TritonBackend()(captured[0], [cupy.ones(100), cupy.ones(100)])
    with pytest.raises(DeviceMismatch, match="two devices"):
        launcher(cupy.ones(100), np.ones(100))


def test_moving_the_inputs_to_the_gpu_recompiles_once():
    recorder = Recorder()
    compiled = dynamo.compile(chain, backend=recorder)
    x, y = np.random.default_rng(4).random(500), np.random.default_rng(5).random(500)
    for _ in range(2):
        assert isinstance(compiled(x, y), np.ndarray)
        assert isinstance(compiled(cupy.asarray(x), cupy.asarray(y)), cupy.ndarray)
    assert len(recorder.compiled) == 2


@pytest.mark.parametrize("name", ORDER)
def test_every_workload_on_cupy_inputs_matches_numpy(name):
    module = dict(zip(ORDER, load_all()))[name]
    args = small_inputs(name, np.random.default_rng(7))
    expected = module.fn(*[a.copy() for a in args])
    got = dynamo.compile(module.fn, backend=Recorder())(*[cupy.asarray(a) for a in args])
    got = got.get() if isinstance(got, cupy.ndarray) else got
    tol = dict(rtol=2e-5, atol=1e-5) if np.asarray(expected).dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got, expected, **tol)


def test_large_kernels_are_tuned_once_on_the_gpu_and_the_choice_is_remembered(tmp_path):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2048, 1024)).astype(np.float32)
    softmax = dict(zip(ORDER, load_all()))["softmax"].fn
    gx = cupy.asarray(x)
    with dynamo.config.patch(triton_cache_dir=str(tmp_path)):
        first = Recorder()
        got = dynamo.compile(softmax, backend=first)(gx)
        tuner = first.backend.tuner(first.backend_device())
        assert tuner is not None and tuner.timed == 1
        np.testing.assert_allclose(got.get(), softmax(x), rtol=2e-5, atol=1e-6)
        np.testing.assert_array_equal(gx.get(), x)  # the timing runs wrote scratch copies only
        dynamo.reset()
        second = Recorder()
        again = dynamo.compile(softmax, backend=second)(gx)
        assert second.backend.tuner(second.backend_device()).timed == 0  # read from autotune.json
        np.testing.assert_allclose(again.get(), got.get(), rtol=0, atol=0)
