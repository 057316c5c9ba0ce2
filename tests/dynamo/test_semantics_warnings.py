"""Warnings from compiled code point at the user's line and show as often as plain NumPy's: the
generated code runs at the user's lines (fx_ir.user_lines) and shares the module's registry."""
import sys
import types
import warnings

import numpy as np
import pytest

import dynamo
from dynamo.backends.numpy_cpu import Machine, NumpyBackend
from semantics_helpers import BACKENDS

TINY = NumpyBackend(Machine(cache_bytes=2048, cores=2, min_kernel_bytes=0, min_block_elements=1, thread_work=0),
                    strict=True)


def log_then_scale(x):
    y = np.log(x)
    return y * 2


def shifted_square_root(x):
    y = x + 1
    z = np.sqrt(y - 5)
    return z * 2


def warnings_of(fns, calls, action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        for _ in range(calls):
            for fn, make in fns:
                fn(make())
    return [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


CASES = [(log_then_scale, lambda: np.zeros(300)), (shifted_square_root, lambda: np.ones(300))]


@pytest.mark.parametrize("backend", ["eager", "numpy", TINY] + [b for b in BACKENDS if b == "c"],
                         ids=["eager", "numpy", "numpy-tiny"] + [b for b in BACKENDS if b == "c"])
@pytest.mark.parametrize("action", ["default", "always"])
def test_warnings_point_at_the_users_line_once_per_line(backend, action):
    compiled = [(dynamo.compile(fn, backend=backend), make) for fn, make in CASES]
    for fn, make in compiled:  # compiled before: tracing may reset the registries once
        fn(make())
    expected = warnings_of(CASES, 3, action)
    got = warnings_of(compiled, 3, action)
    assert got == expected
    assert {w[2] for w in got} == {__file__}


def means_of_slices(x):
    y = x * 2
    return y[:0].mean(), np.nanmax(y[:0], initial=-1.0) + y.mean()


def var_of_one(x):
    z = x[:1] + 1
    return np.var(z, ddof=1)


NUMPY_STEP_CASES = [(means_of_slices, lambda: np.ones(30)), (var_of_one, lambda: np.ones(30))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("action", ["default", "always"])
def test_warnings_of_numpy_steps_point_at_the_users_line(backend, action):
    # NumPy's own warnings (not floating-point flags) from nodes a backend runs as NumPy code between
    # its kernels: triton's launcher calls them from frames at the program's lines
    compiled = [(dynamo.compile(fn, backend=backend), make) for fn, make in NUMPY_STEP_CASES]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn, make in compiled:
            fn(make())
    expected = warnings_of(NUMPY_STEP_CASES, 3, action)
    got = warnings_of(compiled, 3, action)
    assert got == expected
    assert {w[2] for w in got} >= {__file__}


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "triton"])  # triton reports no FP flags
def test_a_line_warns_once_while_the_original_code_takes_turns(backend):
    # timed turns run the original code and the compiled code in turn: both record what a line
    # showed in the registry of the line's module, so the "default" filter shows it once, as plain
    with dynamo.config.patch(timed_turns=4):
        compiled = [(dynamo.compile(fn, backend=backend), make) for fn, make in CASES + NUMPY_STEP_CASES]
        expected = warnings_of(CASES + NUMPY_STEP_CASES, 12, "default")
        got = warnings_of(compiled, 12, "default")
    assert got == expected


def logs_in_a_loop(x, n):
    total = x * 0
    for i in range(n):  # too long to unroll: a loop node (the numpy backend's Python loop)
        total = total + np.log(x * i)
    return total


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("action", ["default", "always"])
def test_warnings_of_a_loop_body_once_at_the_users_line(backend, action):
    compiled = dynamo.compile(logs_in_a_loop, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(np.ones(20), 300)

    def both(x):
        logs_in_a_loop(x, 300)
        compiled(x, 300)
    expected = warnings_of([(lambda x: logs_in_a_loop(x, 300), lambda: np.ones(20))], 2, action)
    got = warnings_of([(both, lambda: np.ones(20))], 2, action)
    assert got == (expected if action == "default" else expected * 2)
    assert {w[2] for w in got} == {__file__}


def test_a_file_with_no_module_is_looked_for_again_only_when_modules_change(monkeypatch):
    from dynamo.fx_ir import user_lines

    class CountingModules(dict):
        scans = 0

        def values(self):
            CountingModules.scans += 1
            return super().values()

    class FakeSys:
        modules = CountingModules(sys.modules)
    monkeypatch.setattr(user_lines, "sys", FakeSys)
    for _ in range(3):
        assert user_lines._module_of_file("/nowhere/generated.py") is None
    assert CountingModules.scans == 1
    module = types.ModuleType("nowhere_generated")
    module.__file__ = "/nowhere/generated.py"
    FakeSys.modules["nowhere_generated"] = module
    assert user_lines._module_of_file("/nowhere/generated.py") is module
    assert user_lines._module_of_file("/nowhere/generated.py") is module
    assert CountingModules.scans == 2
