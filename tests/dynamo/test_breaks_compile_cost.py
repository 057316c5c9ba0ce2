"""Compile cost of a function with many graph breaks: each resume function is analysed from the
bytecode it was assembled from, so the original is the only code parsed, however many breaks, and
holds only the code its entry can reach."""
import traceback

import numpy as np
from bytecode import Bytecode

import dynamo
from dynamo import resume
from support import assert_matches_python, same_value


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


def loop_then_breaks(a):
    total = a * 0
    for i in range(3):  # before the later breaks: dead code to the resume functions after it
        total = total + a * i
        _opaque(i)
    total = total + _opaque(1)
    try:
        total = total + _opaque(2)
        total = total * _opaque(3)
    except ZeroDivisionError:
        total = total - 1
    total = total + _opaque(4)
    return total / _opaque(a.size)


def _resume_codes(original):
    from dynamo.resume_origins import origins
    return [code for code, origin in origins.items() if origin.original is original]


def _lines(code):
    return {line for _, _, line in code.co_lines() if line is not None}


def test_resume_functions_hold_only_the_code_after_their_entry():
    """A resume function is made of the code its entry can reach: a function with n breaks
    assembles and analyses n suffixes, not n copies of the whole function."""
    dynamo.reset()
    compiled = dynamo.compile(loop_then_breaks, backend="eager")
    for _ in range(2):
        assert same_value(compiled(np.arange(4.0)), loop_then_breaks(np.arange(4.0)))
    codes = _resume_codes(loop_then_breaks.__code__)
    assert len(codes) >= 5
    first_line = loop_then_breaks.__code__.co_firstlineno
    loop_lines = set(range(first_line + 2, first_line + 5))
    for code in codes:
        entry = resume.entry_line(code)
        assert first_line + 1 not in _lines(code), code.co_qualname  # the code before the loop
        if entry > max(loop_lines):  # after the loop, the loop is dead code (3.12's except clause,
            # placed after the code that follows the try, may show lines before the entry)
            assert not loop_lines & _lines(code), (code.co_qualname, sorted(_lines(code)))
    total = sum(len(code.co_code) for code in codes)
    assert total < len(codes) * len(loop_then_breaks.__code__.co_code) * 3 // 4
    dynamo.reset()


def test_an_error_after_trimmed_resume_functions_shows_the_users_lines():
    def failing(a):
        total = a * 1
        total = total + _opaque(1)
        for i in range(2):
            total = total + i
        total = total + _opaque(2)
        return total + _opaque(None)  # TypeError here, after three breaks

    def where(fn):
        try:
            fn(np.arange(3.0))
        except TypeError as error:
            frames = [f for f in traceback.extract_tb(error.__traceback__) if f.name == "failing"]
            return [(f.lineno, f.line) for f in frames]
        raise AssertionError("no error")

    compiled = dynamo.compile(failing, backend="eager")
    assert where(compiled) == where(failing)
    assert where(compiled) == where(failing)  # cached
    dynamo.reset()


class _Meta(type):
    pass


def test_a_break_at_the_start_of_a_with_block_over_a_cell():
    """A resume function that starts where a with block's try region starts, in a function whose
    cell is read inside the block (the read gets a handler of its own, which splits the region):
    the region is split where the copy begins too (CPython's test_descr test_disappearing_custom_mro:
    nested try blocks, an internal error)."""
    import unittest

    def with_cell(case, a):
        class Base:
            pass

        class Meta(_Meta):
            def mro(cls):
                del Meta.mro  # a break in a frame the class creation calls
                return (Base,)

        with case.assertRaises(TypeError):
            class Made(metaclass=Meta):
                pass
        return a + 1

    assert_matches_python(with_cell, unittest.TestCase(), np.arange(3.0))
    dynamo.reset()
