"""With a trace function installed (a debugger, coverage) a compiled function runs its original
code: the tracer sees every line, as it would without dynamo, also when the code is cached."""
import sys

import numpy as np
import pytest

import dynamo
from semantics_helpers import BACKENDS


def three_lines(x):
    y = x + 1
    z = y * 2
    return z.sum()


def trace_lines(fn, *args):
    lines = []

    def tracer(frame, event, arg):
        if frame.f_code is three_lines.__code__:
            lines.append((event, frame.f_lineno))
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn(*args)
    finally:
        sys.settrace(old)
    return result, lines


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tracer_sees_every_line_of_compiled_code(backend):
    expected = trace_lines(three_lines, np.ones(3))
    compiled = dynamo.compile(three_lines, backend=backend)
    compiled(np.ones(3))  # compiled and cached before the tracer is installed
    for _ in range(2):
        assert trace_lines(compiled, np.ones(3)) == expected
    assert compiled(np.ones(3)) == three_lines(np.ones(3))  # and compiled again once it is gone
