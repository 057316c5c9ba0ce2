"""Helpers of the graph-break tests: run a function plain and compiled on copies of the same
inputs, compare everything observable (result or exception, printed output, mutated
arguments), and expose the exact graph, break and fallback counts of the compiled run."""
from __future__ import annotations

import contextlib
import copy
import io
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import dynamo
from support import CompileCounter, fallbacks, graph_breaks, same_value


def same(a: Any, b: Any) -> bool:
    """same_value, and objects of user classes compared by their attributes."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and type(a).__module__ not in ("builtins", "numpy") and not callable(a):
        return same(vars(a), vars(b))
    return same_value(a, b)


@dataclass
class Run:
    compiled: Any
    counter: CompileCounter
    result: Any
    error: BaseException | None
    stdout: str

    @property
    def graphs(self) -> int:
        return self.counter.frame_count

    @property
    def breaks(self) -> list[str]:
        return graph_breaks(self.compiled)

    @property
    def fallbacks(self) -> list[str]:
        return fallbacks(self.compiled)


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[Any, BaseException | None, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            return fn(*args, **kwargs), None, out.getvalue()
        except Exception as error:  # the compiled run must raise the same
            return None, error, out.getvalue()


def compare(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Run:
    """fn compiled (recording backend, fresh cache) must behave exactly like fn."""
    dynamo.reset()
    counter = CompileCounter()
    compiled = dynamo.compile(fn, backend=counter)
    plain_args, compiled_args = copy.deepcopy((args, kwargs)), copy.deepcopy((args, kwargs))
    expected, expected_error, expected_out = _call(fn, *plain_args)
    result, error, out = _call(compiled, *compiled_args)
    if expected_error is not None:
        assert type(error) is type(expected_error) and str(error) == str(expected_error), \
            f"expected {expected_error!r}, got {error!r}"
    else:
        assert error is None, f"compiled version raised {error!r}"
        assert same(result, expected), f"compiled returned {result!r}, plain returned {expected!r}"
    assert out == expected_out, f"printed {out!r}, plain printed {expected_out!r}"
    assert same(compiled_args, plain_args), "arguments were mutated differently"
    return Run(compiled, counter, result, error, out)


def arange(*shape: int, dtype: Any = np.float64) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def assert_positive(x):
    """An assert on array data (here, not in a test module, so pytest leaves the assert alone)."""
    y = x + 1
    assert (y > 0).all(), "negative"
    return y
