"""A few fast end-to-end cases that run first: compile, call, cache, reset."""
import numpy as np

import dynamo
from dynamo import _C


def test_compiled_function_returns_what_the_function_returns():
    def f(x, y):
        return np.sin(x) * y + 1

    x = np.linspace(0, 1, 7)
    np.testing.assert_array_equal(dynamo.compile(f)(x, 3.0), f(x, 3.0))


def test_second_call_is_a_cache_hit():
    def f(x):
        return x * 2

    cf = dynamo.compile(f)
    cf(np.ones(3))
    cf(np.zeros(3))
    (entry,) = _C.cache_entries(f.__code__)
    assert entry.hits == 1


def test_hook_is_off_outside_compiled_calls():
    cf = dynamo.compile(lambda x: _C.hook_installed())
    assert cf(1) is True
    assert _C.hook_installed() is False
    assert _C.get_eval_frame() is None
