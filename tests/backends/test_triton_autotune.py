"""The triton backend's per-kernel autotuner: candidates written, run on scratch copies, the fastest kept
and remembered on disk; results and the user's arrays exactly as without it (interpreter, fake timer)."""
import json
import os

import numpy as np
import pytest

from triton_helpers import INTERPRET, ON_GPU, close  # noqa: E402

os.environ.setdefault("TRITON_INTERPRET", INTERPRET)  # before triton is imported: it decides at import
pytest.importorskip("triton")

import dynamo  # noqa: E402
from dynamo.backends.triton_gpu import PRELUDE, TritonBackend  # noqa: E402
from dynamo.backends.triton_gpu.autotune import CANDIDATES, Autotuner, Choices  # noqa: E402
from dynamo.backends.triton_gpu.device import select_device  # noqa: E402
from dynamo.backends.triton_gpu.launcher import load_module, module_source  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", INTERPRET)


class ScriptedTimer:
    """Runs each candidate's launch for real (twice) and reports its scripted time: the tuner times a
    kernel's candidates in order, so times[i] is every kernel's i-th candidate's."""

    def __init__(self, times):
        self.times = list(times)
        self.calls = 0

    def __call__(self, launch):
        launch()
        launch()
        self.calls += 1
        return self.times[(self.calls - 1) % len(self.times)]


def make_tuner(path, times, min_elements=1):
    interpreted = select_device().interpreted
    return Autotuner(Choices(path), "test device", lambda sources: load_module(module_source(sources, interpreted, PRELUDE)),
                     timer=ScriptedTimer(times), min_elements=min_elements)


def compiled_with(tuner):
    graphs = []
    backend = TritonBackend(tuner=tuner)

    def recording(gm, example_inputs):
        graphs.append(backend(gm, example_inputs))
        return graphs[-1]
    return recording, graphs


def scale_in_place(x, y):
    x += y * 2.0
    return x * 3.0


def test_the_fastest_candidate_runs_and_the_input_is_written_once(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.random(5000), rng.random(5000)
    n = len(CANDIDATES["elementwise"])
    tuner = make_tuner(tmp_path / "choices.json", [5.0] * (n - 1) + [1.0])  # the last candidate wins
    backend, graphs = compiled_with(tuner)
    got_x = x.copy()
    got = dynamo.compile(scale_in_place, backend=backend)(got_x, y)
    want_x = x.copy()
    want = scale_in_place(want_x, y)
    assert close(got, want) is None and close(got_x, want_x) is None  # scratch runs left x alone
    launcher = graphs[0].launcher
    assert tuner.timed == len(launcher.kernels) and tuner.timer.calls == n * tuner.timed
    for source in launcher.kernels.values():
        assert source.num_warps == CANDIDATES["elementwise"][-1].num_warps
        assert source.name.endswith(f"_c{n - 1}")


def test_a_remembered_choice_is_reused_without_timing(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 300)).astype(np.float32)

    def softmax(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    n = len(CANDIDATES["reduction"])
    first = make_tuner(tmp_path / "choices.json", [3.0, 1.0] + [4.0] * (n - 2))
    backend, graphs = compiled_with(first)
    assert close(dynamo.compile(softmax, backend=backend)(x), softmax(x)) is None
    assert first.timed == 1
    chosen = next(iter(graphs[0].launcher.kernels.values()))
    assert chosen.num_warps == CANDIDATES["reduction"][1].num_warps
    assert len(json.loads((tmp_path / "choices.json").read_text())) == 1

    dynamo.reset()
    second = make_tuner(tmp_path / "choices.json", [9.0])  # a new process: the choice comes from the file
    backend, graphs = compiled_with(second)
    assert close(dynamo.compile(softmax, backend=backend)(x), softmax(x)) is None
    assert second.timed == 0 and second.timer.calls == 0
    again = next(iter(graphs[0].launcher.kernels.values()))
    assert (again.num_warps, again.blocks) == (chosen.num_warps, chosen.blocks)


def test_a_corrupt_choices_file_is_timed_again(tmp_path):
    path = tmp_path / "choices.json"
    path.write_text('{"half a fi')
    x = np.arange(4096.0)
    tuner = make_tuner(path, [1.0] * len(CANDIDATES["elementwise"]))
    backend, _ = compiled_with(tuner)
    assert close(dynamo.compile(lambda a: a * 2.0 + 1.0, backend=backend)(x), x * 2.0 + 1.0) is None
    assert tuner.timed >= 1 and isinstance(json.loads(path.read_text()), dict)


def test_kernels_writing_strided_views_or_too_small_keep_their_defaults(tmp_path):
    def shift(x):
        x += 1.0
        return x * 2.0

    tuner = make_tuner(tmp_path / "choices.json", [1.0], min_elements=1)
    backend, _ = compiled_with(tuner)
    got_base, want_base = np.arange(1000.0), np.arange(1000.0)
    got = dynamo.compile(shift, backend=backend)(got_base[::2])
    assert close(got, shift(want_base[::2])) is None and close(got_base, want_base) is None
    # under the interpreter the kernel writing the strided input keeps its defaults (a copy would be
    # contiguous), the one writing the fresh result is tuned; a GPU gets a contiguous copy of the view
    # from the host, so both are
    assert tuner.timed == (2 if ON_GPU else 1)

    dynamo.reset()
    small = make_tuner(tmp_path / "small.json", [1.0], min_elements=1 << 20)
    backend, _ = compiled_with(small)
    x = np.arange(1000.0)
    assert close(dynamo.compile(lambda a: a + 1.0, backend=backend)(x), x + 1.0) is None
    assert small.timed == 0


def test_interpreter_and_a_given_tile_config_are_never_tuned():
    from dynamo.backends.triton_gpu.codegen import TileConfig
    device = select_device()
    # the interpreter's timings say nothing of a GPU; on a GPU, tuning is on unless switched off
    assert (TritonBackend().tuner(device) is None) is not ON_GPU
    with dynamo.config.patch(triton_autotune=False):
        assert TritonBackend().tuner(device) is None
    assert TritonBackend(TileConfig(max_tile=256)).tuner(device) is None
