"""Warnings from compiled code point at the user's line and show as often as plain NumPy's: the
generated code runs at the user's lines (fx_ir.user_lines) and shares the module's registry."""
import warnings

import numpy as np
import pytest

import dynamo
from dynamo.backends.numpy_cpu import Machine, NumpyBackend

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


@pytest.mark.parametrize("backend", ["eager", "numpy", TINY], ids=["eager", "numpy", "numpy-tiny"])
@pytest.mark.parametrize("action", ["default", "always"])
def test_warnings_point_at_the_users_line_once_per_line(backend, action):
    compiled = [(dynamo.compile(fn, backend=backend), make) for fn, make in CASES]
    for fn, make in compiled:  # compiled before: tracing may reset the registries once
        fn(make())
    expected = warnings_of(CASES, 3, action)
    got = warnings_of(compiled, 3, action)
    assert got == expected
    assert {w[2] for w in got} == {__file__}
