"""A local that an inner function captures (a cell) read or deleted while unbound after a graph
break raises what plain Python raises: UnboundLocalError ("cannot access local variable"), not
the NameError of a free variable that the resume function holds the cell as."""
import traceback

import numpy as np
import pytest

import dynamo
from semantics_helpers import BACKENDS, check_same


def read_after_a_break(x):
    def inner():
        return captured
    if x.sum() > 100:
        captured = 1
    print(end="")  # a graph break: the rest runs in a resume function, the cell a free variable there
    return captured


def read_after_del(x):
    captured = x + 1
    def inner():
        return captured
    del captured
    print(end="")
    return captured


def delete_twice(x):
    captured = x * 2
    def inner():
        return captured
    del captured
    print(end="")
    del captured


def read_inside_try(x):
    def inner():
        return captured
    print(end="")
    try:
        return captured
    except NameError as error:  # plain Python: the UnboundLocalError subclass, caught here
        return type(error).__name__, str(error), x + 1


def read_inside_except(x):
    def inner():
        return captured
    try:
        raise ZeroDivisionError("on purpose")
    except ZeroDivisionError:
        print(end="")
        return captured  # the error's __context__ is the ZeroDivisionError, as in plain Python


def read_in_a_loop(x):
    out = []
    def inner():
        return captured
    for i in range(3):
        print(end="")
        if i == 1:
            del captured
        if i == 0:
            captured = x + i
        out.append(captured)
    return out


def inner_reads_the_empty_cell(x):
    def inner():
        return captured  # the inner function's own free variable: NameError in plain Python too
    print(end="")
    return inner()


def loop_cell_read_after_the_loop(x):
    # fuzz seed 1031167: the loop breaks, so its resume function runs it in Python up to a hand-off
    # point; that point was searched in the handler code appended for the cell read after the loop
    for row in x:
        f"{x!r}"
        def inner():
            return row
    return row


CASES = [read_after_a_break, read_after_del, delete_twice, read_inside_try, read_inside_except, read_in_a_loop,
         inner_reads_the_empty_cell, loop_cell_read_after_the_loop]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", CASES)
def test_an_unbound_cell_raises_as_in_plain_python(backend, fn):
    check_same(fn, lambda: (np.ones(3),), backend)


def _failure(fn, *args):
    try:
        fn(*args)
    except Exception as error:
        text = "".join(traceback.format_exception(error))
        return type(error), str(error), repr(error.__context__), text
    raise AssertionError("no exception")


@pytest.mark.parametrize("fn", [read_after_a_break, read_after_del, delete_twice, read_inside_except, read_in_a_loop])
def test_the_traceback_and_context_match_plain_python(fn):
    expected = _failure(fn, np.ones(3))
    compiled = dynamo.compile(fn, backend="eager")
    for _ in range(2):  # compiling call and cached call
        assert _failure(compiled, np.ones(3)) == expected
