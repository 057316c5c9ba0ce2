"""Compile cost of a function with many graph breaks: each resume function is analysed from the
bytecode it was assembled from, so the original is the only code parsed, however many breaks."""
import numpy as np
from bytecode import Bytecode

import dynamo
from support import assert_matches_python


def _opaque(value):
    print(end="")  # a side effect: every call is a graph break
    return value


def many_breaks(a):
    total = a * 1
    total = total + _opaque(1)
    total = total + _opaque(2)
    total = total + _opaque(3)
    total = total + _opaque(4)
    total = total + _opaque(5)
    total = total + _opaque(6)
    return total


def test_resume_functions_are_not_parsed_back(monkeypatch):
    parsed = []
    original_from_code = Bytecode.from_code

    def counting(code, *args, **kwargs):
        parsed.append(code.co_qualname)
        return original_from_code(code, *args, **kwargs)

    monkeypatch.setattr(Bytecode, "from_code", staticmethod(counting))
    assert_matches_python(many_breaks, np.arange(3.0))
    resumed = [name for name in parsed if "<resume" in name]
    assert parsed.count("many_breaks") <= 2  # the original (the plain run and the trace)
    assert resumed == [], resumed
    dynamo.reset()
