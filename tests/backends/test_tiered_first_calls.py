"""backend="tiered" never makes a call wait for the C compiler: a graph due for "c" runs on numpy while
its compile is in flight, and a program without a C compiler (CC naming none, nothing on PATH) runs on
numpy with no error, explain saying why."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np

import dynamo
from dynamo import config
from dynamo.backends import c_cpu, registry, tiered  # noqa: F401  (c registered before it is replaced)

ROOT = Path(__file__).resolve().parents[2]


def chain(x, y):
    return np.sqrt(x * y + 1.5) - x / 3.0


def test_calls_run_on_numpy_while_the_c_compile_is_in_flight(monkeypatch):
    """The compile is held until the test releases it: every call before that returns numpy's result at
    once (it would hang if one waited for the compile), and the calls after it run the C code."""
    release, started = threading.Event(), threading.Event()
    made = []

    def held_c(gm, inputs):
        started.set()
        assert release.wait(60)
        made.append(gm)
        return registry.lookup_backend("numpy")(gm, inputs)  # stands in for C code (no compiler needed)

    def fake_program(gm, inputs):
        fn = held_c(gm, inputs)
        fn.program = "held"  # what tiered reads to tell C code from a fallback
        return fn

    monkeypatch.setitem(registry._BACKENDS, "c", fake_program)
    x, y = np.linspace(0.0, 3.0, 101), np.linspace(-1.0, 1.0, 101)
    compiled = dynamo.compile(chain, backend="tiered")
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=True):
        results = [compiled(x, y)]  # due at its first call: the compile is submitted, the call runs numpy
        assert started.wait(60)
        results += [compiled(x, y) for _ in range(5)]  # the compile is still held
        (tier,) = [g.compiled_fn._dynamo_fn.tier for code, f in compiled._dynamo_callback.compiled_frames
                   if code is chain.__code__ for g in f.graphs]
        assert tier.state == tiered.COMPILING and not made
        release.set()
        assert tiered.wait_for_tier_ups(60)
        results.append(compiled(x, y))
    assert tier.state == tiered.C and len(made) == 1
    assert all(r.tobytes() == chain(x, y).tobytes() for r in results)


def test_a_machine_without_a_c_compiler_runs_tiered_on_numpy(tmp_path):
    """CC names a compiler that does not exist and PATH holds no compiler: import, first calls, the move
    that finds no compiler, and explain all work; results are plain NumPy's."""
    program = textwrap.dedent("""
        import numpy as np, dynamo
        from dynamo.backends import tiered

        def f(x, y):
            return np.sqrt(x * y + 1.5) - x / 3.0

        x, y = np.linspace(0.0, 3.0, 11), np.linspace(-1.0, 1.0, 11)
        compiled = dynamo.compile(f, backend="tiered")
        same = all(compiled(x, y).tobytes() == f(x, y).tobytes() for _ in range(4))
        assert tiered.wait_for_tier_ups(60)
        report = dynamo.explain(f, backend="tiered")(x, y)
        print("same", same)
        print(str(report))
    """)
    env = {**os.environ, "CC": str(tmp_path / "no-such-cc"), "PATH": str(tmp_path),
           "DYNAMO_TIER_UP_SECONDS": "0", "DYNAMO_TIER_UP_IN_BACKGROUND": "1",
           "DYNAMO_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "same True" in done.stdout
    assert "tier: stayed numpy: no C compiler" in done.stdout, done.stdout
    assert done.stderr == ""


def test_an_error_outside_backend_c_leaves_the_graph_on_numpy_and_the_worker_alive(monkeypatch):
    """An error the move itself raises (not backend c's: once, the import of backend c raised because a
    test had replaced its registry entry) ended the worker thread and left the graph `compiling`."""
    real_tier_up = tiered.TieredGraph.tier_up
    calls = []

    def tier_up_failing_once(self, args):
        calls.append(self)
        if len(calls) == 1:
            raise ValueError("raised outside backend c")
        real_tier_up(self, args)

    def numpy_as_c(gm, inputs):
        fn = registry.lookup_backend("numpy")(gm, inputs)
        fn.program = "numpy code standing in for C"
        return fn

    monkeypatch.setattr(tiered.TieredGraph, "tier_up", tier_up_failing_once)
    monkeypatch.setitem(registry._BACKENDS, "c", numpy_as_c)
    x = np.linspace(0.0, 3.0, 11)
    first, second = dynamo.compile(chain, backend="tiered"), dynamo.compile(lambda a: a * 2.0 + 1.0, backend="tiered")
    with config.patch(tier_up_seconds=0.0, tier_up_in_background=True, strict=False):
        assert first(x, x).tobytes() == chain(x, x).tobytes()
        assert tiered.wait_for_tier_ups(60)
        assert second(x).tobytes() == (x * 2.0 + 1.0).tobytes()
        assert tiered.wait_for_tier_ups(60)
    states = [t.state for t in calls]
    assert states == [tiered.STAYED, tiered.C], states
    assert "ValueError: raised outside backend c" in calls[0].describe()
