"""Helpers of the semantics tests: the backends every case runs on (triton under its interpreter
where it is installed), and a comparison of one call plain and compiled, effects included."""
from __future__ import annotations

import copy
import importlib.util
import os
from typing import Any, Callable

import numpy as np

import dynamo
from support import same_value

if importlib.util.find_spec("triton") is not None and os.environ.get("DYNAMO_TEST_GPU") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: it decides at import

BACKENDS = ["eager", "numpy"] + (["c"] if "c" in dynamo.list_backends() else []) \
    + (["triton"] if importlib.util.find_spec("triton") is not None else [])


def outcome(fn: Callable[..., Any], args: tuple) -> tuple[Any, Any]:
    """(result, None) or (None, (exception type, message))."""
    try:
        return fn(*args), None
    except Exception as error:  # the compiled call must raise the same
        return None, (type(error), str(error))


def same_layout(a: Any, b: Any) -> bool:
    """Arrays (anywhere in a result) agree in strides and contiguity too."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.strides == b.strides and a.flags.c_contiguous == b.flags.c_contiguous \
            and a.flags.f_contiguous == b.flags.f_contiguous
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_layout(x, y) for x, y in zip(a, b))
    return True


def comparable(value: Any) -> Any:
    """What of a value the tests compare: arrays, scalars and containers as they are, a user's
    object by its class and attributes (comparing it could call its own __eq__)."""
    if isinstance(value, (list, tuple)):
        return type(value)(comparable(v) for v in value)
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (np.ndarray, np.generic, int, float, complex, str, bytes, bool, type(None))):
        return value
    return (type(value).__qualname__, comparable(dict(getattr(value, "__dict__", {}))))


def check_same(fn: Callable[..., Any], make_args: Callable[[], tuple], backend: str,
               observe: Callable[[], Any] = lambda: None, reset: Callable[[], None] = lambda: None,
               calls: int = 2) -> Any:
    """Call fn plain, then compiled `calls` times (first and cached), each on fresh arguments after
    reset(): results, exceptions, the arguments afterwards and observe() must agree."""
    reset()
    args = make_args()
    expected = outcome(fn, args)
    expected_state = copy.deepcopy(observe())
    expected_view = comparable((expected[0], args))
    compiled = dynamo.compile(fn, backend=backend)
    for _ in range(calls):
        reset()
        args = make_args()
        got = outcome(compiled, args)
        state = copy.deepcopy(observe())
        assert same_value(got[1], expected[1]), (got[1], expected[1])
        assert same_value(comparable((got[0], args)), expected_view), (got[0], args, expected_view)
        assert same_layout(got[0], expected[0])
        assert same_value(state, expected_state), (state, expected_state)
    return compiled
